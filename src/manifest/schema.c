/*
 * schema.c — the table of manifest job keys (see schema.h).  Defaults follow
 * diffusers' LTXPipeline.__call__ (pipelines/ltx/pipeline_ltx.py) where it
 * has the argument.  One row per key; document each in latentq-manifest(5).
 */
#include <string.h>

#include "core/util.h"
#include "manifest/schema.h"

static const struct manifest_key lora_fields[] = {
	{ "path", MANIFEST_PATH, NULL, "LoRA safetensors file (required)", NULL, 0 },
	{ "scale", MANIFEST_NUMBER, "1.0", "strength the LoRA is fused with", NULL, 0 },
	{ NULL, 0, NULL, NULL, NULL, 0 },
};

/* LTXVideoCondition's fields (pipelines/ltx/pipeline_ltx_condition.py):
 * image is required, frame_index and strength default as upstream. */
static const struct manifest_key condition_fields[] = {
	{ "image", MANIFEST_PATH, NULL, "PNG or JPEG of the condition (required)", NULL, 0 },
	{ "frame_index", MANIFEST_INT, "0", "video frame it conditions", NULL, 0 },
	{ "strength", MANIFEST_NUMBER, "1.0", "how strongly, 0 to 1", NULL, 0 },
	{ NULL, 0, NULL, NULL, NULL, 0 },
};

/* `second_stage:` (job.h struct job_second_stage): the recipe's
 * LTXLatentUpsamplePipeline and stage-2 LTXConditionPipeline arguments.
 * Keys without a default take the job's own value (job_config_from_json);
 * latent_upsampler, height and width are required. */
static const struct manifest_key second_stage_fields[] = {
	{ "latent_upsampler", MANIFEST_PATH, NULL, "latent upsampler folder (required)", NULL, 0 },
	{ "adain_factor", MANIFEST_NUMBER, "0", "AdaIN of the upsampled latents toward stage 1's, 0 to 1", NULL, 0 },
	{ "tone_map_compression_ratio", MANIFEST_NUMBER, "0", "tone mapping of the upsampled latents, 0 to 1", NULL, 0 },
	{ "height", MANIFEST_INT, NULL, "stage 2's height in pixels (required)", NULL, 0 },
	{ "width", MANIFEST_INT, NULL, "stage 2's width in pixels (required)", NULL, 0 },
	{ "num_inference_steps", MANIFEST_INT, NULL, "stage 2's schedule length; default the job's", NULL, 0 },
	{ "denoise_strength", MANIFEST_NUMBER, "0.4", "share of stage 2's schedule run, below 1", NULL, 0 },
	{ "guidance_scale", MANIFEST_NUMBER, NULL, "stage 2's guidance; default the job's", NULL, 0 },
	{ "guidance_rescale", MANIFEST_NUMBER, NULL, "stage 2's rescale; default the job's", NULL, 0 },
	{ "image_cond_noise_scale", MANIFEST_NUMBER, NULL, "stage 2's condition noise; default the job's", NULL, 0 },
	{ "decode_timestep", MANIFEST_NUMBER, NULL, "timestep stage 2 decodes at; default the job's", NULL, 0 },
	{ "decode_noise_scale", MANIFEST_NUMBER, NULL, "noise mixed in before decoding; default the job's", NULL, 0 },
	{ NULL, 0, NULL, NULL, NULL, 0 },
};

static const struct manifest_key mesh_fields[] = {
	{ "devices", MANIFEST_INT, "1", "devices the job runs on", NULL, 0 },
	{ "data", MANIFEST_INT, "1", "data-parallel axis", NULL, 0 },
	{ "context", MANIFEST_INT, "1", "context (sequence) parallel axis", NULL, 0 },
	{ "tensor", MANIFEST_INT, "1", "tensor-parallel axis", NULL, 0 },
	{ NULL, 0, NULL, NULL, NULL, 0 },
};

/* AutoencoderKLLTXVideo's tiling attributes, upstream's names (the decoder,
 * nn/ltxv_vae.c, owns their defaults and rules; test-ltxv-tiling checks the
 * two lists agree). */
static const struct manifest_key vae_tiling_fields[] = {
	{ "use_tiling", MANIFEST_BOOL, NULL, "spatial tiles", NULL, 0 },
	{ "use_framewise_decoding", MANIFEST_BOOL, NULL, "temporal tiles", NULL, 0 },
	{ "tile_sample_min_height", MANIFEST_INT, NULL, "tile height, pixels", NULL, 0 },
	{ "tile_sample_min_width", MANIFEST_INT, NULL, "tile width, pixels", NULL, 0 },
	{ "tile_sample_min_num_frames", MANIFEST_INT, NULL, "tile length, frames", NULL, 0 },
	{ "tile_sample_stride_height", MANIFEST_INT, NULL, "tile row stride, pixels", NULL, 0 },
	{ "tile_sample_stride_width", MANIFEST_INT, NULL, "tile column stride, pixels", NULL, 0 },
	{ "tile_sample_stride_num_frames", MANIFEST_INT, NULL, "temporal stride, frames", NULL, 0 },
	{ NULL, 0, NULL, NULL, NULL, 0 },
};

