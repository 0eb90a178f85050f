#!/bin/sh
# device-check.sh — issue 18 item 6: latentq's kernel tests, golden tests
# and benchmarks on a GPU machine lent by the `device` tool (an H200 or
# H100 with NVIDIA's Vulkan driver; x86-64, nothing installable there),
# from binaries built here.
#
#   tools/device-check.sh pack            here, in a configured tree
#   tools/device-check.sh slim | unslim   here, around the device calls
#   tools/device-check.sh run [PHASE...]  there, from the repo root, $OUT set
#
# pack builds latentq, the kernel tests and bench-gpu (make), strips
# copies into .device/real/ at their build-tree paths with vk-caps
# (tools/vk-caps.c: extensions, subgroup sizes, cooperative-matrix shapes)
# and the sqlite3 shell, puts in .device/lib the shared libraries they
# need (DT_NEEDED, breadth first) but glibc's, which must be the
# machine's, and at each program's path in .device (the test scripts'
# top_builddir) a wrapper that runs it on .device/lib alone, so the
# machine's own programs (python3, the shell's tools) keep their
# libraries.  The Vulkan loader travels, never a driver (lavapipe stays
# here, NVIDIA's ICD is there), and so do libX11, libXext and
# libGLdispatch, which NVIDIA's ICD may link.  Debian's libavcodec and
# libavformat link every codec and network library (207 MiB): those
# latentq never opens (STUBS: encoders but x264, decoders, protocols,
# hardware video APIs, libxml2 and its ICU, libcurl and libpq, which a
# render that neither downloads nor queues on PostgreSQL never calls)
# travel as stubs with the same soname, version definitions and global
# symbols, each function returning 0, so the dynamic linker (libav*
# bind now) resolves them and a codec's static init (libaom's, libvpx's
# caps queries) reads "no capability".  pack checks that every program
# resolves every library inside .device/lib or glibc and that each stub
# exports what its library does, then packs it all into
# .device/bundle.tar.xz (85 MiB into 17; run unpacks it there) and
# prints the size of the tree that would travel and the call.
#
# The device tool sends the checkout's tracked and untracked-not-ignored
# files with the carried paths, at most 64 MiB; tests/data and the demo
# model make this tree 70 MiB.  slim takes what no phase reads (every
# tests/data set but the LTX-Video goldens, the LTX-2 and Wan
# transformer goldens and the vae091 decoder; jobs/models) out of the
# index and moves the files into the git directory (device-check-slim/),
# so neither a listing of the index nor of the disk finds them: 18 MiB
# travel with .device's 17.  unslim puts both back.  Commit nothing in
# between.
#
# run (on the GPU machine) unpacks the bundle, adds the NVIDIA driver's
# folders after .device/lib, points the loader at NVIDIA's ICD where it
# finds none of its own, and writes under $OUT summary.txt (each step's
# exit status and seconds, then the issue's figures: GEMM TFLOP/s
# against the 790 TFLOP/s bf16 peak, the forward's time per token count,
# the renders' step times), devices.txt, kernels.log, goldens.log,
# bench.log and render.log.  Each step has a timeout; a failing step
# stops nothing.  Phases, in order (all three by default):
#   quick   environment, latentq devices [--json], vk-caps; test-ops
#           (default, then LATENTQ_GPU_SUBGROUP=0 and 1: both variants
#           of the row norms and attention), test-split, test-runtime; the goldens
#           forward-goldens, precision (where the tree has it),
#           forward-split, forward-intermediates, ltx2-transformer,
#           wan-transformer; test-host last (host path against shaders)
#   bench   bench-gpu (GEMM, attention, conv3d GF/s, the shader fp32
#           peak; attention again with LATENTQ_GPU_SUBGROUP=0),
#           bench-model.sh: the 2048-wide 2-layer forward at 2048,
#           4096 and 16384 tokens, each once more profiled, and the
#           vae091 decodes
#   render  tools/render-real-size.sh, 512x768x121, 25 steps:
#           LATENTQ_REAL_WIDTH=full (the 0.9.1-2b transformer and VAE,
#           sparse weights) leaving 100 s, then the script's narrow
#           width; step times come out as steps end, so a render cut off
#           still gives its step time
# DEVCHECK_BUDGET (seconds, default 480) bounds one invocation: quick
# gets at most 150 s, bench 150 s, render the rest; a step left under
# 20 s is recorded as skipped.  DEVCHECK_QUICK=1 shrinks the benchmarks
# (LATENTQ_BENCH_QUICK, 256 tokens) and the render (64x96x17, 2 steps,
# narrow only) for a smoke run: here on lavapipe with
# LATENTQ_GPU_HOST_GEMM=0, quick takes 50 s, bench 60 s, render 5 s.
# On a GPU expect quick and bench within their caps (each latentq
# process compiles its pipelines) and the full-width render cut off.
#
# The call, from the session's own checkout (the device tool sends that
# one), after ./autogen.sh && ./configure, `tools/device-check.sh pack`
# and `tools/device-check.sh slim`:
#   run   carry [".device"], timeout_s 540, command
#         "tools/device-check.sh run"   (kind left out: H100 or H200)
# about 11 of the session's 15 device minutes with the machine's start;
# a phase again on the warm machine (within its 30 s idle) fits after:
#   run   carry [".device"], timeout_s 200, command
#         "DEVCHECK_BUDGET=150 tools/device-check.sh run bench"
# then give_back and `tools/device-check.sh unslim`.  pack prints these.
set -u

