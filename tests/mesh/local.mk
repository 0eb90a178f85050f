# Issue 16: renders on device meshes (logical devices on lavapipe) equal
# to one device, and the meshes a host cannot hold given back untouched.
# Slow: ltx2.sh renders seven LTX-2 jobs, about 3.5 minutes under load.
MESH_TESTS = tests/mesh/host.sh tests/mesh/parity.sh tests/mesh/context3.sh \
	tests/mesh/ltx2.sh tests/mesh/wan.sh
TESTS += $(MESH_TESTS)
EXTRA_DIST += $(MESH_TESTS) tests/mesh/mesh-common.sh
