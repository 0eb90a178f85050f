/*
 * forward.c — `latentq forward`: run one model component (transformer,
 * vae-decoder, vae-encoder, latent-upsampler, text-encoder, vocoder,
 * audio-vae-decoder, connectors) on
 * named input tensors and write its outputs,
 * a debugging tool and the way to check latentq against another
 * implementation.  The work is nn_forward_run (src/nn/forward.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/error.h"
#include "core/util.h"
#include "nn/forward.h"
#include "sampler/rng.h"

/* The decoder's injected noise from latentq's RNG, as the render code draws
 * it: draw number n (call order) is normal(seed, 0x100 + n, i) over the
 * [H, W] field. */
struct seeded_noise {
	uint64_t seed;
	int draws;
};

static enum lq_status
seeded_fill(void *ud, const char *module, int k, int height, int width,
    float *out, struct lq_error *err)
{
	struct seeded_noise *sn = ud;

	(void)module;
	(void)k;
	(void)err;
	rng_fill_normal(sn->seed, RNG_PURPOSE_INJECTED_NOISE(sn->draws), 0, out,
	    (size_t)height * (size_t)width);
	sn->draws++;
	return LQ_OK;
}

static int
cmd_forward_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"model", required_argument, NULL, 'm'},
		{"component", required_argument, NULL, 'c'},
		{"inputs", required_argument, NULL, 'i'},
		{"out", required_argument, NULL, 'o'},
		{"dump-intermediates", no_argument, NULL, 'D'},
		{"seed", required_argument, NULL, 's'},
		{"weight-streaming", required_argument, NULL, 'W'},
		{"precision", required_argument, NULL, 'P'},
		{"set", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct nn_forward_opts fo = { 0 };
	const char **inputs = xcalloc((size_t)argc + 1, sizeof(*inputs));
	const char **sets = xcalloc((size_t)argc + 1, sizeof(*sets));
	struct ltx2_connectors_call call;
	struct ltx2_transformer_call tcall;
	int nsets = 0;
	const char *component = NULL;
	struct seeded_noise sn = { 0, 0 };
	struct ltxv_vae_noise seeded = { seeded_fill, &sn };
	struct ltxv_vae_tiling tiling;
	char *end;
	struct lq_error err;
	enum lq_status st;
	int c;

	ltxv_vae_tiling_init(&tiling);
	ltx2_connectors_call_init(&call);
	ltx2_transformer_call_init(&tcall);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+m:c:i:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'm': fo.model = optarg; break;
		case 'c': component = optarg; break;
		case 'i': inputs[fo.ninputs++] = optarg; break;
		case 'o': fo.out = optarg; break;
		case 'D': fo.dump_intermediates = 1; break;
		case 's':
			errno = 0;
			sn.seed = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end != '\0' || optarg[0] == '-') {
				free(inputs);
				free(sets);
				return cmd_misuse(&cmd_forward_entry,
				    "forward: --seed wants an unsigned integer, not \"%s\"",
				    optarg);
			}
			fo.noise_fallback = &seeded;
			break;
		case 'W':
			if (nn_plan_choice_parse(optarg,
			    &fo.weight_streaming) != 0) {
				free(inputs);
				free(sets);
				return cmd_misuse(&cmd_forward_entry,
				    "forward: --weight-streaming is auto, on or "
				    "off, not \"%s\"", optarg);
			}
			break;
		case 'P':
			if (gpu_precision_parse(optarg, &fo.precision) != 0) {
				char vals[32];
				free(inputs);
				free(sets);
				return cmd_misuse(&cmd_forward_entry,
				    "forward: --precision is %s, not \"%s\"",
				    gpu_precision_list(vals, sizeof(vals)), optarg);
			}
			break;
		case 'S':
			/* --set NAME=VALUE: applied once the component is
			 * known (VAE tiling attributes, connector arguments) */
			sets[nsets++] = optarg;
			break;
		case 'h':
			cmd_usage(&cmd_forward_entry, stdout);
			free(inputs);
			free(sets);
			return 0;
		default:
			free(inputs);
			free(sets);
			return cmd_misuse(&cmd_forward_entry, "forward: bad option %s",
			    argv[optind - 1]);
		}
	}
	if (optind != argc) {
		free(inputs);
		free(sets);
		return cmd_misuse(&cmd_forward_entry, "forward: unexpected argument %s",
		    argv[optind]);
	}
	if (fo.model == NULL || component == NULL || fo.out == NULL ||
	    fo.ninputs == 0) {
		free(inputs);
		free(sets);
		return cmd_misuse(&cmd_forward_entry,
		    "forward: --model, --component, --inputs and --out are required");
	}
	if (nn_component_parse(component, &fo.component) != 0) {
		free(inputs);
		free(sets);
		return cmd_misuse(&cmd_forward_entry, "forward: unknown component "
		    "\"%s\" (one of %s)", component, nn_component_names());
	}
	if (fo.precision != GPU_PRECISION_F32 &&
	    fo.component != NN_COMPONENT_TRANSFORMER) {
		free(inputs);
		free(sets);
		return cmd_misuse(&cmd_forward_entry, "forward: --precision %s "
		    "is the transformer's (--component transformer), not %s's",
		    gpu_precision_name(fo.precision), component);
	}
	if (nsets > 0 && fo.component != NN_COMPONENT_VAE_DECODER &&
	    fo.component != NN_COMPONENT_VAE_ENCODER &&
	    fo.component != NN_COMPONENT_CONNECTORS &&
	    fo.component != NN_COMPONENT_TRANSFORMER) {
		free(inputs);
		free(sets);
		return cmd_misuse(&cmd_forward_entry, "forward: --set sets VAE "
		    "tiling attributes (--component vae-decoder or vae-encoder), "
		    "the connectors' padding_side and scale_factor "
		    "(--component connectors) or the LTX-2 transformer's "
		    "use_cross_timestep, isolate_modalities and "
		    "spatio_temporal_guidance_blocks (--component transformer)");
	}
	for (int i = 0; i < nsets; i++) {
		/* NAME=VALUE: a tiling attribute (ltxv_vae_tiling_set names
		 * them) or a connectors argument (ltx2_connectors_call_set) */
		const char *eq = strchr(sets[i], '=');
		char *name;

		if (eq == NULL || eq == sets[i]) {
			int rc = cmd_misuse(&cmd_forward_entry,
			    "forward: --set wants NAME=VALUE (e.g. "
			    "use_tiling=true, padding_side=right), not \"%s\"",
			    sets[i]);

			free(inputs);
			free(sets);
			return rc;
		}
		name = xstrndup(sets[i], (size_t)(eq - sets[i]));
		error_clear(&err);
		st = fo.component == NN_COMPONENT_CONNECTORS ?
		    ltx2_connectors_call_set(&call, name, eq + 1, &err) :
		    fo.component == NN_COMPONENT_TRANSFORMER ?
		    ltx2_transformer_call_set(&tcall, name, eq + 1, &err) :
		    ltxv_vae_tiling_set(&tiling, name, eq + 1, &err);
		free(name);
		if (st != LQ_OK) {
			free(inputs);
			free(sets);
			error_print(&err, stderr);
			return EXIT_USAGE;
		}
		if (fo.component == NN_COMPONENT_CONNECTORS)
			fo.connectors_call = &call;
		else if (fo.component == NN_COMPONENT_TRANSFORMER) {
			if (fo.ltx2_call == NULL)
				fo.ltx2_call_first = sets[i];
			fo.ltx2_call = &tcall;
		} else
			fo.vae_tiling = &tiling;
	}
	free(sets);
	fo.inputs = inputs;
	fo.device = g->device;
	fo.report = g->verbose >= 1 ? stderr : NULL;
	error_clear(&err);
	st = nn_forward_run(&fo, &err);
	free(inputs);
	if (st == LQ_OK)
		return 0;
	error_print(&err, stderr);
	return cmd_exit_for_error(&err);
}

const struct cmd_entry cmd_forward_entry = {
	.name = "forward",
	.usage = "--model DIR --component "
	    "transformer|vae-decoder|vae-encoder|latent-upsampler|text-encoder|vocoder|audio-vae-decoder|connectors "
	    "--inputs FILE [--inputs FILE...] --out FILE [--dump-intermediates] [--seed N] "
	    "[--weight-streaming auto|on|off] [--precision f32|bf16|f16] "
	    "[--set NAME=VALUE...]",
	.summary = "run one model component on named tensors",
	.exec = cmd_forward_exec,
};
