/*
 * forward_t5.h — the text-encoder part of nn_forward_run, in its own file
 * because nn/t5.h and model/diffusers.h both define `struct t5_config`.
 * Private to src/nn/forward*.c.
 */
#ifndef LQ_NN_FORWARD_T5_H
#define LQ_NN_FORWARD_T5_H

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"

/*
 * Runs the T5 encoder of folder `dir` on input_ids [B, L] (and
 * attention_mask [B, L] when present) from `files` (first file holding a
 * name wins) and adds last_hidden_state [B, L, d_model] to `w`.
 */
enum lq_status nn_forward_text_encoder(struct gpu_ctx *ctx, const char *dir,
    const struct st_file *const *files, int nfiles, struct st_writer *w,
    struct lq_error *err);

#endif
