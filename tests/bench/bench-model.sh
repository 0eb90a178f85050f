#!/bin/sh
# bench-model.sh — whole `latentq forward` runs, time and device peak, at
# three sizes each (issue 18 item 1):
#   the transformer of the 0.9.1-2b preset cut to 2 layers (2048 wide, 32
#   heads x 64, caption 4096; weights synthesised sparse: zeros, which
#   cost what any value does), CFG batch 2, 128 caption tokens, at 256,
#   1024 and 2048 latent tokens (4x8x8, 4x16x16, 8x16x16), and 4096
#   (16x16x16) when LATENTQ_BENCH_4096=1, or the grids of
#   LATENTQ_BENCH_GRIDS (F x H x W each; 16x32x32 is 16384 tokens);
#   LATENTQ_BENCH_PROFILE=1 runs each once more under LATENTQ_GPU_PROFILE
#   and prints its largest ops;
#   the VAE decoder of tests/data/ltxv-extra/models/vae091 (16 latent
#   channels, 16x / 4x) on [1, 16, 5, 8, 8], [1, 16, 9, 16, 16] and
#   [1, 16, 9, 24, 24].
# For the transformer it prints the forward's effective GF/s (its GEMM
# and attention FLOPs over the process's wall time) and OpenBLAS sgemm's
# GF/s on one [2N, 2048] x [2048, 2048] product measured in the same run
# (tests/bench/bench-gpu sgemm): the ratio is issue 18's done-when figure.
# When python3 imports diffusers, tests/bench/reference/diffusers-forward.py
# times diffusers on the same folder and inputs at the same thread count
# (LATENTQ_GEMM_THREADS, default 2) and the line gains diffusers/latentq.
set -eu
LATENTQ=${LATENTQ:-./latentq}
top_srcdir=${top_srcdir:-.}
BG=${BENCH_GPU:-./tests/bench/bench-gpu}
ST=${ST_TOOL:-./tests/render/st-tool}
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
REF=$top_srcdir/tests/bench/reference/diffusers-forward.py
THREADS=${LATENTQ_GEMM_THREADS:-2}
if python3 -c "import diffusers, safetensors, torch" 2>/dev/null; then
	have_ref=1
else
	have_ref=0
	echo "(no diffusers for python3: the diffusers ratio is not measured)"
fi
# reference WHAT MODEL INPUTS...: " | diffusers X.XX s, diffusers/latentq R"
# for a latentq time in $lq, or nothing
reference() {
	[ "$have_ref" = 1 ] || return 0
	what=$1 model=$2; shift 2
	r=$(python3 "$REF" "$what" "$model" "$THREADS" "$@" 2>/dev/null |
	    sed -n 's/^\([0-9.]*\) .*/\1/p') || r=
	[ -n "$r" ] || { echo " | diffusers failed"; return 0; }
	awk -v r="$r" -v l="$lq" 'BEGIN {
		printf " | diffusers %.2f s, diffusers/latentq %.2f", r, r / l }'
}
[ -x "$ST" ] || make tests/render/st-tool >/dev/null
[ -x "$BG" ] || make tests/bench/bench-gpu >/dev/null
"$LATENTQ" model synth --preset 0.9.1-2b --sparse \
    --set transformer.num_layers=2 "$T/m" >/dev/null

# inputs F H W: the transformer's named inputs for a latent grid F x H x W
inputs() {
	python3 - "$T/in.st" "$1" "$2" "$3" <<'PY'
import json, struct, sys
out, f, h, w = sys.argv[1], *map(int, sys.argv[2:])
B, N, L = 2, f * h * w, 128
def vals(n, scale):
    return [((i * 2654435761) % 1000) * scale / 1000 - scale / 2 for i in range(n)]
ts = {"hidden_states": ([B, N, 128], vals(B * N * 128, 2.0)),
      "encoder_hidden_states": ([B, L, 4096], vals(B * L * 4096, 0.2)),
      "timestep": ([B], [500.0] * B),
      "encoder_attention_mask": ([B, L], [1.0] * (B * L)),
      "num_frames": ([1], [float(f)]), "height": ([1], [float(h)]),
      "width": ([1], [float(w)])}
hdr, blobs, off = {}, [], 0
for k, (shape, v) in ts.items():
    b = struct.pack("<%df" % len(v), *v)
    hdr[k] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
j = json.dumps(hdr).encode()
j += b" " * (-len(j) % 8)
with open(out, "wb") as fp:
    fp.write(struct.pack("<Q", len(j)) + j + b"".join(blobs))
PY
}

