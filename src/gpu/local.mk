# gpu: Vulkan runtime, kernels (shaders/*.comp compiled by glslc and
# embedded with tools/embed), device caps, tests and benchmarks.
# The runtime is split along its parts (vk.h lists them); tensor.c needs
# no device and has its own test.
libgpu_a_SOURCES += \
	src/gpu/caps.c src/gpu/caps.h \
	src/gpu/gpu.h src/gpu/internal.h src/gpu/kernels.def src/gpu/vk.h \
	src/gpu/device.c src/gpu/buffer.c src/gpu/tensor.c src/gpu/pool.c \
	src/gpu/cmd.c src/gpu/host.c src/gpu/host_rows.c src/gpu/profile.c \
	src/gpu/ops.c src/gpu/ops.h
nodist_libgpu_a_SOURCES += src/gpu/spirv.c
BUILT_SOURCES += src/gpu/spirv.c
CLEANFILES += src/gpu/spirv.c $(GPU_SPV)

GPU_SHADER_DEPS = $(srcdir)/shaders/common.glsl $(srcdir)/shaders/push.h \
	$(srcdir)/shaders/abi.h $(srcdir)/shaders/reduce.glsl \
	$(srcdir)/shaders/attn_tile.glsl

# The kernels: one row each in src/gpu/kernels.def, read here as
# NAME:SOURCE:DEFINES (spaces in DEFINES travel as commas).  The same rows
# make enum gpu_kernel and the pipeline table, so a kernel is added in one
# place.
# (make counts parentheses inside $(shell): they are gpu_lp and gpu_rp.)
gpu_lp := (
gpu_rp := )
gpu_comma := ,
GPU_KERNEL_ROWS := $(shell sed -n 's/^[[:space:]]*X$(gpu_lp)[A-Z0-9_]*, *"\$(gpu_lp)[a-z0-9_]*\$(gpu_rp)", *"\$(gpu_lp)[a-z0-9_]*\$(gpu_rp)", *"\$(gpu_lp)[^"]*\$(gpu_rp)".*/\1:\2:\3/p' $(srcdir)/src/gpu/kernels.def | tr ' ' ',')
gpu_field = $(word $(2),$(subst :, ,$(subst ::,: :,$(1))))
GPU_KERNEL_NAMES := $(foreach r,$(GPU_KERNEL_ROWS),$(call gpu_field,$(r),1))
$(foreach r,$(GPU_KERNEL_ROWS),$(eval GPU_SRC_$(call gpu_field,$(r),1) := $(call gpu_field,$(r),2)))
$(foreach r,$(GPU_KERNEL_ROWS),$(eval GPU_DEFS_$(call gpu_field,$(r),1) := $(subst $(gpu_comma), ,$(call gpu_field,$(r),3))))
GPU_SPV = $(GPU_KERNEL_NAMES:%=shaders/%.spv)
GPU_COMP_NAMES = $(sort $(foreach n,$(GPU_KERNEL_NAMES),$(GPU_SRC_$(n))))
EXTRA_DIST += $(GPU_SHADER_DEPS) src/gpu/kernels.def \
	$(GPU_COMP_NAMES:%=$(srcdir)/shaders/%.comp)

GLSLC_FLAGS = --target-env=vulkan1.2 -O -I$(srcdir)/shaders
GLSLC_V = $(GLSLC_V_@AM_V@)
GLSLC_V_ = $(GLSLC_V_@AM_DEFAULT_V@)
GLSLC_V_0 = @echo "  GLSLC   " $@;

$(foreach n,$(GPU_KERNEL_NAMES),$(eval shaders/$(n).spv: $(srcdir)/shaders/$(GPU_SRC_$(n)).comp))
$(GPU_SPV): shaders/%.spv: $(GPU_SHADER_DEPS) $(srcdir)/src/gpu/kernels.def
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) $(GPU_DEFS_$*) -o $@ \
	    $(srcdir)/shaders/$(GPU_SRC_$*).comp

src/gpu/spirv.c: $(GPU_SPV) embed$(EXEEXT)
	@$(MKDIR_P) src/gpu
	$(AM_V_GEN)./embed$(EXEEXT) $@ gpu_spirv \
	    $(foreach f,$(GPU_SPV),$(notdir $(f))=$(f))

# latentq devices
liblatentq_a_SOURCES += src/cmd/devices.c

# tests
check_PROGRAMS += tests/gpu/test-ops tests/gpu/test-runtime tests/gpu/test-split \
	tests/gpu/test-tensor tests/gpu/test-host
TESTS += tests/gpu/test-tensor tests/gpu/test-ops tests/gpu/test-runtime \
	tests/gpu/test-split tests/gpu/test-host \
	tests/gpu/test-ops-shaders.sh tests/gpu/validate.sh \
	tests/gpu/devices.sh
EXTRA_DIST += tests/gpu/validate.sh tests/gpu/devices.sh tests/gpu/ref.h \
	tests/gpu/test-ops-shaders.sh
tests_gpu_test_ops_SOURCES = tests/gpu/test-ops.c tests/gpu/ref.h
tests_gpu_test_ops_LDADD = $(LQ_TEST_LDADD)
tests_gpu_test_runtime_SOURCES = tests/gpu/test-runtime.c
tests_gpu_test_runtime_LDADD = $(LQ_TEST_LDADD)
# tensor.c alone, with no Vulkan library: a view that reached the device
# would not link
tests_gpu_test_tensor_SOURCES = tests/gpu/test-tensor.c src/gpu/tensor.c
tests_gpu_test_tensor_LDADD = libcore.a $(SODIUM_LIBS) -lm
tests_gpu_test_split_SOURCES = tests/gpu/test-split.c
tests_gpu_test_split_LDADD = $(LQ_TEST_LDADD)
tests_gpu_test_host_SOURCES = tests/gpu/test-host.c
tests_gpu_test_host_LDADD = $(LQ_TEST_LDADD)

# benchmarks (make bench)
EXTRA_PROGRAMS += tests/bench/bench-gpu
bench_PROGRAMS_LIST += tests/bench/bench-gpu
tests_bench_bench_gpu_SOURCES = tests/bench/bench-gpu.c
tests_bench_bench_gpu_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_bench_bench_gpu_LDADD = $(LQ_TEST_LDADD) $(OPENBLAS_LIBS) -lpthread
