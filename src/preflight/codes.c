/*
 * codes.c — the table of preflight codes.  A code is stable: once released
 * its meaning never changes; a retired rule keeps its number unused.  Every
 * row is documented in man/latentq-preflight.7 with a failing and a fixed
 * example, and has a failing manifest under tests/preflight/cases/ (a test
 * checks both).
 */
#include <string.h>

#include "core/util.h"
#include "preflight/preflight.h"

static const struct preflight_code codes[] = {
	/* manifest: ranges and required keys (types are the loader's) */
	{ "LQ-CFG-001", "error", "a required key is missing (model)" },
	{ "LQ-CFG-002", "error", "a value is outside its range" },
	{ "LQ-CFG-003", "error",
	  "the latents and decode_noise files are valid safetensors" },
	/* geometry */
	{ "LQ-GEOM-001", "error|warning",
	  "height is a multiple of lcm(32, VAE spatial compression x patch)" },
	{ "LQ-GEOM-002", "error|warning",
	  "width is a multiple of lcm(32, VAE spatial compression x patch)" },
	{ "LQ-GEOM-003", "error|warning",
	  "num_frames is temporal compression x k + 1" },
	{ "LQ-GEOM-004", "error", "height, width and num_frames are positive" },
	{ "LQ-GEOM-005", "error",
	  "the video fits the positional embedding's range" },
	/* sampling */
	{ "LQ-SAMP-001", "error", "num_inference_steps >= 1" },
	{ "LQ-SAMP-002", "error",
	  "the sampler accepts the schedule (scheduler_set_timesteps)" },
	{ "LQ-SAMP-003", "error",
	  "guidance_scale >= 1 (1 disables classifier-free guidance)" },
	{ "LQ-SAMP-004", "error", "guidance_rescale is in [0, 1]" },
	{ "LQ-SAMP-005", "warning",
	  "guidance_rescale has no effect without guidance" },
	/* the scheduler config, as the sampler parses it (sampler/scheduler.h) */
	{ "LQ-SCHED-001", "error", "scheduler_config.json keys have their types" },
	{ "LQ-SCHED-002", "error", "scheduler_config.json values are in range" },
	{ "LQ-SCHED-004", "error",
	  "no unimplemented scheduler option (Karras, exponential, beta sigmas, "
	  "stochastic sampling, inverted sigmas) is on" },
	/* prompt */
	{ "LQ-PROMPT-001", "error",
	  "the prompt fits max_sequence_length (or truncate: true)" },
	{ "LQ-PROMPT-002", "warning",
	  "a prompt was truncated (truncate: true); the dropped text is named" },
	{ "LQ-PROMPT-003", "error",
	  "exactly one of prompt / prompt_embeds, and prompt needs a text encoder" },
	{ "LQ-PROMPT-004", "error", "the prompt_embeds file is a valid safetensors" },
	{ "LQ-PROMPT-005", "error",
	  "prompt_embeds is [B, T, caption_channels], its mask [B, T]" },
	{ "LQ-PROMPT-006", "error",
	  "guidance needs negative_prompt_embeds or a text encoder" },
	/* batch and mesh */
	{ "LQ-MESH-001", "error",
	  "per_device_batch_size x mesh.data is a positive integer" },
	{ "LQ-MESH-002", "error",
	  "data x context x tensor == devices, at most one axis -1" },
	{ "LQ-MESH-003", "error", "an inferred (-1) axis is a positive integer" },
	{ "LQ-MESH-004", "error", "the context degree divides the video tokens" },
	{ "LQ-MESH-005", "error",
	  "the context and tensor degrees divide the attention heads" },
	{ "LQ-MESH-006", "error", "the batch divides across the data axis" },
	{ "LQ-MESH-007", "error", "the mesh has no more devices than the host" },
	/* model */
	{ "LQ-MDL-001", "error", "the model folder exists" },
	{ "LQ-MDL-002", "error", "the model's configs are valid" },
	{ "LQ-MDL-003", "error", "every file the model names exists" },
	{ "LQ-MDL-004", "error", "every safetensors header is valid (not truncated)" },
	{ "LQ-MDL-005", "error", "every tensor the configs imply is present" },
	{ "LQ-MDL-006", "error", "every tensor has the shape and dtype the config implies" },
	{ "LQ-MDL-007", "error", "no tensor is unexpected" },
	{ "LQ-MDL-008", "error",
	  "VAE latent_channels == transformer in_channels == out_channels" },
	{ "LQ-MDL-009", "error",
	  "text encoder d_model == transformer caption_channels" },
	{ "LQ-MDL-010", "error",
	  "an extra component (latent upsampler) agrees with its weights and the VAE" },
	{ "LQ-MDL-011", "error", "the model matches the pinned model_digest" },
	/* LoRA */
	{ "LQ-LORA-001", "error", "the LoRA file is a readable safetensors" },
	{ "LQ-LORA-002", "error", "every lora_A has its lora_B and the reverse" },
	{ "LQ-LORA-003", "error", "each module's ranks agree (lora_A rows, lora_B columns, metadata r)" },
	{ "LQ-LORA-004", "error", "every key is a LoRA tensor of an accepted form" },
	{ "LQ-LORA-005", "error", "every LoRA module is a module of the transformer" },
	{ "LQ-LORA-006", "error", "lora_B @ lora_A fits the module's weight [out, in]" },
	{ "LQ-LORA-007", "error", "alpha and the adapter metadata are valid" },
	/* device */
	{ "LQ-DEV-001", "error",
	  "estimated peak device memory fits the heap with a margin" },
	{ "LQ-DEV-002", "error",
	  "no single tensor exceeds the device's largest buffer" },
	{ "LQ-DEV-003", "error", "the device has the features the job needs" },
	/* output */
	{ "LQ-OUT-001", "error", "output paths stay inside the output folder" },
	{ "LQ-OUT-002", "error", "output paths are relative (unless allowed)" },
	{ "LQ-OUT-003", "error", "no two jobs write the same file" },
	{ "LQ-OUT-004", "error",
	  "output and save_tensors name files, not folders" },
	{ "LQ-OUT-005", "error",
	  "output folders stay inside the output folder once symlinks are resolved" },
};

size_t
preflight_code_count(void)
{
	return LQ_ARRAY_LEN(codes);
}

const struct preflight_code *
preflight_code_at(size_t i)
{
	LQ_ASSERT(i < LQ_ARRAY_LEN(codes));
	return &codes[i];
}

const struct preflight_code *
preflight_code_find(const char *code)
{
	for (size_t i = 0; i < LQ_ARRAY_LEN(codes); i++)
		if (strcmp(codes[i].code, code) == 0)
			return &codes[i];
	return NULL;
}
