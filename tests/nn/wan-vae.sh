#!/bin/sh
# AutoencoderKLWan (diffusers autoencoder_kl_wan.py) through `latentq
# forward --component vae-decoder / vae-encoder`, against the upstream
# goldens of tests/data/wan/vae: dec_a (3 latent frames -> 9 frames, 3
# chunks), dec_b (batch 2, 2 chunks) and enc_a (5 frames, 2 chunks), every
# tensor within suggested_atol, the memory plan against the measured peak,
# and the inputs and configs latentq refuses, by name.  About a minute on
# lavapipe.
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/wan
V=$D/vae
M=$V/model/vae
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool

# compare REL_FILE MINE [KEY...] : st-compare with the set's tolerances.
compare() {
	checks=$((checks + 1))
	"$CMP" "$V/index.json" "$D" "$@" || fail "st-compare $*"
}

# check_plan WHAT : the last run's "vae decoder memory plan" line (-v):
# the planned device bytes within 10% of the measured peak_device_bytes.
check_plan() {
	line=$(grep "vae decoder memory plan" "$T/err")
	plan=$(echo "$line" | sed -n 's/.*memory plan: device \([0-9]*\) bytes.*/\1/p')
	meas=$(echo "$line" | sed -n 's/.*measured peak_device_bytes \([0-9]*\).*/\1/p')
	checks=$((checks + 1))
	if [ -z "$plan" ] || [ -z "$meas" ] || [ "$meas" -eq 0 ]; then
		fail "$1: no plan / measurement in: $line"
		return
	fi
	d=$((plan - meas))
	[ $d -lt 0 ] && d=$((-d))
	[ $((d * 10)) -gt "$meas" ] &&
	    fail "$1: planned $plan bytes, measured $meas"
	return 0
}

# The decodes: sample, post_quant_conv and every chunk before the clamp
# (the feature caches carry chunk i's last frames into chunk i + 1).
for c in dec_a dec_b; do
	"$ST" pick "$T/$c.in.st" "$V/$c.safetensors" input.z:z ||
	    fail "st-tool pick $c"
	expect_status 0 "$LATENTQ" -v forward --model "$M" \
	    --component vae-decoder --inputs "$T/$c.in.st" --dump-intermediates \
	    --out "$T/$c.st"
	set -- output:sample intermediate.post_quant_conv:post_quant_conv
	for i in 0 1 2; do
		[ "$c" = dec_b ] && [ $i = 2 ] && break
		set -- "$@" "intermediate.decoder_chunk${i}_preclamp:decoder_chunk${i}_preclamp"
	done
	compare "vae/$c.safetensors" "$T/$c.st" "$@"
	# the memory plan (wan_vae_plan) within 10% of the device's peak
	check_plan "$c"
	cp "$T/err" "$T/$c.err"
done
# the mid block's attention as matrix products (the path of more than 256
# channels, real Wan VAEs' 384) gives the same sample, and its plan holds
expect_status 0 env LATENTQ_NN_UNFUSED_ATTENTION=1 "$LATENTQ" -v forward \
    --model "$M" --component vae-decoder --inputs "$T/dec_b.in.st" \
    --out "$T/b-unfused.st"
compare vae/dec_b.safetensors "$T/b-unfused.st" output:sample
check_plan dec_b-unfused
# (and it did take that path: the pool holds a frame's scores on top)
act() { sed -n 's/.*memory plan: .*activations \([0-9]*\),.*/\1/p' "$1"; }
checks=$((checks + 1))
[ "$(act "$T/err")" -gt "$(act "$T/dec_b.err")" ] ||
    fail "LATENTQ_NN_UNFUSED_ATTENTION=1 planned no scores"
# causal: a prefix of the latent frames decodes to that prefix of the
# video (F = 1 -> frame 0, F = 2 -> frames 0..4, as dec_a's)
for f in 1 2; do
	"$ST" crop "$T/zp.st" "$T/dec_a.in.st" z 2 0 $f || fail "st-tool crop z"
	expect_status 0 "$LATENTQ" forward --model "$M" --component vae-decoder \
	    --inputs "$T/zp.st" --out "$T/p$f.st"
	n=$((1 + 4 * (f - 1)))
	"$ST" crop "$T/gp.st" "$V/dec_a.safetensors" output 2 0 $n ||
	    fail "st-tool crop output"
	"$ST" pick "$T/gpn.st" "$T/gp.st" output:sample || fail "st-tool pick"
	checks=$((checks + 1))
	"$ST" diff "$T/p$f.st" "$T/gpn.st" sample 3e-5 >/dev/null ||
	    fail "the first $f latent frames did not decode to dec_a's first $n"
done
# the pipeline-style parent folder (model/ holding vae/) decodes the same
expect_status 0 "$LATENTQ" forward --model "$V/model" \
    --component vae-decoder --inputs "$T/dec_b.in.st" --out "$T/b2.st"
compare vae/dec_b.safetensors "$T/b2.st" output:sample

# The encode: the distribution, quant_conv and each chunk's encoder output.
"$ST" pick "$T/enc.in.st" "$V/enc_a.safetensors" input.x:x ||
    fail "st-tool pick enc_a"
expect_status 0 "$LATENTQ" forward --model "$M" --component vae-encoder \
    --inputs "$T/enc.in.st" --dump-intermediates --out "$T/enc.st"
compare vae/enc_a.safetensors "$T/enc.st" latent_mean:mean \
    latent_logvar:logvar latent_std:std intermediate.quant_conv:quant_conv \
    intermediate.encoder_chunk0:encoder_chunk0 \
    intermediate.encoder_chunk1:encoder_chunk1
