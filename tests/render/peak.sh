#!/bin/sh
# A render records its memory plan ("plan" event) and the device's
# measured high-water mark ("peak_device_bytes" event, shown by
# `latentq show --json`); the plan's peak is within 10% of the measured
# one, for two shapes of the demo model.
. "${top_srcdir:-.}/tests/cli/render-common.sh"

for shape in 64x64x9 96x64x17; do
	w=${shape%%x*}; rest=${shape#*x}; h=${rest%%x*}; f=${rest#*x}
	mkdir -p "$T/$shape"
	write_manifest "$T/$shape/m.yaml" 2 "p$f:1"
	sed -i "s/^  width: 64$/  width: $w/; s/^  height: 64$/  height: $h/; s/^  num_frames: 9$/  num_frames: $f/" "$T/$shape/m.yaml"
	expect_status 0 "$LATENTQ" -d "$T/$shape.db" render "$T/$shape/m.yaml"
	expect_status 0 "$LATENTQ" -d "$T/$shape.db" show --json "p$f"
	cp "$T/out" "$T/$shape.json"
	expect_grep '"kind":[[:space:]]*"plan"' "$T/$shape.json"
	ev=$(sqlite3 "$T/$shape.db" "SELECT detail FROM events WHERE kind = 'peak_device_bytes'")
	measured=$(echo "$ev" | sed -n 's/.*"peak_device_bytes":\([0-9]*\).*/\1/p')
	planned=$(echo "$ev" | sed -n 's/.*"planned_peak_device_bytes":\([0-9]*\).*/\1/p')
	checks=$((checks + 1))
	if [ -z "$measured" ] || [ -z "$planned" ] || [ "$measured" -eq 0 ]; then
		fail "$shape: no peak_device_bytes event: '$ev'"
		continue
	fi
	expect_grep "\"peak_device_bytes\":[[:space:]]*$measured" "$T/$shape.json"
	d=$((planned - measured)); [ $d -lt 0 ] && d=$((-d))
	checks=$((checks + 1))
	[ $((d * 10)) -le "$measured" ] ||
		fail "$shape: planned $planned bytes, measured $measured (more than 10% apart)"
	echo "$shape: planned $planned, measured $measured"
done
finish
