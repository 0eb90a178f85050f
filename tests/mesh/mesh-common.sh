# mesh-common.sh — shared by the mesh tests (issue 16): logical devices on
# lavapipe and a helper that renders one job of a mesh with save_tensors.
. "${top_srcdir:-.}/tests/cli/render-common.sh"

LATENTQ_LOGICAL_DEVICES=4; export LATENTQ_LOGICAL_DEVICES
unset LATENTQ_MESH_NO_KV_GATHER

# mesh_job DIR MODEL SIZE MESH PER_DEVICE [STEPS] : writes DIR/m.yaml, one
# job of MODEL at SIZE ("HxWxF") on MESH, guidance 4, seed 3.
mesh_job() {
	dir=$1 model=$2 size=$3 mesh=$4 pdb=$5 steps=${6:-2}
	h=${size%%x*}; rest=${size#*x}; w=${rest%%x*}; f=${rest#*x}
	mkdir -p "$dir"
	cat > "$dir/m.yaml" <<YAML
jobs:
  - name: $(basename "$dir")
    model: $model
    prompt: a red circle moving left on a black background
    height: $h
    width: $w
    num_frames: $f
    num_inference_steps: $steps
    guidance_scale: 4
    seed: 3
    mesh: $mesh
    per_device_batch_size: $pdb
    output: out.mp4
    save_tensors: tensors.safetensors
YAML
}

# mesh_render DIR : renders DIR/m.yaml into DIR (its own database).
mesh_render() {
	expect_status 0 "$LATENTQ" -d "$1/q.db" render "$1/m.yaml"
}

# same_bits NAME REF DIR : DIR's save_tensors (per-step latents, video_np,
# video_uint8) are byte-identical to REF's.
same_bits() {
	checks=$((checks + 1))
	cmp -s "$2/tensors.safetensors" "$3/tensors.safetensors" ||
	    fail "$1: save_tensors differ from one device's"
}

# mesh_kill_resume NAME REF DIR STEP : renders DIR/m.yaml with a SIGKILL
# after step STEP of its first attempt: one crash, resumed after STEP, and
# its save_tensors byte-identical to REF's.
mesh_kill_resume() {
	LATENTQ_FAULT="kill@denoise:$4#1" expect_status 0 "$LATENTQ" \
	    -d "$3/q.db" render "$3/m.yaml"
	expect_eq "$(sqlite3 "$3/q.db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "$1: one crash"
	expect_eq "$(sqlite3 "$3/q.db" "SELECT detail FROM events WHERE kind = 'resumed'")" "{\"step\":$4}" "$1: resumed after step $4"
	same_bits "$1: killed and resumed" "$2" "$3"
}

# mesh_devices_used NAME DIR WANT : DIR's devices_used event lists each
# rank as [index, data, context], WANT in jq -c's form.
mesh_devices_used() {
	expect_eq "$(sqlite3 "$2/q.db" "SELECT detail FROM events WHERE kind = 'devices_used'" | jq -c '[.devices_used[] | [.index, .mesh.data, .mesh.context]]')" \
	    "$3" "$1: devices_used"
}
