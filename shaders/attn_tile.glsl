/*
 * attn_tile.glsl — what attn.comp and attn_sg.comp share: the key/value
 * tiles in shared memory and the loop that stages one, each workgroup's
 * 64 invocations loading TKH keys' and values' rows from key j0 on,
 * rounded to prec (lq_round).  Include after the bindings k, v and with
 * MAXD defined.
 */
#define TK (4096 / MAXD)
#define TKH (TK / 2)		/* 2 × TKH × MAXD floats = 16 KiB */

shared float Ks[TKH * MAXD];
shared float Vs[TKH * MAXD];

/* keys and values j0 .. j0 + tk - 1 of sample b, head h into Ks / Vs
 * (rows MAXD apart); t: the invocation's index in the workgroup.  The
 * caller brackets it with barrier()s. */
void attn_stage_tile(uint j0, uint tk, uint b, uint h, uint t, uint prec)
{
	uint Dh = p.Dh, Dv = p.Dv;
	for (uint e = t; e < tk * Dh; e += 64u) {
		uint j = e / Dh, d = e - j * Dh;
		Ks[j * MAXD + d] = lq_round(LDF(k.d, p.off_k + b * p.k_sb +
		    (j0 + j) * p.k_sn + h * Dh + d), prec);
	}
	for (uint e = t; e < tk * Dv; e += 64u) {
		uint j = e / Dv, d = e - j * Dv;
		Vs[j * MAXD + d] = lq_round(LDF(v.d, p.off_v + b * p.v_sb +
		    (j0 + j) * p.v_sn + h * Dv + d), prec);
	}
}
