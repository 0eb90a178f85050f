/* dump.c — see dump.h. */
#include <stdlib.h>

#include "core/util.h"
#include "nn/dump.h"

enum lq_status
nn_dump_tensor(const struct nn_dump *d, struct gpu_cmd *cmd, const char *name,
    const struct gpu_tensor *t, struct lq_error *err)
{
	enum lq_status st;
	float *host;

	if (d == NULL || d->fn == NULL)
		return LQ_OK;
	st = gpu_cmd_submit(cmd, err);
	if (st != LQ_OK)
		return st;
	host = xmalloc(sizeof(float) * (size_t)gpu_tensor_numel(t));
	st = gpu_tensor_download_f32(gpu_cmd_ctx(cmd), t, host, err);
	if (st == LQ_OK)
		st = d->fn(d->ud, name, t->ndim, t->shape, host, err);
	free(host);
	gpu_cmd_begin(cmd);
	return st;
}

enum lq_status
nn_dump_host(const struct nn_dump *d, const char *name, int ndim,
    const int64_t *shape, const float *data, struct lq_error *err)
{
	if (d == NULL || d->fn == NULL)
		return LQ_OK;
	return d->fn(d->ud, name, ndim, shape, data, err);
}
