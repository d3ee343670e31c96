"""Pre-started functions (wrapper-server --prespawn N, issue 16): a call is
given a process started before it came, which sees its own stdin, stdout,
stderr and exit status; waiting processes that exit or write are dropped
and the call spawns its own; repeated early exits turn prespawning off;
SIGTERM kills waiting processes first and none outlives the server.
runner-client serve --prespawn N does the same per exec binary called
recently: its first call makes the pool, an idle one is released, the total
is bounded, and a binary replaced on disk never serves from old processes."""

import os
import signal
import time

import pytest

from krmtest import CLIENT_BIN, process_gone, run_cli, simple_rl, wait_processes_gone
from test_observability import curl, series

# Records "<pid> start <ns>" when it starts and "<pid> stdin <ns>" once its
# input has arrived, then echoes the input.
RECORDER = r'''
log="$1"
# In serve's sandbox the function's pid is that of its PID namespace (1 in a
# fresh sandbox, 2 or more on a kept one's host, the same numbers in every
# host): it names itself by that namespace, its pid there and its start
# time, which host_pid() finds, and the clock's nanoseconds: a kept host sets
# its pid counter back after each call, so two calls on it can both be pid 2
# within one tick of the start time.
id=ns$(stat -L -c %i /proc/self/ns/pid)-$$-$(cut -d' ' -f22 /proc/$$/stat)-$(date +%s%N)
echo "$id start $(date +%s%N)" >> "$log"
in=$(cat; echo x); in=${in%x}
echo "$id stdin $(date +%s%N)" >> "$log"
printf %s "$in"
'''


_host_pids = {}


def host_pid(name):
    """The pid a RECORDER process, named "ns<inode>-<pid>-<start time>-<ns>" by
    its PID namespace, its pid there, its start time and the clock, is known
    by here, looked up while it runs; the name itself once it is gone."""
    if name not in _host_pids:
        inode, inner, started, _ = (int(n) for n in name[2:].split("-"))
        for d in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.stat(f"/proc/{d}/ns/pid").st_ino != inode:
                    continue
                with open(f"/proc/{d}/stat") as f:
                    start_field = int(f.read().rsplit(")", 1)[1].split()[19])
                with open(f"/proc/{d}/status") as f:
                    nspid = [l.split() for l in f if l.startswith("NSpid:")][0]
            except (OSError, IndexError, ValueError):
                continue
            if nspid[-1] == str(inner) and start_field == started:
                _host_pids[name] = int(d)
                break
    return _host_pids.get(name, name)


def records(path):
    out = {}
    try:
        text = open(path).read()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        pid, what, ns = line.split()
        out.setdefault(host_pid(pid), {})[what] = int(ns)
    return out


