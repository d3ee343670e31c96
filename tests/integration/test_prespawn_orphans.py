"""Processes a pre-started function leaves outside its group while it waits
for its call (issue 21, class 11a). A waiting process is no call, so what it
leaves behind has no owner and is killed at once. Nothing signals the server
when such a process is re-parented to it (a live orphan sends no SIGCHLD:
its dead parent was the function's child, not the server's), so the server
looks for them while processes wait; before, they stayed until some later
call ended.

The function double-forks a `sleep MARKER` daemon (setsid) as it starts,
before it reads stdin, and records the daemon's start; no call is made
afterwards (runner-client serve's pool is made by a binary's first call, so
there one call makes the pool, then none, and the daemon comes later). Each daemon must be gone within
DAEMON_BOUND_S of its start: the servers look 20 ms after a process is
pre-started, then at growing intervals up to 1 s."""

import os
import random
import signal
import textwrap
import time

import pytest

from krmtest import CLIENT_BIN, SLOW, simple_rl
from test_escaped import metric
from test_faults import wait_until
from test_pid1 import start_pid1
from test_serve import function_config

# Generous for a loaded 2-core machine; the old code never killed them.
DAEMON_BOUND_S = 2.5 * SLOW

# $1: marker (a sleep duration such as 1000.123456789), $2: a file where each
# daemon's pid and start (ns since the epoch) are appended.
DAEMONIZER = textwrap.dedent('''\
    setsid sh -c 'sleep "$0" & echo "$! $(date +%s%N)" >> "$1"' "$1" "$2" \\
        </dev/null >/dev/null 2>&1
    exec cat
    ''')


def daemon_starts(path):
    """Start times (ns since the epoch) of the daemons recorded so far."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [int(line.split()[1]) for line in text.splitlines() if len(line.split()) == 2]


def daemons(marker):
    """Pids of the live daemons running `sleep marker`."""
    out = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")[:-1]
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argv == [b"sleep", marker.encode()] and state != "Z":
            out.append(int(name))
    return out


def new_marker():
    return "1000.%09d" % random.randrange(10 ** 9)


def assert_daemons_killed(srv, marker, record, count, killed_before):
    """`count` daemons were recorded, and none lives DAEMON_BOUND_S after the
    last one started, with no call made meanwhile."""
    assert wait_until(lambda: len(daemon_starts(record)) >= count, 10), (
        f"the functions recorded {daemon_starts(record)}, want {count} daemons; {srv.describe()}")
    last = max(daemon_starts(record))
    deadline_s = last / 1e9 + DAEMON_BOUND_S
    while daemons(marker) and time.time() < deadline_s:
        time.sleep(0.02)
    survivors = daemons(marker)
    assert not survivors, (
        f"daemons left by waiting functions still run {DAEMON_BOUND_S} s after they started, "
        f"no call made: {survivors}; {srv.describe()}")
    assert wait_until(lambda: metric(srv.port, "krm_orphans_killed_total") >= killed_before + 1, 5)


@pytest.fixture
def cleanup():
    markers = []
    yield markers
    for m in markers:   # a failing test must not leave its sleepers behind
        for pid in daemons(m):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize("as_pid1", [False, True], ids=["subreaper", "pid1"])
def test_wrapper_server_kills_a_waiting_functions_daemon(start_server, tmp_path, cleanup, as_pid1):
    marker, record = new_marker(), tmp_path / "daemons"
    cleanup.append(marker)
    entry = ["sh", "-c", DAEMONIZER, "fn", marker, str(record)]
    opts = ["--prespawn", "2", "--verbosity", "3"]
    if as_pid1:
        srv = start_pid1(start_server, entry, opts)
    else:
        srv = start_server(entry, options=opts)
    assert_daemons_killed(srv, marker, record, 2, 0)
    assert "left behind by a function" in srv.stderr()
    # the waiting processes themselves are untouched and serve their calls
    assert metric(srv.port, "krm_prespawn_waiting") == 2
    rl = simple_rl("after")
    assert srv.evaluate(rl, image="img", timeout=20).resource_list == rl
    assert metric(srv.port, "krm_prespawn_hits_total") == 1


def test_serve_kills_a_waiting_functions_daemon(start_server, tmp_path, cleanup):
    """serve's pool is made by a binary's first call, and its first process
    starts while that call runs (so what it leaves then may be the call's).
    Here each process leaves its daemon only once told (DIR/go), from a
    helper in its own group while it reads stdin: the call's process ends,
    its group and the helper with it, before that; the pre-started one
    leaves its daemon well after the call, while it waits."""
    marker, record = new_marker(), tmp_path / "daemons"
    cleanup.append(marker)
    d = tmp_path / "functions"
    d.mkdir()
    fn_path = d / "daemonizer"
    helper = tmp_path / "helper.sh"
    helper.write_text('while [ ! -e "$3" ]; do sleep 0.01; done\n' +
                      DAEMONIZER.replace("exec cat\n", ""))
    fn_path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        sh {helper} {marker} {record} {tmp_path / "go"} </dev/null >/dev/null 2>&1 &
        exec cat
        """))
    fn_path.chmod(0o755)
    cfg = tmp_path / "fc.yaml"
    cfg.write_text(function_config("daemonizer", "daemonizer", ["v1"], "daemonizer",
                                   prefixes=["example.com/fn"]))
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(d),
        "--disable-runtimes=pod", "--prespawn", "1", "--log-level", "3",
        # in the sandbox's PID namespace a daemon is the waiting function's
        # own child, kept in its namespace and ended with it: not an orphan
        "--sandbox", "off"])
    rl = simple_rl("first")
    assert srv.evaluate(rl, image="example.com/fn/daemonizer:v1", timeout=20).resource_list == rl
    assert wait_until(lambda: metric(srv.port, "krm_prespawn_waiting") == 1, 5)
    killed = metric(srv.port, "krm_orphans_killed_total")
    time.sleep(1.5)   # the server's checks have slowed to their longest interval
    (tmp_path / "go").write_text("")
    assert_daemons_killed(srv, marker, record, 1, killed)
    assert "left behind by a function" in srv.stderr()
    assert metric(srv.port, "krm_prespawn_waiting") == 1
