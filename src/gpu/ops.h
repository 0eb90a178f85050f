/*
 * ops.h — latentq's kernel library: each function records one (or a few)
 * compute dispatches into a `struct gpu_cmd` (gpu.h).  Nothing runs until
 * gpu_cmd_submit.
 *
 * Conventions for every op:
 * - Activations (inputs and outputs named x, y, a, b, q, k, v, out...) are
 *   GPU_F32.  "Parameters" (w, b(ias), weight, table, cos/sin, bias, noise,
 *   scale, shift) may be F32, F16 or BF16; they are decoded to f32 in the
 *   shader.  All arithmetic accumulates in f32.
 * - Shapes are listed row-major, e.g. x [M, K].  Unless an op says it
 *   accepts strided views, every tensor must be contiguous.  Ops marked
 *   "strided" accept any strides, including 0 (gpu_tensor_broadcast).
 * - The output must not overlap an input unless the op says "in place ok".
 * - Splitting: a tensor may be larger than one binding (the device's
 *   maxStorageBufferRange, device_caps_max_binding).  The op then records
 *   several dispatches over views that each fit, cut where the kernel's
 *   arithmetic per output is unchanged, so the bits equal an unsplit run
 *   on a device that binds the whole tensor (tests/gpu/test-split):
 *     elementwise ops (and modulate, gated_add, channel_affine, noise):
 *       runs of the outermost dims, down to single elements;
 *     ops_linear (and ops_linear_gated_add): blocks of rows of x / y
 *       (/ r) and of output columns (rows of w, so a weight larger than
 *       a binding works);
 *     ops_matmul: runs of batches, then blocks of rows (b of one batch
 *       must fit);
 *     row norms / softmax: blocks of rows;
 *     channel norms: samples, then blocks of channels with the
 *       per-position sums carried between dispatches in a scratch buffer
 *       of 2·S floats (gpu_cmd_scratch);
 *     group norm: samples, then blocks of whole groups;
 *     ops_attention: samples, then blocks of query rows (one sample's k, v
 *       and key_bias must fit; with `bias`, one sample's whole bias);
 *     ops_rope: samples, then blocks of tokens;
 *     ops_conv3d, ops_conv1d: samples, blocks of output channels, and
 *       blocks of input channels whose partial sums pass through y in the
 *       same order (one channel plane of x and of y must fit);
 *     depth/space: samples, then blocks of channels.
 *   What cannot be cut further (one row, one channel plane, ...) fails
 *   with LQ-GPU-RANGE naming the op, the tensor, its bytes, the unit that
 *   does not fit and the device's limit.
 * - Return value: LQ_OK, or the error (LQ_FAILED, LQ-GPU-SHAPE naming the op
 *   and the shapes) which is also stored as the command's sticky error; once
 *   a command has an error, further ops return it and record nothing.
 * - Deterministic: fixed reduction order, no atomics.
 * - Speed: ops_linear (and ops_matmul with trans_b) take a register-tiled
 *   path when K % 4 == 0 and x / w start at a multiple of 4 elements from
 *   their binding; ops_attention when head dims are multiples of 4 and
 *   <= 128 (and strides/offsets multiples of 4); both, and ops_conv3d, read
 *   through texel buffers when the device supports the formats.  Other
 *   shapes use generic kernels with identical results up to rounding.
 * - CPU devices (lavapipe): ops_linear (and ops_linear_gated_add, the
 *   residual in the GEMM's epilogue), ops_matmul and ops_attention run
 *   (and ops_conv3d, as im2col rows through the same GEMM) on the host as
 *   C GEMMs on the mapped buffers (gpu/host.c,
 *   gpu_ctx_gemm_variant, LATENTQ_GPU_HOST_GEMM), never split, and
 *   results equal the shaders' up to rounding; deterministic, and a
 *   row's bits do not depend on the other rows of its call.
 */
#ifndef LQ_GPU_OPS_H
#define LQ_GPU_OPS_H

#include "gpu/gpu.h"

/* The kernels' activation codes (shaders/abi.h says what each is). */
enum ops_act {
	OPS_ACT_NONE = LQ_ACT_NONE,
	OPS_ACT_GELU_TANH = LQ_ACT_GELU_TANH,
	OPS_ACT_SILU = LQ_ACT_SILU,
	OPS_ACT_RELU = LQ_ACT_RELU,
	OPS_ACT_GELU = LQ_ACT_GELU,
	OPS_ACT_TANH = LQ_ACT_TANH,
	OPS_ACT_SIGMOID = LQ_ACT_SIGMOID,
};

