#!/bin/sh
# Issue 16: renders of the demo model on meshes of logical devices are
# bit-identical to one device: context parallel (Ulysses), data parallel
# over the rows of one guided video (per_device_batch_size 0.5), and both,
# image-to-video too; every device is recorded in devices_used.
. "${top_srcdir:-.}/tests/mesh/mesh-common.sh"

M=$T/model
mesh_job "$T/one" "$M" 64x64x9 "{devices: 1}" 1
mesh_render "$T/one"
mesh_job "$T/cp2" "$M" 64x64x9 "{devices: 2, context: 2}" 1
mesh_render "$T/cp2"
same_bits "{devices: 2, context: 2}" "$T/one" "$T/cp2"
mesh_job "$T/dp2" "$M" 64x64x9 "{devices: 2, data: 2}" 0.5
mesh_render "$T/dp2"
same_bits "{devices: 2, data: 2}, per_device_batch_size 0.5" "$T/one" "$T/dp2"
mesh_job "$T/dp2cp2" "$M" 64x64x9 "{devices: 4, data: 2, context: 2}" 0.5
mesh_render "$T/dp2cp2"
same_bits "{devices: 4, data: 2, context: 2}" "$T/one" "$T/dp2cp2"

# image-to-video: per-token timesteps (0 on the image's latent frame) are
# sharded with the tokens
mesh_job "$T/i2v1" "$M" 64x64x9 "{devices: 1}" 1
echo "    image: $top_srcdir/jobs/images/red-circle.png" >> "$T/i2v1/m.yaml"
mesh_render "$T/i2v1"
mesh_job "$T/i2v4" "$M" 64x64x9 "{devices: 4, data: 2, context: 2}" 0.5
echo "    image: $top_srcdir/jobs/images/red-circle.png" >> "$T/i2v4/m.yaml"
mesh_render "$T/i2v4"
same_bits "image-to-video on {devices: 4, data: 2, context: 2}" "$T/i2v1" "$T/i2v4"

# devices_used: one entry per device, its slot, uuid and mesh coordinates
"$LATENTQ" -d "$T/dp2cp2/q.db" show --json 1 > "$T/show.json"
expect_eq "$(jq -c '[.events[] | select(.kind == "devices_used") | .detail.devices_used[] | [.index, .mesh.data, .mesh.context]]' "$T/show.json")" \
    "[[0,0,0],[1,0,1],[2,1,0],[3,1,1]]" "devices_used of {4, data 2, context 2}"
expect_eq "$(jq -r '[.events[] | select(.kind == "devices_used") | .detail.devices_used[].uuid | length] | unique | .[0]' "$T/show.json")" 32 "devices_used uuids"

# --device lists name the mesh's devices: 3,1 is two devices, in that order
mesh_job "$T/list" "$M" 64x64x9 "{devices: 2, context: 2}" 1 1
expect_status 0 "$LATENTQ" -d "$T/list/q.db" --device 3,1 render "$T/list/m.yaml"
expect_eq "$(sqlite3 "$T/list/q.db" "SELECT detail FROM events WHERE kind = 'devices_used'" | jq -c '[.devices_used[].index]')" "[3,1]" "--device 3,1"
# ... and one entry is too few for a mesh of two: given back untouched
mesh_job "$T/few" "$M" 64x64x9 "{devices: 2, context: 2}" 1 1
expect_status 69 "$LATENTQ" -d "$T/few/q.db" --device 2 render "$T/few/m.yaml"
expect_grep 'LQ-RUN-MESH-HOST' "$T/err"
expect_grep 'needs 2 devices of one kind but --device "2" names 1' "$T/err"
expect_eq "$(sqlite3 "$T/few/q.db" "SELECT state || ' ' || failures FROM jobs")" "queued 0" "--device 2: given back untouched"
finish
