/*
 * synth.h — `latentq model synth`: a complete diffusers-layout LTX-Video
 * model with deterministic random weights.
 *
 * The folder holds model_index.json (LTXPipeline), transformer/, vae/,
 * text_encoder/ (T5EncoderModel), tokenizer/ (T5Tokenizer: spiece.model,
 * tokenizer_config.json, special_tokens_map.json) and scheduler/
 * (FlowMatchEulerDiscreteScheduler, LTX 0.9.0-style dynamic shifting).
 * Configs carry every key diffusers / transformers save_pretrained writes
 * (diffusers_*_to_json); the weights are exactly the tensors of the
 * expected tables (expected.h; the VAE encoder included, T5's tied
 * encoder.embed_tokens left out as save_pretrained does), F32.
 *
 * The tokenizer's spiece.model is compiled into the binary: a 160-piece
 * unigram SentencePiece model with T5's special ids, reproducible with
 * tools/spm/make-spiece.sh from tools/spm/corpus.txt.
 *
 * Weights: tensor `name` draws from a splitmix64 stream seeded by
 * (seed, FNV-1a of name), Box-Muller normals; linear/conv weights
 * N(0, 1/fan_in), biases 0.02 N, norm weights 1 + 0.1 N, scale_shift_table
 * N / sqrt(dim), embeddings N(0, 1), VAE per_channel_scale 0.2 N,
 * latents_mean 0.2 N, latents_std 0.5 + U(0, 1), timestep_scale_multiplier
 * 1000.  Same (preset, seed) -> byte-identical files.
 *
 * Presets ("tiny", "small"): tiny has the goldens' shapes (transformer
 * 2 layers x 2 heads x 16, VAE 8/16/24 channels with compression 16/4,
 * T5 d_model 32); small has the demo model's (4 layers x 4 heads x 32,
 * VAE 32/64 with compression 8/2, T5 d_model 64).
 *
 * Released checkpoints' dimensions (synth.c cites the sources):
 *   "0.9.1-2b"   transformer 28 layers x 2048 (32 heads x 64), caption 4096;
 *                the 0.9.1 VAE (128 latent channels, decoder 256/512/1024,
 *                timestep conditioning, noise injection; 32x / 8x); T5-XXL
 *   "0.9.5-2b"   the same transformer; the 0.9.5 VAE (no noise injection)
 *   "0.9.7-13b"  transformer 48 layers x 4096 (32 heads x 128), cross
 *                attention 4096; the 0.9.5 VAE; T5-XXL
 * With opts: every tensor in F32, F16 or BF16,
 * "component.key=JSON" overrides of any config.json key (so a test keeps
 * the real geometry at a narrow width), and `sparse`: every weight is a
 * hole in its file (zeros, no disk), enough for preflight, which reads
 * headers only.
 *
 * Family "ltx2" (model_synth_ex): an LTX2Pipeline folder — transformer/,
 * connectors/, vae/ (AutoencoderKLLTX2Video), audio_vae/ (with its
 * encoder), vocoder/ (LTX2Vocoder, or LTX2VocoderWithBWE), scheduler/ and
 * model_index.json with text_encoder / tokenizer [null, null] (jobs give
 * prompt_embeds of caption_channels 32 x text_proj_in_factor 3).  Weights
 * are the expected_ltx2_* tables filled as above (SnakeBeta alpha / beta
 * 0.1 N, learnable_registers U(-1, 1)); the anti-aliasing filters are
 * upstream's Kaiser-sinc, the BWE's STFT basis a Hann-windowed DFT and its
 * mel matrix random rows summing to 1.  Presets: "tiny" (the goldens'
 * transformer, VAE and audio VAE), "demo" (LTX-2's geometry, narrow:
 * VAE 32x / 8x, 4 blocks of 128 + 64), "demo-bwe" (demo with the BWE
 * vocoder, 48 kHz).  Every preset's vocoder gives mel_hop_length /
 * sample_rate seconds of waveform per mel frame, so renders' audio lasts
 * as long as their video.  sets name transformer, connectors, vae,
 * audio_vae or vocoder and a key of the preset's config; dtype and sparse
 * as above.
 */
#ifndef LQ_MODEL_SYNTH_H
#define LQ_MODEL_SYNTH_H

#include <stdint.h>

#include "core/error.h"
#include "model/diffusers.h"
#include "model/safetensors.h"

/* Fills the configs of a preset; returns -1 for an unknown family/preset. */
int model_synth_preset(const char *family, const char *preset,
    struct ltxv_transformer_config *transformer, struct ltxv_vae_config *vae,
    struct t5_config *text_encoder);

struct model_synth_opts {
	enum st_dtype dtype;		/* ST_F32, ST_F16 or ST_BF16 */
	const char *const *sets;	/* "transformer.num_layers=1" ... */
	size_t nsets;
	int sparse;			/* weights as holes (zeros) */
};

/*
 * Writes the model into `dir` (created if missing; must be empty if it
 * exists).  Errors: LQ-MODEL-030 unknown family or preset, LQ-MODEL-031
 * folder not empty / cannot be created or written (err names the path).
 * On failure the partly written folder is left for inspection.
 */
enum lq_status model_synth(const char *dir, const char *family, const char *preset,
    uint64_t seed, struct lq_error *err);
/* model_synth with options; LQ-MODEL-032 for a bad --set (naming it),
 * upstream's config codes (LQ-MODEL-003/-004/-006) for a result upstream
 * refuses. */
enum lq_status model_synth_ex(const char *dir, const char *family,
    const char *preset, uint64_t seed, const struct model_synth_opts *opts,
    struct lq_error *err);

#endif
