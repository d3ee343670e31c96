#!/usr/bin/env bash
# scripts/valgrind.sh BUILD [PYTEST ARGS...]: `make valgrind`, the integration
# tests with wrapper-server and runner-client under valgrind's memcheck.
#
# Why, next to the ASan run of make test: memcheck needs no rebuild, so it
# checks the very binaries `make` ships (BUILD/bin, -O2, no sanitizer), and
# it sees reads of uninitialised memory, which ASan does not. The tests
# start every server and client through krmtest, whose hook
# KRM_SERVER_WRAPPER puts valgrind in front of our binaries (functions the
# server spawns run natively: no --trace-children); KRM_TEST_SLOW scales
# the time they get to start and to stop, as valgrind is ~20x slower.
#
# Each of our processes writes its report to build/valgrind/PID.log; the
# run fails when a test fails (valgrind's --error-exitcode makes a server
# with errors exit 99, which the tests' teardown reports) or when any log
# has errors or definite leaks. Extra arguments go to pytest (a subset:
# scripts/valgrind.sh build tests/integration/test_limits.py).
#
# A few tests are deselected (DESELECT below, each with its reason): what
# they assert is changed by valgrind itself, not by our code. The static
# binary (test_static.py: chroot /wrapper-server) and the copier run
# natively: only BUILD/bin's wrapper-server and runner-client are wrapped.
set -eu

BUILD=${1:-build}
[ $# -gt 0 ] && shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
LOGS=$ROOT/build/valgrind
SLOW=${KRM_TEST_SLOW:-10}

command -v valgrind >/dev/null ||
    { echo "valgrind: not installed (Debian: apt-get install valgrind)" >&2; exit 1; }
for b in wrapper-server runner-client; do
    [ -x "$BUILD/bin/$b" ] || { echo "valgrind: $BUILD/bin/$b is not built" >&2; exit 1; }
done

# One per line: "nodeid  # why".
DESELECT=$(sed -e 's/ *#.*//' -e '/^$/d' <<'EOF'
# valgrind runs glibc's posix_spawn child (clone CLONE_VM|CLONE_VFORK) as a
# plain fork, so an exec failure (EACCES) no longer comes back from
# posix_spawn: the server sees a child exiting 127 instead and answers
# "failed to parse the output", not "permission denied" (the same happens
# to any program; e.g. COMP1511UNSW/dcc#59).
tests/integration/test_evaluate.py::test_entrypoint_not_executable
# asserts the server's VmRSS stops growing after rounds of 1,000
# connections; under memcheck VmRSS is valgrind's (redzones, 20 MB queue of
# freed blocks), as the test already says of ASan, which it exempts.
tests/integration/test_faults.py::test_1000_idle_connections
# asserts VmRSS returns near its idle level after big calls; memcheck never
# hands freed memory back (its queue of freed blocks), so VmRSS only grows.
tests/integration/test_faults.py::test_large_call_memory_is_released_when_idle
# valgrind implements no Landlock system call (ENOSYS): serve's sandbox
# under strict refuses to start and under auto runs without Landlock, so the
# attacks Landlock stops succeed; and its vfork-as-fork hides a child's
# setup failure from the parent.
tests/integration/test_sandbox.py
EOF
)

rm -rf "$LOGS"
mkdir -p "$LOGS"
WRAPPER="valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite"
WRAPPER="$WRAPPER --error-exitcode=99 --track-fds=no --child-silent-after-fork=yes"
WRAPPER="$WRAPPER --log-file=$LOGS/%p.log"

args=()
for t in $DESELECT; do
    args+=(--deselect "$t")
done
[ $# -gt 0 ] || set -- tests/integration

echo "valgrind: integration tests under memcheck (KRM_TEST_SLOW=$SLOW), logs in $LOGS" >&2
start=$(date +%s)
rc=0
BUILD=$BUILD KRM_SERVER_WRAPPER=$WRAPPER KRM_TEST_SLOW=$SLOW \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider -rfE --junitxml="$LOGS/junit.xml" \
    "${args[@]}" "$@" || rc=1
echo "valgrind: pytest took $(($(date +%s) - start)) s; per test file:" >&2
/usr/bin/python3 - "$LOGS/junit.xml" >&2 <<'EOF' || true
import collections, sys, xml.etree.ElementTree as ET
files = collections.OrderedDict()
for case in ET.parse(sys.argv[1]).iter("testcase"):
    name = case.get("classname", "").split(".")[-1] + ".py"
    kinds = {child.tag for child in case}
    kind = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
    files.setdefault(name, collections.Counter())[kind] += 1
for name, n in files.items():
    verdict = "FAIL" if n["failed"] else "pass"
    print(f"  {verdict}  {name:32} {n['passed']} passed, {n['failed']} failed, {n['skipped']} skipped")
EOF

# The logs: any error, or a definite leak (also an error here, but a
# process killed before exiting writes no summary, so look at both).
n=$(find "$LOGS" -name '*.log' | wc -l)
bad=$(grep -l -E 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]' "$LOGS"/*.log 2>/dev/null || true)
done_logs=$(grep -l 'ERROR SUMMARY:' "$LOGS"/*.log 2>/dev/null | wc -l)
echo "valgrind: $n process logs, $done_logs with a final summary" \
     "(the others were killed or exec'd before exiting)" >&2
if [ -n "$bad" ]; then
    rc=1
    for f in $bad; do
        echo "==== $f" >&2
        cat "$f" >&2
    done
    echo "valgrind: errors or definite leaks in: $bad" >&2
fi
[ "$rc" -eq 0 ] && echo "valgrind: passed" >&2
exit "$rc"
