#!/bin/sh
# make demo: start the wrapper server with a sample function, evaluate a
# sample package through it with runner-client, print the result, stop.
#
# The server listens on a port the kernel picks (--port 0), or on DEMO_PORT
# when that is set. Either way the demo talks only to the server it started:
# it waits for that process's own "Listening on :PORT" log line (so a port
# held by another server fails the demo instead of being used), and every
# call goes to that port while the process is alive.
set -eu
BUILD=${1:-build}
WS=$BUILD/bin/wrapper-server
RC=$BUILD/bin/runner-client
LOG=$(mktemp)
PID=
trap 'if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; fi; rm -f "$LOG"' EXIT

case ${DEMO_PORT:-} in
'') PORT_FLAG=0 ;;
*[!0-9]* | 0)
    echo "demo: DEMO_PORT=\"$DEMO_PORT\" is not a port number (1-65535); unset it to use a free port" >&2
    exit 2 ;;
*) PORT_FLAG=$DEMO_PORT ;;
esac

what=${DEMO_PORT:+port $DEMO_PORT}
echo "== starting: $WS --port $PORT_FLAG -- examples/functions/search-replace.sh staging production${what:+   ($what, from DEMO_PORT)}"
"$WS" --port "$PORT_FLAG" -- examples/functions/search-replace.sh staging production 2>"$LOG" &
PID=$!

# The port our own process bound, from its log; empty while it has not.
listening_port() {
    sed -n 's/.*] Listening on :\([0-9][0-9]*\)$/\1/p' "$LOG" | head -n 1
}

PORT=
i=0
while [ -z "$PORT" ]; do
    if ! kill -0 "$PID" 2>/dev/null; then
        wait "$PID" || true
        PID=
        if [ -n "${DEMO_PORT:-}" ] && grep -q 'Address already in use' "$LOG"; then
            echo "demo: port $DEMO_PORT (DEMO_PORT) is already taken by another process;" \
                "free it, pick another DEMO_PORT, or unset DEMO_PORT to use a free port." >&2
        else
            echo "demo: the wrapper server exited before listening; its log:" >&2
        fi
        cat "$LOG" >&2
        exit 1
    fi
    i=$((i + 1))
    if [ $i -gt 100 ]; then
        echo "demo: the wrapper server (pid $PID) did not log \"Listening on\" within 10s; its log:" >&2
        cat "$LOG" >&2
        exit 1
    fi
    sleep 0.1
    PORT=$(listening_port)
done
ADDR=127.0.0.1:$PORT
echo "== the server (pid $PID) is listening on :$PORT"

# Our process is alive and owns the port (the bind is exclusive): only now
# is a health check worth asking, and the answer can only be its own.
status=$("$RC" health --addr "$ADDR" --timeout 5s)
echo "== health: $status"
echo "== evaluating examples/package through the server:"
"$RC" eval --addr "$ADDR" --image example/search-replace:v1 -o unwrap examples/package
echo "== stopping the server (SIGTERM drains it)"
kill -TERM "$PID"
wait "$PID"
PID=
echo "== server log:"
cat "$LOG"
