#!/usr/bin/env bash
# compare.sh: the benchmark models on wgdelegate (WebGPU) and in PyTorch on
# the CPU, side by side. A measurement for people, not a CI gate; see
# bench/README.md.
#
#   bench/compare.sh                 # RUNS=3 processes x ITER=20 executes per model and side
#   RUNS=5 ITER=50 bench/compare.sh
#   OUT=/tmp/wgd-bench bench/compare.sh   # keep the model files
#   WGDELEGATE=/path/to/wgdelegate bench/compare.sh   # use that binary
#   WGD_FLAGS="--cpu-threads inline" bench/compare.sh  # extra flags for wgdelegate bench
#
# Models come from bench/models (written by bench/emit: model.pte,
# weights.ptd, input_<i>.npy, graph.json with the constants as c<id>.npy,
# and out_<i>.npy, wgdelegate's own results). The wgdelegate side runs
# "wgdelegate bench --json" when the command exists, else "bench/emit
# -bench" (same JSON fields: load_ms, first_execute_ms,
# execute_ms{min,median,max}). The PyTorch side (bench/torch_replay.py)
# replays graph.json op by op with torch.ops.aten on the same weights and
# inputs, checks its results against out_<i>.npy and times the forward
# pass under torch.inference_mode with all CPU threads; a graph with
# custom (non-aten) ops shows n/a.
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
RUNS=${RUNS:-3}
ITER=${ITER:-20}
OUT=${OUT:-}
read -r -a WGD_FLAGS <<<"${WGD_FLAGS:-}"
if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/wgd-compare.XXXXXX)
	trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"
# Mesa's noise about XDG_RUNTIME_DIR (harmless) goes away with a private dir.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
	export XDG_RUNTIME_DIR="$OUT/xdg"
	mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
fi

echo "building..." >&2
go build -o "$OUT/emit" ./bench/emit
WGD=${WGDELEGATE:-}
if [ -n "$WGD" ]; then
	:
elif go build -o "$OUT/wgdelegate" ./cmd/wgdelegate 2>/dev/null && "$OUT/wgdelegate" bench --help >/dev/null 2>&1; then
	WGD="$OUT/wgdelegate"
fi
"$OUT/emit" -out "$OUT/models" >&2

# A python3 with torch: Debian's python3-torch lives in /usr/bin/python3,
# which a pyenv or venv python3 earlier on PATH does not see.
PY=""
for p in /usr/bin/python3 python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import torch, numpy' 2>/dev/null; then
		PY=$p
		break
	fi
done
if [ -z "$PY" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
	echo "installing python3-torch with apt-get (a few minutes)..." >&2
	if apt-get install -y python3-torch python3-numpy >&2 || { apt-get update >&2 && apt-get install -y python3-torch python3-numpy >&2; }; then
		/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null && PY=/usr/bin/python3
	fi
fi
if [ -z "$PY" ]; then
	echo "PyTorch is not available (apt-get install python3-torch); showing wgdelegate only." >&2
fi

# median_of prints the median, min and max of its numeric arguments.
median_of() {
	python3 -c 'import sys, statistics as s; v = sorted(map(float, sys.argv[1:])); print("%.4f %.4f %.4f" % (s.median(v), v[0], v[-1]))' "$@"
}

field() { python3 -c 'import json, sys; j = json.loads(sys.argv[1]); print(eval("j" + sys.argv[2]))' "$1" "$2"; }

printf '\n%-14s %-32s %-32s %8s %10s\n' model "wgdelegate ms (median [min-max])" "pytorch ms (median [min-max])" "wgd/pt" "max|diff|"
for dir in "$OUT"/models/*/; do
	name=$(basename "$dir")
	wg=()
	pt=()
	diff="-"
	for _ in $(seq "$RUNS"); do
		if [ -n "$WGD" ]; then
			ins=()
			for f in "$dir"/input_*.npy; do ins+=(--input "$f"); done
			j=$("$WGD" bench --json --iterations "$ITER" ${WGD_FLAGS[@]+"${WGD_FLAGS[@]}"} --data "$dir/weights.ptd" "${ins[@]}" "$dir/model.pte" 2>/dev/null)
		else
			j=$("$OUT/emit" -bench "$dir" -iterations "$ITER" 2>/dev/null)
		fi
		wg+=("$(field "$j" '["execute_ms"]["median"]')")
		if [ -n "$PY" ] && j=$("$PY" bench/torch_replay.py "$dir" "$ITER"); then
			pt+=("$(field "$j" '["median"]')")
			diff=$(field "$j" '["max_abs_diff"]')
		fi
	done
	read -r wm wlo whi < <(median_of "${wg[@]}")
	if [ ${#pt[@]} -gt 0 ]; then
		read -r pm plo phi < <(median_of "${pt[@]}")
		ratio=$(python3 -c "print('%.2f' % ($wm / $pm))")
		printf '%-14s %-32s %-32s %8s %10.2g\n' "$name" "$(printf '%.3f [%.3f-%.3f]' "$wm" "$wlo" "$whi")" \
			"$(printf '%.3f [%.3f-%.3f]' "$pm" "$plo" "$phi")" "$ratio" "$diff"
	else
		printf '%-14s %-32s %-32s %8s %10s\n' "$name" "$(printf '%.3f [%.3f-%.3f]' "$wm" "$wlo" "$whi")" "n/a" "-" "-"
	fi
done
echo
echo "medians over $RUNS processes of the per-process median of $ITER executes; wgd/pt > 1 means wgdelegate is slower." \
	"wgdelegate side: $([ -n "$WGD" ] && echo "wgdelegate bench ${WGD_FLAGS[*]+${WGD_FLAGS[*]}}" || echo 'bench/emit -bench')"
