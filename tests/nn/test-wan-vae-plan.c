/*
 * test-wan-vae-plan.c — wan_vae_plan (nn/wan_vae.c) for Wan 2.1's real
 * AutoencoderKLWan (upstream's __init__ defaults: base_dim 96, z_dim 16,
 * dim_mult [1, 2, 4, 4], num_res_blocks 2) without a device: the decode
 * runs chunk by chunk, so its activations do not grow with the number of
 * latent frames beyond the whole-latent post_quant_conv output; a 480 x 832
 * decode's largest tensor fits one of latentq's buffers; the io and host
 * bytes are the latent's and the video's.  Prints the figures.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpu/caps.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/plan.h"
#include "nn/wan_vae.h"
#include "../test.h"

int
main(void)
{
	struct wan_vae_config c;
	struct lq_error err;
	struct device_caps caps;
	struct nn_plan_bytes p2, p21, p81;
	cJSON *j = cJSON_Parse("{\"_class_name\": \"AutoencoderKLWan\"}");
	int64_t z[5] = { 1, 16, 21, 60, 104 }, o[5];
	uint64_t pq;

	error_clear(&err);
	CHECK(diffusers_parse_wan_vae(j, "config.json", &c, &err) == LQ_OK);
	cJSON_Delete(j);
	CHECK_INT(c.z_dim, 16);
	CHECK_INT(c.spatial_ratio, 8);
	CHECK_INT(c.temporal_ratio, 4);
	CHECK_INT(c.n_latents, 16);
	wan_vae_output_shape(&c, z, o);
	CHECK_INT(o[1], 3);
	CHECK_INT(o[2], 81);
	CHECK_INT(o[3], 480);
	CHECK_INT(o[4], 832);

	memset(&caps, 0, sizeof(caps));
	caps.max_memory_allocation_size = (uint64_t)4 << 30;
	wan_vae_plan(&c, NULL, &caps, 1, 2, 60, 104, &p2);
	wan_vae_plan(&c, NULL, &caps, 1, 21, 60, 104, &p21);
	wan_vae_plan(&c, NULL, &caps, 1, 81, 60, 104, &p81);
	printf("480x832 decode activations: F=2 %.1f MiB, F=21 %.1f MiB, "
	    "F=81 %.1f MiB; largest %.1f MiB (%s); io %.1f MiB\n",
	    p2.activations / 1048576.0, p21.activations / 1048576.0,
	    p81.activations / 1048576.0, p21.largest / 1048576.0,
	    p21.largest_what, p21.io / 1048576.0);
	/* only post_quant_conv's [1, 16, F, 60, 104] grows with F (and what
	 * a 1 GiB chunk boundary it moves costs) */
	pq = (uint64_t)(81 - 2) * 16 * 60 * 104 * 4;
	CHECK(p81.activations >= p2.activations);
	CHECK(p81.activations - p2.activations <= pq + ((uint64_t)1 << 30));
	CHECK(p81.activations < p2.activations * 3 / 2);
	/* every tensor fits one buffer */
	CHECK(p21.largest <= device_caps_max_tensor(&caps));
	/* io: the latent and the video; host: the video as f32 */
	CHECK_INT(p21.host, (uint64_t)3 * 81 * 480 * 832 * 4);
	CHECK_INT(p21.io, gpu_buffer_plan_size((uint64_t)16 * 21 * 60 * 104 * 4) +
	    gpu_buffer_plan_size((uint64_t)3 * 81 * 480 * 832 * 4));
	/* a batch of two needs more, not less */
	{
		struct nn_plan_bytes b2;

		wan_vae_plan(&c, NULL, &caps, 2, 21, 60, 104, &b2);
		CHECK(b2.activations > p21.activations);
	}
	return test_summary();
}