static const struct manifest_key keys[] = {
	{ "name", MANIFEST_STRING, NULL,
	  "job name, unique in the manifest; default job<N>", NULL,
	  MANIFEST_KEY_NOT_IN_DEFAULTS },
	{ "prompt", MANIFEST_STRING, NULL, "text to encode", NULL, 0 },
	{ "negative_prompt", MANIFEST_STRING, "\"\"",
	  "text guided away from", NULL, 0 },
	{ "prompt_embeds", MANIFEST_PATH, NULL,
	  "safetensors of prompt embeddings instead of a text encoder", NULL, 0 },
	{ "height", MANIFEST_INT, "512", "video height in pixels", NULL, 0 },
	{ "width", MANIFEST_INT, "704", "video width in pixels", NULL, 0 },
	{ "num_frames", MANIFEST_INT, "161", "video length in frames", NULL, 0 },
	{ "frame_rate", MANIFEST_NUMBER, "25", "frames per second", NULL, 0 },
	{ "num_inference_steps", MANIFEST_INT, "50", "denoising steps", NULL, 0 },
	{ "guidance_scale", MANIFEST_NUMBER, "3",
	  "classifier-free guidance scale", NULL, 0 },
	{ "guidance_rescale", MANIFEST_NUMBER, "0",
	  "rescale of the guided noise prediction", NULL, 0 },
	{ "decode_timestep", MANIFEST_NUMBER, "0",
	  "timestep the VAE decodes at", NULL, 0 },
	{ "decode_noise_scale", MANIFEST_NUMBER, "null",
	  "noise mixed in before decoding; null: decode_timestep", NULL, 0 },
	{ "seed", MANIFEST_U64, "\"0\"", "random seed", NULL, 0 },
	{ "seeds", MANIFEST_U64_LIST, NULL, "one job per seed", NULL, 0 },
	{ "latents", MANIFEST_PATH, NULL, "initial latents (safetensors)", NULL, 0 },
	{ "decode_noise", MANIFEST_PATH, NULL,
	  "decoder noise (safetensors)", NULL, 0 },
	{ "noise", MANIFEST_PATH, NULL,
	  "safetensors of random draws replacing latentq's (upstream names)",
	  NULL, 0 },
	{ "image", MANIFEST_PATH, NULL,
	  "PNG the video starts from (image-to-video)", NULL, 0 },
	{ "denoise_strength", MANIFEST_NUMBER, NULL,
	  "LTXConditionPipeline: share of the schedule run on noised latents",
	  NULL, 0 },
	{ "conditions", MANIFEST_CONDITIONS, NULL,
	  "LTXConditionPipeline: images the video is conditioned on",
	  condition_fields, 0 },
	{ "image_cond_noise_scale", MANIFEST_NUMBER, "0.15",
	  "noise put on strength-1 condition tokens each step", NULL, 0 },
	{ "second_stage", MANIFEST_SECOND_STAGE, NULL,
	  "two-stage recipe: upsample stage 1's latents and refine them",
	  second_stage_fields, 0 },
	/* LTX2Pipeline.__call__ (pipelines/ltx2/pipeline_ltx2.py): the
	 * audio+video guidance; LTX-Video jobs do not read these */
	{ "stg_scale", MANIFEST_NUMBER, "1.0",
	  "LTX-2: spatio-temporal guidance scale (0: no STG pass)", NULL, 0 },
	{ "modality_scale", MANIFEST_NUMBER, "3.0",
	  "LTX-2: modality-isolation guidance (1: no isolation pass)", NULL, 0 },
	{ "audio_guidance_scale", MANIFEST_NUMBER, "7.0",
	  "LTX-2: the audio stream's guidance_scale", NULL, 0 },
	{ "audio_stg_scale", MANIFEST_NUMBER, "1.0",
	  "LTX-2: the audio stream's stg_scale", NULL, 0 },
	{ "audio_modality_scale", MANIFEST_NUMBER, "3.0",
	  "LTX-2: the audio stream's modality_scale", NULL, 0 },
	{ "audio_guidance_rescale", MANIFEST_NUMBER, "0.7",
	  "LTX-2: the audio stream's guidance_rescale", NULL, 0 },
	{ "audio_scales_literal", MANIFEST_BOOL, "false",
	  "LTX-2: an audio scale of 0 means 0 (upstream: the video's)", NULL, 0 },
	{ "spatio_temporal_guidance_blocks", MANIFEST_INT_LIST, "[28]",
	  "LTX-2: transformer blocks the STG pass perturbs", NULL, 0 },
	{ "use_cross_timestep", MANIFEST_BOOL, "true",
	  "LTX-2: a2v/v2a modulation follows the other stream's sigma", NULL, 0 },
	/* WanPipeline (pipelines/wan/pipeline_wan.py): the scheduler's
	 * flow_shift, as UniPCMultistepScheduler.from_config(...,
	 * flow_shift=) sets it; absent: the scheduler config's */
	{ "flow_shift", MANIFEST_NUMBER, NULL,
	  "Wan: UniPC's flow_shift; default the scheduler config's", NULL, 0 },
	{ "model", MANIFEST_MODEL, NULL,
	  "diffusers pipeline folder, registered model name, or URL", NULL, 0 },
	{ "transformer", MANIFEST_PATH, NULL, "transformer folder override", NULL, 0 },
	{ "vae", MANIFEST_PATH, NULL, "VAE folder override", NULL, 0 },
	{ "text_encoder", MANIFEST_PATH, NULL, "text encoder folder override", NULL, 0 },
	{ "scheduler", MANIFEST_PATH, NULL, "scheduler folder override", NULL, 0 },
	{ "model_digest", MANIFEST_STRING, NULL,
	  "digest the model must match", NULL, 0 },
	{ "loras", MANIFEST_LORAS, NULL, "LoRAs fused at load", lora_fields, 0 },
	{ "max_sequence_length", MANIFEST_INT, "128", "prompt token limit", NULL, 0 },
	{ "truncate", MANIFEST_BOOL, "false",
	  "allow prompts longer than max_sequence_length", NULL, 0 },
	{ "mesh", MANIFEST_MESH, NULL, "device mesh", mesh_fields, 0 },
	{ "per_device_batch_size", MANIFEST_NUMBER, "1", "batch per device", NULL, 0 },
	{ "weight_streaming", MANIFEST_STRING, "\"auto\"",
	  "transformer blocks' weights streamed from host memory: auto, on or off",
	  NULL, 0 },
	{ "precision", MANIFEST_STRING, "\"f32\"",
	  "the transformer's matrix-product operands: f32, bf16 or f16", NULL, 0 },
	{ "output", MANIFEST_TEMPLATE, "\"{name}.mp4\"",
	  "MP4 path in the output folder", NULL, 0 },
	{ "frames", MANIFEST_TEMPLATE, NULL, "folder for PNG frames", NULL, 0 },
	{ "save_tensors", MANIFEST_TEMPLATE, NULL,
	  "safetensors of latents and video for parity checks", NULL, 0 },
	{ "vae_tiling", MANIFEST_TILING, NULL,
	  "tiled VAE decode: auto (absent), off, or a mapping", vae_tiling_fields, 0 },
	{ "max_attempts", MANIFEST_INT, "3", "failures before poisoning", NULL, 0 },
	{ "priority", MANIFEST_INT, "0", "queue order, higher first", NULL, 0 },
	{ "webhook", MANIFEST_STRING, NULL,
	  "URL sent a POST when the job ends", NULL, 0 },
};

