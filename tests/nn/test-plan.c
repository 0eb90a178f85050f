/*
 * test-plan.c — the memory plan's building blocks and choices:
 *   - gpu_pool_plan is the capacity a real pool needs: tensors that do not
 *     fit at the end of a pool buffer move to the next one (a small
 *     maxMemoryAllocationSize faked in the caps), and a pool of the
 *     planned size carves them all on the device while one 256 bytes
 *     smaller does not;
 *   - ltxv_vae_tiling_call gives upstream's largest decoder call;
 *   - nn_plan_render picks untiled / resident first, tiles or streams
 *     only when the budget says so, and names a shorter num_frames that
 *     does fit;
 *   - LTX-2's connectors, audio VAE and vocoder allocate what their plan
 *     functions count, and nn_plan_ltx2 puts them into the phases.
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "model/synth.h"
#include "nn/ltx2_audio_vae.h"
#include "nn/ltx2_connectors.h"
#include "nn/ltx2_vocoder.h"
#include "nn/ltxv_transformer.h"
#include "nn/ltxv_vae.h"
#include "nn/plan.h"
#include "test.h"

/* Carves `n` f32 tensors of bytes[i] from a pool of `cap`; 1 if all fit. */
static int
carve_all(struct gpu_ctx *ctx, size_t cap, const uint64_t *bytes, int n)
{
	struct gpu_pool *pool = NULL;
	struct lq_error err;
	int ok = 1;

	error_clear(&err);
	if (gpu_pool_create(ctx, cap, &pool, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 0;
	}
	for (int i = 0; i < n && ok; i++) {
		struct gpu_tensor t;
		int64_t shape[1] = { (int64_t)(bytes[i] / 4) };

		ok = gpu_pool_tensor(pool, GPU_F32, 1, shape, &t, &err) == LQ_OK;
	}
	gpu_pool_free(pool);
	return ok;
}

static void
test_pool_plan(void)
{
	struct gpu_ctx *ctx = NULL;
	struct lq_error err;
	struct device_caps caps;

	error_clear(&err);
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(77);
	}
	caps = *gpu_ctx_caps(ctx);
	/* no boundaries: the sum of 256-aligned sizes, and tight: a pool one
	 * alignment step smaller cannot carve them */
	{
		const uint64_t b[3] = { 1000, 4096, 4 };
		uint64_t cap = gpu_pool_plan(&caps, b, 3);

		CHECK_INT(cap, 1024 + 4096 + 256);
		CHECK(carve_all(ctx, (size_t)cap, b, 3));
		CHECK(!carve_all(ctx, (size_t)cap - 256, b, 3));
	}
	/* pool buffers of 64 KiB: 40 KiB | 40 + 20 KiB | 60 KiB, the second
	 * and the last moved past the end of a buffer */
	{
		const uint64_t b[4] = { 40 << 10, 40 << 10, 20 << 10, 60 << 10 };
		struct device_caps small = caps;

		small.max_memory_allocation_size = 64 << 10;
		CHECK_INT(gpu_pool_plan(&small, b, 4), (64 + 64 + 60) << 10);
	}
	gpu_ctx_free(ctx);
}

static void
test_tile(void)
{
	struct ltxv_vae_tiling t;
	struct ltxv_vae_config c;
	int64_t tile[5];

	memset(&c, 0, sizeof(c));
	c.spatial_compression_ratio = 32;
	c.temporal_compression_ratio = 8;
	ltxv_vae_tiling_init(&t);
	/* switches off: the whole latent */
	ltxv_vae_tiling_call(&c, (int64_t[5]){ 1, 128, 16, 16, 24 }, &t, tile);
	CHECK_INT(tile[2], 16);
	CHECK_INT(tile[3], 16);
	CHECK_INT(tile[4], 24);
	/* spatial: 512 / 32 = 16 latent pixels a side */
	t.use_tiling = 1;
	ltxv_vae_tiling_call(&c, (int64_t[5]){ 1, 128, 16, 16, 24 }, &t, tile);
	CHECK_INT(tile[2], 16);
	CHECK_INT(tile[3], 16);
	CHECK_INT(tile[4], 16);
	/* framewise: 16 / 8 = 2 latent frames + 1 */
	t.use_framewise_decoding = 1;
	ltxv_vae_tiling_call(&c, (int64_t[5]){ 1, 128, 16, 16, 24 }, &t, tile);
	CHECK_INT(tile[2], 3);
	/* upstream tiles only when a side exceeds the tile: 16 x 16 stays */
	t.use_framewise_decoding = 0;
	ltxv_vae_tiling_call(&c, (int64_t[5]){ 1, 128, 4, 16, 16 }, &t, tile);
	CHECK_INT(tile[3], 16);
	CHECK_INT(tile[4], 16);
}

