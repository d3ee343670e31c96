# scripts/listening.sh: sourced by bench/run.sh and scripts/soak.sh.
#
# listening_port LOG PID: waits (up to 10 s) for a server started with
# --port 0 to log "Listening on :PORT" to LOG and prints PORT. Fails with a
# message on stderr when the process PID exits first or the time runs out.
# The log line, not a call, is the readiness signal: a probe connection
# still closing would skew what the caller measures next. LOG may not exist
# yet (the caller removes an old one: a server started in the background
# truncates it only once it runs, and an old port read meanwhile is wrong).
listening_port() {
    local log=$1 pid=$2 port="" i
    for i in $(seq 200); do
        port=$(sed -n 's/.*Listening on :\([0-9][0-9]*\).*/\1/p' "$log" 2>/dev/null | head -n 1)
        [ -n "$port" ] && { echo "$port"; return 0; }
        kill -0 "$pid" 2>/dev/null || { echo "server exited: $(tail -n 3 "$log")" >&2; return 1; }
        sleep 0.05
    done
    echo "server did not report its port within 10 s" >&2
    return 1
}
