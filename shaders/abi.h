/*
 * abi.h — the contract between the C side (src/gpu) and the kernels
 * (shaders/NAME.comp), written once and included by both: element dtypes,
 * activations, the elementwise op codes, the norm modes and the bit layout
 * of every kernel's `flags` push constant.  push.h holds the push-constant
 * blocks themselves.
 *
 * Only #define of unsigned literals (valid C and GLSL alike).  C packs a
 * field with (value << LQ_X_Y) and a kernel unpacks it with
 * LQ_FIELD(p.flags, LQ_X_Y, LQ_X_Y_MASK); a one-bit field's mask is 1.
 */
#ifndef LQ_SHADERS_ABI_H
#define LQ_SHADERS_ABI_H

#define LQ_FIELD(word, shift, mask) (((word) >> (shift)) & (mask))

/* Element dtypes of a binding (enum gpu_dtype): 2-bit fields. */
#define LQ_DT_F32 0u
#define LQ_DT_F16 1u
#define LQ_DT_BF16 2u
#define LQ_DT_MASK 3u

/* Activations (enum ops_act): 3-bit fields. */
#define LQ_ACT_NONE 0u
#define LQ_ACT_GELU_TANH 1u	/* 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) */
#define LQ_ACT_SILU 2u		/* x*sigmoid(x) */
#define LQ_ACT_RELU 3u
#define LQ_ACT_GELU 4u		/* exact erf GELU */
#define LQ_ACT_TANH 5u		/* tanh(x) (the vocoder's final_act_fn) */
#define LQ_ACT_SIGMOID 6u	/* 1/(1+exp(-x)) (LTX-2's attention gates) */
#define LQ_ACT_MASK 7u

/* ew.comp: y = op(a, b, c); flags = op | ndim | dtypes | presence. */
#define LQ_EW_COPY 0u
#define LQ_EW_ADD 1u
#define LQ_EW_MUL 2u
#define LQ_EW_ADDMUL 3u		/* a * b + c */
#define LQ_EW_SCALE 4u		/* alpha * a + beta */
#define LQ_EW_FILL 5u		/* alpha */
#define LQ_EW_MODULATE 6u	/* a * (alpha + b) + c */
#define LQ_EW_ACT 7u		/* act(a), the act code in beta's bits */
#define LQ_EW_LEAKY_RELU 8u	/* a >= 0 ? a : alpha * a (F.leaky_relu) */
#define LQ_EW_CLAMP 9u		/* clamp(a, alpha, beta) (torch.clamp) */
#define LQ_EW_SNAKE 10u		/* a + sin(a e^b)^2 / (e^c + alpha) (SnakeBeta) */
#define LQ_EW_OP_MASK 0xffu	/* at bit 0 */
#define LQ_EW_NDIM 8u		/* 4 bits */
#define LQ_EW_DTA 12u		/* LQ_DT_MASK */
#define LQ_EW_DTB 14u
#define LQ_EW_DTC 16u
#define LQ_EW_HAS_B 18u		/* 1 bit */
#define LQ_EW_HAS_C 19u

/*
 * Operand precision of the GEMM-shaped kernels (enum gpu_precision, the
 * job key `precision`): 2-bit fields.  F32 reads the operands as they
 * are; BF16 / F16 round each operand to the nearest bfloat16 / binary16
 * (ties to even; binary16 overflows to infinity) before it is multiplied,
 * and the sums stay fp32.  A product of two such values is exact in fp32,
 * so a fused multiply-add and a multiply then add give the same bits.
 */
#define LQ_PREC_F32 0u
#define LQ_PREC_BF16 1u
#define LQ_PREC_F16 2u
#define LQ_PREC_MASK 3u

/* matmul.comp, linear.comp: trans_b | act | has_bias | dt_bias;
 * linear.comp also the gated residual (ops_linear_gated_add): resid |
 * has_gate | dt_gate; matmul.comp's -DROUND copy the precision. */
#define LQ_MM_TRANS_B 0u	/* 1 bit */
#define LQ_MM_ACT 1u		/* LQ_ACT_MASK */
#define LQ_MM_HAS_BIAS 4u	/* 1 bit */
#define LQ_MM_DT_BIAS 5u	/* LQ_DT_MASK */
#define LQ_MM_RESID 7u		/* 1 bit: c = r + gate · act(...) */
#define LQ_MM_HAS_GATE 8u	/* 1 bit (none: gate 1) */
#define LQ_MM_DT_GATE 9u	/* LQ_DT_MASK */
#define LQ_MM_PREC 11u		/* LQ_PREC_MASK */

/* norm.comp, normc.comp, gnorm.comp: mode | has_w | has_b | dtw | dtb;
 * norm.comp also has_scale | has_shift. */
#define LQ_NORM_LAYER 0u	/* layer norm */
#define LQ_NORM_RMS 1u		/* RMS norm */
#define LQ_NORM_SOFTMAX 2u	/* softmax (norm.comp only) */
#define LQ_NORM_MODE_MASK 15u	/* at bit 0 */
#define LQ_NORM_HAS_W 4u	/* 1 bit */
#define LQ_NORM_HAS_B 5u
#define LQ_NORM_DTW 6u		/* LQ_DT_MASK */
#define LQ_NORM_DTB 8u
#define LQ_NORM_HAS_SCALE 10u	/* 1 bit: modulate (norm.comp only) */
#define LQ_NORM_HAS_SHIFT 11u

/* attn.comp, attn_tex.comp: key bias | bias | per-batch bias | dtypes;
 * attn.comp's -DROUND copy the precision (q, k, v and the softmax
 * numerators e^(s - max) that multiply v rounded; the numerators' sum
 * stays fp32, as FlashAttention's). */
#define LQ_ATTN_HAS_KB 0u	/* 1 bit */
#define LQ_ATTN_HAS_BIAS 1u
#define LQ_ATTN_BIAS_B 2u
#define LQ_ATTN_DT_KB 4u	/* LQ_DT_MASK */
#define LQ_ATTN_DT_BIAS 6u
#define LQ_ATTN_PREC 8u		/* LQ_PREC_MASK */

/* rope.comp: the cos and sin tables' dtypes, split halves. */
#define LQ_ROPE_DT_COS 0u	/* LQ_DT_MASK */
#define LQ_ROPE_DT_SIN 2u
#define LQ_ROPE_SPLIT 4u	/* 1 bit: pairs (i, i + hd/2) in each head */

/* conv3d.comp: replicate padding in time / space, bias, reflect padding
 * in space, dtypes. */
#define LQ_CONV_T_REPLICATE 0u	/* 1 bit */
#define LQ_CONV_S_REPLICATE 1u
#define LQ_CONV_HAS_B 2u
#define LQ_CONV_S_REFLECT 3u	/* 1 bit; padding < the axis' size */
#define LQ_CONV_DTW 4u		/* LQ_DT_MASK */
#define LQ_CONV_DTB 6u

/* conv1d.comp: transposed, bias, dtypes, accumulate into y. */
#define LQ_CONV1D_TRANSPOSED 0u	/* 1 bit */
#define LQ_CONV1D_HAS_B 1u
#define LQ_CONV1D_ACCUMULATE 2u
#define LQ_CONV1D_DTW 4u	/* LQ_DT_MASK */
#define LQ_CONV1D_DTB 6u

/* d2s.comp: direction and axis order. */
#define LQ_D2S_TO_DEPTH 0u	/* 1 bit */
#define LQ_D2S_HW_SWAPPED 1u

#endif
