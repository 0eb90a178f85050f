/*
 * push.h — every kernel's push-constant block, written once and read by
 * both C (src/gpu/kernels.h, which defines PUSH as a struct and
 * _Static_asserts each size) and GLSL (shaders/common.glsl defines PUSH as
 * the `layout(push_constant)` block named `p`).  Fields are 32-bit scalars
 * or arrays of them, so C layout equals std430 push-constant layout.
 * Element offsets (off_*) are in elements of the binding's dtype from the
 * start of the bound range; strides are in elements.
 */

/* ew.comp — strided elementwise, up to 5 dims, y = f(a, b, c). */
#if defined(LQ_PUSH_ALL) || defined(KERNEL_EW)
PUSH(ew_push, {
	uint flags;	/* op | ndim<<8 | dta<<12 | dtb<<14 | dtc<<16 | has_b<<18 | has_c<<19 */
	float alpha;
	float beta;
	uint shape[5];
	uint off[4];	/* y, a, b, c */
	uint sy[5];
	uint sa[5];
	uint sb[5];
	uint sc[5];
})
#endif

/* matmul.comp — c[i] = act(alpha a[i] op(b[i]) + bias); also linear.comp,
 * whose register tile is LINEAR_TM rows per invocation (64 invocations per
 * workgroup) by LINEAR_TN columns per workgroup.  linear.comp with
 * LQ_MM_RESID (ops_linear_gated_add) adds the residual in its epilogue:
 * c[m, n] = r[m, n] + gate[g] · act(...), r's rows ldc apart like c's,
 * gate element g = (M0 / g_n)·sg_b + (M0 % g_n)·sg_n + n for the whole
 * op's row M0 = g_m0 + m (g_n rows per sample; sg_n 0 shares one gate row
 * among them). */
#define LINEAR_TM 4
#define LINEAR_TN 32
#if defined(LQ_PUSH_ALL) || defined(KERNEL_MATMUL)
PUSH(matmul_push, {
	uint M;
	uint N;
	uint K;
	uint batch;
	uint flags;	/* trans_b | act<<1 | has_bias<<4 | dt_bias<<5 */
	float alpha;
	uint off_c;
	uint off_a;
	uint off_b;
	uint off_bias;
	uint sc_batch;
	uint sa_batch;
	uint sb_batch;
	uint ldc;	/* row stride of c (N, or more for a column block) */
	uint off_r;	/* LQ_MM_RESID only, from here */
	uint off_g;
	uint g_m0;
	uint g_n;
	uint sg_b;
	uint sg_n;
})
#endif

/* norm.comp — one invocation per row of D: layer/rms norm, softmax, then
 * optionally AdaLN modulation by f32 rows [B, D] (row b = row / N). */
#if defined(LQ_PUSH_ALL) || defined(KERNEL_NORM)
PUSH(norm_push, {
	uint rows;
	uint D;
	uint flags;	/* mode | has_w<<4 | has_b<<5 | dtw<<6 | dtb<<8 |
			 * has_scale<<10 | has_shift<<11 */
	float eps;
	uint off_y;
	uint off_x;
	uint off_w;
	uint off_b;
	uint N;		/* rows per modulation row (0: none) */
	uint off_sc;	/* scale, shift: f32 rows, row stride s_sc, s_sh */
	uint off_sh;
	uint s_sc;
	uint s_sh;
})
#endif

/* normc.comp — norm over C of x [B, C, S] per (b, s).  A tensor larger
 * than one binding runs as blocks of S positions (channel stride cs) and,
 * within them, channel blocks [c0, c0 + C) of Ctot channels:
 * phase 1 adds the block to the running sums in stats[S] (mean pass of
 * LayerNorm), phase 2 to stats[S + s] (squares), phase 3 writes y; phase 0
 * is the whole norm in one dispatch.  `first` starts the sums at zero. */
#define NORMC_PHASE_SHIFT 10
#define NORMC_FIRST (1u << 12)
#if defined(LQ_PUSH_ALL) || defined(KERNEL_NORMC)
PUSH(normc_push, {
	uint B;
	uint C;
	uint S;
	uint flags;	/* mode | has_w<<4 | has_b<<5 | dtw<<6 | dtb<<8 | phase<<10 | first<<12 */
	float eps;
	uint off_y;
	uint off_x;
	uint off_w;
	uint off_b;
	uint Ctot;	/* channels the statistics are over */
	uint off_s;	/* stats [2, S] */
	uint cs;	/* stride between channels of x and y (S, or more for
			 * a block of positions) */
})
#endif

/* gnorm.comp — group norm, one workgroup per (b, group). */
#if defined(LQ_PUSH_ALL) || defined(KERNEL_GNORM)
PUSH(gnorm_push, {
	uint B;
	uint C;
	uint S;
	uint G;
	uint flags;	/* has_w<<4 | has_b<<5 | dtw<<6 | dtb<<8 */
	float eps;
	uint off_y;
	uint off_x;
	uint off_w;
	uint off_b;
})
#endif