/* ---- matrix products ---- */

/*
 * Linear layer, torch.nn.Linear: y = act(x · wᵀ + b).
 *   x [..., K] f32 (all leading dims flattened to M rows), contiguous
 *   w [N, K]  f32/f16/bf16, contiguous (torch's weight layout)
 *   b [N] or NULL
 *   y [..., N] f32 with the same leading dims as x
 */
enum lq_status ops_linear(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, enum ops_act act);

/*
 * A linear layer whose output is a gated residual, the pair ops_linear
 * then ops_gated_add in one op, the linear's output never stored:
 *   y[b, n, :] = r[b, n, :] + gate[b, :] · act(x[b, n, :] · wᵀ + bias)
 *   x [B, N, K] f32, contiguous; w [D, K] f32/f16/bf16, b [D] or NULL, as
 *   ops_linear takes them; r, y [B, N, D] f32, contiguous; gate a [B, D]
 *   or [D] view as ops_gated_add takes it, or per token a [B, N, D] view
 *   with unit inner stride and any other strides (0 shares a row); NULL
 *   gate = 1.  y may be r (in place, the usual use); y must not overlap
 *   x, w, b or gate otherwise.
 * Bit-identical to ops_linear into a tensor p then ops_gated_add(y, r,
 * gate, p) (ops_add_mul(y, r, p, gate) for a per-token gate): the same
 * sums, then the product and the sum rounded apart (linear.comp's
 * `precise` epilogue, host.c's under -ffp-contract=off).  Splits as
 * ops_linear (blocks of rows of x, r and y; blocks of columns of w, b,
 * the gate); where linear.comp's fast path does not apply (K % 4 != 0, x
 * or w not starting at a multiple of 4 elements) or the gate does not fit
 * one binding, it runs as that pair through the command's scratch buffer
 * (gpu_cmd_scratch, B·N·D floats).
 */
enum lq_status ops_linear_gated_add(struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *r,
    const struct gpu_tensor *gate, const struct gpu_tensor *x,
    const struct gpu_tensor *w, const struct gpu_tensor *b, enum ops_act act);

/*
 * Batched matmul: c[i] = alpha · a[i] · op(b[i]) for i < batch, where
 * op(b) = b (b [batch, K, N]) or bᵀ when trans_b (b [batch, N, K]).
 *   a [batch, M, K] f32, c [batch, M, N] f32; b f32/f16/bf16.
 *   A batch dim of size 1 in a or b broadcasts (e.g. a shared weight).
 * 2-D a/b/c (no batch dim) are accepted as batch 1.
 */
enum lq_status ops_matmul(struct gpu_cmd *cmd, const struct gpu_tensor *c,
    const struct gpu_tensor *a, const struct gpu_tensor *b, int trans_b,
    float alpha);

/* ---- normalisation over the last dim (x [..., D], rows = numel / D) ---- */

/*
 * LayerNorm, torch.nn.LayerNorm(D, eps, elementwise_affine):
 *   y = (x - mean) / sqrt(var + eps) * weight + bias   (biased variance)
 * weight [D] / bias [D] each may be NULL (= 1 / 0).  In place ok.
 */
enum lq_status ops_layer_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps);

/*
 * RMSNorm (diffusers RMSNorm / T5LayerNorm): y = x / sqrt(mean(x²) + eps)
 * · weight; weight [D] may be NULL.  In place ok.
 */
enum lq_status ops_rms_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight, float eps);

/*
 * A norm and then AdaLN modulation (ops_modulate) in one pass, the norm's
 * output never stored:
 *   y[b, n, :] = norm(x[b, n, :]) · (1 + scale[b]) + shift[b]
 * norm as ops_layer_norm (OPS_NORM_LAYER: weight, bias [D] or NULL) or
 * ops_rms_norm (OPS_NORM_RMS: weight or NULL, bias must be NULL); x, y
 * [B, N, D] contiguous f32; scale, shift f32 [B, D] (any row stride) or
 * [D] views as ops_modulate takes them, either NULL.  In place ok.
 * Within rounding of the two ops (the same arithmetic, in registers).
 */
enum ops_norm { OPS_NORM_LAYER, OPS_NORM_RMS };
enum lq_status ops_norm_modulate(struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *x, enum ops_norm kind,
    const struct gpu_tensor *weight, const struct gpu_tensor *bias,
    float eps, const struct gpu_tensor *scale, const struct gpu_tensor *shift);

/* Softmax over the last dim.  In place ok. */
enum lq_status ops_softmax(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x);

