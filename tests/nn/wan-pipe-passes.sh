#!/bin/sh
# The Wan transformer (WanTransformer3DModel, transformer_wan.py) called as
# diffusers' WanPipeline calls it (pipelines/wan/pipeline_wan.py at
# 58eb52c), through `latentq forward --component transformer`, against
# every transformer pass the pipeline golden recorded (tests/data/wan/
# pipeline, 4 steps): step i's latents (input.latents, then step i-1's
# latents_after, as the golden recorded them) with the integer timestep
# timesteps[i] (int64, one value for the batch), prompt_embeds for the cond
# pass and negative_prompt_embeds for the uncond pass (8 rows, 6 and 3 of
# them valid: the padded rows are attended).  Each output within its
# suggested_atol; the cond pass with the uncond embeddings does not match.
. "${top_srcdir:-.}/tests/cli/common.sh"
D=$top_srcdir/tests/data/wan
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool
R=$D/pipeline/run.safetensors
M=$D/pipeline/model/transformer

compare() {	# compare MINE KEY... : st-compare on the pipeline's run
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" pipeline/run.safetensors "$@" ||
	    fail "st-compare $*"
}

"$ST" pick "$T/cond.st" "$R" input.prompt_embeds:encoder_hidden_states \
    >/dev/null || fail "pick prompt_embeds"
"$ST" pick "$T/uncond.st" "$R" \
    input.negative_prompt_embeds:encoder_hidden_states >/dev/null ||
    fail "pick negative_prompt_embeds"
prev=input.latents
for i in 0 1 2 3; do
	"$ST" pick "$T/lat$i.st" "$R" "$prev:hidden_states" >/dev/null &&
	    "$ST" crop "$T/t$i.st" "$R" timesteps 0 "$i" 1 >/dev/null &&
	    "$ST" pick "$T/ts$i.st" "$T/t$i.st" timesteps:timestep >/dev/null ||
	    fail "step $i inputs"
	for pass in cond uncond; do
		expect_status 0 "$LATENTQ" forward --model "$M" --component \
		    transformer --inputs "$T/lat$i.st" --inputs "$T/ts$i.st" \
		    --inputs "$T/$pass.st" --out "$T/$pass$i.out"
		compare "$T/$pass$i.out" "step$i.noise_pred_$pass:output"
	done
	prev=step$i.latents_after
done
# the two passes differ by their text only: each is checked against its own
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" pipeline/run.safetensors "$T/uncond0.out" \
    step0.noise_pred_cond:output >/dev/null &&
    fail "step 0: the uncond pass matched the cond golden"
finish
