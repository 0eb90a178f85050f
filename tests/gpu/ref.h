/*
 * ref.h — double-precision CPU references for the kernels in gpu/ops.h,
 * written from the upstream definitions (torch.nn.Linear, LayerNorm,
 * GroupNorm, F.scaled_dot_product_attention, diffusers LTX apply_rotary_emb
 * and CausalConv3d).  Inputs are float (what the GPU saw), outputs double.
 */
#ifndef LQ_TESTS_GPU_REF_H
#define LQ_TESTS_GPU_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

enum { REF_NONE, REF_GELU_TANH, REF_SILU, REF_RELU, REF_GELU, REF_TANH, REF_SIGMOID };

static double
ref_act(double x, int act)
{
	switch (act) {
	case REF_GELU_TANH:
		return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
	case REF_SILU:
		return x / (1 + exp(-x));
	case REF_RELU:
		return x > 0 ? x : 0;
	case REF_GELU:
		return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	case REF_TANH:
		return tanh(x);
	case REF_SIGMOID:
		return 1 / (1 + exp(-x));
	}
	return x;
}

/* y[M,N] = act(x[M,K] w[N,K]^T + b) */
static void
ref_linear(double *y, const float *x, const float *w, const float *b,
    int M, int N, int K, int act)
{
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double s = b ? b[n] : 0;
			for (int k = 0; k < K; k++)
				s += (double)x[(size_t)m * K + k] * w[(size_t)n * K + k];
			y[(size_t)m * N + n] = ref_act(s, act);
		}
}

/* mode 0 layer, 1 rms, 2 softmax; rows of D */
static void
ref_norm_rows(double *y, const float *x, const float *w, const float *b,
    int rows, int D, int mode, double eps)
{
	for (int r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * D;
		double *yr = y + (size_t)r * D;
		if (mode == 2) {
			double m = -INFINITY, s = 0;
			for (int i = 0; i < D; i++)
				m = fmax(m, xr[i]);
			for (int i = 0; i < D; i++)
				s += exp(xr[i] - m);
			for (int i = 0; i < D; i++)
				yr[i] = exp(xr[i] - m) / s;
			continue;
		}
		double mean = 0, var = 0;
		if (mode == 0) {
			for (int i = 0; i < D; i++)
				mean += xr[i];
			mean /= D;
		}
		for (int i = 0; i < D; i++)
			var += (xr[i] - mean) * (xr[i] - mean);
		var /= D;
		for (int i = 0; i < D; i++) {
			double v = (xr[i] - mean) / sqrt(var + eps);
			if (w)
				v *= w[i];
			if (b)
				v += b[i];
			yr[i] = v;
		}
	}
}

/* x [B, C, S]; groups G (G = C: per channel... use mode for channel norms) */
static void
ref_group_norm(double *y, const float *x, const float *w, const float *b,
    int B, int C, int S, int G, double eps)
{
	int cg = C / G;
	for (int bi = 0; bi < B; bi++)
		for (int g = 0; g < G; g++) {
			const float *xs = x + ((size_t)bi * C + (size_t)g * cg) * S;
			double mean = 0, var = 0;
			size_t n = (size_t)cg * S;
			for (size_t i = 0; i < n; i++)
				mean += xs[i];
			mean /= n;
			for (size_t i = 0; i < n; i++)
				var += (xs[i] - mean) * (xs[i] - mean);
			var /= n;
			for (size_t i = 0; i < n; i++) {
				int c = g * cg + (int)(i / S);
				double v = (xs[i] - mean) / sqrt(var + eps);
				if (w)
					v *= w[c];
				if (b)
					v += b[c];
				y[((size_t)bi * C + (size_t)g * cg) * S + i] = v;
			}
		}
}

/* normalise over C at each (b, s); mode 0 layer, 1 rms */
static void
ref_norm_channels(double *y, const float *x, const float *w, const float *b,
    int B, int C, int S, int mode, double eps)
{
	for (int bi = 0; bi < B; bi++)
		for (int s = 0; s < S; s++) {
			double mean = 0, var = 0;
			for (int c = 0; c < C; c++)
				mean += x[((size_t)bi * C + c) * S + s];
			mean = mode == 0 ? mean / C : 0;
			for (int c = 0; c < C; c++) {
				double d = x[((size_t)bi * C + c) * S + s] - mean;
				var += d * d;
			}
			var /= C;
			for (int c = 0; c < C; c++) {
				size_t i = ((size_t)bi * C + c) * S + s;
				double v = (x[i] - mean) / sqrt(var + eps);
				if (w)
					v *= w[c];
				if (b)
					v += b[c];
				y[i] = v;
			}
		}
}

/*
 * q [B,Nq,H*Dh], k [B,Nk,H*Dh], v [B,Nk,H*Dv] (row strides sq, sk, sv in
 * elements), kb [B,Nk] or NULL, bias [H,Nq,Nk] or NULL; out [B,Nq,H*Dv].
 */
static void
ref_attention(double *out, const float *q, const float *k, const float *v,
    int B, int Nq, int Nk, int H, int Dh, int Dv, int sq, int sk, int sv,
    double scale, const float *kb, const float *bias)
{
	double *s = malloc(sizeof(double) * (size_t)Nk);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++)
			for (int i = 0; i < Nq; i++) {
				double m = -INFINITY, sum = 0;
				for (int j = 0; j < Nk; j++) {
					double d = 0;
					for (int e = 0; e < Dh; e++)
						d += (double)q[((size_t)b * Nq + i) * sq + h * Dh + e] *
						    k[((size_t)b * Nk + j) * sk + h * Dh + e];
					d *= scale;
					if (kb)
						d += kb[(size_t)b * Nk + j];
					if (bias)
						d += bias[((size_t)h * Nq + i) * Nk + j];
					s[j] = d;
					m = fmax(m, d);
				}
				for (int j = 0; j < Nk; j++) {
					s[j] = exp(s[j] - m);
					sum += s[j];
				}
				for (int e = 0; e < Dv; e++) {
					double o = 0;
					for (int j = 0; j < Nk; j++)
						o += s[j] * v[((size_t)b * Nk + j) * sv + h * Dv + e];
					out[(((size_t)b * Nq + i) * H + h) * Dv + e] = o / sum;
				}
			}
	free(s);
}

