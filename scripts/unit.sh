#!/bin/sh
# Runs the unit tests (tests/unit, Criterion) of BUILD.
#
#   scripts/unit.sh BUILD [CRITERION ARGS...]
#
# Why not the binary alone: Criterion runs each test in a worker process and
# has its verdict before the process exits, so what LeakSanitizer (or ASan at
# exit) reports then is printed under a passing test and changes no status.
# Here the run's output is kept and any sanitizer report in it fails the run,
# naming the tests whose output holds one.
set -u

build=${1:?usage: $0 BUILD [CRITERION ARGS...]}
shift
log=$build/unit.log
"$build/tests/unit" --jobs 2 "$@" >"$log" 2>&1
status=$?
cat "$log"
if grep -q -E '^(SUMMARY: [A-Za-z]+Sanitizer|==[0-9]+==ERROR: [A-Za-z]+Sanitizer)' "$log"; then
    echo "unit: a sanitizer reported in $log:" >&2
    grep -E '^(SUMMARY: [A-Za-z]+Sanitizer|==[0-9]+==ERROR: [A-Za-z]+Sanitizer)|in [a-z0-9_]+_impl ' "$log" | head -40 >&2
    exit 1
fi
exit $status