static void
test_choices(void)
{
	struct ltxv_transformer_config tc;
	struct ltxv_vae_config vc;
	struct t5_config cc;
	struct device_caps caps;
	struct nn_plan p, q;
	struct nn_weights_layout wt, wv;

	CHECK_INT(model_synth_preset("ltxv", "0.9.1-2b", &tc, &vc, &cc), 0);
	CHECK_INT(tc.num_layers, 28);
	CHECK_INT(tc.inner_dim, 2048);
	CHECK_INT(vc.latent_channels, 128);
	CHECK_INT(vc.spatial_compression_ratio, 32);
	CHECK_INT(vc.temporal_compression_ratio, 8);
	CHECK_INT(cc.d_model, 4096);
	/* weights of a bf16 2B model, as nn_weights_plan would report */
	memset(&wt, 0, sizeof(wt));
	wt.streamed.groups = 28;
	wt.streamed.slot = 134u << 20;
	wt.streamed.slots = 2;
	wt.streamed.resident = 90u << 20;
	wt.streamed.device = wt.streamed.resident + 2 * wt.streamed.slot;
	wt.resident.device = wt.streamed.resident + 28 * wt.streamed.slot;
	memset(&wv, 0, sizeof(wv));
	wv.resident.device = 800u << 20;

	memset(&caps, 0, sizeof(caps));
	snprintf(caps.name, sizeof(caps.name), "test");
	caps.heap_count = 1;
	caps.heap_size[0] = (uint64_t)64 << 30;
	caps.heap_device_local[0] = 1;
	caps.max_memory_allocation_size = (uint64_t)4 << 30;
	caps.max_storage_buffer_range = (uint64_t)4 << 30;

	struct nn_plan_request rq = {
		.transformer = &tc, .vae = &vc, .text_encoder = NULL,
		.w_transformer = &wt, .w_vae = &wv, .batch = 1, .guidance = 1,
		.num_frames = 121, .height = 512, .width = 768,
		.max_sequence_length = 128, .caps = &caps,
	};
	ltxv_vae_tiling_init(&rq.tiling);
	/* a big device: resident weights; a short, small clip decodes
	 * untiled */
	rq.num_frames = 9;
	rq.height = rq.width = 256;
	nn_plan_render(&rq, &p);
	CHECK(p.fits);
	CHECK_INT(p.vae_tiled, 0);
	CHECK_INT(p.streaming, NN_WEIGHTS_RESIDENT);
	CHECK(p.peak_device_bytes == p.phase_device[p.peak_phase]);
	CHECK(p.transformer.weights == wt.resident.device);
	/* 512x768x121: the untiled decode's largest activation is more than
	 * one buffer holds (DEVICE_CAPS_MAX_BUFFER), so even 64 GiB tiles */
	rq.num_frames = 121;
	rq.height = 512;
	rq.width = 768;
	rq.vae_tiling = NN_PLAN_OFF;
	nn_plan_render(&rq, &p);
	CHECK(p.vae.largest > device_caps_max_tensor(&caps));
	rq.vae_tiling = NN_PLAN_AUTO;
	nn_plan_render(&rq, &q);
	CHECK_INT(q.vae_tiled, 1);
	CHECK(q.vae.largest <= device_caps_max_tensor(&caps));
	/* 2 GiB: the untiled decode (~7.6 GB of slots) and the resident
	 * 3.8 GB of weights do not fit, so both change */
	caps.heap_size[0] = (uint64_t)2 << 30;
	nn_plan_render(&rq, &q);
	CHECK(q.fits);
	CHECK_INT(q.vae_tiled, 1);
	CHECK_INT(q.streaming, NN_WEIGHTS_STREAMED);
	CHECK(q.transformer.weights == wt.streamed.device);
	CHECK(q.peak_device_bytes <= q.budget);
	CHECK(q.phase_device[NN_PHASE_DECODE] < p.phase_device[NN_PHASE_DECODE]);
	/* forbidding tiling: rejected, and the change is vae_tiling */
	rq.vae_tiling = NN_PLAN_OFF;
	nn_plan_render(&rq, &q);
	CHECK_INT(q.fits, 0);
	CHECK_STR(q.change_key, "vae_tiling");
	rq.vae_tiling = NN_PLAN_AUTO;
	/* forbidding streaming: the change is weight_streaming */
	rq.weight_streaming = NN_PLAN_OFF;
	nn_plan_render(&rq, &q);
	CHECK_INT(q.fits, 0);
	CHECK_STR(q.change_key, "weight_streaming");
	rq.weight_streaming = NN_PLAN_AUTO;
	/* 1.25 GiB: too long a clip; the named num_frames fits, 8 more not */
	caps.heap_size[0] = (uint64_t)5 << 28;
	nn_plan_render(&rq, &q);
	CHECK_INT(q.fits, 0);
	CHECK_STR(q.change_key, "num_frames");
	{
		int nf = atoi(q.change + strlen("num_frames: "));

		CHECK(nf >= 1 && nf < 121 && (nf - 1) % 8 == 0);
		rq.num_frames = nf;
		nn_plan_render(&rq, &q);
		CHECK(q.fits);
		rq.num_frames = nf + 8;
		nn_plan_render(&rq, &q);
		CHECK_INT(q.fits, 0);
	}
}

