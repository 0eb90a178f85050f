#!/bin/sh
# Checkpoints saved by newer diffusers, whose LTXVideoTransformer3DModel has
# norm_out = AdaLayerNorm(chunk_dim=1) with norm_out.linear.weight [2D, D]
# and .bias [2D] in place of the top-level scale_shift_table: latentq loads
# them and computes the final modulation as that class does,
#   shift, scale = norm_out.linear(SiLU(embedded_timestep)).chunk(2, dim=1)
#   output = proj_out(LayerNorm(h) * (1 + scale) + shift),
# checked here against that formula on the golden transformer with its
# table replaced by a dense linear (python3, float64 reference); a file with
# neither layout is refused naming both.
. "${top_srcdir:-.}/tests/cli/common.sh"
D=$top_srcdir/tests/data/ltxv/transformer
mkdir -p "$T/new/transformer" "$T/none/transformer"
cp "$D/model/transformer/config.json" "$T/new/transformer/"
cp "$D/model/transformer/config.json" "$T/none/transformer/"

python3 - "$D/model/transformer/diffusion_pytorch_model.safetensors" \
    "$T/new/transformer/diffusion_pytorch_model.safetensors" \
    "$T/none/transformer/diffusion_pytorch_model.safetensors" <<'EOF'
import json, struct, sys
def read(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    h = json.loads(raw[8:8 + n]); h.pop('__metadata__', None)
    return {k: (v['shape'], raw[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]])
            for k, v in h.items()}
def write(path, t):
    h, off, blobs = {}, 0, []
    for k in sorted(t):
        shape, b = t[k]
        h[k] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [off, off + len(b)]}
        off += len(b); blobs.append(b)
    js = json.dumps(h).encode()
    js += b' ' * (-len(js) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(js)) + js + b''.join(blobs))
t = read(sys.argv[1])
D = t['scale_shift_table'][0][1]
del t['scale_shift_table']
write(sys.argv[3], t)
# a dense, deterministic linear: no identity, so a wrong row order,
# transposition or missing SiLU shows
w = [0.02 * (((i * 7919 + 13) % 29) - 14) for i in range(2 * D * D)]
b = [0.05 * (((i * 104729 + 7) % 23) - 11) for i in range(2 * D)]
t['norm_out.linear.weight'] = ([2 * D, D], struct.pack('<%df' % len(w), *w))
t['norm_out.linear.bias'] = ([2 * D], struct.pack('<%df' % len(b), *b))
write(sys.argv[2], t)
EOF
expect_status 0 "$LATENTQ" forward --model "$T/new" --component transformer \
    --inputs "$D/gridA.inputs.safetensors" --dump-intermediates \
    --out "$T/out.safetensors"

checks=$((checks + 1))
python3 - "$T/new/transformer/diffusion_pytorch_model.safetensors" \
    "$T/out.safetensors" <<'EOF' || fail "output differs from AdaLayerNorm's formula"
import json, math, struct, sys
def read(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    h = json.loads(raw[8:8 + n]); h.pop('__metadata__', None)
    out = {}
    for k, v in h.items():
        if v['dtype'] != 'F32':
            continue
        b = raw[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]]
        out[k] = (v['shape'], struct.unpack('<%df' % (len(b) // 4), b))
    return out
m, o = read(sys.argv[1]), read(sys.argv[2])
(B, N, C), y = o['output']
(_, _, D), ln = o['norm_out']			# LayerNorm(h), before modulation
_, emb = o['time_embed.out1']			# embedded_timestep [B, D]
_, W = m['norm_out.linear.weight']; _, bb = m['norm_out.linear.bias']
_, P = m['proj_out.weight']; _, pb = m['proj_out.bias']
worst = 0.0
for bi in range(B):
    se = [e / (1 + math.exp(-e)) for e in emb[bi * D:(bi + 1) * D]]
    lin = [bb[j] + sum(W[j * D + k] * se[k] for k in range(D)) for j in range(2 * D)]
    shift, scale = lin[:D], lin[D:]
    for n in range(N):
        row = ln[(bi * N + n) * D:(bi * N + n + 1) * D]
        mod = [row[k] * (1 + scale[k]) + shift[k] for k in range(D)]
        for c in range(C):
            ref = pb[c] + sum(P[c * D + k] * mod[k] for k in range(D))
            worst = max(worst, abs(ref - y[(bi * N + n) * C + c]))
print('max |latentq - reference| = %.3g' % worst)
sys.exit(0 if worst < 1e-4 else 1)
EOF

expect_status 65 "$LATENTQ" forward --model "$T/none" --component transformer \
    --inputs "$D/gridA.inputs.safetensors" --out "$T/none.safetensors"
expect_grep 'scale_shift_table' "$T/err"
finish
