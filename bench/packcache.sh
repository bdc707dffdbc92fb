#!/usr/bin/env bash
# packcache.sh: cold and warm loads of a model with large packed weights
# through the packed-weight cache, each in a fresh process, as
# "wgdelegate bench --packed-cache" reports them. A measurement for people,
# not a CI gate; see bench/README.md.
#
#   bench/packcache.sh                    # 64 MiB conv stack, RUNS=5 cold/warm pairs
#   KIND=mlp MIB=64 bench/packcache.sh    # see bench/bigmodel for the models
#   RUNS=9 OUT=/tmp/wgd-pack bench/packcache.sh
#
# Each pair deletes the cache directory, loads once (cold: every weight is
# packed on the device, read back and saved), then loads again in a new
# process (warm: every weight comes from the file's memory mapping). It
# prints each pair's load_ms, packed_cache hits/misses and load_heap_bytes,
# then the median cold and warm load_ms and their ratio.
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
RUNS=${RUNS:-5}
KIND=${KIND:-conv}
MIB=${MIB:-64}
OUT=${OUT:-}
if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/wgd-packcache.XXXXXX)
	trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
	export XDG_RUNTIME_DIR="$OUT/xdg"
	mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
fi
go build -o "$OUT/wgdelegate" ./cmd/wgdelegate
go run ./bench/bigmodel -kind "$KIND" -mib "$MIB" -out "$OUT/model" >&2

load() {
	"$OUT/wgdelegate" bench --json --iterations 1 --packed-cache "$OUT/cache" \
		--data "$OUT/model/weights.ptd" "$OUT/model/model.pte" |
		python3 -c 'import json,sys; j=json.load(sys.stdin); p=j["packed_cache"]; print(j["load_ms"], p["hits"], p["misses"], p["bytes"], j["load_heap_bytes"])'
}

: >"$OUT/loads.txt"
printf '%-5s %-5s %10s %6s %6s %12s %14s\n' run kind load_ms hits misses packed_bytes load_heap_bytes
for i in $(seq 1 "$RUNS"); do
	rm -rf "$OUT/cache"
	for kind in cold warm; do
		read -r ms hits misses bytes heap < <(load)
		printf '%-5s %-5s %10.1f %6s %6s %12s %14s\n' "$i" "$kind" "$ms" "$hits" "$misses" "$bytes" "$heap"
		echo "$kind $ms" >>"$OUT/loads.txt"
	done
done
python3 - "$OUT/loads.txt" <<'PY'
import statistics, sys
d = {}
for line in open(sys.argv[1]):
    k, v = line.split()
    d.setdefault(k, []).append(float(v))
c, w = statistics.median(d["cold"]), statistics.median(d["warm"])
print(f"median load_ms: cold {c:.1f} (range {min(d['cold']):.1f}-{max(d['cold']):.1f}), "
      f"warm {w:.1f} (range {min(d['warm']):.1f}-{max(d['warm']):.1f}); cold/warm {c / w:.2f}x")
PY