# packed as stubs (above); not libdrm, which a driver may link and would
# find here first
STUBS='libvpx.so.* libwebp.so.* libwebpmux.so.* libdav1d.so.* librsvg-2.so.*
libgobject-2.0.so.* libglib-2.0.so.* libcairo.so.* libzvbi.so.* libsnappy.so.*
libaom.so.* libcodec2.so.* libgsm.so.* libjxl.so.* libjxl_threads.so.*
libmp3lame.so.* libopenjp2.so.* libopus.so.* librav1e.so.* libshine.so.*
libspeex.so.* libSvtAv1Enc.so.* libtheoraenc.so.* libtheoradec.so.*
libtwolame.so.* libvorbis.so.* libvorbisenc.so.* libx265.so.* libxvidcore.so.*
libva.so.* libva-drm.so.* libva-x11.so.* libvdpau.so.* libmfx.so.*
libOpenCL.so.* libsoxr.so.* libxml2.so.* libgme.so.* libopenmpt.so.*
libchromaprint.so.* libbluray.so.* libgnutls.so.* librabbitmq.so.* librist.so.*
libsrt-gnutls.so.* libssh-gcrypt.so.* libzmq.so.* libcurl.so.* libpq.so.*'
# glibc's libraries: the machine's own, never carried
GLIBC='libc.so.* libm.so.* libmvec.so.* libpthread.so.* libdl.so.* librt.so.*
libresolv.so.* libutil.so.* libanl.so.* ld-linux-x86-64.so.*'
# what NVIDIA's Vulkan ICD (libGLX_nvidia.so.0) may link
DRIVER_EXTRAS='libX11.so.6 libXext.so.6 libGLdispatch.so.0'
BINS='latentq tests/gpu/test-ops tests/gpu/test-split tests/gpu/test-runtime
tests/gpu/test-host tests/nn/st-compare tests/render/st-tool
tests/bench/bench-gpu'
# slim keeps these of tests/data and jobs/models in the index
KEEP='tests/data/ltxv/ tests/data/ltx2/index.json tests/data/ltx2/transformer/
tests/data/wan/index.json tests/data/wan/transformer/
tests/data/ltxv-extra/models/vae091/'
SLIM_DIRS='tests/data jobs/models'
LIMIT=$((64 * 1048576))

die() { echo "device-check: $*" >&2; exit 1; }

