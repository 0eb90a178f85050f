#!/bin/sh
# WanTransformer3DModel (diffusers models/transformers/transformer_wan.py)
# through `latentq forward --component transformer`, against the upstream
# goldens of tests/data/wan (case transformer): grid_a (F, H, W = 2, 4, 6)
# and grid_odd (3, 6, 10: odd post-patch sizes), the output, the RoPE
# buffers and per-token tables and every intermediate within
# suggested_atol; qk_norm null runs the same (upstream ignores it);
# negative controls that show the text, the timestep and cross_attn_norm
# matter; the memory plan against the measured peak; bad inputs, grids
# and configs by name and code.
. "${top_srcdir:-.}/tests/cli/common.sh"
D=$top_srcdir/tests/data/wan
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool
X=$D/transformer
M=$X/model/transformer

# compare REL_FILE MINE [KEY...] : st-compare with the set's tolerances.
compare() {
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "$@" || fail "st-compare $*"
}
# differs REL MINE KEY : MINE is NOT within the golden's atol.
differs() {
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "$@" >/dev/null && fail "$2: $3 matched $1"
}
# model NAME SED : a copy of the model folder with config.json edited by
# SED (the weights linked), in $T/NAME.
model() {
	mkdir -p "$T/$1"
	ln -sf "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$T/$1/"
	sed "$2" "$M/config.json" >"$T/$1/config.json"
	cmp -s "$M/config.json" "$T/$1/config.json" &&
	    fail "model $1: '$2' changed nothing"
}
# run MODEL INPUTS OUT : the transformer with intermediates, the goldens'
# names (input.* and intermediate.* in the goldens' single files).
run() {
	expect_status 0 "$LATENTQ" forward --model "$1" --component transformer \
	    --inputs "$2" --dump-intermediates --out "$3.raw"
	"$ST" prefix "$3.pre" "$3.raw" intermediate. >/dev/null &&
	    "$ST" merge "$3" "$3.raw" "$3.pre" >/dev/null ||
	    fail "renaming $3's intermediates"
}

for g in grid_a grid_odd; do
	"$ST" unprefix "$T/$g.in" "$X/$g.safetensors" input. >/dev/null ||
	    fail "unprefix $g"
	run "$M" "$T/$g.in" "$T/$g.st"
	compare "transformer/$g.safetensors" "$T/$g.st"
done

# upstream's WanAttention builds norm_q / norm_k whatever qk_norm says
model qknull 's/"qk_norm": "rms_norm_across_heads"/"qk_norm": null/'
expect_status 0 "$LATENTQ" forward --model "$T/qknull" --component \
    transformer --inputs "$T/grid_a.in" --out "$T/qk.st"
compare transformer/grid_a.safetensors "$T/qk.st" output

# the text, the timestep and norm2 change the result (so the comparisons
# above can fail): zero text, another timestep, cross_attn_norm false
"$ST" zeros "$T/z.st" encoder_hidden_states 2 8 32
expect_status 0 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/z.st" --inputs "$T/grid_a.in" --out "$T/zt.st"
differs transformer/grid_a.safetensors "$T/zt.st" output
"$ST" fill "$T/t.st" timestep 2
expect_status 0 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/t.st" --inputs "$T/grid_a.in" --out "$T/tt.st"
differs transformer/grid_a.safetensors "$T/tt.st" output
model nonorm2 's/"cross_attn_norm": true/"cross_attn_norm": false/'
expect_status 0 "$LATENTQ" forward --model "$T/nonorm2" --component \
    transformer --inputs "$T/grid_a.in" --out "$T/nn.st"
differs transformer/grid_a.safetensors "$T/nn.st" output
# one timestep value stands for the batch: both samples get it
"$ST" pick "$T/t1.st" "$X/grid_a.safetensors" input.timestep:timestep \
    >/dev/null || fail "pick timestep"
"$ST" crop "$T/t1c.st" "$T/t1.st" timestep 0 0 1 >/dev/null ||
    fail "crop timestep"
expect_status 0 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/t1c.st" --inputs "$T/grid_a.in" --out "$T/t1o.st"
"$ST" crop "$T/t1o0.st" "$T/t1o.st" output 0 0 1 >/dev/null &&
    "$ST" crop "$T/g0.st" "$T/grid_a.st" output 0 0 1 >/dev/null &&
    "$ST" diff "$T/t1o0.st" "$T/g0.st" output 0 >"$T/d.txt" ||
    fail "one timestep: sample 0 differs from grid_a's"

# -v reports the device memory and the memory plan
# (wan_transformer_plan, the function reserve sizes its pool with): the
# plan is the measured device peak but for the context's few KiB
plan_check() {	# plan_check WHAT : the last run's plan vs its measured peak
	line=$(grep "memory plan" "$T/err")
	planned=$(echo "$line" | sed -n 's/.*memory plan: device \([0-9]*\) bytes.*/\1/p')
	measured=$(echo "$line" | sed -n 's/.*measured peak_device_bytes \([0-9]*\).*/\1/p')
	checks=$((checks + 1))
	if [ -z "$planned" ] || [ -z "$measured" ] ||
	    [ "$planned" -gt "$measured" ] ||
	    [ $((measured - planned)) -gt 65536 ]; then
		fail "$1: plan and measurement apart: $line"
	fi
}
for g in grid_a grid_odd; do
	expect_status 0 "$LATENTQ" -v forward --model "$M" --component \
	    transformer --inputs "$T/$g.in" --out "$T/v.st"
	expect_grep 'wan transformer device memory: weights 0\.09 MiB' "$T/err"
	plan_check "$g"
