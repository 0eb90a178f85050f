#!/bin/sh
# Tensors larger than one binding, through whole models: `latentq forward`
# of the golden transformer grids and VAE decoders with the device's
# binding limit lowered (LATENTQ_GPU_MAX_BINDING) gives the same bytes as
# with the device's own limit.  The limits are below the models' larger
# activations (the transformer's [2, N, 32] hidden states of 9-16 KiB, the
# VAE's last convolution and unpatchify of 0.4-1.1 MB), so their ops split
# (tests/gpu/test-split checks each op kind on its own).
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv

same() {	# NAME
	checks=$((checks + 1))
	cmp -s "$T/$1.whole.st" "$T/$1.split.st" ||
	    fail "$1: output with LATENTQ_GPU_MAX_BINDING differs"
}

# The transformer on both kernel paths: on lavapipe the default runs its
# linear layers and attention as host GEMMs, which never split
# (LATENTQ_GPU_HOST_GEMM, gpu/host.c); =0 splits them as shaders.
for path in host:1 shader:0; do
	for g in gridA gridB; do
		for run in whole:4294967295 split:16384; do
			expect_status 0 env LATENTQ_GPU_MAX_BINDING="${run#*:}" \
			    LATENTQ_GPU_HOST_GEMM="${path#*:}" \
			    "$LATENTQ" forward --model "$D/transformer/model" \
			    --component transformer \
			    --inputs "$D/transformer/$g.inputs.safetensors" \
			    --out "$T/$g.${path%:*}.${run%:*}.st"
		done
		checks=$((checks + 1))
		cmp -s "$T/$g.${path%:*}.whole.st" "$T/$g.${path%:*}.split.st" ||
		    fail "$g (${path%:*}): output with LATENTQ_GPU_MAX_BINDING differs"
	done
done

for v in vae090 vae091 vae_causal; do
	set -- --inputs "$D/vae/$v/decode.inputs.safetensors"
	[ -f "$D/vae/$v/decode.inject_noise.safetensors" ] &&
	    set -- "$@" --inputs "$D/vae/$v/decode.inject_noise.safetensors"
	for run in whole:4294967295 split:196608; do
		expect_status 0 env LATENTQ_GPU_MAX_BINDING="${run#*:}" \
		    "$LATENTQ" forward --model "$D/vae/$v/model/vae" \
		    --component vae-decoder "$@" --out "$T/$v.${run%:*}.st"
	done
	same "$v"
done

# What no split can fix is refused with the tensor and the limit named:
# at 1 KiB one sample's attention keys do not fit (in the shader; the
# host path binds nothing).
expect_status 1 env LATENTQ_GPU_MAX_BINDING=1024 LATENTQ_GPU_HOST_GEMM=0 \
    "$LATENTQ" forward \
    --model "$D/transformer/model" --component transformer \
    --inputs "$D/transformer/gridA.inputs.safetensors" --out "$T/no.st"
expect_grep "LQ-GPU-RANGE" "$T/err"
expect_grep "ops_attention: k f32" "$T/err"
expect_grep "binds \\(1024 bytes, maxStorageBufferRange\\)" "$T/err"

finish