matches() {	# matches NAME PATTERNS: NAME matches one of the glob PATTERNS
	for m_p in $2; do
		case $1 in $m_p) return 0 ;; esac
	done
	return 1
}

needed() {	# needed FILE: its DT_NEEDED sonames
	readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

libpath() {	# libpath SONAME: the x86-64 file the dynamic linker would load
	PATH=$PATH:/sbin:/usr/sbin ldconfig -p | awk -v n="$1" '$1 == n && /x86-64/ { print $NF; exit }'
}

# stub REAL SONAME DIR: DIR/SONAME exporting REAL's global symbols and
# version definitions, each function `return 0`, each object zeroed
stub() {
	s_real=$1 s_so=$2 s_dir=$3/.stub
	mkdir -p "$s_dir"
	readelf -W --dyn-syms "$s_real" | awk -v asm="$s_dir/$s_so.s" \
	    -v map="$s_dir/$s_so.map" '
	function dec(s,  i, n, c) {
		if (s !~ /^0x/)
			return s + 0
		n = 0
		for (i = 3; i <= length(s); i++) {
			c = index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
			n = n * 16 + c
		}
		return n
	}
	BEGIN { print ".text\nlq_stub_ret0:\n\txorl %eax, %eax\n\tret" > asm }
	$1 ~ /^[0-9]+:$/ && $7 != "UND" && $5 == "GLOBAL" {
		name = $8
		if ($7 == "ABS") {	# a version definition
			if ($4 == "OBJECT" && !(name in vers)) {
				vers[name] = 1
				order[++nv] = name
			}
			next
		}
		label = name
		if ((i = index(name, "@")) > 0) {	# name@VER or name@@VER
			ver = substr(name, i)
			sub(/^@+/, "", ver)
			if (!(ver in vers)) {
				vers[ver] = 1
				order[++nv] = ver
			}
			label = "lq_stub_" NR
			printf "\t.symver %s, %s, remove\n", label, name >> asm
		}
		printf "\t.globl \"%s\"\n", label >> asm
		size = dec($3)
		if ($4 == "OBJECT" || $4 == "TLS" || $4 == "NOTYPE") {
			sect = $4 == "TLS" ? ".section .tbss,\"awT\",@nobits" : \
			    ".bss"
			printf "\t%s\n\t.balign 32\n", sect >> asm
			printf "\t.type \"%s\", @%s\n", label, \
			    $4 == "TLS" ? "tls_object" : "object" >> asm
			if (size < 1)
				size = 1
			printf "\t.size \"%s\", %d\n\"%s\":\n\t.zero %d\n\t.text\n", \
			    label, size, label, size >> asm
		} else {
			printf "\t.type \"%s\", @function\n", label >> asm
			printf "\t.set \"%s\", lq_stub_ret0\n", label >> asm
		}
	}
	END {	# the version nodes (.symver gives each symbol its own)
		printf "" > map
		for (i = 1; i <= nv; i++)
			printf "%s {\n};\n", order[i] >> map
	}'
	s_map=
	[ -s "$s_dir/$s_so.map" ] && s_map=-Wl,--version-script="$s_dir/$s_so.map"
	${CC:-cc} -shared -nostdlib -o "$3/$s_so" -Wl,-soname,"$s_so" $s_map \
	    "$s_dir/$s_so.s" || return 1
	# the same global symbols, versions included
	global_syms "$s_real" > "$s_dir/$s_so.want"
	global_syms "$3/$s_so" > "$s_dir/$s_so.got"
	cmp -s "$s_dir/$s_so.want" "$s_dir/$s_so.got" || {
		echo "device-check: stub $s_so exports other symbols than" \
		    "$s_real:" >&2
		diff "$s_dir/$s_so.want" "$s_dir/$s_so.got" | head -n 5 >&2
		return 1
	}
}

global_syms() {	# global_syms FILE: its defined global dynamic symbols
	readelf -W --dyn-syms "$1" | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" &&
	    $7 != "ABS" && $5 == "GLOBAL" { print $8 }' | sort
}

tracked_bytes() {	# what the device tool would send besides carried paths
	{ git ls-files -z; git ls-files -z --others --exclude-standard; } |
	    xargs -0 stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

print_call() {
	cat <<EOF
The device call, from this checkout (pack and slim first, unslim after):
  run  carry: [".device"]  timeout_s: 540  command: "tools/device-check.sh run"
       (kind left out: an H100 or H200, both fit; the summary names it)
That is about 11 of the 15 device minutes with the machine's start; a phase
again, on the warm machine within its 30 s idle, fits after it:
  run  carry: [".device"]  timeout_s: 200
       command: "DEVCHECK_BUDGET=150 tools/device-check.sh run bench"
EOF
}

pack() {
	[ -f Makefile ] && [ -f tools/device-check.sh ] ||
	    die "pack runs in the configured tree's root (./configure first)"
	# shellcheck disable=SC2086
	${MAKE:-make} -s $BINS >/dev/null || die "make $BINS failed"
	rm -rf .device
	mkdir -p .device/lib .device/real/bin
	for b in $BINS; do
		mkdir -p "$(dirname ".device/real/$b")"
		strip --strip-unneeded -o ".device/real/$b" "$b" || die "strip $b"
	done
	${CC:-cc} -std=c11 -O2 -o .device/real/bin/vk-caps tools/vk-caps.c \
	    -lvulkan || die "cc tools/vk-caps.c failed"
	sq=$(command -v sqlite3) && cp "$sq" .device/real/bin/sqlite3
	progs="$BINS bin/vk-caps"
	[ -f .device/real/bin/sqlite3 ] && progs="$progs bin/sqlite3"
	# breadth first over DT_NEEDED: glibc left out, STUBS stubbed
	for b in $progs; do
		needed ".device/real/$b"
	done > .device/.queue
	for x in $DRIVER_EXTRAS; do
		[ -n "$(libpath "$x")" ] && echo "$x" >> .device/.queue
	done
	n=0 stubbed='' carried=''
	while :; do
		n=$((n + 1))
		so=$(sed -n "${n}p" .device/.queue)
		[ -n "$so" ] || break
		[ -e ".device/lib/$so" ] && continue
		matches "$so" "$GLIBC" && continue
		p=$(libpath "$so")
		[ -n "$p" ] || die "no x86-64 library $so here (ldconfig -p)"
		if matches "$so" "$STUBS"; then
			stub "$p" "$so" .device/lib || die "stub $so failed"
			stubbed="$stubbed $so"
		else
			cp -L "$p" ".device/lib/$so" &&
			    strip --strip-unneeded ".device/lib/$so" ||
			    die "copy $p"
			needed ".device/lib/$so" >> .device/.queue
			carried="$carried $so"
		fi
	done
	case $(ls .device/lib) in *vulkan_lvp*|*lvp_icd*)
		die "lavapipe landed in .device/lib" ;; esac
	rm -rf .device/.queue .device/lib/.stub
	# every program resolves every library inside .device/lib, or glibc
	bad=0
	for b in $progs; do
		LD_LIBRARY_PATH=$PWD/.device/lib ldd ".device/real/$b" |
		    awk -v lib="$PWD/.device/lib/" '
		    /=>/ && index($3, lib) != 1 { print }' > .device/.ldd
		while read -r so _ path _; do
			matches "$so" "$GLIBC" && continue
			echo "device-check: .device/real/$b: $so => $path" >&2
			bad=1
		done < .device/.ldd
	done
	rm -f .device/.ldd
	[ "$bad" = 0 ] || die "the closure is incomplete"
	# each program's path in .device runs it on .device/lib alone: the
	# machine's own programs (python3, the shell's tools) keep theirs
	for b in $progs; do
		up=$(echo "$b" | sed 's|[^/]*/|../|g; s|[^/]*$||')
		mkdir -p "$(dirname ".device/$b")"
		cat > ".device/$b" <<WRAP
#!/bin/sh
d=\$(cd "\$(dirname "\$0")/${up:-.}" && pwd)
LD_LIBRARY_PATH=\$d/lib\${DEVCHECK_LD_PATH:+:\$DEVCHECK_LD_PATH}
export LD_LIBRARY_PATH
exec "\$d/real/$b" "\$@"
WRAP
		chmod +x ".device/$b"
	done
	glibc=$(for f in .device/lib/* .device/real/bin/* $BINS; do
		objdump -T "$f" 2>/dev/null; done |
	    sed -n 's/.*GLIBC_\(2\.[0-9]*\).*/\1/p' | sort -t. -k2 -n -u | tail -n 1)
	{
		echo "packed $(date -u +%FT%TZ) from $(git describe --always --dirty)"
		echo "needs glibc $glibc"
		echo "carried:$carried"
		echo "stubbed:$stubbed"
	} > .device/MANIFEST
	echo "$glibc" > .device/glibc
	echo "packed .device: $(du -sh .device | cut -f1)" \
	    "($(echo "$carried" | wc -w) libraries, $(echo "$stubbed" | wc -w)" \
	    "stubs; needs glibc >= $glibc); largest:"
	find .device -type f -printf '%s %p\n' | sort -rn | head -n 5 |
	    awk '{ printf "  %6.1f MiB  %s\n", $1 / 1048576, $2 }'
	# one xz tarball (a quarter of the size); run unpacks it in place
	tar -C .device -cf - . | xz -6 -T0 > .device.tar.xz ||
	    die "tar | xz failed"
	find .device -mindepth 1 -maxdepth 1 ! -name MANIFEST -exec rm -rf {} +
	mv .device.tar.xz .device/bundle.tar.xz
	size=$(du -sb .device | cut -f1)
	tree=$(tracked_bytes)
	echo "compressed: .device/bundle.tar.xz $(du -sh .device | cut -f1)"
	awk -v t="$tree" -v d="$size" 'BEGIN { printf "the tree that travels:" \
	    " %.1f MiB + .device %.1f MiB = %.1f MiB (limit 64)\n",
	    t / 1048576, d / 1048576, (t + d) / 1048576 }'
	if [ $((tree + size)) -gt "$LIMIT" ]; then
		echo "  over the limit: tools/device-check.sh slim first" \
		    "(and unslim after)"
	fi
	print_call
}

slim() {
	stash=$(git rev-parse --git-dir)/device-check-slim
	[ -e "$stash" ] && die "already slim (tools/device-check.sh unslim)"
	git diff --cached --quiet -- $SLIM_DIRS ||
	    die "changes to $SLIM_DIRS are staged: commit or unstage them first"
	mkdir -p "$stash/files"
	git ls-files $SLIM_DIRS | while read -r f; do
		keep=0
		for k in $KEEP; do
			case $f in "$k"*) keep=1 ;; esac
		done
		[ "$keep" = 1 ] || echo "$f"
	done > "$stash/list"
	git rm -q --cached --pathspec-from-file="$stash/list" ||
	    die "git rm --cached failed"
	while read -r f; do
		mkdir -p "$stash/files/${f%/*}" && mv "$f" "$stash/files/$f" ||
		    die "moving $f into $stash failed"
	done < "$stash/list"
	find $SLIM_DIRS -type d -empty -delete
	echo "slim: $(wc -l < "$stash/list") files out of the index and into" \
	    "$stash; the tree that travels:" \
	    "$(tracked_bytes | awk '{ printf "%.1f MiB", $1 / 1048576 }')" \
	    "+ .device.  Commit nothing until tools/device-check.sh unslim."
}

