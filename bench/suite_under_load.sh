#!/usr/bin/env bash
# The test suite on a fresh clone, N times in a row, with two busy-looping processes beside it
# (a test that passes alone but fails with the CPU busy is a race). Prints one line per run:
# its wall time, `make test`'s exit code and the failures' names.
#   bench/suite_under_load.sh [RUNS] [COMMIT]      (defaults: 5, HEAD)
set -uo pipefail
runs=${1:-5}
commit=${2:-HEAD}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/rf-suite-XXXXXX)
git clone -q "$root" "$work/clone" && git -C "$work/clone" checkout -q "$commit"
cd "$work/clone" && make dev >/dev/null 2>&1 || { echo "install failed"; exit 2; }
python3 -c 'while True: pass' & busy1=$!
python3 -c 'while True: pass' & busy2=$!
trap 'kill $busy1 $busy2 2>/dev/null' EXIT
for n in $(seq 1 "$runs"); do
    start=$(date +%s)
    make test >"$work/run-$n.log" 2>&1
    code=$?
    failed=$(grep -E '^(FAILED|ERROR) ' "$work/run-$n.log" | cut -d' ' -f2 | tr '\n' ' ')
    echo "run $n: $(( $(date +%s) - start )) s, exit $code, load $(cut -d' ' -f1 /proc/loadavg) ${failed:+failed: $failed}"
done
echo "logs: $work"