/* diffusers transformer_ltx.py apply_rotary_emb; cos/sin batch cb (1 or B) */
static void
ref_rope(double *y, const float *x, const float *cs, const float *sn, int B,
    int N, int D, int cb)
{
	for (int b = 0; b < B; b++)
		for (int n = 0; n < N; n++)
			for (int d = 0; d < D; d += 2) {
				size_t i = ((size_t)b * N + n) * D + d;
				size_t c = ((size_t)(cb == 1 ? 0 : b) * N + n) * D + d;
				double x0 = x[i], x1 = x[i + 1];
				y[i] = x0 * cs[c] - x1 * sn[c];
				y[i + 1] = x1 * cs[c + 1] + x0 * sn[c + 1];
			}
}

/* apply_split_rotary_emb: heads of hd, tables [cb, N, D/2] */
static void
ref_rope_split(double *y, const float *x, const float *cs, const float *sn,
    int B, int N, int D, int cb, int hd)
{
	for (int b = 0; b < B; b++)
		for (int n = 0; n < N; n++)
			for (int h = 0; h < D / hd; h++)
				for (int j = 0; j < hd / 2; j++) {
			size_t i0 = ((size_t)b * N + n) * D + (size_t)h * hd + j;
			size_t i1 = i0 + hd / 2;
			size_t c = ((size_t)(cb == 1 ? 0 : b) * N + n) * (D / 2) +
			    (size_t)h * (hd / 2) + j;
			y[i0] = (double)x[i0] * cs[c] - (double)x[i1] * sn[c];
			y[i1] = (double)x[i1] * cs[c] + (double)x[i0] * sn[c];
		}
}

/* conv3d with explicit padding semantics; rep_t/rep_s replicate edges
 * (rep_s 2: reflect them, torch "reflect") */
static void
ref_conv3d(double *y, const float *x, const float *w, const float *b,
    int B, int Ci, int F, int H, int W, int Co, int kt, int kh, int kw,
    const int st[3], const int pad0[3], int Fo, int Ho, int Wo, int rep_t,
    int rep_s)
{
	for (int bi = 0; bi < B; bi++)
		for (int co = 0; co < Co; co++)
			for (int fo = 0; fo < Fo; fo++)
				for (int ho = 0; ho < Ho; ho++)
					for (int wo = 0; wo < Wo; wo++) {
		double s = b ? b[co] : 0;
		for (int ci = 0; ci < Ci; ci++)
			for (int dt = 0; dt < kt; dt++)
				for (int dh = 0; dh < kh; dh++)
					for (int dw = 0; dw < kw; dw++) {
			int fi = fo * st[0] + dt - pad0[0];
			int hi = ho * st[1] + dh - pad0[1];
			int wi = wo * st[2] + dw - pad0[2];
			if (rep_t)
				fi = fi < 0 ? 0 : fi >= F ? F - 1 : fi;
			if (rep_s == 2) {	/* reflect */
				hi = hi < 0 ? -hi : hi >= H ? 2 * H - 2 - hi : hi;
				wi = wi < 0 ? -wi : wi >= W ? 2 * W - 2 - wi : wi;
			} else if (rep_s) {
				hi = hi < 0 ? 0 : hi >= H ? H - 1 : hi;
				wi = wi < 0 ? 0 : wi >= W ? W - 1 : wi;
			}
			if (fi < 0 || fi >= F || hi < 0 || hi >= H || wi < 0 || wi >= W)
				continue;
			s += (double)x[((((size_t)bi * Ci + ci) * F + fi) * H + hi) * W + wi] *
			    w[((((size_t)co * Ci + ci) * kt + dt) * kh + dh) * kw + dw];
		}
		y[((((size_t)bi * Co + co) * Fo + fo) * Ho + ho) * Wo + wo] = s;
	}
}

/* torch Conv1d (w [Co, Ci, k]) / ConvTranspose1d (w [Ci, Co, k]) on
 * x [B, Ci, T] -> y [B, Co, To], zero padding pad0 (conv) / crop pad0
 * (transposed), stride s, dilation d. */
static void
ref_conv1d(double *y, const float *x, const float *w, const float *b,
    int B, int Ci, int T, int Co, int k, int s, int d, int pad0, int To,
    int transposed)
{
	for (int bi = 0; bi < B; bi++)
		for (int co = 0; co < Co; co++)
			for (int to = 0; to < To; to++) {
		double acc = b ? b[co] : 0;
		for (int ci = 0; ci < Ci; ci++)
			for (int j = 0; j < k; j++) {
			double wv = transposed ? w[((size_t)ci * Co + co) * k + j] :
			    w[((size_t)co * Ci + ci) * k + j];
			int ti;
			if (transposed) {
				int num = to + pad0 - j * d;
				if (num < 0 || num % s != 0)
					continue;
				ti = num / s;
			} else {
				ti = to * s + j * d - pad0;
			}
			if (ti < 0 || ti >= T)
				continue;
			acc += (double)x[((size_t)bi * Ci + ci) * T + ti] * wv;
		}
		y[((size_t)bi * Co + co) * To + to] = acc;
	}
}

#endif
