liblatentq_a_SOURCES += \
	src/render/render.c src/render/render.h \
	src/render/render-int.h src/render/common.c src/render/mesh.c \
	src/render/ltx2.c src/render/wan.c
include tests/render/local.mk
EXTRA_DIST += jobs/ltx2.yaml jobs/ltx2-demo.yaml jobs/wan.yaml
