#!/bin/sh
# The two-stage recipe (issue 14 item 5) as ONE job with `second_stage:`,
# against the upstream golden tests/data/ltxv-twostage/twostage (every
# random draw supplied with `noise:`, named stage1.* / stage2.*): stage 1
# (32 x 64, 4 steps, the condition image resized as PIL's LANCZOS) ends in
# latents, LTXLatentUpsamplePipeline (adain_factor 1) doubles them, stage 2
# (64 x 128, denoise_strength 0.4 of 10 steps) refines and decodes.
# stage1.latents_out, upsample.latents_out and stage 2's
# latents_after_step within suggested_atol, video_np within its atol,
# video_uint8 within ±1.  With latentq's own draws, a SIGKILL mid stage 1,
# right after the upsampler and mid stage 2 resumes to a byte-identical
# MP4 and save_tensors file, never running a finished stage again.
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv-twostage
X=$top_srcdir/tests/data/ltxv-extra
Y=$D/twostage
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool
digest() { sha256sum "$1" | cut -d' ' -f1; }
# one queue database per run, SQLite or PostgreSQL (tests/pg/twostage.sh)
for n in g ref k1 ku k2 pf example; do
	eval "DB_$n=\$(new_db $n)"
done
dbof() { eval "echo \"\$DB_$1\""; }

# manifest DIR [EXTRA LINES] : the recipe as one job
manifest() {
	cat > "$1/m.yaml" <<YAML
jobs:
  - name: two
    model: $top_srcdir/tests/data/pipeline/pipeB/model
    transformer: $X/models/transformer
    vae: $X/models/vae091
    scheduler: $D/scheduler
    prompt_embeds: $Y/text.safetensors
    height: 32
    width: 64
    num_frames: 9
    frame_rate: 25
    num_inference_steps: 4
    guidance_scale: 3.0
    guidance_rescale: 0.7
    image_cond_noise_scale: 0
    decode_timestep: 0.05
    decode_noise_scale: 0.025
    max_sequence_length: 12
    seed: 7
    conditions:
      - image: $T/image.png
    second_stage:
      latent_upsampler: $X/models/upsampler_spatial3d
      adain_factor: 1.0
      tone_map_compression_ratio: 0
      height: 64
      width: 128
      num_inference_steps: 10
      denoise_strength: 0.4
    save_tensors: tensors.safetensors
    output: videos/two.mp4
${2:-}
YAML
}

"$ST" png "$T/image.png" "$Y/image.safetensors" image_uint8 ||
    fail "st-tool png"
# stage 1's condition: the 64 x 128 image resized as upstream's
# VideoProcessor.preprocess does (PIL LANCZOS), bit for bit
"$ST" png-chw "$T/small.png" "$Y/stage1.prepare.safetensors" \
    condition_preprocessed || fail "st-tool png-chw"
"$ST" image "$T/small.st" "$T/small.png" img || fail "st-tool image"
"$ST" resize "$T/resized.st" "$T/image.png" img 32 64 || fail "st-tool resize"
checks=$((checks + 1))
"$ST" diff "$T/resized.st" "$T/small.st" img 0 >/dev/null ||
    fail "LANCZOS resize differs from PIL's"

# ---- upstream's draws: the golden ----------------------------------------
mkdir -p "$T/g"
"$ST" pick "$T/s1.st" "$Y/stage1.prepare.safetensors" initial_noise \
    condition_posterior_noise || fail "st-tool pick"
"$ST" prefix "$T/s1p.st" "$T/s1.st" stage1. || fail "st-tool prefix"
"$ST" unprefix "$T/inject.st" "$Y/stage2.decode.inject_noise.safetensors" \
    vae. || fail "st-tool unprefix"
"$ST" pick "$T/s2.st" "$Y/stage2.prepare.safetensors" initial_noise \
    condition_posterior_noise || fail "st-tool pick"
"$ST" pick "$T/s2d.st" "$Y/stage2.output.safetensors" decode_noise ||
    fail "st-tool pick"
"$ST" merge "$T/s2all.st" "$T/s2.st" "$T/s2d.st" "$T/inject.st" ||
    fail "st-tool merge"
"$ST" prefix "$T/s2p.st" "$T/s2all.st" stage2. || fail "st-tool prefix"
"$ST" merge "$T/g/noise.st" "$T/s1p.st" "$T/s2p.st" || fail "st-tool merge"
manifest "$T/g" "    noise: noise.st"
expect_status 0 "$LATENTQ" -d "$DB_g" render "$T/g/m.yaml"
# the compared tensors under the golden's names
"$ST" pick "$T/g/stage1.st" "$T/g/tensors.safetensors" \
    stage1.latents_out:latents_out || fail "st-tool pick"
"$ST" pick "$T/g/upsample.st" "$T/g/tensors.safetensors" \
    upsample.latents_out:latents_out || fail "st-tool pick"
checks=$((checks + 4))
"$CMP" "$D/index.json" "$D" twostage/stage1.output.safetensors \
    "$T/g/stage1.st" latents_out ||
    fail "stage 1 latents_out beyond suggested_atol"
"$CMP" "$D/index.json" "$D" twostage/upsample.safetensors \
    "$T/g/upsample.st" latents_out ||
    fail "upsampled latents beyond suggested_atol"
"$CMP" "$D/index.json" "$D" twostage/stage2.steps.safetensors \
    "$T/g/tensors.safetensors" latents_after_step ||
    fail "stage 2 latents_after_step beyond suggested_atol"
