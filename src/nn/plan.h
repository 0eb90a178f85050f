/*
 * plan.h — the memory plan: what a render of one job allocates, in bytes,
 * on the device and on the host, computed from configs, safetensors
 * headers and a `struct device_caps` only (no device, no weights read), so
 * preflight, render and `latentq forward -v` ask the same functions.
 *
 * Each component's own function lives in the file that allocates its
 * memory and is the function that file sizes its allocations with:
 *   nn_weights_plan        nn/weights.c     packed weight buffers
 *   ltxv_transformer_plan  nn/ltxv_transformer.c  (pool of _reserve)
 *   ltxv_vae_plan          nn/ltxv_vae.c    (pool of _reserve, tiles)
 *   t5_encoder_plan        nn/t5.c          (per-tensor buffers, pool)
 *   ltx2_transformer_plan  nn/ltx2_transformer.c  (pool of _forward)
 *   ltx2_connectors_plan   nn/ltx2_connectors.c   (pool of _forward)
 *   ltx2_audio_vae_plan    nn/ltx2_audio_vae.c    (pool of _decode)
 *   ltx2_vocoder_plan      nn/ltx2_vocoder.c      (pool of _forward)
 *   wan_vae_plan           nn/wan_vae.c     (pool of the chunked decode:
 *                          post_quant_conv, feature caches, one chunk)
 * nn_plan_render (plan.c) puts them together in the order render.c loads
 * and frees them, chooses VAE tiling and weight streaming, and names the
 * smallest change that makes a job fit; nn_plan_ltx2 does the same for
 * render/ltx2.c (no tiling or streaming choices there yet).
 *
 * Bytes are what latentq asks Vulkan for (buffer sizes rounded as
 * gpu_buffer_create rounds them); a driver's own rounding and the few KiB
 * of the context (a dummy buffer; the 32 MiB staging buffer on devices
 * whose memory is not host-visible, counted in `staging`) come on top.
 *
 * Ownership: every struct here is plain data owned by its declarer; the
 * plan's strings are fixed arrays.  Functions are pure: same inputs, same
 * plan, nothing allocated that outlives the call.
 */
#ifndef LQ_NN_PLAN_H
#define LQ_NN_PLAN_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "gpu/caps.h"
#include "model/diffusers.h"
#include "nn/ltxv_vae.h"
#include "nn/weights.h"

struct st_set;

/* One component's bytes at the moment it runs. */
struct nn_plan_bytes {
	uint64_t weights;	/* device: weight buffers held at once */
	uint64_t activations;	/* device: the activation pool's capacity */
	uint64_t io;		/* device: input/output buffers its caller makes */
	uint64_t host;		/* host heap it allocates (mmapped weights excluded) */
	uint64_t largest;	/* largest single tensor it binds, bytes */
	char largest_what[192];	/* which tensor that is */
};

/* weights + activations + io */
uint64_t nn_plan_bytes_device(const struct nn_plan_bytes *b);

/* How the transformer's weights are held (issue 12 item 4). */
enum nn_weight_streaming {
	NN_WEIGHTS_RESIDENT = 0,	/* all blocks on the device */
	NN_WEIGHTS_STREAMED = 1,	/* two blocks resident, double-buffered */
};

/* auto / off / on, as the manifest writes a choice (weight_streaming). */
enum nn_plan_choice {
	NN_PLAN_AUTO = 0,
	NN_PLAN_OFF = 1,
	NN_PLAN_ON = 2,
};

/*
 * The weight-streaming choice for a transformer phase that needs
 * `resident_phase_bytes` on the device with every weight resident: ON
 * streams, OFF does not, AUTO streams exactly when that exceeds `budget`
 * (0: no budget, never).  nn_plan_render and `latentq forward` ask this.
 */
enum nn_weight_streaming nn_plan_choose_streaming(enum nn_plan_choice c,
    uint64_t resident_phase_bytes, uint64_t budget);

/* "auto", "off", "on". */
const char *nn_plan_choice_name(enum nn_plan_choice c);
/* Parses one of those names; -1 for anything else (NULL included). */
int nn_plan_choice_parse(const char *s, enum nn_plan_choice *out);

/*
 * A component's weights as the loader lays them out, from headers only
 * (nn_weights_plan): all resident, and with its blocks streamed
 * (streamed.groups == 0 for a component that does not stream, e.g. the
 * VAE; ltxv_transformer_weights_layout fills both for the transformer).
 */
struct nn_weights_layout {
	struct nn_weights_bytes resident, streamed;
};

