#!/bin/sh
# Installs what latentq needs to build, test and render on Debian 12.
# One list, used by the README and by .ci/run.  postgresql (the server,
# with psql) is for the tests against PostgreSQL (tests/cli/pg-server.sh);
# latentq itself needs only libpq.
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
	autoconf automake libtool pkg-config make gcc g++ \
	libsqlite3-dev sqlite3 libyaml-dev libcjson-dev libcurl4-openssl-dev \
	libpq-dev postgresql \
	libvulkan-dev mesa-vulkan-drivers glslc vulkan-validationlayers \
	libavcodec-dev libavformat-dev libavutil-dev libswscale-dev ffmpeg \
	libarchive-dev libsodium-dev libsentencepiece-dev sentencepiece \
	libpng-dev libopenblas-dev man-db groff-base ca-certificates file \
	python3
