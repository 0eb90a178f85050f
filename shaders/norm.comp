/*
 * norm.comp — per-row LayerNorm (mode 0), RMSNorm (1) or softmax (2) over
 * the last dim D, optionally followed by AdaLN modulation (ops.h
 * ops_layer_norm_modulate): y = norm(x) · (1 + scale[b]) + shift[b], b =
 * row / N.
 *
 * One invocation per row, no barriers (issue 18 item 3): the 128-wide
 * shared-memory tree this replaces spent most of a demo step in its nine
 * barriers on lavapipe.  A row's sums run in a fixed order - NORM_LANES
 * interleaved partial sums (element i goes to partial i % NORM_LANES),
 * added pairwise at the end - so the result depends on D alone, never on
 * the device, the row count or the workgroup: rows computed alone, in a
 * mesh shard or in the whole tensor are the same bits.
 *
 * With NORM_SUBGROUP (norm_sg, for GPUs with subgroup arithmetic; device.c
 * norm_resolve): a subgroup per row, each lane summing the elements
 * lane, lane + S, ... (S = gl_SubgroupSize: coalesced reads) and
 * subgroupAdd / subgroupMax combining them; still no barriers, and the
 * same bits run to run on one device, rows alone or together.  The rows
 * go in a grid-stride loop, so any subgroup size covers them all.
 */
#version 450
#define KERNEL_NORM
#include "common.glsl"
#ifdef NORM_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

#define NORM_LANES 8

layout(local_size_x = 64) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
layout(binding = 3) readonly buffer Bs { uint d[]; } b;
layout(binding = 4) readonly buffer Sc { uint d[]; } sc;
layout(binding = 5) readonly buffer Sh { uint d[]; } sh;

/*
 * Eight elements from x.d[base + i, i + 8): element i + j feeds partial j,
 * components 0-3 of lo and of hi; past D the neutral value n (0 for sums,
 * -FLT_MAX for max), which changes no partial.
 */
void chunk(uint base, uint i, uint D, float n, out vec4 lo, out vec4 hi)
{
	lo = vec4(i < D ? LDF(x.d, base + i) : n,
	    i + 1u < D ? LDF(x.d, base + i + 1u) : n,
	    i + 2u < D ? LDF(x.d, base + i + 2u) : n,
	    i + 3u < D ? LDF(x.d, base + i + 3u) : n);
	hi = vec4(i + 4u < D ? LDF(x.d, base + i + 4u) : n,
	    i + 5u < D ? LDF(x.d, base + i + 5u) : n,
	    i + 6u < D ? LDF(x.d, base + i + 6u) : n,
	    i + 7u < D ? LDF(x.d, base + i + 7u) : n);
}

/* the partials added pairwise, a fixed tree: ((0+1)+(2+3))+((4+5)+(6+7)) */
float part_sum(vec4 lo, vec4 hi)
{
	return ((lo.x + lo.y) + (lo.z + lo.w)) + ((hi.x + hi.y) + (hi.z + hi.w));
}

float part_max(vec4 lo, vec4 hi)
{
	return max(max(max(lo.x, lo.y), max(lo.z, lo.w)),
	    max(max(hi.x, hi.y), max(hi.z, hi.w)));
}