/* A job, as the plan needs it. */
struct nn_plan_request {
	const struct ltxv_transformer_config *transformer;
	const struct ltxv_vae_config *vae;
	/* NULL when the job gives prompt_embeds (no text encoder runs) */
	const struct t5_config *text_encoder;
	/* weights from headers (nn_weights_plan; "decoder." for the VAE,
	 * "transformer_blocks." as the transformer's block prefix); NULL
	 * counts no weights */
	const struct nn_weights_layout *w_transformer, *w_vae;
	const struct st_set *text_set;	/* the text encoder's headers */
	int batch;			/* videos (job_batch) */
	int guidance;			/* 1: cond + uncond rows (guidance_scale > 1) */
	/* the mesh's data and context degrees (<= 1: 1; doc/mesh.md): each
	 * device's transformer holds rows / data rows of tokens / context
	 * tokens (rounded up); text encoder and VAE run on one device */
	int data, context;
	int num_frames, height, width;	/* pixels */
	int max_sequence_length;	/* text tokens T */
	/* vae_tiling: AUTO = tile only when untiled does not fit; ON uses
	 * `tiling` as given (its switches set by the caller) */
	enum nn_plan_choice vae_tiling;
	struct ltxv_vae_tiling tiling;
	enum nn_plan_choice weight_streaming;
	const struct device_caps *caps;	/* NULL: no budget (everything fits) */
	double memory_margin;		/* of the heap kept free; <= 0: 0.10 */
};

enum nn_plan_phase {
	NN_PHASE_ENCODE_TEXT = 0,
	NN_PHASE_DENOISE,
	NN_PHASE_DECODE,
	NN_PHASE_COUNT,
};

/* "encode-text", "denoise", "decode" (render's phase names). */
const char *nn_plan_phase_name(enum nn_plan_phase p);

struct nn_plan {
	struct nn_plan_bytes text_encoder, transformer, vae;
	/* an LTX-2 plan (nn_plan_ltx2): text_encoder is unused, the
	 * connectors run in encode-text, the audio VAE and the vocoder in
	 * decode beside the video VAE (vae) */
	int ltx2;
	struct nn_plan_bytes connectors, audio_vae, vocoder;
	uint64_t phase_device[NN_PHASE_COUNT];	/* device bytes per phase */
	uint64_t peak_device_bytes;
	enum nn_plan_phase peak_phase;
	uint64_t host_bytes;		/* largest host heap of a phase, + latents */
	uint64_t budget;		/* heap less the margin; 0 = none */
	int vae_tiled;			/* tiling chosen (tiling below) */
	struct ltxv_vae_tiling tiling;
	int vae_tile[3];		/* latent tile decoded at once */
	enum nn_weight_streaming streaming;
	int fits;			/* peak <= budget (1 without caps) */
	/* when !fits: the smallest change that would fit ("" if none found) */
	char change_key[32];		/* manifest key: vae_tiling, num_frames... */
	char change[320];		/* "vae_tiling: auto", "num_frames: 57" */
};

/*
 * Plans the job: each component's bytes, the phases in render.c's order
 * (encode-text: text encoder alone; denoise: transformer; decode: VAE),
 * the choices for vae_tiling / weight_streaming left AUTO (the cheapest
 * that fits: untiled and resident first), and when it does not fit, the
 * smallest change: a choice the job forbids (vae_tiling / weight_streaming
 * set off), then prompt_embeds when only the text encoder is too large,
 * then the largest num_frames on the VAE's grid that fits, then height /
 * width.  Pure; never fails (a config it cannot plan gives zeros).
 */
void nn_plan_render(const struct nn_plan_request *req, struct nn_plan *out);

/* An LTX-2 job (render/ltx2.c), as the plan needs it. */
struct nn_plan_ltx2_request {
	const struct diffusers_ltx2_model *model;	/* audio VAE, vocoder,
							 * connectors configs */
	const struct ltx2_transformer_config *transformer;
	const struct ltxv_vae_config *vae;
	/* weights from headers (nn_weights_plan, all resident; "decoder."
	 * for both VAEs); NULL counts none */
	const struct nn_weights_layout *w_transformer, *w_vae, *w_audio_vae,
	    *w_vocoder, *w_connectors;
	int batch;			/* videos: the embeddings' batch */
	int guidance;			/* CFG rows (2B) */
	int use_cross_timestep;
	int num_frames, height, width;	/* pixels */
	double frame_rate;		/* the audio's length */
	int max_sequence_length;	/* text tokens T */
	const struct device_caps *caps;	/* NULL: no budget */
	double memory_margin;
};

/*
 * Plans an LTX-2 job in render/ltx2.c's order, each component alone on
 * the device: encode-text the connectors (on the CFG rows), denoise the
 * dual-stream transformer (its largest call: the CFG rows), decode the
 * audio VAE, then the vocoder (the mel kept between them), then the video
 * VAE (untiled: the LTX-2 render does not tile).  When it does not fit,
 * the change is the largest num_frames on the VAE's grid that fits, then
 * height / width.  Pure; never fails (zeros for a request it cannot
 * plan).
 */
void nn_plan_ltx2(const struct nn_plan_ltx2_request *req, struct nn_plan *out);

/*
 * The plan as JSON (latentq preflight --json, the render's "plan"
 * event): {"peak_device_bytes", "peak_phase", "host_bytes",
 * "budget_bytes", "fits", "vae_tiling": {"use_tiling", ...} or false,
 * "weight_streaming": "resident"|"streamed", "phases": {...},
 * "components": {"transformer": {"weights", "activations", "io", "host",
 * "largest"}, ...}, "change": "..."}.  Caller frees.
 */
cJSON *nn_plan_to_json(const struct nn_plan *p);

#endif