/* attn.comp — fused attention, one invocation per (b, h, query row);
 * attn_tex.comp takes ATTN_TQ query rows per invocation. */
#define ATTN_TQ 4
#if defined(LQ_PUSH_ALL) || defined(KERNEL_ATTN)
PUSH(attn_push, {
	uint B;
	uint Nq;
	uint Nk;
	uint H;
	uint Dh;
	uint Dv;
	float scale;
	uint flags;	/* has_kb | has_bias<<1 | bias_batched<<2 | dtkb<<4 | dtbias<<6 */
	uint off_o;
	uint off_q;
	uint q_sb;
	uint q_sn;
	uint off_k;
	uint k_sb;
	uint k_sn;
	uint off_v;
	uint v_sb;
	uint v_sn;
	uint off_kb;
	uint kb_sb;
	uint off_bias;
})
#endif

/* rope.comp — rotary embedding on x [B, N, D], interleaved or split. */
#if defined(LQ_PUSH_ALL) || defined(KERNEL_ROPE)
PUSH(rope_push, {
	uint B;
	uint N;
	uint D;
	uint cs_sb;	/* batch stride of cos/sin (0 when shared) */
	uint flags;	/* dtcos | dtsin<<2 | split<<4 */
	uint hd;	/* split: the head size (pairs i, i + hd/2) */
	uint off_y;
	uint off_x;
	uint off_cos;
	uint off_sin;
})
#endif

/* conv3d.comp — direct 3-D convolution; each invocation computes CONV_CB
 * output channels at CONV_PW consecutive output columns. */
#define CONV_CB 32
#define CONV_PW 8
#if defined(LQ_PUSH_ALL) || defined(KERNEL_CONV3D)
PUSH(conv3d_push, {
	uint B;
	uint Ci;
	uint F;
	uint H;
	uint W;
	uint Co;
	uint Fo;
	uint Ho;
	uint Wo;
	uint kt;
	uint kh;
	uint kw;
	uint st;
	uint sh;
	uint sw;
	int pt;
	int ph;
	int pw;
	uint flags;	/* t_mode | s_mode<<1 | has_bias<<2 | dtw<<4 | dtb<<6 | accumulate<<8 */
	uint pos_chunks;	/* workgroup z = b * pos_chunks + chunk of x groups */
	uint off_y;
	uint off_x;
	uint off_w;
	uint off_b;
	uint w_sco;	/* w's stride between output channels (Ci·kt·kh·kw, or
			 * more for a block of input channels) */
})
/* conv3d flag: the sums start from y (a block of input channels after the
 * previous block wrote its partial sums there, in the same order). */
#define CONV_ACCUMULATE (1u << 8)
#endif

/* d2s.comp — depth-to-space / space-to-depth on [B, C, F, H, W]. */
#if defined(LQ_PUSH_ALL) || defined(KERNEL_D2S)
PUSH(d2s_push, {
	uint B;
	uint C;		/* channels of the space (large) side */
	uint F;		/* frames/height/width of the depth (small) side */
	uint H;
	uint W;
	uint ft;
	uint fh;
	uint fw;
	uint flags;	/* to_depth | hw_swapped<<1 */
	uint off_y;
	uint off_x;
})
#endif

/* conv1d.comp — 1-D convolution and transposed convolution on [B, C, T],
 * one invocation per output element.  w is addressed through its strides,
 * so Conv1d's [Co, Ci, k] and ConvTranspose1d's [Ci, Co, k] (and blocks of
 * either's channels) are the same kernel. */
#if defined(LQ_PUSH_ALL) || defined(KERNEL_CONV1D)
PUSH(conv1d_push, {
	uint B;
	uint Ci;
	uint T;
	uint Co;
	uint To;
	uint k;
	uint stride;
	uint dilation;
	int pad;	/* left padding (conv) / left crop (transposed) */
	uint flags;	/* transposed | has_b<<1 | accumulate<<2 | dtw<<4 | dtb<<6 */
	uint off_y;
	uint off_x;
	uint off_w;
	uint off_b;
	uint w_sco;	/* w's stride between output channels */
	uint w_sci;	/* w's stride between input channels */
})
#endif

/* fma.comp — the fp32 FMA peak (tests/bench/bench-gpu): FMA_CHAINS
 * independent vec4 chains per invocation, `iters` FMAs each. */
#define FMA_CHAINS 8
#define FMA_LOCAL 64
#if defined(LQ_PUSH_ALL) || defined(KERNEL_FMA)
PUSH(fma_push, {
	uint iters;
	float m;
	float c;
	uint pad;
})
#endif
