#!/bin/sh
# `latentq model`: synth writes a model the loader accepts, add records it
# with digests (the second add answers from the hash cache), verify notices
# a changed file, bad input is refused with the right exit status.
. "${top_srcdir:-.}/tests/cli/common.sh"

M=$T/tiny
expect_status 0 "$LATENTQ" model synth --family ltxv --preset tiny --seed 7 "$M"
for f in model_index.json transformer/config.json transformer/diffusion_pytorch_model.safetensors \
    vae/config.json vae/diffusion_pytorch_model.safetensors text_encoder/config.json \
    text_encoder/model.safetensors tokenizer/spiece.model tokenizer/tokenizer_config.json \
    tokenizer/special_tokens_map.json scheduler/scheduler_config.json; do
	checks=$((checks + 1))
	[ -s "$M/$f" ] || fail "synth did not write $f"
done
# deterministic: same seed, same bytes; another seed, other weights
expect_status 0 "$LATENTQ" model synth --preset tiny --seed 7 "$T/again"
checks=$((checks + 1))
diff -r "$M" "$T/again" >/dev/null || fail "synth with the same seed differs"
expect_status 0 "$LATENTQ" model synth --preset tiny --seed 8 "$T/other"
checks=$((checks + 1))
cmp -s "$M/vae/diffusion_pytorch_model.safetensors" "$T/other/vae/diffusion_pytorch_model.safetensors" &&
	fail "synth with another seed wrote the same weights"
checks=$((checks + 1))
cmp -s "$M/vae/config.json" "$T/other/vae/config.json" || fail "configs depend on the seed"

expect_status 64 "$LATENTQ" model synth --preset huge "$T/huge"
expect_grep 'LQ-MODEL-030' "$T/err"
expect_status 73 "$LATENTQ" model synth --preset tiny "$M"
expect_grep 'not empty.*\[LQ-MODEL-031\]' "$T/err"
expect_status 64 "$LATENTQ" model frobnicate
expect_grep 'unknown verb' "$T/err"

# add: validated, hashed; again: all from the cache
expect_status 0 "$LATENTQ" model add --name tiny "$M"
expect_grep '11 files, 11 hashed, 0 from cache' "$T/out"
expect_status 0 "$LATENTQ" model add "$M"
expect_grep '11 files, 0 hashed, 11 from cache' "$T/out"
# (re-adding without --name keeps the name: listed as tiny below)
expect_status 0 "$LATENTQ" model list
expect_grep '^1 +tiny +ltxv' "$T/out"
expect_status 0 "$LATENTQ" model show tiny
expect_grep 'transformer +LTXVideoTransformer3DModel' "$T/out"
expect_grep 'vae/diffusion_pytorch_model.safetensors' "$T/out"
expect_status 66 "$LATENTQ" model show nosuch
expect_grep 'no model named nosuch' "$T/err"

# verify: unchanged, then a changed, an added and a removed file
expect_status 0 "$LATENTQ" model verify tiny
expect_grep '^ok: 11 files match' "$T/out"
printf ' ' >> "$M/scheduler/scheduler_config.json"
echo extra > "$M/README.md"
rm "$M/tokenizer/special_tokens_map.json"
expect_status 65 "$LATENTQ" model verify tiny
expect_grep 'model tiny: 3 files changed since it was added; `latentq model verify --update tiny` records the new state \[LQ-MODEL-023\]' "$T/err"
expect_grep '^changed +scheduler/scheduler_config.json' "$T/out"
expect_grep '^added +README.md' "$T/out"
expect_grep '^removed +tokenizer/special_tokens_map.json' "$T/out"
expect_grep '^3 files changed' "$T/out"
expect_status 0 "$LATENTQ" model verify --update tiny
expect_status 0 "$LATENTQ" model verify "$M"
expect_grep '^ok: 11 files match' "$T/out"

# a config that does not match its weights is refused, every problem listed
sed 's/"num_layers": 2/"num_layers": 3/' "$T/again/transformer/config.json" > "$T/cfg"
mv "$T/cfg" "$T/again/transformer/config.json"
expect_status 65 "$LATENTQ" model add "$T/again"
expect_grep 'LQ-MODEL-010' "$T/err"
expect_grep 'missing +transformer_blocks.2.attn1.to_q.weight' "$T/err"
# an unsupported component class is refused by name
sed 's/AutoencoderKLLTXVideo/AutoencoderKLWan/' "$T/other/model_index.json" > "$T/idx"
mv "$T/idx" "$T/other/model_index.json"
expect_status 65 "$LATENTQ" model add "$T/other"
expect_grep 'AutoencoderKLWan' "$T/err"
finish
