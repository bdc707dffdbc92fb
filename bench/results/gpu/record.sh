#!/usr/bin/env bash
# Writes the record of one GPU run: bench/results/gpu/DATE-COMMIT-DEVICE.md, from the logs that
# `bash .device/run.sh [suites]` left in $OUT (the run tool's files_at folder, or any folder
# holding probe.log, ops.log, root.log, conformance.log, llm.log, kernels.log).
#
#   bash bench/results/gpu/record.sh LOGDIR [NOTE]
#
# The record holds the date, the commit (and whether the tree was clean), the device and driver
# from probe.log, and each suite's summary lines as run.sh printed them; the whole logs stay in
# LOGDIR. Commit the record: a GPU run that is not written down did not happen.
set -euo pipefail
logs=${1:?usage: record.sh LOGDIR [NOTE]}
note=${2:-}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../../.."
commit=$(git rev-parse --short HEAD)
dirty=""; git diff --quiet HEAD -- || dirty=" (uncommitted changes)"
device=unknown
if [ -f "$logs/probe.log" ]; then
  device=$(grep -m1 -oE 'NVIDIA [A-Z0-9]+[A-Za-z0-9 -]*' "$logs/probe.log" | head -1 | sed -E 's/ +$//') || true
  [ -n "$device" ] || device=unknown
fi
slug=$(echo "$device" | tr 'A-Z' 'a-z' | sed -E 's/nvidia //; s/[^a-z0-9]+/-/g; s/-+$//')
out="$here/$(date -u +%Y-%m-%d)-$commit-${slug:-unknown}.md"
section() { # title, file, command that prints the summary from the file
  local title=$1 f=$2; shift 2
  [ -f "$f" ] || return 0
  printf '\n## %s\n\n```\n' "$title"
  "$@" "$f" || true
  printf '```\n'
}
{
  echo "# GPU run $(date -u +%Y-%m-%d), commit $commit$dirty, $device"
  [ -z "$note" ] || printf '\n%s\n' "$note"
  section probe "$logs/probe.log" grep -E 'NVIDIA|GPU|adapter|driver|Driver|Model name|CPU\(s\)|subnormal|limit|maxBuffer|maxStorage'
  section "ops (op suite, -short)" "$logs/ops.log" sh -c 'grep -E "^    --- FAIL" "$1" | sed -E "s/ \([0-9.]+s\)$//; s/^ *--- FAIL: //" | awk -F/ "{print \$1\"/\"\$2}" | sort | uniq -c | sort -rn | head -40; tail -n 2 "$1"' sh
  section root "$logs/root.log" sh -c 'grep -E -- "--- FAIL|^(ok|PASS|FAIL)" "$1" | head -20' sh
  section conformance "$logs/conformance.log" sh -c 'grep -E "^FAIL|passed" "$1" | head -40' sh
  section "llm (tokens/s, same run as run.c and PyTorch)" "$logs/llm.log" grep -E 'tok/s|ratio|^shape|in all|pass|GB/s|ms/step|µs'
  section kernels "$logs/kernels.log" sh -c 'grep -E "^Benchmark|FAIL" "$1" | sed -E "s/ +/ /g"' sh
} >"$out"
echo "wrote $out"
