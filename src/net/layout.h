/*
 * layout.h — downloading a diffusers-layout folder named by a URL (a job's
 * `model:` or a component override such as `vae:`, with --allow-download)
 * into its cache folder, model_ref_cache_dir (model/ref.h), through
 * net_fetch: Range resume of .part files, retries with back-off, atomic
 * renames.
 *
 * There is no directory listing in a Hugging Face style .../resolve/main/
 * layout (mirrors serve files only), so the folder is crawled the way
 * diffusers' from_pretrained finds its files: model_index.json, then for
 * each component it lists the files diffusers_component_layout
 * (model/diffusers.h) names — its config, its other required and optional
 * files (an optional one the server answers 404 for is skipped), and its
 * weights: the "<weights>.safetensors.index.json" shard index and every
 * shard its weight_map names, or else the single "<weights>.safetensors".
 *
 * Ownership: inputs are borrowed for the call; nothing is retained.
 */
#ifndef LQ_NET_LAYOUT_H
#define LQ_NET_LAYOUT_H

#include "core/error.h"
#include "net/net.h"

/*
 * Makes url's cache folder complete.  `component` NULL: url is a pipeline
 * folder (model_index.json and every component it lists, each in its
 * subfolder); else url is that one component's folder ("vae",
 * "text_encoder", ...; its files at the top).  A folder already complete
 * (MODEL_REF_CACHE_COMPLETE present) is left as is with no request made;
 * files an earlier, interrupted call put in place are not fetched again,
 * and its .part files resume.  Concurrent calls for one URL (several
 * supervisors on a host) take turns on an flock of "<folder>.lock".  When
 * every file is in place the marker is written (its text: the URL), synced
 * and renamed into place.  opt->digest must be NULL (a job pins the model's
 * identity, checked by the caller once the folder is complete).
 * Errors: net_fetch's (LQ-NET-001 to -005, LQ-NET-008 for a file the
 * layout requires that the server does not have), LQ-NET-009 for a
 * model_index.json or shard index that is malformed or names a file that
 * is not a plain relative name, LQ-NET-003 for the cache folder.
 */
enum lq_status net_layout_fetch(const char *url, const char *component,
    const struct net_fetch_options *opt, struct lq_error *err);

/*
 * net_layout_fetch with the default retries and back-off, and a progress
 * bar when stderr is a terminal: what preflight's fetch_model and the
 * render call for --allow-download.
 */
enum lq_status net_layout_fetch_url(const char *url, const char *component,
    struct lq_error *err);

#endif