size_t
manifest_key_count(void)
{
	return LQ_ARRAY_LEN(keys);
}

const struct manifest_key *
manifest_key_at(size_t i)
{
	LQ_ASSERT(i < LQ_ARRAY_LEN(keys));
	return &keys[i];
}

const struct manifest_key *
manifest_key_find(const char *name)
{
	for (size_t i = 0; i < LQ_ARRAY_LEN(keys); i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

const struct manifest_key *
manifest_key_field(const struct manifest_key *k, const char *name)
{
	if (k->fields == NULL)
		return NULL;
	for (const struct manifest_key *f = k->fields; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

const char *
manifest_key_suggest(const char *word, const char *const *names, size_t n)
{
	size_t len = strlen(word);
	if (len == 0 || len > 64)	/* edit distance is quadratic */
		return NULL;
	const char *best = NULL;
	int best_d = 0;
	for (size_t i = 0; i < n; i++) {
		int d = util_edit_distance(word, names[i]);
		if (best == NULL || d < best_d) {
			best = names[i];
			best_d = d;
		}
	}
	int limit = (int)(len / 3) > 2 ? (int)(len / 3) : 2;
	return best && best_d <= limit && best_d < (int)len ? best : NULL;
}

const char *
manifest_type_name(enum manifest_type type)
{
	switch (type) {
	case MANIFEST_STRING:
		return "a string";
	case MANIFEST_PATH:
		return "a path";
	case MANIFEST_MODEL:
		return "a model folder or name";
	case MANIFEST_TEMPLATE:
		return "an output path template";
	case MANIFEST_INT:
		return "an integer";
	case MANIFEST_NUMBER:
		return "a number";
	case MANIFEST_BOOL:
		return "true or false";
	case MANIFEST_U64:
		return "an unsigned 64-bit integer";
	case MANIFEST_U64_LIST:
		return "a list of unsigned 64-bit integers";
	case MANIFEST_INT_LIST:
		return "a list of integers";
	case MANIFEST_CONDITIONS:
		return "a list of {image, frame_index, strength} mappings";
	case MANIFEST_LORAS:
		return "a list of {path, scale} mappings";
	case MANIFEST_MESH:
		return "a mapping {devices, data, context, tensor}";
	case MANIFEST_SECOND_STAGE:
		return "a second_stage mapping";
	case MANIFEST_TILING:
		return "auto, off or a mapping of VAE tiling attributes";
	}
	return "?";
}