def wait_started(path, count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = records(path)
        if sum(1 for v in r.values() if "start" in v) >= count:
            return r
        time.sleep(0.02)
    raise AssertionError(f"{count} functions did not start within {timeout}s: {records(path)}")


def metric(srv, name):
    code, text = curl(srv.port, "/metrics")
    assert code == 200
    return series(text, name)


def waiting_pids(recs):
    return [p for p, v in recs.items() if "stdin" not in v]


def test_call_is_served_by_a_prestarted_process(start_server, tmp_path):
    log = tmp_path / "log"
    srv = start_server(["sh", "-c", RECORDER, "fn", str(log)], options=["--prespawn", "1"])
    wait_started(log, 1)
    time.sleep(0.3)
    t0 = time.time_ns()
    rl = simple_rl("pre")
    assert srv.evaluate(rl, image="img").resource_list == rl
    served = [v for v in records(log).values() if "stdin" in v]
    assert len(served) == 1
    assert served[0]["start"] < t0 - 200_000_000, "the call's process started with the call"
    assert served[0]["stdin"] >= t0
    wait_started(log, 2)   # its replacement
    assert metric(srv, "krm_prespawn_hits_total") == 1
    assert metric(srv, "krm_prespawn_misses_total") == 0
    assert metric(srv, "krm_prespawn_waiting") == 1
    # per call: a second call gets another process, its own output and status
    rl2 = simple_rl("second")
    assert srv.evaluate(rl2, image="img").resource_list == rl2
    assert len([v for v in records(log).values() if "stdin" in v]) == 2


def test_a_call_takes_the_process_that_waited_longest(start_server, tmp_path):
    """With several waiting, a call is given the one started first, not the
    replacement the previous call asked, which may still be being spawned
    (--sandbox-keep at --prespawn 2, calls back to back: 28% of them;
    bench/README.md, tenth pass). Spawn order is pid order here."""
    log = tmp_path / "log"
    srv = start_server(["sh", "-c", RECORDER, "fn", str(log)], options=["--prespawn", "3"])
    first_three = sorted(wait_started(log, 3))
    for i, want in enumerate(first_three):
        rl = simple_rl(f"call{i}")
        assert srv.evaluate(rl, image="img").resource_list == rl
        served = sorted(p for p, v in records(log).items() if "stdin" in v)
        assert served == first_three[:i + 1], f"call {i}: {served}, not the oldest waiting {want}"
        wait_started(log, 4 + i)   # its replacement, now the newest waiting


def test_exit_status_and_stderr_are_the_calls(start_server):
    srv = start_server(["sh", "-c", 'cat >/dev/null; echo oops >&2; exit 3'], options=["--prespawn", "1"])
    time.sleep(0.2)
    err = srv.evaluate_error(simple_rl("x"), image="img")
    assert "oops" in str(err.details())
    assert metric(srv, "krm_prespawn_hits_total") == 1


def test_early_exit_falls_back_then_turns_off(start_server, tmp_path):
    # exits at once while waiting, unless the flag file exists (set per call below)
    flag = tmp_path / "serve"
    script = f'[ -e {flag} ] || exit 7; cat'
    srv = start_server(["sh", "-c", script], options=["--prespawn", "1"], ready=False)
    srv.wait_ready()
    deadline = time.monotonic() + 5
    while metric(srv, "krm_prespawn_disabled") != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert metric(srv, "krm_prespawn_disabled") == 1
    flag.write_text("")
    rl = simple_rl("fallback")
    assert srv.evaluate(rl, image="img").resource_list == rl
    assert metric(srv, "krm_prespawn_misses_total") == 1
    assert metric(srv, "krm_prespawn_waiting") == 0
    assert srv.stderr().count("--prespawn turned off") == 1


def test_crash_while_waiting(start_server, tmp_path):
    log = tmp_path / "log"
    srv = start_server(["sh", "-c", RECORDER, "fn", str(log)], options=["--prespawn", "1"])
    (pid,) = waiting_pids(wait_started(log, 1))
    os.kill(pid, signal.SIGKILL)
    rl = simple_rl("after-crash")
    assert srv.evaluate(rl, image="img").resource_list == rl   # spawned, or the replacement
    assert wait_processes_gone([pid], srv.pid) == []
    assert "before it was given a call" in srv.stderr()
    assert metric(srv, "krm_prespawn_disabled") == 0


def test_writing_while_waiting_is_dropped(start_server, tmp_path):
    flag = tmp_path / "quiet"
    srv = start_server(["sh", "-c", f'[ -e {flag} ] || echo early; cat'], options=["--prespawn", "1"])
    deadline = time.monotonic() + 5
    while "wrote output" not in srv.stderr() and time.monotonic() < deadline:
        time.sleep(0.02)
    flag.write_text("")
    time.sleep(0.3)
    rl = simple_rl("clean")
    resp = srv.evaluate(rl, image="img")
    assert resp.resource_list == rl   # never "early"


def test_startup_message_on_stderr_is_the_calls(start_server, tmp_path):
    """A function that logs before reading its input (a shell function's
    "starting" line) is served by a pre-started process, and the call's
    log starts with that line, as without prespawn; prespawning stays on."""
    log = tmp_path / "log"
    srv = start_server(["sh", "-c", 'echo "starting $$" >&2; ' + RECORDER, "fn", str(log)],
                       options=["--prespawn", "1"])
    wait_started(log, 1)
    time.sleep(0.3)
    for n, name in enumerate(("one", "two", "three", "four")):
        before = {p for p, v in records(log).items() if "stdin" in v}
        rl = simple_rl(name)
        resp = srv.evaluate(rl, image="img")
        assert resp.resource_list == rl
        (pid,) = {p for p, v in records(log).items() if "stdin" in v} - before
        assert resp.log.decode() == f"starting {pid}\n"
        wait_started(log, n + 2)   # its replacement, which logs its own line
    assert metric(srv, "krm_prespawn_hits_total") == 4
    assert metric(srv, "krm_prespawn_disabled") == 0
    assert "before it was given a call" not in srv.stderr()


def test_flooding_stderr_while_waiting_is_dropped(start_server, tmp_path):
    """More than 64 KiB of stderr before the call spoils the process."""
    flag = tmp_path / "quiet"
    srv = start_server(["sh", "-c", f'[ -e {flag} ] || head -c 70000 /dev/zero >&2; cat'],
                       options=["--prespawn", "1"])
    deadline = time.monotonic() + 5
    while "over 64 KiB of stderr" not in srv.stderr() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "over 64 KiB of stderr" in srv.stderr()
    flag.write_text("")
    time.sleep(0.3)
    rl = simple_rl("clean")
    resp = srv.evaluate(rl, image="img")
    assert resp.resource_list == rl and b"\0" not in resp.log


def test_drain_kills_waiting_processes(start_server, tmp_path):
    log = tmp_path / "log"
    srv = start_server(["sh", "-c", RECORDER, "fn", str(log)], options=["--prespawn", "3"])
    pids = waiting_pids(wait_started(log, 3))
    assert len(pids) == 3
    assert srv.stop() == 0
    assert all(process_gone(p, -1) for p in pids), "a waiting function outlived the server"


def test_no_waiting_function_or_child_survives(start_server, tmp_path):
    # each waiting process starts a child that leaves its group
    pidfile = tmp_path / "pids"
    srv = start_server(["sh", "-c", f'setsid sleep 30 & echo $! >> {pidfile}; cat'],
                       options=["--prespawn", "2"])
    deadline = time.monotonic() + 5
    while (not pidfile.exists() or len(pidfile.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.02)
    pids = [int(p) for p in pidfile.read_text().split()]
    assert srv.stop() == 0
    assert all(process_gone(p, -1) for p in pids), "a waiting function's child outlived the server"


def test_default_is_one_waiting_process(pb, binaries, tmp_path):
    from krmtest import Server, free_port
    port = free_port()
    srv = Server(pb, [binaries.server, "--port", str(port), "--", "cat"], port,
                 stderr_path=str(tmp_path / "err"), stdout_path=str(tmp_path / "out"))
    try:
        srv.wait_ready()
        deadline = time.monotonic() + 5
        while metric(srv, "krm_prespawn_waiting") != 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert metric(srv, "krm_prespawn_waiting") == 1
    finally:
        assert srv.stop() == 0


def test_prespawn_0_starts_each_function_on_its_call(start_server, tmp_path):
    log = tmp_path / "log"
    srv = start_server(["sh", "-c", RECORDER, "fn", str(log)], options=["--prespawn", "0"])
    time.sleep(0.3)
    assert records(log) == {}
    t0 = time.time_ns()
    rl = simple_rl("plain")
    assert srv.evaluate(rl, image="img").resource_list == rl
    (rec,) = records(log).values()
    assert rec["start"] >= t0
    assert metric(srv, "krm_prespawn_hits_total") == 0
    assert metric(srv, "krm_prespawn_misses_total") == 0
    assert metric(srv, "krm_prespawn_waiting") == 0


def test_deadline_counts_from_the_call(start_server):
    # the process waited far longer than the call's deadline before its call
    srv = start_server(["cat"], options=["--prespawn", "1"])
    time.sleep(1.0)
    rl = simple_rl("in-time")
    assert srv.evaluate(rl, image="img", timeout=0.5).resource_list == rl
    assert metric(srv, "krm_prespawn_hits_total") == 1


# ---- runner-client serve --prespawn: a pool per exec binary ------------------

SERVE_IMAGE = "example.com/fn/{name}:v1"


def serve_config(tmp_path, names):
    """A --functions directory with one recorder per name (each logging to
    tmp_path/<name>.log) and a FunctionConfig file mapping
    example.com/fn/<name>:v1 to it."""
    from test_serve import function_config
    d = tmp_path / "functions"
    d.mkdir()
    docs = []
    for name in names:
        path = d / name
        path.write_text(f"#!/bin/sh\nset -- {tmp_path / (name + '.log')}\n{RECORDER}")
        path.chmod(0o755)
        docs.append(function_config(name, name, ["v1"], name, prefixes=["example.com/fn"]))
    cfg = tmp_path / "fc.yaml"
    cfg.write_text("---\n".join(docs))
    return d, cfg


@pytest.fixture
def serve_prespawn(start_server, tmp_path):
    def start(names, *flags):
        d, cfg = serve_config(tmp_path, names)
        return start_server([], binary=CLIENT_BIN, argv=[
            "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(d),
            "--disable-runtimes=pod", *flags])
    return start


def wait_metric(srv, name, want, timeout=5.0):
    deadline = time.monotonic() + timeout
    while metric(srv, name) != want and time.monotonic() < deadline:
        time.sleep(0.02)
    assert metric(srv, name) == want


def test_serve_second_call_is_served_by_a_prestarted_process(serve_prespawn, tmp_path):
    log = tmp_path / "a.log"
    srv = serve_prespawn(["a"], "--prespawn", "1")
    time.sleep(0.3)
    assert records(log) == {}, "started before its binary was called"
    image = SERVE_IMAGE.format(name="a")
    t0 = time.time_ns()
    rl = simple_rl("first")
    assert srv.evaluate(rl, image=image).resource_list == rl
    (first,) = [v for v in records(log).values() if "stdin" in v]
    assert first["start"] >= t0, "the first call of a binary starts its own"
    recs = wait_started(log, 2)   # the first call made the pool: one is waiting
    (waiting,) = waiting_pids(recs)
    wait_metric(srv, "krm_prespawn_waiting", 1)
    time.sleep(0.3)
    t1 = time.time_ns()
    rl2 = simple_rl("second")
    assert srv.evaluate(rl2, image=image).resource_list == rl2
    second = records(log)[waiting]
    assert second["start"] < t1 - 200_000_000, "the call's process started with the call"
    assert second["stdin"] >= t1
    assert metric(srv, "krm_prespawn_hits_total") == 1
    assert metric(srv, "krm_prespawn_misses_total") == 1
    wait_started(log, 3)   # its replacement


def test_serve_idle_binary_loses_its_processes(serve_prespawn, tmp_path):
    log = tmp_path / "a.log"
    # 2 s idle against 0.5 s looked at: a busy machine's stall of a second
    # cannot make the processes look released early
    srv = serve_prespawn(["a"], "--prespawn", "2", "--prespawn-idle", "2s")
    image = SERVE_IMAGE.format(name="a")
    assert srv.evaluate(simple_rl("x"), image=image).resource_list == simple_rl("x")
    pids = waiting_pids(wait_started(log, 3))
    assert len(pids) == 2
    time.sleep(0.5)
    assert all(not process_gone(p, srv.pid) for p in pids), "released before the idle time"
    assert wait_processes_gone(pids, srv.pid, timeout=5.0) == []
    assert metric(srv, "krm_prespawn_waiting") == 0
    time.sleep(0.5)
    assert len(records(log)) == 3, "started again with no call"
    # called again: a miss, and the pool comes back
    assert srv.evaluate(simple_rl("y"), image=image).resource_list == simple_rl("y")
    assert metric(srv, "krm_prespawn_misses_total") == 2
    wait_metric(srv, "krm_prespawn_waiting", 2)


def test_serve_total_bound_across_binaries(serve_prespawn, tmp_path):
    srv = serve_prespawn(["a", "b", "c"], "--prespawn", "3", "--prespawn-total", "4")

    def waiting():   # the live processes that have had no call
        return {n: [p for p in waiting_pids(records(tmp_path / f"{n}.log"))
                    if not process_gone(p, srv.pid)] for n in ("a", "b", "c")}

    for name in ("a", "b", "c"):
        rl = simple_rl(name)
        assert srv.evaluate(rl, image=SERVE_IMAGE.format(name=name)).resource_list == rl
        time.sleep(0.3)
    wait_metric(srv, "krm_prespawn_waiting", 4)
    time.sleep(0.3)
    assert metric(srv, "krm_prespawn_waiting") == 4
    assert {n: len(p) for n, p in waiting().items()} == {"a": 3, "b": 1, "c": 0}
    # room for one more: it goes to the binary called last
    os.kill(waiting()["a"][0], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while len(waiting()["c"]) < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    assert metric(srv, "krm_prespawn_waiting") == 4
    assert {n: len(p) for n, p in waiting().items()} == {"a": 2, "b": 1, "c": 1}
    # a call takes one and frees room: the caller's pool gets it back
    rl = simple_rl("again")
    assert srv.evaluate(rl, image=SERVE_IMAGE.format(name="a")).resource_list == rl
    assert metric(srv, "krm_prespawn_hits_total") == 1
    wait_metric(srv, "krm_prespawn_waiting", 4)
    time.sleep(0.3)
    assert {n: len(p) for n, p in waiting().items()} == {"a": 2, "b": 1, "c": 1}


def test_serve_prespawn_0(serve_prespawn, tmp_path):
    log = tmp_path / "a.log"
    srv = serve_prespawn(["a"], "--prespawn", "0")
    image = SERVE_IMAGE.format(name="a")
    for name in ("one", "two"):
        t0 = time.time_ns()
        assert srv.evaluate(simple_rl(name), image=image).resource_list == simple_rl(name)
        assert max(v["start"] for v in records(log).values()) >= t0
    time.sleep(0.5)
    assert waiting_pids(records(log)) == []
    assert len(records(log)) == 2
    assert metric(srv, "krm_prespawn_waiting") == 0
    assert metric(srv, "krm_prespawn_hits_total") == 0


def test_serve_replaced_binary_never_runs_the_old_file(serve_prespawn, tmp_path):
    log = tmp_path / "a.log"
    srv = serve_prespawn(["a"], "--prespawn", "1")
    image = SERVE_IMAGE.format(name="a")
    assert srv.evaluate(simple_rl("x"), image=image).resource_list == simple_rl("x")
    (old,) = waiting_pids(wait_started(log, 2))
    new = tmp_path / "functions" / "a.new"
    new.write_text("#!/bin/sh\ncat >/dev/null\nprintf 'apiVersion: config.kubernetes.io/v1\\n"
                   "kind: ResourceList\\nitems: []\\n'\n")
    new.chmod(0o755)
    os.rename(new, tmp_path / "functions" / "a")
    resp = srv.evaluate(simple_rl("y"), image=image)
    assert b"items: []" in resp.resource_list, "a process of the replaced file served the call"
    assert wait_processes_gone([old], srv.pid) == []
    assert metric(srv, "krm_prespawn_hits_total") == 0


@pytest.mark.parametrize("flag,value", [("--prespawn", "65"), ("--prespawn", "-1"),
                                        ("--prespawn-total", "0"), ("--prespawn-total", "257"),
                                        ("--prespawn-idle", "soon")])
def test_serve_prespawn_flags_refused(flag, value):
    res = run_cli([CLIENT_BIN, "serve", "--disable-runtimes=pod", flag, value])
    assert res.returncode == 2
    assert f'invalid value "{value}" for {flag}' in res.stderr.decode()


def test_pool_refills_when_descriptors_come_back(start_server):
    """Out of descriptors, the call that takes the waiting process leaves
    the pool empty (its replacement cannot get pipes). It used to stay
    empty until the next call, which then paid a full spawn; now it refills
    once descriptors are back (the listener resumes), with no call."""
    import socket
    from test_faults import close_channels, wait_until
    srv = start_server(["cat"], options=["--prespawn", "1", "--verbosity", "3"],
                       wrapper=["prlimit", "--nofile=64:64", "--"])
    wait_metric(srv, "krm_prespawn_waiting", 1)
    close_channels(srv)
    ch = srv.channel()   # connected before descriptors run out
    assert srv.check("", channel=ch).status == srv.pb.health.HealthCheckResponse.SERVING
    clients = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(90)]
    assert wait_until(lambda: "new connections wait" in srv.stderr(), 10), srv.describe()
    rl = simple_rl("at-the-limit")
    assert srv.evaluate(rl, image="img", channel=ch, timeout=20).resource_list == rl
    assert wait_until(lambda: "cannot pre-start" in srv.stderr(), 5), srv.describe()
    for s in clients:
        s.close()
    assert srv.check("", timeout=20).status == srv.pb.health.HealthCheckResponse.SERVING
    wait_metric(srv, "krm_prespawn_waiting", 1)   # refilled, no call made
    assert metric(srv, "krm_prespawn_hits_total") == 1
    assert metric(srv, "krm_prespawn_misses_total") == 0