expect_status 0 env LATENTQ_NN_UNFUSED_ATTENTION=1 "$LATENTQ" forward \
    --model "$M" --component vae-encoder --inputs "$T/enc.in.st" \
    --out "$T/enc-unfused.st"
compare vae/enc_a.safetensors "$T/enc-unfused.st" latent_mean:mean
# mode() is the mean; parameters are quant_conv's output
"$ST" pick "$T/mode.st" "$T/enc.st" mode:mean parameters:quant_conv ||
    fail "st-tool pick mode"
checks=$((checks + 2))
"$ST" diff "$T/mode.st" "$T/enc.st" mean 0 >/dev/null || fail "mode != mean"
"$ST" diff "$T/mode.st" "$T/enc.st" quant_conv 0 >/dev/null ||
    fail "parameters != quant_conv"
# `sample` (the issue's name) works too; trailing frames past 1 + 4k are
# dropped as upstream: 4 frames encode to chunk 0 alone, enc_a's frame 0
"$ST" pick "$T/s.st" "$V/enc_a.safetensors" input.x:sample ||
    fail "st-tool pick sample"
"$ST" crop "$T/x4.st" "$V/enc_a.safetensors" input.x 2 0 4 ||
    fail "st-tool crop"
"$ST" pick "$T/x4n.st" "$T/x4.st" input.x:x || fail "st-tool pick x4"
expect_status 0 "$LATENTQ" forward --model "$M" --component vae-encoder \
    --inputs "$T/x4n.st" --out "$T/e4.st"
"$ST" crop "$T/m0.st" "$V/enc_a.safetensors" latent_mean 2 0 1 ||
    fail "st-tool crop mean"
"$ST" pick "$T/m0n.st" "$T/m0.st" latent_mean:mean || fail "st-tool pick mean"
checks=$((checks + 1))
"$ST" diff "$T/e4.st" "$T/m0n.st" mean 2e-6 >/dev/null ||
    fail "4 frames did not encode to enc_a's first latent frame"

# Refused inputs, by name: z of another channel count; tiling (not
# implemented for Wan); a video too small for the downsamplers.
"$ST" fill "$T/z3.st" z 1 3 2 3 4 || fail "st-tool fill"
expect_status 65 "$LATENTQ" forward --model "$M" --component vae-decoder \
    --inputs "$T/z3.st" --out "$T/x.st"
expect_grep "input z has 3 channels; the VAE's z_dim is 4.*\[LQ-NN-INPUT\]" "$T/err"
expect_status 65 "$LATENTQ" forward --model "$M" --component vae-decoder \
    --inputs "$T/dec_b.in.st" --set use_tiling=true --out "$T/x.st"
expect_grep 'VAE tiling for Wan is not implemented.*\[LQ-NN-TILING\]' "$T/err"
"$ST" fill "$T/tiny.st" x 1 3 1 4 8 || fail "st-tool fill"
expect_status 65 "$LATENTQ" forward --model "$M" --component vae-encoder \
    --inputs "$T/tiny.st" --out "$T/x.st"
expect_grep 'encoder.down_blocks.5 receives 1 x 2 cells.*\[LQ-NN-SHAPE\]' "$T/err"

# Configs: what latentq does not implement (Wan 2.2's residual VAE and
# patchify) or upstream cannot run, each naming the key.
bad_config() {
	bc_m=$T/bad-$checks
	mkdir -p "$bc_m"
	sed "$1" "$M/config.json" >"$bc_m/config.json"
	cmp -s "$M/config.json" "$bc_m/config.json" &&
	    fail "bad_config: '$1' changed nothing"
	ln -s "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$bc_m/"
	expect_status 65 "$LATENTQ" forward --model "$bc_m" \
	    --component "$4" --inputs "$5" --out "$T/x.st"
	expect_grep "$3.*\[$2\]" "$T/err"
}
bad_config 's/"is_residual": false/"is_residual": true/' LQ-MODEL-006 \
    'is_residual true .* is not implemented' vae-decoder "$T/dec_b.in.st"
bad_config 's/"patch_size": null/"patch_size": 2/' LQ-MODEL-006 \
    'patch_size 2 .* is not implemented' vae-decoder "$T/dec_b.in.st"
bad_config '/"temperal_downsample"/,/\]/{/true,$/d;}' LQ-MODEL-004 \
    'temperal_downsample has 2 entries; dim_mult.s 4 levels need 3' \
    vae-decoder "$T/dec_b.in.st"
bad_config '/"latents_mean"/,/\]/{/0.3,$/d;}; /"latents_std"/,/\]/{/1.5,$/d;}' \
    LQ-MODEL-004 'latents_mean and latents_std have 3 entries but z_dim is 4' \
    vae-decoder "$T/dec_b.in.st"
bad_config 's/"attn_scales": \[\]/"attn_scales": [0.5]/' LQ-MODEL-006 \
    'attn_scales puts a WanAttentionBlock after encoder.down_blocks.2' \
    vae-encoder "$T/enc.in.st"
# the decoder never builds attn_scales' blocks (upstream's WanUpBlock has
# none): the same config decodes the golden
vm=$T/attn
mkdir -p "$vm"
sed 's/"attn_scales": \[\]/"attn_scales": [0.5]/' "$M/config.json" >"$vm/config.json"
ln -s "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$vm/"
expect_status 0 "$LATENTQ" forward --model "$vm" --component vae-decoder \
    --inputs "$T/dec_b.in.st" --out "$T/attn.st"
compare vae/dec_b.safetensors "$T/attn.st" output:sample
finish
