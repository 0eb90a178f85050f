/*
 * cp.h — a context-parallel group (issue 16, doc/mesh.md): the P ranks of
 * one data coordinate of a mesh, each a model on its own device holding a
 * contiguous shard of every token sequence, run at once (one thread
 * each), meeting at the group's barrier to exchange through host memory.
 * One implementation for every model: the LTX-Video transformer's Ulysses
 * exchange (ltxv_transformer_set_context) and the LTX-2 transformer's
 * (ltx2_transformer_set_context: both streams' self-attention, and the
 * cross-modal attention's keys and values gathered).
 *
 * Ownership: the group is caller-owned (nn_cp_group_free after every model
 * of it); its NN_CP_BUFS host buffers hold `floats` floats each: whole
 * sequences of one exchange ([B, N, D] with N all tokens).
 */
#ifndef LQ_NN_CP_H
#define LQ_NN_CP_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define NN_CP_BUFS 4		/* q, k, v, o of one exchange */

struct nn_cp_group;

/* A group of P >= 1 ranks with NN_CP_BUFS host buffers of `floats`
 * floats.  LQ_FAILED LQ-NN-SHAPE for P < 1 or floats 0. */
enum lq_status nn_cp_group_create(int P, size_t floats,
    struct nn_cp_group **out, struct lq_error *err);
void nn_cp_group_free(struct nn_cp_group *g);

int nn_cp_group_size(const struct nn_cp_group *g);
size_t nn_cp_group_floats(const struct nn_cp_group *g);
/* Host buffer i (0 .. NN_CP_BUFS-1) of the group, shared by its ranks. */
float *nn_cp_group_buf(struct nn_cp_group *g, int i);

/* Wakes every rank waiting at the group's barrier with LQ-NN-MESH; later
 * waits fail at once.  For a rank that fails (render_mesh_run's abort). */
void nn_cp_group_abort(struct nn_cp_group *g);

/*
 * Waits until all P ranks arrive.  LQ_FAILED LQ-NN-MESH ("`who`: another
 * device of the context group failed") when the group was aborted, so no
 * rank waits forever.
 */
enum lq_status nn_cp_barrier(struct nn_cp_group *g, const char *who,
    struct lq_error *err);

/* Rows [r0, r0 + n) of each of B samples of a [B, N, D] host array into
 * (to_all 1) or out of (0) the [B, n, D] staging array `part`. */
void nn_cp_rows(float *all, int64_t N, float *part, int64_t B, int64_t r0,
    int64_t n, int64_t D, int to_all);

/* Columns [c0, c0 + w) of every row of an [R, D] host array out of
 * (to_all 0) or into (1) the [R, w] staging array `part`. */
void nn_cp_cols(float *all, int64_t D, float *part, int64_t R, int64_t c0,
    int64_t w, int to_all);

/*
 * The negative controls of the mesh tests (issues 15 and 16), each an
 * environment variable set to anything but "" or "0":
 * - LATENTQ_MESH_NO_KV_GATHER: no exchange at all, each rank attends over
 *   its own tokens only (the seed of the upstream context-parallel bugs);
 * - LATENTQ_MESH_NO_CROSS_KV_GATHER (LTX-2): self-attention exchanged, but
 *   the a2v / v2a cross-attention's keys and values left sharded, so
 *   Q = audio attends over 1/P of the video's keys and back.
 * Outputs then differ from one device.
 */
int nn_cp_no_gather(void);
int nn_cp_no_cross_gather(void);

#endif
