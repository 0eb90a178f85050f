/*
 * gen-models.h — test fixtures for preflight, written at test time so no
 * binary model is committed: under DIR, models/<name>/ (diffusers layout,
 * configs from the typed configs, zero F32 weights shaped by
 * model/expected.h, the demo T5 tokenizer from tests/data/text) and LoRA /
 * prompt_embeds files.  "good" has VAE compression 32 spatial / 8 temporal,
 * transformer patch 1, 4 heads, in/out 8, caption 16; the others break one
 * thing each (see gen-models.c).  Aborts on any failure (a fixture bug).
 */
#ifndef LQ_TESTS_PREFLIGHT_GEN_MODELS_H
#define LQ_TESTS_PREFLIGHT_GEN_MODELS_H

void pfgen_generate(const char *dir, const char *top_srcdir);

#endif
