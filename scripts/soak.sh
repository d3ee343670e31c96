#!/usr/bin/env bash
# scripts/soak.sh BUILD: `make soak`, the long run of one wrapper-server.
#
# Why: leaks of memory, descriptors or processes that a short test cannot
# see show up after many calls. This script compiles the soak function
# (bench/soakfn/soakfn.c, static, so that a spawn costs as little as
# possible), starts one server with it (build/static/wrapper-server when
# `make static` built it, else BUILD/bin/wrapper-server), runs bench-soak
# against it (the calls, their expected statuses, VmRSS, children and fds:
# see bench/soak.c), then stops the server with SIGTERM and requires exit 0.
#
# Knobs (environment):
#   SOAK_CALLS        calls to make (default 100000)
#   SOAK_CONCURRENCY  streams in flight (default 16)
#   SOAK_SERVER       the server binary (default as above)
#   SOAK_MAX_REQUEST  the server's --max-request-body-size (default 65536)
#   SOAK_TIMEOUT      grpc-timeout of the timing-out calls (default 200ms)
#   SOAK_RSS_SLACK    VmRSS spread allowed after the warm-up, KiB (default 256)
# Exit status: 0 when the soak passed, 1 otherwise.
set -eu

BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/listening.sh
. "$ROOT/scripts/listening.sh"
cd "$ROOT"
OUT=$BUILD/soak
CALLS=${SOAK_CALLS:-100000}
CONCURRENCY=${SOAK_CONCURRENCY:-16}
MAX_REQUEST=${SOAK_MAX_REQUEST:-65536}
TIMEOUT=${SOAK_TIMEOUT:-200ms}
RSS_SLACK=${SOAK_RSS_SLACK:-256}
SERVER=${SOAK_SERVER:-}
if [ -z "$SERVER" ]; then
    SERVER=$BUILD/bin/wrapper-server
    [ -x "$ROOT/build/static/wrapper-server" ] && SERVER=$ROOT/build/static/wrapper-server
fi
SRV_PID=""

die() {
    echo "soak: $*" >&2
    exit 1
}

cleanup() {
    if [ -n "$SRV_PID" ]; then
        kill -KILL "$SRV_PID" 2>/dev/null || true
        wait "$SRV_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$SERVER" ] || die "$SERVER is not built"
[ -x "$BUILD/bin/bench-soak" ] || die "$BUILD/bin/bench-soak is not built"
mkdir -p "$OUT"

# The function: static (musl-gcc when there, else glibc's static libc).
FN=$OUT/soakfn
FN_CC="cc -static"
command -v musl-gcc >/dev/null && FN_CC="musl-gcc -static"
$FN_CC -std=c17 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$FN" "$ROOT/bench/soakfn/soakfn.c" ||
    die "cannot compile bench/soakfn/soakfn.c"

# The server, on a free port; readiness is its "Listening on" line, not a
# call: bench-soak counts the server's fds before it connects.
LOG=$OUT/server.log
"$SERVER" --port 0 --max-request-body-size "$MAX_REQUEST" -- "$FN" 2>"$LOG" &
SRV_PID=$!
PORT=$(listening_port "$LOG" "$SRV_PID") || die "$SERVER did not start listening"
sleep 0.2

echo "soak: $CALLS calls, $CONCURRENCY streams, against $SERVER (pid $SRV_PID, port $PORT)," \
     "function $FN, --max-request-body-size $MAX_REQUEST" >&2
rc=0
"$BUILD/bin/bench-soak" --addr "127.0.0.1:$PORT" --pid "$SRV_PID" --calls "$CALLS" \
    --concurrency "$CONCURRENCY" --max-request "$MAX_REQUEST" --timeout "$TIMEOUT" \
    --rss-slack-kib "$RSS_SLACK" | tee "$OUT/summary.txt" || rc=1

kill -TERM "$SRV_PID" || die "the server (pid $SRV_PID) is gone"
src=0
wait "$SRV_PID" || src=$?
SRV_PID=""
if [ "$src" -ne 0 ]; then
    echo "VIOLATION: the server exited with status $src after SIGTERM: $(tail -n 3 "$LOG")" |
        tee -a "$OUT/summary.txt"
    rc=1
fi
if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$LOG"; then
    echo "VIOLATION: sanitizer report in $LOG" | tee -a "$OUT/summary.txt"
    rc=1
fi
echo "soak: summary in $OUT/summary.txt, server log in $LOG" >&2
exit "$rc"
