# src/manifest: YAML/JSON manifests -> typed, resolved job configs.
liblatentq_a_SOURCES += \
	src/manifest/tree.c src/manifest/tree.h \
	src/manifest/schema.c src/manifest/schema.h \
	src/manifest/manifest.c src/manifest/manifest.h

check_PROGRAMS += tests/manifest/test-manifest
TESTS += tests/manifest/test-manifest
tests_manifest_test_manifest_SOURCES = tests/manifest/test-manifest.c
tests_manifest_test_manifest_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/manifest/good/valid.yaml tests/manifest/good/valid.json

# Data-driven bad manifests: tests/manifest/bad/NAME.yaml beside NAME.expect.
check_PROGRAMS += tests/manifest/test-manifest-bad
TESTS += tests/manifest/test-manifest-bad
tests_manifest_test_manifest_bad_SOURCES = tests/manifest/test-manifest-bad.c
tests_manifest_test_manifest_bad_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/manifest/bad
