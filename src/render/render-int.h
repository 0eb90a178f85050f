/*
 * render-int.h — what render.c and the LTX-2 render (ltx2.c) share: the
 * job being rendered, its parsed config and where it came from.  Private
 * to src/render/.
 */
#ifndef LQ_RENDER_RENDER_INT_H
#define LQ_RENDER_RENDER_INT_H

#include <cjson/cJSON.h>

#include "core/error.h"
#include "manifest/job.h"
#include "model/ref.h"
#include "render/render.h"
#include "store/store.h"

/* One job handed to a pipeline's render, every pointer borrowed. */
struct render_job_ctx {
	struct store *st;
	const struct store_job *job;
	const char *owner;
	const struct render_options *opt;
	const struct job_config *jc;	/* parsed from config */
	const cJSON *config;
	const char *base_dir;		/* the manifest's folder */
	const struct model_ref *ref;	/* the model, resolved (URLs fetched) */
};

/*
 * LTX2Pipeline.__call__ (diffusers pipelines/ltx2/pipeline_ltx2.py) for
 * one job of an LTX2Pipeline model: text-to-audio+video from
 * prompt_embeds, a checkpoint of both streams after every step, one MP4
 * per video with its AAC track.  Returns as render_job (render.h).
 */
enum lq_status render_ltx2(const struct render_job_ctx *c,
    struct lq_error *err);

#endif