unslim() {
	stash=$(git rev-parse --git-dir)/device-check-slim
	[ -f "$stash/list" ] || die "not slim"
	while read -r f; do
		mkdir -p "${f%/*}" && mv "$stash/files/$f" "$f" ||
		    die "moving $f back failed"
	done < "$stash/list"
	git reset -q --pathspec-from-file="$stash/list" ||
	    die "git reset failed"
	rm -rf "$stash"
	echo "unslim: $SLIM_DIRS whole again"
	git status --short -- $SLIM_DIRS | head -n 5
}

# ---- run: on the GPU machine ----

now() { date +%s; }

# step LOG NAME SECONDS CMD...: CMD under a timeout (the smaller of
# SECONDS and what the phase has left), its output appended to $OUT/LOG,
# its status and time to the summary
step() {
	s_log=$1 s_name=$2 s_max=$3
	shift 3
	s_left=$((phase_end - $(now)))
	[ "$s_max" -gt "$s_left" ] && s_max=$s_left
	if [ "$s_max" -lt 20 ]; then
		printf '%-34s skipped (budget)\n' "$s_name" >> "$SUM"
		return
	fi
	printf '\n=== %s (timeout %d s): %s\n' "$s_name" "$s_max" "$*" \
	    >> "$OUT/$s_log"
	s_t0=$(date +%s.%N)
	timeout -k 10 "$s_max" "$@" >> "$OUT/$s_log" 2>&1
	s_rc=$?
	s_t1=$(date +%s.%N)
	case $s_rc in 0) s_what=ok ;; 77) s_what=skip ;;
	124|137) s_what=TIMEOUT ;; *) s_what=FAIL ;; esac
	awk -v n="$s_name" -v r="$s_rc" -v w="$s_what" -v a="$s_t0" \
	    -v b="$s_t1" -v l="$s_log" 'BEGIN {
		printf "%-34s rc=%-3d %-7s %7.1f s  (%s)\n", n, r, w, b - a, l }' \
	    >> "$SUM"
}

