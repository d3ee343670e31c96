#!/bin/bash
# Runs the libFuzzer targets that `make fuzz-build` puts in build/fuzz/bin/.
#
#   scripts/fuzz.sh smoke NAME...  each target FUZZ_SMOKE_TIME s (default 5) over
#                                  its seeds; new inputs go to a scratch corpus,
#                                  build/fuzz/smoke/NAME, emptied first
#   scripts/fuzz.sh long NAME...   each target FUZZ_TIME s (default 300); new
#                                  inputs are kept in build/fuzz/corpus/NAME and
#                                  reused by the next run
#
# NAME is a target, tests/fuzz/fuzz_NAME.c; its seeds are tests/fuzz/corpus/NAME
# (only read, never written) and its dictionary tests/fuzz/dict/NAME.dict, if
# any. FUZZ_JOBS targets run at once (default: the number of CPUs). Each run's
# output is in build/fuzz/logs/MODE-NAME.log. Exits 1 when any target crashed,
# leaked, hung (-timeout=10 s per input) or ran out of memory; the input that
# did it is written to build/fuzz/artifacts/NAME/.
set -u

mode=${1:-}
[ $# -gt 0 ] && shift
case $mode in
smoke) seconds=${FUZZ_SMOKE_TIME:-5} ;;
long) seconds=${FUZZ_TIME:-300} ;;
*)
    echo "usage: $0 smoke|long NAME..." >&2
    exit 2
    ;;
esac
[ $# -gt 0 ] || { echo "$0: no targets given" >&2; exit 2; }

cd "$(dirname "$0")/.." || exit 2
out=build/fuzz
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
mkdir -p "$out/logs"

# Pulls the figures of interest from a libFuzzer log into one line.
summarize() {
    local log=$1 runs eps cov ft corp rss
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2)
    echo "${runs:-?} runs, ${eps:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, peak ${rss:-?} MB"
}

run_one() {
    local name=$1
    local bin=$out/bin/fuzz_$name seeds=tests/fuzz/corpus/$name
    local log=$out/logs/$mode-$name.log status=$out/logs/$mode-$name.status
    local artifacts=$out/artifacts/$name/ corpus
    local -a opts=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
                   -print_final_stats=1 -artifact_prefix="$artifacts")
    if [ ! -x "$bin" ]; then
        echo "fuzz $name: $bin missing (run make fuzz-build)" >&2
        echo 2 >"$status"
        return
    fi
    if [ "$mode" = smoke ]; then
        corpus=$out/smoke/$name
        rm -rf "$corpus"
    else
        corpus=$out/corpus/$name
    fi
    mkdir -p "$corpus" "$artifacts"
    [ -f "tests/fuzz/dict/$name.dict" ] && opts+=(-dict="tests/fuzz/dict/$name.dict")
    [ -d "$seeds" ] || seeds=

    "$bin" "${opts[@]}" "$corpus" ${seeds:+"$seeds"} >"$log" 2>&1
    local rc=$?
    echo "$rc" >"$status"
    if [ "$rc" -eq 0 ]; then
        echo "fuzz $name: ok, $(summarize "$log")"
    else
        {
            echo "fuzz $name: FAILED (exit $rc), log $log"
            grep -E 'ERROR: |SUMMARY: |check failed|runtime error|Test unit written' "$log" | head -20
        } >&2
    fi
}

echo "fuzz: $mode, ${seconds}s per target, $jobs at a time: $*"
start=$(date +%s)
for name in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n
    done
    run_one "$name" &
done
wait

failed=0
for name in "$@"; do
    rc=$(cat "$out/logs/$mode-$name.status" 2>/dev/null || echo 2)
    [ "$rc" = 0 ] || failed=$((failed + 1))
done
echo "fuzz: $(($# - failed)) passed, $failed failed in $(($(date +%s) - start)) s"
[ "$failed" -eq 0 ]
