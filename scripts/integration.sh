#!/bin/sh
# Runs the integration suite (tests/integration) against the binaries of BUILD.
#
#   scripts/integration.sh BUILD [PYTEST ARGS...]
#
# INTEGRATION_JOBS (default 2) pytest-xdist workers run every test but those
# marked `serial`; then the serial ones run alone, one at a time: they bound
# a wall-clock latency that a second worker's load on the same cores would
# make noisy. INTEGRATION_JOBS=1 runs the whole suite in one process, in
# file order, as before xdist. Both passes always run; the exit status is
# non-zero when either failed, and each pass names its failures.
set -u

build=${1:?usage: $0 BUILD [PYTEST ARGS...]}
shift
jobs=${INTEGRATION_JOBS:-2}
case $jobs in
'' | *[!0-9]* | 0)
    echo "$0: INTEGRATION_JOBS=\"$jobs\" is not a number of workers (1 or more)" >&2
    exit 2
    ;;
esac

run_pytest() {
    BUILD=$build /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@"
}

if [ "$jobs" -eq 1 ]; then
    run_pytest -p no:xdist "$@" tests/integration
    exit
fi

echo "integration ($build): $jobs workers, every test not marked serial"
run_pytest -n "$jobs" -m "not serial" "$@" tests/integration
parallel=$?
echo "integration ($build): the tests marked serial, alone"
run_pytest -p no:xdist -m serial "$@" tests/integration
serial=$?
# 5: no test selected (a -k that matches none in one of the passes)
[ "$parallel" -eq 5 ] && [ "$serial" -ne 5 ] && parallel=0
[ "$serial" -eq 5 ] && [ "$parallel" -ne 5 ] && serial=0
if [ "$parallel" -ne 0 ] || [ "$serial" -ne 0 ]; then
    echo "integration ($build): FAILED (parallel pass: exit $parallel, serial pass: exit $serial)" >&2
    exit 1
fi