phase() {	# phase NAME SECONDS: the phase's end, within the budget
	p_end=$(($(now) + $2))
	phase_end=$deadline
	[ "$p_end" -lt "$deadline" ] && phase_end=$p_end
	echo "--- $1 (until +$((phase_end - start)) s)" >> "$SUM"
}

environment() {
	PATH=$PATH:/sbin:/usr/sbin
	uname -a
	sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null
	ldd --version 2>&1 | head -n 1
	echo "bundle: $(head -n 2 .device/MANIFEST 2>/dev/null | tr '\n' ' ')"
	echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
	    --format=csv 2>&1
	echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
	echo "DEVCHECK_LD_PATH=$DEVCHECK_LD_PATH"
	echo "ldconfig's Vulkan loaders:"
	ldconfig -p | grep -i libvulkan
	for d in /usr/share/vulkan/icd.d /etc/vulkan/icd.d \
	    /usr/local/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d; do
		[ -d "$d" ] && ls -l "$d"
	done
	echo "libraries outside .device/lib:"
	LD_LIBRARY_PATH=.device/lib${DEVCHECK_LD_PATH:+:$DEVCHECK_LD_PATH} \
	    ldd .device/real/latentq | grep -v '\.device/lib/'
}

run_quick() {
	phase quick 150
	step devices.txt environment 20 sh "$self" environment
	step devices.txt "latentq devices" 30 "$LQ" devices
	step devices.txt "latentq devices --json" 30 "$LQ" devices --json
	step devices.txt vk-caps 30 .device/bin/vk-caps
	step kernels.log test-ops 90 .device/tests/gpu/test-ops
	step kernels.log "test-ops subgroup=0" 90 \
	    env LATENTQ_GPU_SUBGROUP=0 .device/tests/gpu/test-ops
	step kernels.log "test-ops subgroup=1" 90 \
	    env LATENTQ_GPU_SUBGROUP=1 .device/tests/gpu/test-ops
	step kernels.log test-split 90 .device/tests/gpu/test-split
	step kernels.log test-runtime 90 .device/tests/gpu/test-runtime
	for g in forward-goldens precision forward-split forward-intermediates \
	    ltx2-transformer wan-transformer; do
		[ -f "tests/nn/$g.sh" ] ||
		    { printf '%-34s absent\n' "$g.sh" >> "$SUM"; continue; }
		step goldens.log "$g.sh" 120 sh "tests/nn/$g.sh"
	done
	step kernels.log "test-host (host vs shader)" 90 \
	    .device/tests/gpu/test-host
}