grids=${LATENTQ_BENCH_GRIDS:-"4x8x8 4x16x16 8x16x16"}
[ "${LATENTQ_BENCH_4096:-0}" = 1 ] && grids="$grids 16x16x16"
for g in $grids; do
	f=${g%%x*}; rest=${g#*x}; h=${rest%%x*}; w=${rest#*x}
	inputs "$f" "$h" "$w"
	t0=$(date +%s.%N)
	"$LATENTQ" -v forward --model "$T/m/transformer" --component transformer \
	    --inputs "$T/in.st" --out "$T/out.st" 2> "$T/log" || {
		cat "$T/log" >&2; exit 1; }
	t1=$(date +%s.%N)
	peak=$(sed -n 's/.*measured peak_device_bytes \([0-9]*\).*/\1/p' "$T/log")
	n=$((f * h * w))
	sg=$("$BG" sgemm $((2 * n)) 2048 2048)
	awk -v g="$g" -v n="$n" -v a="$t0" -v b="$t1" -v p="${peak:-0}" \
	    -v sg="$sg" 'BEGIN {
		B = 2; L = 128; D = 2048; layers = 2
		fl = 2 * B * n * 128 * D * 2 + 2 * B * L * (4096 * D + D * D)
		fl += layers * (2 * B * n * 4 * D * D + 4 * B * n * n * D)
		fl += layers * (2 * B * n * 2 * D * D + 2 * B * L * 2 * D * D)
		fl += layers * (4 * B * n * L * D + 2 * B * n * 8 * D * D)
		gf = fl / (b - a) / 1e9
		fmt = "transformer 2048x2 layers, %5d tokens %-10s forward %7.2f s"
		fmt = fmt "  peak %8.1f MiB  %6.1f GF/s  sgemm %6.1f GF/s"
		fmt = fmt "  forward/sgemm %.2f"
		printf fmt, n, "(" g ")", b - a, p / 1048576, gf, sg, gf / sg }'
	lq=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	reference transformer "$T/m/transformer" "$T/in.st"
	echo
	[ "${LATENTQ_BENCH_PROFILE:-0}" = 1 ] || continue
	# the same forward again under LATENTQ_GPU_PROFILE (serialised, so
	# not timed above): where its device time went, largest ops first
	LATENTQ_GPU_PROFILE=1 "$LATENTQ" forward --model "$T/m/transformer" \
	    --component transformer --inputs "$T/in.st" --out "$T/out.st" \
	    2>&1 >/dev/null | grep 'latentq: profile' | head -n 14
done

M=$top_srcdir/tests/data/ltxv-extra/models/vae091
"$ST" fill "$T/temb.st" temb 1
for z in 5x8x8 9x16x16 9x24x24; do
	f=${z%%x*}; rest=${z#*x}; h=${rest%%x*}; w=${rest#*x}
	"$ST" fill "$T/z.st" z 1 16 "$f" "$h" "$w"
	t0=$(date +%s.%N)
	"$LATENTQ" -v forward --model "$M" --component vae-decoder \
	    --inputs "$T/z.st" --inputs "$T/temb.st" --seed 1 \
	    --out "$T/out.st" 2> "$T/log" || { cat "$T/log" >&2; exit 1; }
	t1=$(date +%s.%N)
	peak=$(sed -n 's/.*measured peak_device_bytes \([0-9]*\).*/\1/p' "$T/log")
	awk -v z="$z" -v a="$t0" -v b="$t1" -v p="${peak:-0}" 'BEGIN {
		printf "vae091 decode latent 16x%-8s %7.2f s  peak %8.1f MiB",
		    z, b - a, p / 1048576 }'
	lq=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	reference vae-decoder "$M" "$T/z.st" "$T/temb.st"
	echo
done
