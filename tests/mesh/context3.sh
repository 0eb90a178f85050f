#!/bin/sh
# Issue 16: a model whose 3 heads divide by 3 (synthesised by latentq
# model synth) on {devices: 3, context: 3} equals one device; a SIGKILL in
# the middle of a mesh render resumes to the same bits; and the negative
# control: sharding tokens without gathering keys in self-attention (the
# seed of the upstream context-parallel bugs) changes the output, so the
# equality checks can fail.
. "${top_srcdir:-.}/tests/mesh/mesh-common.sh"

M=$T/tiny3
expect_status 0 "$LATENTQ" model synth --preset tiny --seed 7 \
    --set transformer.num_attention_heads=3 \
    --set transformer.cross_attention_dim=48 "$M"
# 32x32 pixels, 9 frames: 2 x 2 latent pixels, 3 latent frames, 12 tokens
mesh_job "$T/one" "$M" 32x32x9 "{devices: 1}" 1 3
mesh_render "$T/one"
mesh_job "$T/cp3" "$M" 32x32x9 "{devices: 3, context: 3}" 1 3
mesh_render "$T/cp3"
same_bits "{devices: 3, context: 3}" "$T/one" "$T/cp3"

# SIGKILL after step 1 of 3 on the mesh: resumes at step 1, same bits
mesh_job "$T/kill" "$M" 32x32x9 "{devices: 3, context: 3}" 1 3
mesh_kill_resume "{devices: 3, context: 3}" "$T/one" "$T/kill" 1

# the negative control
mesh_job "$T/neg" "$M" 32x32x9 "{devices: 3, context: 3}" 1 3
LATENTQ_MESH_NO_KV_GATHER=1 mesh_render "$T/neg"
checks=$((checks + 1))
if cmp -s "$T/one/tensors.safetensors" "$T/neg/tensors.safetensors"; then
	fail "tokens sharded without gathering keys rendered one device's bits"
fi

# bad meshes are still refused, with their codes
mesh_job "$T/bad5" "$M" 32x32x9 "{devices: 2, context: 2}" 1
expect_status 65 "$LATENTQ" -d "$T/bad5/q.db" preflight "$T/bad5/m.yaml"
expect_grep 'LQ-MESH-005' "$T/out"
mesh_job "$T/bad4" "$M" 32x32x5 "{devices: 3, context: 3}" 1
expect_status 65 "$LATENTQ" -d "$T/bad4/q.db" preflight "$T/bad4/m.yaml"
expect_grep 'LQ-MESH-004' "$T/out"
finish
