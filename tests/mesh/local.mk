# Issue 16: renders on device meshes (logical devices on lavapipe) equal
# to one device, and the meshes a host cannot hold given back untouched.
MESH_TESTS = tests/mesh/host.sh tests/mesh/parity.sh tests/mesh/context3.sh \
	tests/mesh/ltx2.sh
TESTS += $(MESH_TESTS)
EXTRA_DIST += $(MESH_TESTS) tests/mesh/mesh-common.sh