"$CMP" "$D/index.json" "$D" twostage/stage2.output.safetensors \
    "$T/g/tensors.safetensors" video_np video_uint8 ||
    fail "stage 2 video beyond suggested_atol"
# stage 1's steps 1..4, the upsampled latents as stage 2's step 6 (its
# first_step, counted on from 4: 10), stage 2's steps 7..10 as 11..14
expect_eq "$(db_sql "$DB_g" "SELECT group_concat(stage || ':' || step) FROM (SELECT stage, step FROM checkpoints ORDER BY step) AS c")" \
    "1:1,1:2,1:3,1:4,2:10,2:11,2:12,2:13,2:14" "golden: checkpoints of both stages"
# prune keeps the newest checkpoint of the done job (stage 2's last step,
# past stage 1's total) and drops the rest
expect_status 0 "$LATENTQ" -d "$DB_g" prune
expect_eq "$(db_sql "$DB_g" "SELECT group_concat(stage || ':' || step) FROM checkpoints")" \
    "2:14" "golden: prune keeps stage 2's last checkpoint only"

# ---- latentq's draws: kills mid stage 1, after upsampling, mid stage 2 ---
for run in ref k1 ku k2; do
	mkdir -p "$T/$run"
	manifest "$T/$run"
done
expect_status 0 "$LATENTQ" -d "$DB_ref" render "$T/ref/m.yaml"
checks=$((checks + 1))
cmp -s "$T/ref/videos/two.mp4" "$T/g/videos/two.mp4" &&
    fail "seed 7 rendered upstream's draws"
LATENTQ_FAULT="kill@denoise:2#1" expect_status 0 "$LATENTQ" \
    -d "$DB_k1" render "$T/k1/m.yaml"
LATENTQ_FAULT="kill@upsample:10#1" expect_status 0 "$LATENTQ" \
    -d "$DB_ku" render "$T/ku/m.yaml"
LATENTQ_FAULT="kill@denoise:12#1" expect_status 0 "$LATENTQ" \
    -d "$DB_k2" render "$T/k2/m.yaml"
for run in k1 ku k2; do
	expect_eq "$(db_sql "$(dbof $run)" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "$run: one crash"
	expect_eq "$(digest "$T/$run/videos/two.mp4")" "$(digest "$T/ref/videos/two.mp4")" "$run: MP4 identical"
	expect_eq "$(digest "$T/$run/tensors.safetensors")" "$(digest "$T/ref/tensors.safetensors")" "$run: save_tensors identical"
done
expect_eq "$(db_sql "$DB_k1" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"stage":1,"step":2}' "k1: resumed after stage 1's step 2"
expect_eq "$(db_sql "$DB_ku" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"stage":2,"step":6}' "ku: resumed from the upsampled latents"
expect_eq "$(db_sql "$DB_k2" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"stage":2,"step":8}' "k2: resumed after stage 2's step 8"
# a kill in stage 2 never runs stage 1 (nor the upsampler) again
for run in ku k2; do
	expect_eq "$(db_sql "$(dbof $run)" "SELECT count(*) FROM events WHERE kind = 'phase' AND detail = '{\"phase\":\"upsample\"}'")" 1 "$run: upsampled once"
done

# ---- preflight refusals with the golden's models --------------------------
mkdir -p "$T/pf"
manifest "$T/pf"
sed -e "s|upsampler_spatial3d|upsampler_temporal3d|" "$T/pf/m.yaml" > "$T/pf/t.yaml"
expect_status 65 "$LATENTQ" -d "$DB_pf" preflight "$T/pf/t.yaml"
checks=$((checks + 1))
"$LATENTQ" -d "$DB_pf" preflight "$T/pf/t.yaml" 2>&1 |
    grep -q "LQ-STAGE-002" || fail "temporal upsampler: no LQ-STAGE-002"
# stage 2 at 96 x 128: 96 is not a multiple of 64 (stage 1 would be 48)
sed -e "s|      height: 64|      height: 96|" "$T/pf/m.yaml" > "$T/pf/g.yaml"
expect_status 65 "$LATENTQ" -d "$DB_pf" preflight "$T/pf/g.yaml"
checks=$((checks + 1))
"$LATENTQ" -d "$DB_pf" preflight "$T/pf/g.yaml" 2>&1 |
    grep -q "LQ-STAGE-003.*nearest valid: 64 or 128" ||
    fail "stage 2 height 96: no LQ-STAGE-003 with the nearest valid values"

# The example of jobs/ runs on the demo model (with 2 + 2 steps).
mkdir -p "$T/example/images"
sed -e 's|model: models/ltxv-demo|model: '"$top_srcdir"'/jobs/models/ltxv-demo|' \
    -e 's|scheduler: schedulers/static|scheduler: '"$top_srcdir"'/jobs/schedulers/static|' \
    -e 's|latent_upsampler: \.\./|latent_upsampler: '"$top_srcdir"'/|' \
    -e 's/num_inference_steps: 20/num_inference_steps: 2/' \
    -e 's/num_inference_steps: 10/num_inference_steps: 5/' \
    "$top_srcdir/jobs/two-stage.yaml" > "$T/example/two-stage.yaml"
cp "$top_srcdir/jobs/images/red-circle.png" "$T/example/images/"
expect_status 0 "$LATENTQ" -d "$DB_example" render "$T/example/two-stage.yaml"
checks=$((checks + 1))
[ -s "$T/example/out/red-circle-two-stage.mp4" ] ||
    fail "example: no red-circle-two-stage.mp4"

finish