/* ---- normalisation over channels of x [B, C, S...] (S = F,H,W or any) ---- */

/*
 * Per position (b, s), normalise over C: y = x / sqrt(mean_c(x²) + eps) ·
 * weight[c]; weight [C] may be NULL.  (LTX VAE RMSNorm over dim=1 /
 * PixelNorm.)  In place ok.
 */
enum lq_status ops_rms_norm_channels(struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *weight, float eps);
/* Same with LayerNorm over C: (x - mean_c)/sqrt(var_c + eps)·weight+bias. */
enum lq_status ops_layer_norm_channels(struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *weight, const struct gpu_tensor *bias,
    float eps);

/*
 * torch.nn.GroupNorm(groups, C, eps): x [B, C, S...], statistics over
 * (C/groups channels × all of S) per (b, group); weight/bias [C] or NULL.
 * In place ok.
 */
enum lq_status ops_group_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, int groups, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps);

/* ---- modulation (AdaLN) and elementwise ---- */

/*
 * AdaLN modulation: y[b, n, d] = x[b, n, d] · (1 + scale[b, d]) + shift[b, d]
 *   x, y [B, N, D] contiguous; scale, shift: 2-D views [B, D] with any
 *   row stride (stride[1] must be 1; stride[0] may be 0 to share one row),
 *   e.g. a slice of the precomputed `scale_shift_table + temb` [B, 6, D]
 *   reshaped to [B, 6*D]: gpu_tensor_slice(.., 1, k*D, D).  Either may be
 *   NULL (0).  In place ok.
 */
enum lq_status ops_modulate(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *scale,
    const struct gpu_tensor *shift);

/*
 * scale_shift_table + temb, LTX-style (transformer_ltx.py
 * LTXVideoTransformerBlock: `scale_shift_table[None, None] +
 * temb.reshape(B, T, K, D)`):
 *   out[b, k, d] = table[k, d] + temb[b, k, d]
 *   table [K, D] (any dtype), temb [B, K, D] or [B, K*D] f32,
 *   out [B, K, D] f32.  Then slice rows for ops_modulate / ops_gated_add.
 */
enum lq_status ops_add_table(struct gpu_cmd *cmd, const struct gpu_tensor *out,
    const struct gpu_tensor *table, const struct gpu_tensor *temb);

/*
 * Gated residual: y[b, n, d] = x[b, n, d] + gate[b, d] · r[b, n, d]
 *   x, r, y [B, N, D] contiguous, gate a [B, D] view as in ops_modulate
 *   (NULL gate = 1).  y may be x (in place).
 */
enum lq_status ops_gated_add(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *gate,
    const struct gpu_tensor *r);

/*
 * Elementwise, strided (any strides incl. 0, so numpy broadcasting through
 * gpu_tensor_broadcast): every operand has y's shape.  After merging dims
 * that are contiguous in all operands at most 5 dims may remain.
 * a, b, c f32 or parameter dtypes; y f32.  In place ok when y and the input
 * it equals have identical views.
 *   ops_add:      y = a + b
 *   ops_mul:      y = a · b
 *   ops_add_mul:  y = a + b · c
 *   ops_scale:    y = a · alpha + beta
 *   ops_copy:     y = a   (also dtype conversion to f32; with
 *                 gpu_tensor_permute / _slice this is permute/transpose,
 *                 slicing (e.g. drop the first frame) and contiguous copy;
 *                 copying into slices of a larger y concatenates)
 *   ops_fill:     y = value
 */
enum lq_status ops_add(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, const struct gpu_tensor *b);
enum lq_status ops_mul(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, const struct gpu_tensor *b);
enum lq_status ops_add_mul(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, const struct gpu_tensor *b,
    const struct gpu_tensor *c);
enum lq_status ops_scale(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, float alpha, float beta);
enum lq_status ops_copy(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a);
enum lq_status ops_fill(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    float value);

/* y = act(x), elementwise, contiguous, same shape.  In place ok. */
enum lq_status ops_act(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, enum ops_act act);
enum lq_status ops_silu(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x);
enum lq_status ops_gelu_tanh(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x);
/* torch.nn.functional.leaky_relu: y = x >= 0 ? x : negative_slope · x,
 * elementwise (strided as ops_copy).  In place ok. */
enum lq_status ops_leaky_relu(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, float negative_slope);
/*
 * SnakeBeta with logscale parameters (diffusers pipelines/ltx2/vocoder.py
 * SnakeBeta.forward):
 *   y = x + 1 / (exp(beta) + eps) · sin(x · exp(alpha))^2
 * x, y [B, C, T] (strided as ops_copy); alpha, beta [C] (any parameter
 * dtype) broadcast over B and T; Snake (use_beta=False) passes alpha as
 * beta.  In place ok.
 */