run_bench() {
	phase bench 150
	if [ "$quick" = 1 ]; then
		step bench.log bench-gpu 120 \
		    env LATENTQ_BENCH_QUICK=1 .device/tests/bench/bench-gpu
		grids=4x8x8
	else
		step bench.log bench-gpu 120 .device/tests/bench/bench-gpu
		grids="8x16x16 16x16x16 16x32x32"
	fi
	# attention's other variant: a GPU with subgroup arithmetic takes
	# attn_sg by default, this is attn / attn_tex on the same shapes
	step bench.log "bench-gpu attention, subgroup=0" 60 \
	    env LATENTQ_BENCH_ONLY=attention,demo LATENTQ_GPU_SUBGROUP=0 \
	    $([ "$quick" = 1 ] && echo LATENTQ_BENCH_QUICK=1) \
	    .device/tests/bench/bench-gpu
	step bench.log bench-model.sh 150 env LATENTQ_BENCH_GRIDS="$grids" \
	    LATENTQ_BENCH_PROFILE=1 sh tests/bench/bench-model.sh
}

run_render() {
	phase render $((deadline - $(now)))
	if [ "$quick" = 1 ]; then
		step render.log "render narrow 64x96x17" 120 \
		    env LATENTQ_REAL_SIZE=64x96x17 LATENTQ_REAL_STEPS=2 \
		    sh tools/render-real-size.sh /tmp/lq-devcheck-real
		return
	fi
	# the full width first, leaving the narrow one 100 s
	step render.log "render full 512x768x121" \
	    $((phase_end - $(now) - 100)) env LATENTQ_REAL_WIDTH=full \
	    sh tools/render-real-size.sh /tmp/lq-devcheck-real
	step render.log "render narrow 512x768x121" 600 \
	    sh tools/render-real-size.sh /tmp/lq-devcheck-real
}

