#!/bin/sh
# render-real-size.sh — issue 12's real-size render: 512x768x121, 25 steps,
# with a model of the 0.9.1 geometry (VAE with 128 latent channels, 32x
# spatial / 8x temporal compression, timestep conditioning and noise
# injection) at a narrow width, so it runs on lavapipe.  Prints the job's
# VAE tiling choice, the MP4's frame count and size, and the wall time.
# Too long for `make check` (minutes to an hour, depending on the host).
#
#   tools/render-real-size.sh [DIR]     (default: a fresh temp folder)
#
# Needs `latentq model synth --preset 0.9.1-2b --set ...` (the release
# presets) and ffprobe (Debian: ffmpeg) for the frame count.
set -eu
LATENTQ=${LATENTQ:-$(pwd)/latentq}
D=${1:-$(mktemp -d /tmp/latentq-real.XXXXXX)}
mkdir -p "$D"
cd "$D"
[ -d model ] || "$LATENTQ" model synth --preset 0.9.1-2b \
    --set transformer.num_layers=1 --set transformer.num_attention_heads=2 \
    --set transformer.attention_head_dim=16 \
    --set transformer.cross_attention_dim=32 \
    --set transformer.caption_channels=32 \
    --set 'vae.block_out_channels=[8,16,16,16]' \
    --set 'vae.layers_per_block=[1,1,1,1,1]' \
    --set 'vae.decoder_block_out_channels=[8,16,32]' \
    --set 'vae.decoder_layers_per_block=[1,1,1,1]' \
    --set text_encoder.d_model=32 --set text_encoder.d_kv=8 \
    --set text_encoder.d_ff=64 --set text_encoder.num_layers=1 \
    --set text_encoder.num_heads=4 --set text_encoder.vocab_size=160 model
cat > real.yaml <<'YAML'
jobs:
  - name: real-size
    model: ./model
    prompt: a red circle moving left on a black background
    height: 512
    width: 768
    num_frames: 121
    num_inference_steps: 25
    max_sequence_length: 32
YAML
t0=$(date +%s)
"$LATENTQ" -d real.db render real.yaml
t1=$(date +%s)
echo "wall time: $((t1 - t0)) s"
sqlite3 real.db "SELECT kind, detail FROM events WHERE kind IN
    ('vae_tiling', 'decode_retry', 'peak_device_bytes', 'plan')"
if command -v ffprobe >/dev/null 2>&1; then
	ffprobe -v error -select_streams v:0 -count_frames -show_entries \
	    stream=nb_read_frames,width,height -of csv=p=0 real-size.mp4
fi