enum lq_status ops_snake_beta(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *alpha,
    const struct gpu_tensor *beta, float eps);
/* torch.clamp(x, lo, hi), elementwise (strided).  In place ok. */
enum lq_status ops_clamp(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, float lo, float hi);

/*
 * Per-channel affine on x [B, C, S...]:
 *   y[b, c, s] = x[b, c, s] · (scale_bias + scale[b, c]) + shift[b, c]
 * scale / shift: [C] (shared by every b) or [B, C] views (stride[1] == 1,
 * any stride[0]); either may be NULL (scale term = scale_bias, shift = 0).
 * Covers latents (de)normalisation (scale_bias 0: x·std + mean) and the VAE's
 * timestep-conditioned `x · (1 + scale) + shift` (scale_bias 1).
 * In place ok.
 */
enum lq_status ops_channel_affine(struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *scale, const struct gpu_tensor *shift,
    float scale_bias);

/*
 * Spatial noise injection (LTX VAE decoder `inject_noise`):
 *   x[b, c, f, h, w] += noise[h, w] · scale[c]
 * x [B, C, F, H, W] f32 in place; noise [H, W]; scale [C].
 */
enum lq_status ops_add_noise_channels(struct gpu_cmd *cmd,
    const struct gpu_tensor *x, const struct gpu_tensor *noise,
    const struct gpu_tensor *scale);

/* ---- attention ---- */

struct ops_attention_args {
	int heads;		/* H; inner dims split head-major: [H, Dh] */
	float scale;		/* logits multiplier: 1/sqrt(Dh) (LTX), 1.0 (T5) */
	/* Additive key bias [B, Nk] (row stride may be 0 to share one row),
	 * e.g. LTX's encoder mask bias (1 - mask) · -10000; may be NULL. */
	const struct gpu_tensor *key_bias;
	/* Additive bias [H, Nq, Nk] or [B, H, Nq, Nk] (T5 relative position
	 * bias); may be NULL. */
	const struct gpu_tensor *bias;
};

/*
 * Fused scaled-dot-product attention (online softmax, fp32):
 *   q [B, Nq, H·Dh], k [B, Nk, H·Dh], v [B, Nk, H·Dv], out [B, Nq, H·Dv]
 *   out[b, i, h, :] = Σ_j softmax_j(scale · q[b,i,h]·k[b,j,h]
 *                         + key_bias[b, j] + bias[(b,) h, i, j]) · v[b,j,h,:]
 * Dh, Dv <= 256; Nq != Nk allowed (cross-attention).  q, k, v may be views
 * with any stride[0] and stride[1] (e.g. slices of a fused QKV tensor) but
 * stride[2] must be 1; out is contiguous.
 * (diffusers AttnProcessor2_0 / F.scaled_dot_product_attention.)
 */
enum lq_status ops_attention(struct gpu_cmd *cmd, const struct gpu_tensor *out,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, const struct ops_attention_args *args);

/*
 * Rotary embedding, diffusers transformer_ltx.py `apply_rotary_emb`
 * (interleaved pairs):
 *   for each even d: (x0, x1) = (x[.., d], x[.., d+1])
 *     y[.., d]   = x0·cos[.., d]   - x1·sin[.., d]
 *     y[.., d+1] = x1·cos[.., d+1] + x0·sin[.., d+1]
 *   x, y [B, N, D] (D even); cos, sin [B, N, D] or [1, N, D].  In place ok.
 */
enum lq_status ops_rope(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin);

/*
 * Rotary embedding, LTX-2 split halves (diffusers transformer_ltx2.py
 * `apply_split_rotary_emb` with cos/sin reshaped to [B, H, N, hd/2]): x, y
 * [B, N, D] (D = H·hd, head-major), cos, sin [B or 1, N, D/2] with one
 * angle per pair, index h·hd/2 + j:
 *   y[.., h·hd + j]        = x[.., h·hd + j]·c - x[.., h·hd + j + hd/2]·s
 *   y[.., h·hd + j + hd/2] = x[.., h·hd + j + hd/2]·c + x[.., h·hd + j]·s
 * head_dim even.  In place ok.
 */
enum lq_status ops_rope_split(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin, int head_dim);

/* ---- 3-D convolution and resampling on [B, C, F, H, W] ---- */