/* issue 16: the plan of a mesh device is the transformer of its share:
 * rows / data rows of tokens / context tokens */
static void
test_mesh(void)
{
	struct ltxv_transformer_config tc;
	struct ltxv_vae_config vc;
	struct t5_config cc;
	struct nn_plan one, dp, cp, ref;
	struct nn_plan_bytes half;

	CHECK_INT(model_synth_preset("ltxv", "small", &tc, &vc, &cc), 0);
	struct nn_plan_request rq = {
		.transformer = &tc, .vae = &vc, .batch = 1, .guidance = 1,
		.num_frames = 17, .height = 128, .width = 128,
		.max_sequence_length = 16,
	};
	ltxv_vae_tiling_init(&rq.tiling);
	nn_plan_render(&rq, &one);
	rq.data = 2;
	nn_plan_render(&rq, &dp);
	rq.data = 1;
	rq.context = 2;
	nn_plan_render(&rq, &cp);
	/* one guided video on data 2: one row per device, as batch 1 without
	 * guidance on one device */
	rq.context = 0;
	rq.guidance = 0;
	nn_plan_render(&rq, &ref);
	CHECK(dp.transformer.activations == ref.transformer.activations);
	CHECK(dp.transformer.activations < one.transformer.activations);
	/* context 2: the transformer of half the tokens (2 rows) */
	int F = (17 - 1) / vc.temporal_compression_ratio + 1;
	int HW = 128 / vc.spatial_compression_ratio;
	ltxv_transformer_plan(&tc, NULL, NULL, 2, F * HW * HW / 2, 16,
	    NN_WEIGHTS_RESIDENT, NULL, &half);
	CHECK(cp.transformer.activations == half.activations);
	CHECK(cp.transformer.activations < one.transformer.activations);
	/* the group's host q, k, v, o come on top */
	CHECK(cp.host_bytes > one.host_bytes);
	CHECK(cp.vae.activations == one.vae.activations);
}

/*
 * The LTX-2 plan pieces against the components themselves on the device:
 * the synthesised demo model's connectors, audio VAE and vocoder each
 * allocate exactly the weights and the pool their plan counts, and
 * nn_plan_ltx2 puts those into the phases.
 */
