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

# missing parents are made (mkdir -p), the same bytes as anywhere else
expect_status 0 "$LATENTQ" model synth --preset tiny --seed 7 "$T/deep/er/m"
checks=$((checks + 1))
diff -r "$M" "$T/deep/er/m" >/dev/null || fail "synth into new parents differs"
# a parent that cannot be made is named
: > "$T/plain"
expect_status 73 "$LATENTQ" model synth --preset tiny "$T/plain/m"
expect_grep "$T/plain.*cannot create folder.*\[LQ-MODEL-031\]" "$T/err"
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
# Presets of released checkpoints, in another dtype, narrowed with --set:
# the 0.9.1 geometry (128 latent channels, 32x / 8x, timestep-conditioned
# noise-injecting decoder) at a width a test can load.
N=$T/narrow
expect_status 0 "$LATENTQ" model synth --preset 0.9.1-2b --dtype bf16 --seed 3 \
    --set transformer.num_layers=1 --set transformer.num_attention_heads=2 \
    --set transformer.attention_head_dim=16 --set transformer.cross_attention_dim=32 \
    --set transformer.caption_channels=32 \
    --set 'vae.block_out_channels=[8,16,32,32]' \
    --set 'vae.decoder_block_out_channels=[16,32,64]' \
    --set text_encoder.d_model=32 --set text_encoder.d_kv=8 \
    --set text_encoder.d_ff=64 --set text_encoder.num_layers=1 \
    --set text_encoder.num_heads=4 --set text_encoder.vocab_size=160 "$N"
expect_grep 'preset 0.9.1-2b, seed 3, bf16' "$T/out"
expect_grep '"num_layers": 1' "$N/transformer/config.json"
expect_grep '"latent_channels": 128' "$N/vae/config.json"
expect_grep '"timestep_conditioning": true' "$N/vae/config.json"
expect_grep '"decoder_block_out_channels": \[' "$N/vae/config.json"
checks=$((checks + 1))
head -c 4096 "$N/transformer/diffusion_pytorch_model.safetensors" | grep -q '"dtype":"BF16"' ||
	fail "bf16 preset wrote no BF16 tensor"
head -c 4096 "$N/transformer/diffusion_pytorch_model.safetensors" | grep -q '"dtype":"F32"' &&
	fail "bf16 preset wrote an F32 tensor"
expect_status 0 "$LATENTQ" model add --name narrow "$N"
# a name another folder has is bad input (65), not an I/O error
expect_status 65 "$LATENTQ" model add --name narrow "$M"
expect_grep 'model name "narrow" is already used by .*\[LQ-DB-010\]' "$T/err"
# the 13B preset's dimensions (sparse: nothing written but headers)
expect_status 0 "$LATENTQ" model synth --preset 0.9.7-13b --sparse "$T/13b"
expect_grep '"num_layers": 48' "$T/13b/transformer/config.json"
expect_grep '"attention_head_dim": 128' "$T/13b/transformer/config.json"
expect_grep '"cross_attention_dim": 4096' "$T/13b/transformer/config.json"
expect_grep '"LTXVideo095DownBlock3D"' "$T/13b/vae/config.json"
# a key the config does not have, JSON that is not, a value upstream refuses
expect_status 64 "$LATENTQ" model synth --preset tiny --set transformer.num_layerz=1 "$T/bad1"
expect_grep 'no key "num_layerz".*LQ-MODEL-032' "$T/err"
expect_status 64 "$LATENTQ" model synth --preset tiny --set 'vae.decoder_block_out_channels=[8,16' "$T/bad2"
expect_grep 'is not JSON.*LQ-MODEL-032' "$T/err"
expect_status 64 "$LATENTQ" model synth --preset tiny --set num_layers=1 "$T/bad3"
expect_grep 'not COMPONENT.KEY=JSON.*LQ-MODEL-032' "$T/err"
# a value the config refuses is bad input (LQ-MODEL-003 exits 65 by the code table)
expect_status 65 "$LATENTQ" model synth --preset tiny --set transformer.num_layers=-1 "$T/bad4"
expect_grep 'LQ-MODEL-003' "$T/err"
checks=$((checks + 1))
[ ! -e "$T/bad1" ] && [ ! -e "$T/bad4" ] || fail "a refused --set left a folder"
expect_status 64 "$LATENTQ" model synth --preset tiny --dtype f64 "$T/bad5"
finish