enum ops_pad_mode {
	OPS_PAD_ZERO = 0,	/* pad with zeros */
	OPS_PAD_REPLICATE = 1,	/* repeat the edge frame / pixel */
	OPS_PAD_REFLECT = 2,	/* mirror without repeating the edge (torch
				   "reflect"; spatial only, padding < size) */
};

struct ops_conv3d_params {
	int stride[3];		/* t, h, w; each 1 or 2 (0 reads as 1) */
	/* Padding before/after per axis (elements); temporal edges use
	 * t_mode, spatial edges s_mode.  LTX CausalConv3d(k=3):
	 *   causal:      pad_t = {2, 0}, t_mode REPLICATE
	 *   non-causal:  pad_t = {1, 1}, t_mode REPLICATE
	 *   pad_h = pad_w = {1, 1}, s_mode ZERO ("zeros" padding_mode), or
	 *   REFLECT (LTX-2's decoder_spatial_padding_mode "reflect"). */
	int pad_t[2], pad_h[2], pad_w[2];
	enum ops_pad_mode t_mode, s_mode;
};

/*
 * conv3d (torch.nn.Conv3d, cross-correlation, no dilation/groups):
 *   x [B, Ci, F, H, W] f32; w [Co, Ci, kt, kh, kw] any dtype; b [Co] or
 *   NULL; y [B, Co, Fo, Ho, Wo] with Fo = (F + pad_t[0] + pad_t[1] - kt) /
 *   stride_t + 1 (likewise H, W).  Kernel sizes any (1 and 3 are fast).
 */
enum lq_status ops_conv3d(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, const struct ops_conv3d_params *p);

/* ---- 1-D convolution on [B, C, T] ---- */

struct ops_conv1d_params {
	int stride;		/* >= 1 (0 reads as 1) */
	int dilation;		/* >= 1 (0 reads as 1) */
	/* Conv1d: zeros before / after (torch `padding=p` is {p, p};
	 * `padding="same"` is {d(k-1)/2, d(k-1) - d(k-1)/2}).
	 * ConvTranspose1d: outputs cropped at the start / end (torch
	 * `padding=p` is {p, p}; output_padding o is {p, p - o}). */
	int pad[2];
	int transposed;		/* 0: Conv1d, 1: ConvTranspose1d */
};

/*
 * torch.nn.Conv1d / ConvTranspose1d (no groups):
 *   x [B, Ci, T] f32; b [Co] or NULL; y [B, Co, To] f32, all contiguous;
 *   Conv1d:          w [Co, Ci, k], To = (T + pad0 + pad1 - d(k-1) - 1) / s + 1,
 *     y[b, o, t] = b[o] + Σ_i Σ_j x[b, i, t·s + j·d - pad0] · w[o, i, j]
 *   ConvTranspose1d: w [Ci, Co, k] (torch's layout),
 *     To = (T - 1)·s + d(k-1) + 1 - pad0 - pad1,
 *     y[b, o, t] = b[o] + Σ_i Σ_{j: t + pad0 - j·d = s·u, 0 <= u < T}
 *                  x[b, i, u] · w[i, o, j]
 * w any dtype, contiguous.  (diffusers pipelines/ltx2/vocoder.py
 * LTX2Vocoder's conv_in, upsamplers, ResBlock convs and conv_out.)
 */
enum lq_status ops_conv1d(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, const struct ops_conv1d_params *p);

/*
 * 3-D depth-to-space, LTX upsampler order (diffusers autoencoder_kl_ltx.py
 * LTXVideoUpsampler3d, `reshape(B, -1, st, sh, sw, F, H, W).permute(0, 1,
 * 5, 2, 6, 3, 7, 4)`):
 *   y[b, c, f·ft+dt, h·fh+dh, w·fw+dw] = x[b, ((c·ft + dt)·fh + dh)·fw + dw, f, h, w]
 *   x [B, C·ft·fh·fw, F, H, W], y [B, C, F·ft, H·fh, W·fw].
 * With hw_swapped = 1 the channel index is ((c·ft + dt)·fw + dw)·fh + dh
 * (requires fh == fw), the order of LTX's VAE `unpatchify`
 * (`permute(0, 1, 5, 2, 6, 4, 7, 3)`).  Dropping the first frame(s) after
 * temporal upsampling: gpu_tensor_slice on dim 2 + ops_copy.
 */
enum lq_status ops_depth_to_space(struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *x, int ft, int fh,
    int fw, int hw_swapped);

/* Inverse of ops_depth_to_space (LTX VAE encoder `patchify`, downsampler). */
enum lq_status ops_space_to_depth(struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *x, int ft, int fh,
    int fw, int hw_swapped);

#endif