done

# weight streaming: the blocks' weights through two device slots give the
# same bits as resident, and -v says so
expect_status 0 "$LATENTQ" -v forward --model "$M" --component transformer \
    --inputs "$T/grid_odd.in" --weight-streaming on --out "$T/ws.st"
expect_grep 'wan transformer weights streamed \(weight_streaming on\).*; 2 block uploads' \
    "$T/err"
plan_check "streamed"
"$ST" diff "$T/ws.st" "$T/grid_odd.st" output 0 >"$T/d.txt" ||
    fail "streamed output differs from resident: $(cat "$T/d.txt")"

# Bad inputs and grids name the rule.
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/grid_a.in" --set use_cross_timestep=true --out "$T/x.st"
expect_grep "Wan's transformer takes no call arguments" "$T/err"
"$ST" fill "$T/h4.st" hidden_states 2 4 8 6
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/h4.st" --inputs "$T/grid_a.in" --out "$T/x.st"
expect_grep 'input hidden_states has 4 dimensions.*expected \[B, in_channels, F, H, W\]' "$T/err"
"$ST" fill "$T/hc.st" hidden_states 2 3 2 4 6
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/hc.st" --inputs "$T/grid_a.in" --out "$T/x.st"
expect_grep "input hidden_states is \[2, 3, ...\]; expected \[B, in_channels, F, H, W\] with the config's in_channels" "$T/err"
"$ST" fill "$T/e.st" encoder_hidden_states 2 8 16
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/e.st" --inputs "$T/grid_a.in" --out "$T/x.st"
expect_grep "input encoder_hidden_states is \[2, 8, ...\]; expected \[B, T, text_dim\]" "$T/err"
"$ST" fill "$T/t3.st" timestep 3
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/t3.st" --inputs "$T/grid_a.in" --out "$T/x.st"
expect_grep 'input timestep has 3 values; expected \[B\] = 2' "$T/err"
"$ST" pick "$T/nots.st" "$T/grid_a.in" hidden_states encoder_hidden_states \
    >/dev/null
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/nots.st" --out "$T/x.st"
expect_grep 'input timestep is missing' "$T/err"
# width 5 is no multiple of the patch's 2
"$ST" fill "$T/w5.st" hidden_states 2 4 2 4 5
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/w5.st" --inputs "$T/grid_a.in" --out "$T/x.st"
expect_grep 'the latent width 5 is not a positive multiple of patch_size\[2\] = 2.*\[LQ-NN-SHAPE\]' "$T/err"
# grid_odd's 5 patches across are over a rope_max_seq_len of 4
model rope4 's/"rope_max_seq_len": 32/"rope_max_seq_len": 4/'
expect_status 65 "$LATENTQ" forward --model "$T/rope4" --component \
    transformer --inputs "$T/grid_odd.in" --out "$T/x.st"
expect_grep "the latent width 10 is 5 patches, over the RoPE tables' rope_max_seq_len 4" "$T/err"

# Bad configs, refused before any weight is read.
bad_config() {	# bad_config SED CODE PATTERN
	bc_m=$T/bad-$checks
	mkdir -p "$bc_m"
	sed "$1" "$M/config.json" >"$bc_m/config.json"
	cmp -s "$M/config.json" "$bc_m/config.json" &&
	    fail "bad_config: '$1' changed nothing"
	expect_status 65 "$LATENTQ" forward --model "$bc_m" --component \
	    transformer --inputs "$T/grid_a.in" --out "$T/x.st"
	expect_grep "$3.*\[$2\]" "$T/err"
}
bad_config 's/"image_dim": null/"image_dim": 1280/' LQ-MODEL-006 \
    'image_dim is set: Wan image-to-video .* is not implemented'
bad_config 's/"added_kv_proj_dim": null/"added_kv_proj_dim": 24/' LQ-MODEL-006 \
    'added_kv_proj_dim is set: Wan image-to-video'
bad_config 's/"pos_embed_seq_len": null/"pos_embed_seq_len": 514/' \
    LQ-MODEL-006 'pos_embed_seq_len is set'
bad_config 's/"attention_head_dim": 12/"attention_head_dim": 13/' LQ-MODEL-003 \
    'attention_head_dim 13 is odd'
bad_config 's/"freq_dim": 32/"freq_dim": 33/' LQ-MODEL-006 'freq_dim 33 is odd'
bad_config 's/"attention_head_dim": 12/"attention_head_dim": 258/' \
    LQ-MODEL-006 'attention_head_dim of 258 is over'
bad_config '/"patch_size"/,/\]/c\  "patch_size": [1, 2],' LQ-MODEL-003 \
    '"patch_size" must be a list of 3 integers'
bad_config 's/"eps": 1e-06/"eps": 0/' LQ-MODEL-003 '"eps" must be a positive number'
# a class latentq does not implement is named, not met with an input error
bad_config 's/"WanTransformer3DModel"/"WanVACETransformer3DModel"/' LQ-MODEL-002 \
    'class "WanVACETransformer3DModel" is not supported.*runs LTXVideoTransformer3DModel, LTX2VideoTransformer3DModel and WanTransformer3DModel'
# weights that do not fit the config name the tensor
model ffn 's/"ffn_dim": 40/"ffn_dim": 48/'
expect_status 65 "$LATENTQ" forward --model "$T/ffn" --component transformer \
    --inputs "$T/grid_a.in" --out "$T/x.st"
expect_grep 'blocks\.0\.ffn\.net\.0\.proj\.weight.*\[LQ-NN-WSHAPE\]' "$T/err"
finish
