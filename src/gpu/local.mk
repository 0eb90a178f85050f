# gpu: Vulkan runtime, kernels (shaders/*.comp compiled by glslc and
# embedded with tools/embed), device caps, tests and benchmarks.
liblatentq_a_SOURCES += \
	src/gpu/caps.c src/gpu/caps.h \
	src/gpu/gpu.c src/gpu/gpu.h src/gpu/internal.h \
	src/gpu/ops.c src/gpu/ops.h
nodist_liblatentq_a_SOURCES += src/gpu/spirv.c
BUILT_SOURCES += src/gpu/spirv.c
CLEANFILES += src/gpu/spirv.c $(GPU_SPV)

GPU_SHADER_DEPS = $(srcdir)/shaders/common.glsl $(srcdir)/shaders/push.h \
	$(srcdir)/shaders/reduce.glsl
GPU_PLAIN = ew norm normc gnorm rope conv3d d2s
GPU_SPV = $(GPU_PLAIN:%=shaders/%.spv) \
	shaders/matmul_f32.spv shaders/matmul_f16.spv shaders/matmul_bf16.spv \
	shaders/linear_f32.spv shaders/linear_f16.spv shaders/linear_bf16.spv \
	shaders/linear_tex_f32.spv shaders/linear_tex_f16.spv \
	shaders/linear_tex_bf16.spv \
	shaders/attn32.spv shaders/attn64.spv shaders/attn128.spv \
	shaders/attn256.spv shaders/attn_tex64.spv shaders/attn_tex128.spv \
	shaders/conv3d_tex_f32.spv shaders/conv3d_tex_f16.spv \
	shaders/conv3d_tex_bf16.spv
EXTRA_DIST += $(GPU_SHADER_DEPS) $(GPU_PLAIN:%=$(srcdir)/shaders/%.comp) \
	$(srcdir)/shaders/matmul.comp $(srcdir)/shaders/attn.comp $(srcdir)/shaders/attn_tex.comp \
	$(srcdir)/shaders/linear.comp

GLSLC_FLAGS = --target-env=vulkan1.2 -O -I$(srcdir)/shaders
GLSLC_V = $(GLSLC_V_@AM_V@)
GLSLC_V_ = $(GLSLC_V_@AM_DEFAULT_V@)
GLSLC_V_0 = @echo "  GLSLC   " $@;

shaders/%.spv: $(srcdir)/shaders/%.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -o $@ $<
shaders/matmul_f32.spv: $(srcdir)/shaders/matmul.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DBT=0u -o $@ $<
shaders/matmul_f16.spv: $(srcdir)/shaders/matmul.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DBT=1u -o $@ $<
shaders/matmul_bf16.spv: $(srcdir)/shaders/matmul.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DBT=2u -o $@ $<
shaders/linear_f32.spv: $(srcdir)/shaders/linear.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DWT=0 -o $@ $<
shaders/linear_f16.spv: $(srcdir)/shaders/linear.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DWT=1 -o $@ $<
shaders/linear_bf16.spv: $(srcdir)/shaders/linear.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DWT=2 -o $@ $<
shaders/linear_tex_f32.spv: $(srcdir)/shaders/linear.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DTEX -DWT=0 -o $@ $<
shaders/linear_tex_f16.spv: $(srcdir)/shaders/linear.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DTEX -DWT=1 -o $@ $<
shaders/linear_tex_bf16.spv: $(srcdir)/shaders/linear.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DTEX -DWT=2 -o $@ $<
shaders/conv3d_tex_f32.spv: $(srcdir)/shaders/conv3d.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DTEX -DWT=0 -o $@ $<
shaders/conv3d_tex_f16.spv: $(srcdir)/shaders/conv3d.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DTEX -DWT=1 -o $@ $<
shaders/conv3d_tex_bf16.spv: $(srcdir)/shaders/conv3d.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DTEX -DWT=2 -o $@ $<
shaders/attn_tex%.spv: $(srcdir)/shaders/attn_tex.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DMAXD=$* -o $@ $<
shaders/attn%.spv: $(srcdir)/shaders/attn.comp $(GPU_SHADER_DEPS)
	@$(MKDIR_P) shaders
	$(GLSLC_V)$(GLSLC) $(GLSLC_FLAGS) -DMAXD=$* -o $@ $<

src/gpu/spirv.c: $(GPU_SPV) embed$(EXEEXT)
	@$(MKDIR_P) src/gpu
	$(AM_V_GEN)./embed$(EXEEXT) $@ gpu_spirv \
	    $(foreach f,$(GPU_SPV),$(notdir $(f))=$(f))

# latentq devices
liblatentq_a_SOURCES += src/cmd/devices.c

# tests
check_PROGRAMS += tests/gpu/test-ops tests/gpu/test-runtime tests/gpu/test-split
TESTS += tests/gpu/test-ops tests/gpu/test-runtime tests/gpu/test-split \
	tests/gpu/validate.sh \
	tests/gpu/devices.sh
EXTRA_DIST += tests/gpu/validate.sh tests/gpu/devices.sh tests/gpu/ref.h
tests_gpu_test_ops_SOURCES = tests/gpu/test-ops.c tests/gpu/ref.h
tests_gpu_test_ops_LDADD = $(LQ_TEST_LDADD)
tests_gpu_test_runtime_SOURCES = tests/gpu/test-runtime.c
tests_gpu_test_runtime_LDADD = $(LQ_TEST_LDADD)
tests_gpu_test_split_SOURCES = tests/gpu/test-split.c
tests_gpu_test_split_LDADD = $(LQ_TEST_LDADD)

# benchmarks (make bench)
EXTRA_PROGRAMS += tests/bench/bench-gpu
bench_PROGRAMS_LIST += tests/bench/bench-gpu
tests_bench_bench_gpu_SOURCES = tests/bench/bench-gpu.c
tests_bench_bench_gpu_LDADD = $(LQ_TEST_LDADD)
