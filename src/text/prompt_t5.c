/*
 * prompt_t5.c — the text-encoder interface of prompt.h over nn/t5 (kept
 * apart so code using prompt.c with another encoder does not link the GPU).
 */
#include "text/prompt.h"

#include "nn/t5.h"

static enum lq_status
t5_iface_forward(void *impl, const int64_t *input_ids, int B, int T,
    float *out, struct lq_error *err)
{
	/* LTXPipeline._get_t5_prompt_embeds: text_encoder(ids)[0], no mask. */
	return t5_encoder_forward(impl, input_ids, NULL, B, T, out, err);
}

struct text_encoder_iface
text_encoder_from_t5(struct t5_encoder *enc, const char *digest)
{
	struct text_encoder_iface it = {
		.d_model = t5_encoder_config(enc)->d_model,
		.digest = digest,
		.forward = t5_iface_forward,
		.impl = enc,
	};
	return it;
}