# the issue's figures, from the logs
figures() {
	echo
	echo "=== figures (issue 18 item 6)"
	sed -n 's/^\(device: .*\)/\1/p; s/^\(fp32 FMA peak, shader.*\)/\1/p' \
	    "$OUT/bench.log" 2>/dev/null
	awk '/^(linear|attention|conv3d) / && / GF\/s / {
		for (i = 1; i <= NF; i++) if ($i == "GF/s") { g = $(i - 1); break }
		printf "  %-46s %7.2f TFLOP/s = %5.2f%% of 790 (bf16 peak)\n",
		    substr($0, 1, 46), g / 1000, 100 * g / 1000 / 790 }' \
	    "$OUT/bench.log" 2>/dev/null
	grep '^transformer 2048x2 layers' "$OUT/bench.log" 2>/dev/null |
	    sed 's/^/  /'
	grep '^vae091 decode' "$OUT/bench.log" 2>/dev/null | sed 's/^/  /'
	# the renders: each one's step lines follow its "render HxWxF" line
	awk '/^render [0-9]+x[0-9]+x[0-9]+, / { flush(); what = $0; n = 0; s = 0 }
	/step [0-9]+: compute/ {
		for (i = 1; i <= NF; i++) if ($i == "compute") ms = $(i + 1)
		if (n++ == 0) first = ms; else s += ms }
	/^wall time:/ { wall = $0 }
	function flush() {
		if (what == "") return
		printf "  %s: %d steps done, first %.1f ms, steady %.1f ms/step%s\n",
		    what, n, first, (n > 1 ? s / (n - 1) : 0),
		    (wall == "" ? " (cut off)" : ", " wall)
		wall = ""
	}
	END { flush() }' "$OUT/render.log" 2>/dev/null
}

