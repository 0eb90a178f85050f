#!/bin/sh
# Weight streaming (weight_streaming: on|off|auto, `forward
# --weight-streaming`): the transformer's blocks uploaded block by block
# from host memory give the same bits as resident weights: the same
# forward output on the golden transformer, and the same final latent and
# MP4 for a render of the 4-block demo model (which streams every block
# of every step through two slots).  The choice is recorded as an event,
# and a bad value is refused before anything renders.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
D=$top_srcdir/tests/data/ltxv

for g in gridA gridB; do
	for mode in on off; do
		expect_status 0 "$LATENTQ" -v forward --weight-streaming "$mode" \
		    --model "$D/transformer/model" --component transformer \
		    --inputs "$D/transformer/$g.inputs.safetensors" \
		    --out "$T/$g.$mode.st"
		cp "$T/err" "$T/$g.$mode.report"
	done
	checks=$((checks + 1))
	cmp -s "$T/$g.on.st" "$T/$g.off.st" ||
	    fail "$g: streamed and resident forwards differ"
	expect_grep "transformer weights streamed \\(weight_streaming on\\)" \
	    "$T/$g.on.report"
	expect_grep "two block slots of .* MiB .*; 2 block uploads" "$T/$g.on.report"
	checks=$((checks + 1))
	grep -q "weights streamed" "$T/$g.off.report" &&
	    fail "$g: --weight-streaming off streamed"
done
expect_status 64 "$LATENTQ" forward --weight-streaming sometimes \
    --model "$D/transformer/model" --component transformer \
    --inputs "$D/transformer/gridA.inputs.safetensors" --out "$T/x.st"
expect_grep "weight-streaming is auto, on or off" "$T/err"

# render DIR MODE: one 2-step demo job (named s in every DIR, as the MP4
# records its name); prints the final latent's digest
render() {
	mkdir -p "$T/$1"
	write_manifest "$T/$1/m.yaml" 2 "s:7"
	printf '    weight_streaming: %s\n' "$2" >> "$T/$1/m.yaml"
	expect_status 0 "$LATENTQ" -d "$T/$1.db" render "$T/$1/m.yaml"
	sqlite3 "$T/$1.db" "SELECT digest FROM checkpoints WHERE step = 2"
}
on=$(render son on)
off=$(render soff off)
auto=$(render sauto auto)
checks=$((checks + 1)); [ -n "$on" ] || fail "no final latent"
expect_eq "$on" "$off" "streamed and resident renders end on the same latent"
expect_eq "$auto" "$off" "auto renders the same latent"
# The MP4s are byte-identical but for the config digest they record (the
# configs differ in weight_streaming itself).
mp4() {
	d=$(sqlite3 "$T/$1.db" "SELECT config_digest FROM jobs")
	LC_ALL=C sed "s/$d/CONFIG_DIGEST/" "$T/$1/videos/s.mp4" | sha256sum
}
expect_eq "$(mp4 son)" "$(mp4 soff)" "the same MP4"
expect_eq "$(mp4 sauto)" "$(mp4 soff)" "auto: the same MP4"
# event NAME: the job's weight_streaming event, into $T/ev.NAME
event() {
	sqlite3 "$T/$1.db" \
	    "SELECT detail FROM events WHERE kind = 'weight_streaming'" > "$T/ev.$1"
}
event son; event soff; event sauto
expect_grep '"mode":"on","streaming":true' "$T/ev.son"
expect_grep '"mode":"off","streaming":false' "$T/ev.soff"
# the demo model fits lavapipe many times over: auto keeps it resident
expect_grep '"mode":"auto","streaming":false' "$T/ev.sauto"

# A value other than auto, on, off is refused by preflight.
mkdir -p "$T/bad"
write_manifest "$T/bad/m.yaml" 2 bad:7
printf '    weight_streaming: sometimes\n' >> "$T/bad/m.yaml"
expect_status 65 "$LATENTQ" -d "$T/bad.db" render "$T/bad/m.yaml"
expect_grep 'LQ-CFG-002' "$T/err"
expect_grep 'weight_streaming' "$T/err"
finish
