/*
 * dump.h — handing named intermediate tensors of a model forward to the
 * caller (`latentq forward --dump-intermediates`, parity tests).
 *
 * Names are the upstream module paths that diffusers forward hooks report
 * (e.g. "transformer_blocks.0.attn1", "decoder.up_blocks.1").  Dumping is a
 * debugging path: each dumped tensor ends the current command recording,
 * waits for it and downloads, so it is slow but leaves the model's results
 * unchanged.
 *
 * Ownership: `data` passed to the callback is borrowed for the call only.
 */
#ifndef LQ_NN_DUMP_H
#define LQ_NN_DUMP_H

#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"

struct nn_dump {
	/* Receives one float32 row-major tensor; a non-OK return aborts the
	 * forward with that error. */
	enum lq_status (*fn)(void *ud, const char *name, int ndim,
	    const int64_t *shape, const float *data, struct lq_error *err);
	void *ud;
};

/*
 * Submits `cmd` (waiting for it), downloads the contiguous tensor `t`,
 * passes it to d->fn under `name`, then begins a new recording on `cmd`.
 * No-op returning LQ_OK when d is NULL.
 */
enum lq_status nn_dump_tensor(const struct nn_dump *d, struct gpu_cmd *cmd,
    const char *name, const struct gpu_tensor *t, struct lq_error *err);

/* Passes a host tensor to d->fn; no-op when d is NULL. */
enum lq_status nn_dump_host(const struct nn_dump *d, const char *name,
    int ndim, const int64_t *shape, const float *data, struct lq_error *err);

#endif
