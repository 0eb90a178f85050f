/*
 * forward_t5_none.c — nn_forward_text_encoder while the T5 encoder
 * (src/nn/t5.c, the text module's) is not part of this build.
 */
#include "nn/forward_t5.h"

enum lq_status
nn_forward_text_encoder(struct gpu_ctx *ctx, const char *dir,
    const struct st_file *const *files, int nfiles, struct st_writer *w,
    struct lq_error *err)
{
	(void)ctx;
	(void)files;
	(void)nfiles;
	(void)w;
	error_set(err, LQ_FAILED, "LQ-NN-TEXT",
	    "the text encoder is not built into this latentq yet (%s)", dir);
	error_set_hint(err, "run the transformer and vae-decoder components; "
	    "T5 arrives with the text module");
	return LQ_FAILED;
}
