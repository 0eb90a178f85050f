#!/bin/sh
# LoRAs in a job (`loras: [{path, scale}]`) are fused into the transformer
# at load: scale 0 renders exactly the base model, scale 1 changes the
# result, and the fusing is recorded.  (The fusing arithmetic itself is
# checked against hand-computed values in tests/model/test-lora.)
. "${top_srcdir:-.}/tests/cli/render-common.sh"
ST=${top_builddir:-.}/tests/render/st-tool
"$ST" lora "$T/lora.safetensors" transformer_blocks.0.attn1.to_q 128 128 4

# render NAME [SCALE]: one 2-step demo job, with the LoRA at SCALE if given
render() {
	mkdir -p "$T/$1"
	write_manifest "$T/$1/m.yaml" 2 "$1:7"
	if [ $# -gt 1 ]; then
		printf '    loras:\n      - path: %s\n        scale: %s\n' \
		    "$T/lora.safetensors" "$2" >> "$T/$1/m.yaml"
	fi
	expect_status 0 "$LATENTQ" -d "$T/$1.db" render "$T/$1/m.yaml"
	sqlite3 "$T/$1.db" "SELECT digest FROM checkpoints WHERE step = 2"
}
base=$(render base)
zero=$(render zero 0)
one=$(render one 1.0)
checks=$((checks + 1)); [ -n "$base" ] || fail "no final latent"
expect_eq "$zero" "$base" "scale 0 renders the base model"
checks=$((checks + 1)); [ "$one" != "$base" ] || fail "scale 1 changed nothing"
expect_eq "$(sqlite3 "$T/one.db" "SELECT detail FROM events WHERE kind = 'lora_fused'")" \
    '{"loras":1,"pairs_fused":1}' "fusing recorded"

# A LoRA whose key matches no module is refused before anything renders.
"$ST" lora "$T/bad.safetensors" transformer_blocks.9.attn1.to_q 128 128 4
mkdir -p "$T/bad"
write_manifest "$T/bad/m.yaml" 2 bad:7
printf '    loras:\n      - path: %s\n' "$T/bad.safetensors" >> "$T/bad/m.yaml"
expect_status 65 "$LATENTQ" -d "$T/bad.db" render "$T/bad/m.yaml"
expect_grep 'LQ-LORA' "$T/err"
expect_grep 'transformer_blocks.9.attn1.to_q' "$T/err"
finish
