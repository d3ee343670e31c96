#!/bin/sh
# make demo: start the wrapper server with a sample function, evaluate a
# sample package through it with runner-client, print the result, stop.
set -eu
BUILD=${1:-build}
WS=$BUILD/bin/wrapper-server
RC=$BUILD/bin/runner-client
PORT=${DEMO_PORT:-9446}
LOG=$(mktemp)
trap 'kill "$PID" 2>/dev/null || true; rm -f "$LOG"' EXIT

echo "== starting: $WS --port $PORT -- examples/functions/search-replace.sh staging production"
"$WS" --port "$PORT" -- examples/functions/search-replace.sh staging production 2>"$LOG" &
PID=$!
i=0
until "$RC" health --addr "localhost:$PORT" --timeout 1s >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 50 ] || ! kill -0 "$PID" 2>/dev/null; then
        echo "the server did not become healthy; its log:" >&2
        cat "$LOG" >&2
        exit 1
    fi
    sleep 0.1
done
echo "== health: $("$RC" health --addr "localhost:$PORT")"
echo "== evaluating examples/package through the server:"
"$RC" eval --addr "localhost:$PORT" --image example/search-replace:v1 examples/package
echo "== stopping the server (SIGTERM drains it)"
kill -TERM "$PID"
wait "$PID"
echo "== server log:"
cat "$LOG"