#ifndef NORM_SUBGROUP
void main()
{
	uint row = lq_group_id() * 64u + gl_LocalInvocationID.x;
	if (row >= p.rows)
		return;
	uint mode = p.flags & LQ_NORM_MODE_MASK;
	bool has_w = LQ_FIELD(p.flags, LQ_NORM_HAS_W, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_NORM_HAS_B, 1u) != 0u;
	bool has_sc = LQ_FIELD(p.flags, LQ_NORM_HAS_SCALE, 1u) != 0u;
	bool has_sh = LQ_FIELD(p.flags, LQ_NORM_HAS_SHIFT, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_NORM_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_NORM_DTB, LQ_DT_MASK);
	uint xb = p.off_x + row * p.D, yb = p.off_y + row * p.D;
	uint D = p.D;
	float fD = float(D);

	if (mode == LQ_NORM_SOFTMAX) {
		const float lowest = -3.402823466e38;
		vec4 mlo = vec4(lowest), mhi = vec4(lowest), lo, hi;
		for (uint i = 0u; i < D; i += NORM_LANES) {
			chunk(xb, i, D, lowest, lo, hi);
			mlo = max(mlo, lo);
			mhi = max(mhi, hi);
		}
		float m = part_max(mlo, mhi);
		vec4 slo = vec4(0.0), shi = vec4(0.0);
		for (uint i = 0u; i < D; i += NORM_LANES) {
			chunk(xb, i, D, lowest, lo, hi);
			/* exp(-FLT_MAX - m) is 0: past D adds nothing */
			slo += exp(lo - m);
			shi += exp(hi - m);
		}
		float inv = 1.0 / part_sum(slo, shi);
		for (uint i = 0u; i < D; i++)
			STF(y.d, yb + i, exp(LDF(x.d, xb + i) - m) * inv);
		return;
	}
	float mean = 0.0;
	vec4 slo = vec4(0.0), shi = vec4(0.0), lo, hi;
	if (mode == LQ_NORM_LAYER) {
		for (uint i = 0u; i < D; i += NORM_LANES) {
			chunk(xb, i, D, 0.0, lo, hi);
			slo += lo;
			shi += hi;
		}
		mean = part_sum(slo, shi) / fD;
		slo = shi = vec4(0.0);
	}
	for (uint i = 0u; i < D; i += NORM_LANES) {
		chunk(xb, i, D, mean, lo, hi);
		/* past D the neutral is the mean: (mean - mean)^2 adds 0 */
		lo -= mean;
		hi -= mean;
		slo += lo * lo;
		shi += hi * hi;
	}
	float inv = inversesqrt(part_sum(slo, shi) / fD + p.eps);
	uint bt = p.N > 0u ? row / p.N : 0u;
	uint sb = p.off_sc + bt * p.s_sc, hb = p.off_sh + bt * p.s_sh;
	for (uint i = 0u; i < D; i++) {
		float v = (LDF(x.d, xb + i) - mean) * inv;
		if (has_w)
			v *= LD(w.d, dtw, p.off_w + i);
		if (has_b)
			v += LD(b.d, dtb, p.off_b + i);
		if (has_sc)
			v *= 1.0 + LDF(sc.d, sb + i);
		if (has_sh)
			v += LDF(sh.d, hb + i);
		STF(y.d, yb + i, v);
	}
}
#else
/* the modulated, weighted output of element i of a normalised row */
float norm_out(uint i, float v, uint sb, uint hb, bool has_w, bool has_b,
    bool has_sc, bool has_sh, uint dtw, uint dtb)
{
	if (has_w)
		v *= LD(w.d, dtw, p.off_w + i);
	if (has_b)
		v += LD(b.d, dtb, p.off_b + i);
	if (has_sc)
		v *= 1.0 + LDF(sc.d, sb + i);
	if (has_sh)
		v += LDF(sh.d, hb + i);
	return v;
}

void main()
{
	uint mode = p.flags & LQ_NORM_MODE_MASK;
	bool has_w = LQ_FIELD(p.flags, LQ_NORM_HAS_W, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_NORM_HAS_B, 1u) != 0u;
	bool has_sc = LQ_FIELD(p.flags, LQ_NORM_HAS_SCALE, 1u) != 0u;
	bool has_sh = LQ_FIELD(p.flags, LQ_NORM_HAS_SHIFT, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_NORM_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_NORM_DTB, LQ_DT_MASK);
	uint D = p.D, S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
	float fD = float(D);
	uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
	uint stride = groups * gl_NumSubgroups;
	/* uniform per subgroup: its lanes leave the loop together */
	for (uint row = lq_group_id() * gl_NumSubgroups + gl_SubgroupID;
	    row < p.rows; row += stride) {
		uint xb = p.off_x + row * D, yb = p.off_y + row * D;
		if (mode == LQ_NORM_SOFTMAX) {
			float m = -3.402823466e38;
			for (uint i = lane; i < D; i += S)
				m = max(m, LDF(x.d, xb + i));
			m = subgroupMax(m);
			float s = 0.0;
			for (uint i = lane; i < D; i += S)
				s += exp(LDF(x.d, xb + i) - m);
			float inv = 1.0 / subgroupAdd(s);
			for (uint i = lane; i < D; i += S)
				STF(y.d, yb + i, exp(LDF(x.d, xb + i) - m) * inv);
			continue;
		}
		float mean = 0.0;
		if (mode == LQ_NORM_LAYER) {
			float s = 0.0;
			for (uint i = lane; i < D; i += S)
				s += LDF(x.d, xb + i);
			mean = subgroupAdd(s) / fD;
		}
		float s2 = 0.0;
		for (uint i = lane; i < D; i += S) {
			float v = LDF(x.d, xb + i) - mean;
			s2 += v * v;
		}
		float inv = inversesqrt(subgroupAdd(s2) / fD + p.eps);
		uint bt = p.N > 0u ? row / p.N : 0u;
		uint sb = p.off_sc + bt * p.s_sc, hb = p.off_sh + bt * p.s_sh;
		for (uint i = lane; i < D; i += S)
			STF(y.d, yb + i, norm_out(i, (LDF(x.d, xb + i) - mean) *
			    inv, sb, hb, has_w, has_b, has_sc, has_sh, dtw, dtb));
	}
}
#endif
