/*
 * ltxv_vae_int.h — building blocks shared by the LTX-Video VAE decoder
 * (ltxv_vae.c) and encoder (ltxv_vae_encoder.c); private to src/nn/ltxv_vae*.c
 * (SQLite's btreeInt.h habit: the public header stays narrow).
 *
 * Both halves of diffusers' AutoencoderKLLTXVideo
 * (models/autoencoders/autoencoder_kl_ltx.py) are made of the same
 * LTXVideoResnetBlock3d and LTXVideoCausalConv3d; the decoder and encoder
 * each carve five equal activation "slots" from their pool (0 and 1
 * ping-pong between stages, 2, 3 and 4 are a stage's temporaries) and run
 * the resnet below on them.
 *
 * Ownership: a vae_resnet's tensors are views of its owner's nn_weights;
 * a vae_run borrows everything it points to for one recording.
 */
#ifndef LQ_NN_LTXV_VAE_INT_H
#define LQ_NN_LTXV_VAE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "gpu/ops.h"
#include "nn/dump.h"
#include "nn/weights.h"

struct ltxv_vae;

/* LTXVideoResnetBlock3d's parameters (one resnet of either half). */
struct vae_resnet {
	char path[96];
	int cin, cout, inject, tc;
	struct gpu_tensor conv1_w, conv1_b, conv2_w, conv2_b;
	struct gpu_tensor norm3_w, norm3_b, short_w, short_b;	/* buf NULL: none */
	struct gpu_tensor pcs1, pcs2;		/* per_channel_scale as [C] */
	struct gpu_tensor sst;			/* scale_shift_table [4, C] */
	struct gpu_tensor noise[2];		/* this decode's fields */
	int noise_h, noise_w;
};

/* One recording's state: the slots, the time-embedding scratch (decoder
 * only), and the conv / norm settings of the half being run. */
struct vae_run {
	struct ltxv_vae *v;		/* the decoder; NULL for the encoder */
	struct gpu_cmd *cmd;
	const struct nn_dump *dump;
	struct gpu_tensor slot[5];	/* 0, 1 ping-pong; 2, 3, 4 temporaries */
	struct gpu_tensor tfeat, thid, temb, ss;
	int64_t B;
	int causal;			/* encoder_causal / decoder_causal (or
					   the call's causal) */
	enum ops_pad_mode s_mode;	/* spatial padding of the k3 convs:
					   ZERO, or REFLECT (LTX-2's
					   decoder_spatial_padding_mode) */
	float eps;			/* resnet_norm_eps (norm3's LayerNorm) */
};

/* A contiguous [B, C, F, H, W] view at the start of a slot (asserts that
 * it fits). */
struct gpu_tensor ltxv_vae_view5(const struct gpu_tensor *slot, int64_t B,
    int64_t C, int64_t F, int64_t H, int64_t W);

/* LTXVideoCausalConv3d(kernel 3, stride `stride` in t, h, w) as conv3d
 * parameters: causal = two replicated first frames in front, else one on
 * each side; spatial zero padding 1 (a run's s_mode replaces the mode). */
struct ops_conv3d_params ltxv_vae_conv3_params(int causal, int stride_t,
    int stride_h, int stride_w);

/* The same with kernel 1 (no padding): conv_shortcut. */
struct ops_conv3d_params ltxv_vae_conv1_params(void);

/*
 * Looks up LTXVideoResnetBlock3d `path` (e.g. "encoder.down_blocks.0.conv_out")
 * in `w`: conv1 [cout, cin, 3, 3, 3], conv2, and when cin != cout norm3 and
 * conv_shortcut; per_channel_scale1/2 when `inject`, scale_shift_table when
 * `tc`.  `ltx2`: LTX2VideoResnetBlock3d, whose conv_shortcut is a plain
 * nn.Conv3d (`conv_shortcut.weight`, not `conv_shortcut.conv.weight`).
 * Errors: LQ-NN-WMISS / LQ-NN-WSHAPE naming the weight.
 */
enum lq_status ltxv_vae_resnet_load(struct nn_weights *w,
    struct vae_resnet *r, const char *path, int cin, int cout, int inject,
    int tc, int ltx2, struct lq_error *err);

/*
 * LTXVideoResnetBlock3d.forward(x, temb) recorded from slot `xs` into slot
 * `ys` (slots 2, 3 and 4 are overwritten).  x [B, cin, F, H, W]; temb the
 * block's [B, 4*cin] time embedding when r->tc, else NULL.
 */
enum lq_status ltxv_vae_resnet_forward(struct vae_run *run,
    const struct vae_resnet *r, int xs, int ys, int64_t F, int64_t H,
    int64_t W, const struct gpu_tensor *temb);

/*
 * A host video or latent piece [B, C, F, H, W] (row-major, owned by the
 * piece: free(x)) — one decoder or encoder call's output, a composed
 * tile, or the whole result — and the tiling helpers both halves use:
 * upstream's blend_v / blend_h / blend_t (in place, weights y/E in
 * float32) and placing a crop into a larger piece.
 */
struct vae_piece {
	float *x;
	int64_t B, C, F, H, W;
	int64_t Fs;		/* frames stored per (b, c): F, or more after
				   the last frames were dropped in place */
	size_t cap;		/* floats allocated */
};

/* Sets the shape, growing x when needed (contents undefined). */
void ltxv_vae_piece_shape(struct vae_piece *p, int64_t B, int64_t C,
    int64_t F, int64_t H, int64_t W);
/* &x[b, c, f, h, w]. */
float *ltxv_vae_piece_at(const struct vae_piece *p, int64_t b, int64_t c,
    int64_t f, int64_t h, int64_t w);
/* AutoencoderKLLTXVideo.blend_v / blend_h / blend_t: the first
 * E = min(a's size, b's size, extent) rows / columns / frames of b become
 * a[-E + y] * (1 - y/E) + b[y] * (y/E). */
void ltxv_vae_blend_v(const struct vae_piece *a, struct vae_piece *b,
    int extent);
void ltxv_vae_blend_h(const struct vae_piece *a, struct vae_piece *b,
    int extent);
void ltxv_vae_blend_t(const struct vae_piece *a, struct vae_piece *b,
    int extent);
/* Copies src[:, :, :, 0:h, 0:w] into dst[:, :, :, y0:y0+h, x0:x0+w]. */
void ltxv_vae_piece_place(struct vae_piece *dst, const struct vae_piece *src,
    int64_t y0, int64_t x0, int64_t h, int64_t w);

#endif