static void
test_ltx2(void)
{
	char tmp[] = "/tmp/lq-plan-ltx2-XXXXXX";
	struct lq_error err;
	struct gpu_ctx *ctx = NULL;
	struct gpu_ctx_opts o = {0};
	struct diffusers_ltx2_model *m = NULL;

	LQ_ASSERT(mkdtemp(tmp) != NULL);
	char *dir = xasprintf("%s/m", tmp);
	error_clear(&err);
	CHECK_INT(model_synth(dir, "ltx2", "demo", 3, &err), LQ_OK);
	CHECK_INT(diffusers_open_ltx2(dir, NULL, &m, &err), LQ_OK);
	CHECK_INT(gpu_ctx_create(&o, &ctx, &err), LQ_OK);
	if (m == NULL || ctx == NULL)
		goto out;
	const struct device_caps *caps = gpu_ctx_caps(ctx);
	struct nn_weights_layout w[3];
	const char *dirs[3] = {m->connectors.dir, m->audio_vae.dir,
	    m->vocoder.dir}, *prefix[3] = {NULL, "decoder.", NULL};
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 3; i++) {
		struct st_set *set = NULL;
		CHECK_INT(st_set_open(dirs[i], &set, &err), LQ_OK);
		CHECK_INT(nn_weights_plan(set, prefix[i], NULL, caps,
		    &w[i].resident, &err), LQ_OK);
		st_set_close(set);
	}
	size_t wb, cap, peak;
	struct nn_plan_bytes pb;

	/* the connectors on 2 x 2 rows of 8 tokens */
	struct ltx2_connectors *cn = NULL;
	int B = 4, T = 8, C = m->connectors_config.caption_channels;
	int CL = C * m->connectors_config.text_proj_in_factor;
	float *hs = xcalloc((size_t)B * T * CL, sizeof(float));
	int64_t *mask = xcalloc((size_t)B * T, sizeof(int64_t));
	float *ve = xcalloc((size_t)B * T * C, sizeof(float));
	float *ae = xcalloc((size_t)B * T * C, sizeof(float));
	int64_t *mo = xcalloc((size_t)B * T, sizeof(int64_t));
	for (int i = 0; i < B * T * CL; i++)
		hs[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
	for (int i = 0; i < B * T; i++)
		mask[i] = i % T >= 2;
	CHECK_INT(ltx2_connectors_load(ctx, m->connectors.dir, &cn, &err), LQ_OK);
	if (cn != NULL) {
		struct ltx2_connectors_args a = {
			.text_encoder_hidden_states = hs, .attention_mask = mask,
			.B = B, .T = T,
		};
		ltx2_connectors_call_init(&a.call);
		struct ltx2_connectors_out co = {ve, ae, mo};
		CHECK_INT(ltx2_connectors_forward(cn, &a, &co, NULL, &err), LQ_OK);
		ltx2_connectors_memory(cn, &wb, &cap, &peak);
		ltx2_connectors_plan(&m->connectors_config, &w[0], B, T, &pb);
		CHECK_INT(pb.weights, wb);
		CHECK_INT(pb.activations, cap);
		printf("connectors: weights %zu, pool %zu (plan %llu)\n", wb, cap,
		    (unsigned long long)pb.activations);
	}
	ltx2_connectors_free(cn);
	free(hs);
	free(mask);
	free(ve);
	free(ae);
	free(mo);

	/* the audio VAE on 2 x 26 latent frames, then the vocoder */
	const struct ltx2_audio_vae_config *ac = &m->audio_vae_config;
	int64_t z[4] = {2, ac->latent_channels, 26, ac->mel_bins / 4}, mel[4],
	    wave[3];
	struct ltx2_audio_vae *av = NULL;
	struct gpu_buffer *bz = NULL, *bm = NULL, *bw = NULL;
	ltx2_audio_vae_mel_shape(ac, z, mel);
	CHECK_INT(ltx2_audio_vae_load(ctx, m->audio_vae.dir, &av, &err), LQ_OK);
	CHECK_INT(gpu_buffer_create(ctx, sizeof(float) * (size_t)(z[0] * z[1] *
	    z[2] * z[3]), &bz, &err), LQ_OK);
	CHECK_INT(gpu_buffer_create(ctx, sizeof(float) * (size_t)(mel[0] *
	    mel[1] * mel[2] * mel[3]), &bm, &err), LQ_OK);
	if (av != NULL && bz != NULL && bm != NULL) {
		struct gpu_tensor tz = gpu_tensor_make(bz, 0, GPU_F32, 4, z);
		struct gpu_tensor tm = gpu_tensor_make(bm, 0, GPU_F32, 4, mel);
		CHECK_INT(ltx2_audio_vae_decode(av, &tz, &tm, NULL, &err), LQ_OK);
		ltx2_audio_vae_memory(av, &wb, &cap, &peak);
		ltx2_audio_vae_plan(ac, &w[1], z, &pb);
		CHECK_INT(pb.weights, wb);
		CHECK_INT(pb.activations, cap);
		CHECK_INT(pb.io, gpu_buffer_size(bz) + gpu_buffer_size(bm));
		printf("audio VAE: weights %zu, pool %zu (plan %llu)\n", wb, cap,
		    (unsigned long long)pb.activations);
		struct ltx2_vocoder *voc = NULL;
		CHECK_INT(ltx2_vocoder_load(ctx, m->vocoder.dir, &voc, &err), LQ_OK);
		ltx2_vocoder_waveform_shape(&m->vocoder_config, NULL, mel, wave);
		/* 10 ms of 24 kHz waveform per 10 ms mel frame */
		CHECK_INT(wave[2], mel[2] * 240);
		CHECK_INT(gpu_buffer_create(ctx, sizeof(float) * (size_t)(wave[0] *
		    wave[1] * wave[2]), &bw, &err), LQ_OK);
		if (voc != NULL && bw != NULL) {
			struct gpu_tensor tw = gpu_tensor_make(bw, 0, GPU_F32, 3,
			    wave);
			CHECK_INT(ltx2_vocoder_forward(voc, &tm, &tw, NULL, &err),
			    LQ_OK);
			ltx2_vocoder_memory(voc, &wb, &cap, &peak);
			ltx2_vocoder_plan(&m->vocoder_config, NULL, &w[2], caps, mel,
			    &pb);
			CHECK_INT(pb.weights, wb);
			CHECK_INT(pb.activations, cap);
		}
		ltx2_vocoder_free(voc);
	}
	ltx2_audio_vae_free(av);
	gpu_buffer_free(bz);
	gpu_buffer_free(bm);
	gpu_buffer_free(bw);

	/* the phases: encode-text the connectors alone, decode the largest
	 * decoder */
	struct ltx2_transformer_config tc;
	struct ltxv_vae_config vc;
	cJSON *j = NULL;
	CHECK_INT(diffusers_load_json(m->transformer.config_path, &j, &err), LQ_OK);
	CHECK_INT(diffusers_parse_ltx2_transformer(j, "t", &tc, &err), LQ_OK);
	cJSON_Delete(j);
	CHECK_INT(diffusers_load_json(m->vae.config_path, &j, &err), LQ_OK);
	CHECK_INT(diffusers_parse_vae(j, "v", &vc, &err), LQ_OK);
	cJSON_Delete(j);
	struct nn_plan_ltx2_request rq = {
		.model = m, .transformer = &tc, .vae = &vc, .batch = 2,
		.guidance = 1, .use_cross_timestep = 1, .num_frames = 25,
		.height = 128, .width = 192, .frame_rate = 24,
		.max_sequence_length = 8,
	};
	struct nn_plan p, small;
	nn_plan_ltx2(&rq, &p);
	CHECK(p.ltx2 && p.fits);
	CHECK_INT(p.phase_device[NN_PHASE_ENCODE_TEXT],
	    nn_plan_bytes_device(&p.connectors));
	CHECK_INT(p.phase_device[NN_PHASE_DENOISE],
	    nn_plan_bytes_device(&p.transformer));
	CHECK(p.phase_device[NN_PHASE_DECODE] >= nn_plan_bytes_device(&p.vae));
	CHECK(p.phase_device[NN_PHASE_DECODE] >= nn_plan_bytes_device(&p.audio_vae));
	CHECK(p.phase_device[NN_PHASE_DECODE] >= nn_plan_bytes_device(&p.vocoder));
	/* a shorter clip decodes fewer frames */
	rq.num_frames = 9;
	nn_plan_ltx2(&rq, &small);
	CHECK(small.vae.activations < p.vae.activations);
	CHECK(small.audio_vae.activations < p.audio_vae.activations);
out:
	gpu_ctx_free(ctx);
	diffusers_ltx2_free(m);
	free(dir);
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	(void)!system(cmd);
	free(cmd);
}

int
main(void)
{
	test_ltx2();
	test_mesh();
	test_tile();
	test_choices();
	test_pool_plan();
	return test_summary();
}
