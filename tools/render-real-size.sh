#!/bin/sh
# render-real-size.sh — issue 12's real-size render: 512x768x121, 25 steps,
# with a model of the 0.9.1 geometry (VAE with 128 latent channels, 32x
# spatial / 8x temporal compression, timestep conditioning and noise
# injection) at a narrow width, so it runs on lavapipe.  Prints each
# step's compute time as it ends, the job's VAE tiling choice, the MP4's
# frame count and size, and the wall time.
# Too long for `make check` (minutes to an hour, depending on the host).
#
#   tools/render-real-size.sh [DIR]     (default: a fresh temp folder)
#
# LATENTQ_REAL_WIDTH=full keeps the preset's transformer (28 layers x
# 2048, 32 heads x 64) and VAE (decoder 256/512/1024) with sparse weights
# (zeros, which cost what any value does) and only the T5 narrow (so the
# transformer's caption projection takes its 32 channels): the render a
# GPU does (issue 18; tools/device-check.sh).  LATENTQ_REAL_SIZE=HxWxF
# and LATENTQ_REAL_STEPS shrink it for a smoke run.  DIR keeps the model
# (one per width), real.db and render.log (the -vv log, step times in it).
#
# Needs `latentq model synth --preset 0.9.1-2b --set ...` (the release
# presets), sqlite3, and ffprobe (Debian: ffmpeg) for the frame count.
set -eu
LATENTQ=${LATENTQ:-$(pwd)/latentq}
width=${LATENTQ_REAL_WIDTH:-narrow}
size=${LATENTQ_REAL_SIZE:-512x768x121}
steps=${LATENTQ_REAL_STEPS:-25}
h=${size%%x*}; rest=${size#*x}; w=${rest%%x*}; f=${rest#*x}
D=${1:-$(mktemp -d /tmp/latentq-real.XXXXXX)}
mkdir -p "$D"
cd "$D"
set -- --set text_encoder.d_model=32 --set text_encoder.d_kv=8 \
    --set text_encoder.d_ff=64 --set text_encoder.num_layers=1 \
    --set text_encoder.num_heads=4 --set text_encoder.vocab_size=160 \
    --set transformer.caption_channels=32
case $width in
narrow)
	set -- "$@" --set transformer.num_layers=1 \
	    --set transformer.num_attention_heads=2 \
	    --set transformer.attention_head_dim=16 \
	    --set transformer.cross_attention_dim=32 \
	    --set 'vae.block_out_channels=[8,16,16,16]' \
	    --set 'vae.layers_per_block=[1,1,1,1,1]' \
	    --set 'vae.decoder_block_out_channels=[8,16,32]' \
	    --set 'vae.decoder_layers_per_block=[1,1,1,1]' ;;
full)	set -- "$@" --sparse ;;
*)	echo "LATENTQ_REAL_WIDTH: narrow or full, not $width" >&2; exit 2 ;;
esac
[ -d "model-$width" ] ||
    "$LATENTQ" model synth --preset 0.9.1-2b "$@" "model-$width"
cat > real.yaml <<YAML
jobs:
  - name: real-size
    model: ./model-$width
    prompt: a red circle moving left on a black background
    height: $h
    width: $w
    num_frames: $f
    num_inference_steps: $steps
    max_sequence_length: 32
YAML
rm -f real.db real.db-* real-size.mp4
echo "render ${h}x${w}x${f}, $steps steps, $width width"
t0=$(date +%s)
# -vv logs each step's compute and checkpoint time: shown as each step
# ends, so a run cut short still tells its step time
: > render.log
"$LATENTQ" -vv -d real.db render real.yaml 2> render.log &
pid=$!
tail -f render.log --pid=$pid 2>/dev/null | grep --line-buffered 'step [0-9]*: compute' || true
wait $pid || { tail -n 20 render.log >&2; exit 1; }
t1=$(date +%s)
echo "wall time: $((t1 - t0)) s"
sqlite3 real.db "SELECT kind, detail FROM events WHERE kind IN
    ('vae_tiling', 'decode_retry', 'peak_device_bytes', 'plan')"
if command -v ffprobe >/dev/null 2>&1; then
	ffprobe -v error -select_streams v:0 -count_frames -show_entries \
	    stream=nb_read_frames,width,height -of csv=p=0 real-size.mp4
fi