run() {
	[ -n "${OUT:-}" ] && [ -d "$OUT" ] || die "run writes under \$OUT (unset)"
	start=$(now)
	if [ ! -x .device/latentq ]; then
		[ -f .device/bundle.tar.xz ] ||
		    die "no .device/bundle.tar.xz: pack here, carry .device"
		if command -v xz >/dev/null 2>&1; then
			xz -dc .device/bundle.tar.xz | tar -C .device -xf -
		else
			python3 -c 'import sys, tarfile
tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
			    .device/bundle.tar.xz .device
		fi || die "unpacking .device/bundle.tar.xz failed"
	fi
	deadline=$((start + ${DEVCHECK_BUDGET:-480}))
	quick=${DEVCHECK_QUICK:-0}
	SUM=$OUT/summary.txt
	top=$(pwd)
	self=$top/tools/device-check.sh
	# .device's wrappers put .device/lib first, then these (the
	# driver's, where ldconfig may not look); nothing else sees them
	DEVCHECK_LD_PATH=
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
		[ -d "$d" ] && DEVCHECK_LD_PATH=${DEVCHECK_LD_PATH:+$DEVCHECK_LD_PATH:}$d
	done
	PATH=$top/.device/bin:$PATH
	export DEVCHECK_LD_PATH PATH
	LQ=$top/.device/latentq
	# the test scripts' and benchmarks' paths
	top_srcdir=$top top_builddir=$top/.device LATENTQ=$LQ
	BENCH_GPU=$top/.device/tests/bench/bench-gpu
	ST_TOOL=$top/.device/tests/render/st-tool
	export top_srcdir top_builddir LATENTQ BENCH_GPU ST_TOOL
	# the machine's glibc must be as new as the bundle's
	have=$(ldd --version 2>&1 | sed -n '1s/.* \([0-9]*\.[0-9]*\)$/\1/p')
	want=$(cat .device/glibc 2>/dev/null)
	echo "device-check run ${*:-quick bench render} $(date -u +%FT%TZ)," \
	    "budget ${DEVCHECK_BUDGET:-480} s, unpacked in $(($(now) - start)) s," \
	    "glibc $have (bundle needs $want)" > "$SUM"
	awk -v h="$have" -v w="$want" 'BEGIN { split(h, a, "."); split(w, b, ".")
		exit !(a[1] * 1000 + a[2] < b[1] * 1000 + b[2]) }' &&
	    echo "WARNING: this glibc is older than the bundle's: its" \
	    "binaries will not load (rebuild on a distribution as old)" >> "$SUM"
	# NVIDIA's ICD where the loader finds none in its own folders
	icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
	if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$icd" ] &&
	    ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* \
	    >/dev/null 2>&1; then
		VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
		export VK_DRIVER_FILES VK_ICD_FILENAMES
		echo "VK_DRIVER_FILES=$icd" >> "$SUM"
	fi
	[ $# -gt 0 ] || set -- quick bench render
	for p in "$@"; do
		case $p in
		quick) run_quick ;;
		bench) run_bench ;;
		render) run_render ;;
		*) echo "unknown phase $p (quick, bench, render)" >> "$SUM" ;;
		esac
	done
	echo "--- $(($(now) - start)) s in all" >> "$SUM"
	figures >> "$SUM"
	cat "$SUM"
	! grep -q ' FAIL \| TIMEOUT ' "$SUM"
}

case ${1:-} in
pack) pack ;;
slim) slim ;;
unslim) unslim ;;
run) shift; run "$@" ;;
environment) environment ;;	# run's first step
*) echo "usage: tools/device-check.sh pack | slim | unslim | run [quick|bench|render]..." >&2
   exit 2 ;;
esac
