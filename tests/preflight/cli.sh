#!/bin/sh
# latentq preflight on the command line: exit statuses, text and JSON forms,
# --snap, --device-caps.  Models come from test-preflight --generate.
. "${top_srcdir:-.}/tests/cli/common.sh"

C=$top_srcdir/tests/preflight/cases
CAPS=$top_srcdir/tests/preflight/caps
"${top_builddir:-.}/tests/preflight/test-preflight" --generate "$T" >/dev/null ||
	fail "cannot generate the test models"
for c in pass geom-001-height geom-003-frames geom-field-pass mesh-002-product \
    mesh-field-pass out-003-collision cfg-001-no-model; do
	cp "$C/$c.yaml" "$T/"
done

expect_status 0 "$LATENTQ" preflight --device-caps "$CAPS/caps-2dev.json" "$T/pass.yaml"
expect_grep '^6 valid, 0 rejected' "$T/out"

# 512x768x121 passes; 500x768 and 120 frames are rejected, with alternatives.
expect_status 0 "$LATENTQ" preflight --no-device "$T/geom-field-pass.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/geom-001-height.yaml"
expect_grep 'geom-001-height.yaml:[0-9]+:[0-9]+: error LQ-GEOM-001: job a: jobs\[0\]\.height: 500 is not a multiple of 32 \(VAE spatial compression 32 × patch 1\); nearest valid: 480 or 512' "$T/out"
expect_status 65 "$LATENTQ" preflight --no-device "$T/geom-003-frames.yaml"
expect_grep 'LQ-GEOM-003.*120 is not 8·k \+ 1.*nearest valid: 113 or 121' "$T/out"

# Several manifests: every job of each is reported.
expect_status 65 "$LATENTQ" preflight --no-device "$T/geom-001-height.yaml" "$T/geom-003-frames.yaml"
expect_grep '^0 valid, 2 rejected' "$T/out"

# --snap rounds, says so, and records the value in the config.
expect_status 0 "$LATENTQ" preflight --no-device --snap "$T/geom-001-height.yaml"
expect_grep 'warning LQ-GEOM-001: .*snapped to 512' "$T/out"
expect_status 0 "$LATENTQ" preflight --no-device --snap --json "$T/geom-001-height.yaml"
expect_grep '"height":[[:space:]]*512' "$T/out"
expect_grep '"snapped":[[:space:]]*true' "$T/out"

# JSON: codes, fields, lines.
expect_status 65 "$LATENTQ" preflight --no-device --json "$T/geom-001-height.yaml"
expect_grep '"code":[[:space:]]*"LQ-GEOM-001"' "$T/out"
expect_grep '"field":[[:space:]]*"jobs\[0\]\.height"' "$T/out"
expect_grep '"rejected":[[:space:]]*1' "$T/out"

# The mesh against a device caps file.
expect_status 0 "$LATENTQ" preflight --device-caps "$CAPS/caps-2dev.json" "$T/mesh-field-pass.yaml"
expect_status 65 "$LATENTQ" preflight --device-caps "$CAPS/caps-4dev.json" "$T/mesh-002-product.yaml"
expect_grep 'LQ-MESH-002' "$T/out"
expect_status 66 "$LATENTQ" preflight --device-caps "$T/absent.json" "$T/pass.yaml"

# The live device (lavapipe here) or none: small jobs pass either way.
expect_status 0 "$LATENTQ" preflight "$T/pass.yaml"

# Two jobs, one file; a job without a model.
expect_status 65 "$LATENTQ" preflight --no-device "$T/out-003-collision.yaml"
expect_grep 'LQ-OUT-003: job b: .*also written by job a' "$T/out"
expect_status 65 "$LATENTQ" preflight --no-device "$T/cfg-001-no-model.yaml"

# A registered model name, and a digest pinned as `model add` prints it.
expect_status 0 "$LATENTQ" model add --name good "$T/models/good"
digest=$(sed -n 's/^ *digest \([0-9a-f]*\).*/\1/p' "$T/out")
expect_eq "${#digest}" 64 "model add prints a digest"
sed 's|^  model: models/good|  model: good|' "$T/geom-field-pass.yaml" > "$T/named.yaml"
printf '  model_digest: blake2b:%s\n' "$digest" > "$T/pin"
sed "/^  model: good/r $T/pin" "$T/named.yaml" > "$T/pinned.yaml"
expect_status 0 "$LATENTQ" preflight --device-caps "$CAPS/caps-2dev.json" "$T/pinned.yaml"
sed 's/model_digest: blake2b:\(.\{12\}\)/model_digest: 000000000000/' "$T/pinned.yaml" > "$T/badpin.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/badpin.yaml"
expect_grep 'LQ-MDL-011: job a: defaults.model_digest: the model.s digest is '"$digest" "$T/out"
sed 's|^  model: good|  model: nosuchname|' "$T/named.yaml" > "$T/unknown.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/unknown.yaml"
expect_grep 'LQ-MDL-001: .*"nosuchname" is not a folder nor a registered model name' "$T/out"

# A manifest that does not parse, and misuse.
printf 'jobs: [\n' > "$T/broken.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/broken.yaml"
expect_status 64 "$LATENTQ" preflight
finish
