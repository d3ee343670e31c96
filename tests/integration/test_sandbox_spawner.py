"""serve's sandbox spawner: the process, forked at start, that spawns the
sandboxed functions off the server's loop (lib/runtime/sandbox_spawner).

The function stays the server's child (its limits are named as before),
the spawner holds none of the server's sockets, and its death is survived:
restarted once, then the server spawns on its loop."""
import os
import re
import signal
import subprocess
import time

import pytest

from krmtest import CLIENT_BIN, children_of, proc_stat, process_gone, simple_rl

from test_pid1 import comm
from test_sandbox import function_config

PY = "/usr/bin/python3"
SPAWNER = "krm-spawner"

# Every test runs twice: with a fresh sandbox per call, and with the sandbox
# kept per function (--sandbox-keep, the default: the spawner keeps a host per
# function).
KEEP = []


@pytest.fixture(autouse=True, params=["fresh", "keep"])
def sandbox_kind(request):
    KEEP[:] = ["--sandbox-keep" if request.param == "keep" else "--sandbox-keep=false"]
    yield request.param
    KEEP[:] = []


def spawners(srv):
    """The spawner (not a spawn's first child, which has its name and exits
    at once: a zombie until the server reaps it)."""
    return [p for p in children_of(srv.pid)
            if comm(p) == SPAWNER and (proc_stat(p) or ("Z",))[0] != "Z"]


def the_spawner(srv):
    """The one spawner, once it is seen: it names itself right after the
    fork, so a look just after the server's start can find it unnamed."""
    found = wait_for(lambda: spawners(srv) if len(spawners(srv)) == 1 else None)
    assert found, [(p, comm(p)) for p in children_of(srv.pid)]
    return found[0]


def serve(start_server, tmp_path, script, *flags, annotations=None):
    functions = tmp_path / "functions"
    functions.mkdir(exist_ok=True)
    fn = functions / "fn"
    fn.write_text(f"#!/bin/sh\n{script}\n")
    fn.chmod(0o755)
    cfg = function_config(tmp_path, annotations)
    return start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(functions),
        "--disable-runtimes=pod", "--verbosity", "4", *flags, *KEEP])


def wait_for(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    return cond()


@pytest.mark.parametrize("prespawn", ["0", "1"])
def test_sandboxed_functions_are_spawned_by_the_spawner(start_server, tmp_path, prespawn):
    srv = serve(start_server, tmp_path, "exec cat", "--sandbox", "auto", "--prespawn", prespawn)
    spawner = the_spawner(srv)
    rl = simple_rl("x")
    for _ in range(3):
        assert srv.evaluate(rl, image="fn:v1").resource_list == rl
    assert "started by the spawner" in srv.stderr()
    assert "function asked of the spawner" in srv.stderr()
    assert_holds_only_its_own(spawner, tmp_path)
    assert "reaped orphan process" not in srv.stderr()   # its first children are told apart


def assert_holds_only_its_own(spawner, tmp_path):
    """It holds its socket, stdio and the two shared namespaces (and, while
    it spawns, the function's pipes and binary): none of the server's
    listeners, connections or files. With --sandbox-keep a host may be
    made or ended between the listings (the next call's, with --prespawn):
    its socket is counted once the two agree."""
    def sockets_match_hosts():
        targets, hosts = holds(spawner)
        return sum(t.startswith("socket:") for t in targets) == 1 + len(hosts)
    assert wait_for(sockets_match_hosts), holds(spawner)
    targets, hosts = holds(spawner)
    kept = ("mnt:", "ipc:", "pid:", "anon_inode:[pidfd]", "anon_inode:[landlock-ruleset]")
    binary = str(tmp_path / "functions" / "fn")
    unexpected = [t for t in targets if not (
        t.startswith(("socket:", "user:", "net:", "pipe:")) or t == binary or
        t in LANDLOCK_ROOTS or t == str(tmp_path / "functions") or (KEEP == ["--sandbox-keep"] and t.startswith(kept)))]
    assert not unexpected, targets
    assert bool(hosts) == (KEEP == ["--sandbox-keep"])


def holds(spawner):
    """What the spawner's descriptors above 2 are, and its hosts (with
    --sandbox-keep: per host its socket, namespaces, pidfd and the Landlock
    ruleset of its calls)."""
    targets = []
    for fd in os.listdir(f"/proc/{spawner}/fd"):
        try:
            if int(fd) > 2:
                targets.append(os.readlink(f"/proc/{spawner}/fd/{fd}"))
        except FileNotFoundError:
            pass   # a spawn's, closed meanwhile
    hosts = [p for p in children_of(spawner) if comm(p) == "krm-sbx-host"]
    return targets, hosts


# The roots the spawner opens once for every spawn's Landlock rules (those
# that exist here), beside --functions.
LANDLOCK_ROOTS = {os.path.realpath(p) for p in
                  ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
                   "/proc", "/sys", "/dev") if os.path.exists(p)}


def fd_numbers(pid):
    """{descriptor: what it is} of process pid."""
    held = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            pass   # a spawn's, closed meanwhile
    return held


@pytest.mark.parametrize("prespawn", ["0", "1"])
def test_landlocks_roots_are_opened_once_and_no_function_holds_them(start_server, tmp_path,
                                                                     prespawn):
    """The spawner opens the Landlock roots that are the same for every
    spawn (/usr, /etc, --functions, ...) at its first spawn and keeps them
    for the next, so that a function's child does not open them again; the
    function, whose rules were made from them before its exec, holds none
    (its descriptors listed by itself: its stdio and the script's)."""
    srv = serve(start_server, tmp_path, 'ls -l /proc/$$/fd >&2; exec cat', "--sandbox", "auto",
                "--prespawn", prespawn)
    if "landlock" not in srv.stderr():
        pytest.skip("no Landlock here")
    spawner = the_spawner(srv)
    rl = simple_rl("x")
    held = []
    for _ in range(4):
        resp = srv.evaluate(rl, image="fn:v1")
        assert resp.resource_list == rl
        log = resp.log.decode()
        assert " 0 -> " in log and " 2 -> " in log, log
        assert not any(f"-> {root}\n" in log for root in LANDLOCK_ROOTS), log
        assert "anon_inode" not in log and "/functions\n" not in log, log
        now = {fd: t for fd, t in fd_numbers(spawner).items() if t in LANDLOCK_ROOTS}
        assert not held or now == held, (held, now)   # the same ones, not opened again
        held = now
    assert "/usr" in held.values() and "/etc" in held.values(), held

def test_no_spawner_with_the_sandbox_off(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "exec cat", "--sandbox", "off", "--prespawn", "0")
    rl = simple_rl("x")
    assert srv.evaluate(rl, image="fn:v1").resource_list == rl
    assert spawners(srv) == []
    assert "sandbox spawner" not in srv.stderr() and "by the spawner" not in srv.stderr()


def test_a_killed_spawner_is_restarted_once_then_the_loop_spawns(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "exec cat", "--sandbox", "auto", "--prespawn", "0")
    rl = simple_rl("x")
    assert srv.evaluate(rl, image="fn:v1").resource_list == rl
    first = the_spawner(srv)
    os.kill(first, signal.SIGKILL)
    srv.assert_logged([f"sandbox spawner {first} "])
    assert "restarted as" in srv.stderr()
    second = wait_for(lambda: [p for p in spawners(srv) if p != first])
    assert len(second) == 1, second
    assert srv.evaluate(rl, image="fn:v1").resource_list == rl
    os.kill(second[0], signal.SIGKILL)
    srv.assert_logged([f"sandbox spawner {second[0]} "])
    assert "sandboxed functions are spawned on the server's loop from now" in srv.stderr()
    log_before = srv.stderr().count("started by the spawner")
    assert srv.evaluate(rl, image="fn:v1").resource_list == rl
    assert srv.stderr().count("started by the spawner") == log_before   # spawned here
    assert wait_for(lambda: spawners(srv) == [])


def test_the_spawner_dies_with_a_killed_server(tmp_path):
    # started by hand: the launcher's servers must exit cleanly
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "fn").write_text("#!/bin/sh\nexec cat\n")
    (tmp_path / "functions" / "fn").chmod(0o755)
    cfg = function_config(tmp_path)
    with open(tmp_path / "stderr", "wb") as err:
        proc = subprocess.Popen([CLIENT_BIN, "serve", "--port", "0", "--function-config", str(cfg),
                                 "--functions", str(tmp_path / "functions"),
                                 "--disable-runtimes=pod", "--sandbox", "auto", *KEEP],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        found = wait_for(lambda: [p for p in children_of(proc.pid) if comm(p) == SPAWNER])
        assert len(found) == 1, (tmp_path / "stderr").read_text()
    finally:
        proc.kill()
        proc.wait()
    assert wait_for(lambda: process_gone(found[0], proc.pid)), "the spawner outlived its server"


@pytest.mark.parametrize("prespawn", ["0", "1"])
def test_a_failed_spawn_is_told_as_on_the_loop(start_server, tmp_path, prespawn):
    # an executable file the kernel cannot run: the spawner's exec fails
    # (ENOEXEC), and the call says so in the words the loop's spawn used
    texts = {}
    for mode in ("auto", "off"):
        d = tmp_path / mode
        d.mkdir()
        srv = serve(start_server, d, "", "--sandbox", mode, "--prespawn", prespawn)
        (d / "functions" / "fn").write_bytes(b"\x00\x01 not a program\n")
        err = srv.evaluate_error(simple_rl("x"), image="fn:v1")
        assert err.code().name == "INTERNAL"
        texts[mode] = err.details().replace(str(d), "DIR")
        if mode == "auto":   # through the spawner
            assert "function asked of the spawner" in srv.stderr()
            assert "spawner: fork/exec" in srv.stderr()
    assert "fork/exec DIR/functions/fn: exec format error" in texts["auto"], texts
    assert texts["auto"] == texts["off"], texts


LIMITS = [
    (["--sandbox-open-files", "20"], None,
     "function exceeded its open files limit of 20 (--sandbox-open-files)"),
    # a function's own settings cross to the spawner, which makes their variant
    ([], {"fn.kpt.dev/sandbox-open-files": '"20"'},
     "function exceeded its open files limit of 20 (fn.kpt.dev/sandbox-open-files)"),
]


@pytest.mark.parametrize("flags,annotations,words", LIMITS, ids=["flag", "annotation"])
def test_a_limit_is_named_through_the_spawner(start_server, tmp_path, flags, annotations, words):
    script = (f"cat >/dev/null\n"
              f"exec {PY} -c 'import os; [os.open(\"/dev/null\", 0) for _ in range(100)]'")
    srv = serve(start_server, tmp_path, script, "--sandbox", "auto", "--prespawn", "0", *flags,
                annotations=annotations)
    the_spawner(srv)
    err = srv.evaluate_error(simple_rl("x"), image="fn:v1", timeout=30)
    assert err.code().name == "INTERNAL"
    assert words in err.details(), err.details()
    assert "started by the spawner" in srv.stderr()


@pytest.mark.parametrize("callers", [1, 8])
def test_back_to_back_calls_lose_no_process_to_the_orphan_killer(start_server, tmp_path, callers):
    # The function's process is ours between the spawner's clone and its
    # answer, before we know its pid: the orphan killer must leave it alone
    # (it once killed it as "left behind by a function", the call's output
    # empty: one caller back to back; four, when a call took a pre-started
    # process still being spawned, cloned before the call came).
    srv = serve(start_server, tmp_path, "exec cat", "--sandbox", "auto", "--prespawn", "1")
    rl = simple_rl("x")
    call = srv.evaluate_callable()
    request = srv.pb.evaluator.EvaluateFunctionRequest(resource_list=rl, image="fn:v1")
    for _ in range(240 // callers):   # callers calls in flight at a time
        for f in [call.future(request, timeout=20) for _ in range(callers)]:
            assert f.result().resource_list == rl
    assert "left behind by a function" not in srv.stderr()
    assert "started by the spawner" in srv.stderr()


def stop_time(srv):
    start = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    srv.proc.wait(timeout=10)
    return time.monotonic() - start


def test_the_spawner_does_not_hold_up_the_servers_stop(start_server, tmp_path):
    """At SIGTERM the server waits for each child of its own to exit; the
    spawner is ended first, not waited for until that wait gives up (a
    second at every stop of a sandboxed serve, before)."""
    times = {}
    for mode in ("off", "auto"):
        sub = tmp_path / mode
        sub.mkdir()
        srv = serve(start_server, sub, "exec cat", "--sandbox", mode, "--prespawn", "1")
        rl = simple_rl("x")
        assert srv.evaluate(rl, image="fn:v1").resource_list == rl
        # (a spawn's first child, named as the spawner, lives a moment)
        assert wait_for(lambda: len(spawners(srv)) == (mode == "auto")), spawners(srv)
        times[mode] = stop_time(srv)
        assert srv.proc.returncode == 0, srv.stderr()
    assert times["auto"] < times["off"] + 0.6, times


# Runs argv with close_range(2) refused (EPERM), as a container's seccomp
# profile older than the call refuses it: a BPF filter of four instructions.
NO_CLOSE_RANGE = """
import ctypes, os, struct, sys
code = b"".join(struct.pack("HBBI", *i) for i in (
    (0x20, 0, 0, 0),                   # load the call's number
    (0x15, 0, 1, 436),                 # close_range?
    (0x06, 0, 0, 0x00050000 | 1),      # then EPERM
    (0x06, 0, 0, 0x7fff0000)))         # else allow
buf = ctypes.create_string_buffer(code)
prog = struct.pack("HxxxxxxQ", 4, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0                        # no_new_privs
assert libc.prctl(22, 2, ctypes.c_char_p(prog), 0, 0) == 0     # the filter
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_the_spawner_closes_the_servers_descriptors_without_close_range(start_server, tmp_path):
    wrapper = tmp_path / "no_close_range.py"
    wrapper.write_text(NO_CLOSE_RANGE)
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "fn").write_text("#!/bin/sh\nexec cat\n")
    (functions / "fn").chmod(0o755)
    cfg = function_config(tmp_path)
    srv = start_server([], binary=CLIENT_BIN, wrapper=[PY, str(wrapper)], argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions",
        str(functions), "--disable-runtimes=pod", "--sandbox", "auto", "--prespawn", "0", *KEEP])
    rl = simple_rl("x")
    assert srv.evaluate(rl, image="fn:v1").resource_list == rl
    spawner = the_spawner(srv)
    assert_holds_only_its_own(spawner, tmp_path)
    assert "closing the server's descriptors" not in srv.stderr(), srv.stderr()
    assert "on the server's loop from now" not in srv.stderr(), srv.stderr()


@pytest.mark.parametrize("prespawn", ["0", "1"])
def test_calls_cancelled_while_their_spawn_is_asked_leave_nothing(start_server, tmp_path, prespawn):
    """Deadlines of a few ms end calls at every point of a spawn the spawner
    has not answered yet (asked, cloned, answered after the call went): the
    server keeps serving, and no process of theirs is left behind."""
    srv = serve(start_server, tmp_path, "exec cat", "--sandbox", "auto", "--prespawn", prespawn)
    rl = simple_rl("x")
    call = srv.evaluate_callable()
    request = srv.pb.evaluator.EvaluateFunctionRequest(resource_list=rl, image="fn:v1")
    codes = set()
    for round_ in range(30):
        futures = [call.future(request, timeout=0.0005 * (1 + (round_ + i) % 8)) for i in range(8)]
        for f in futures:
            try:
                codes.add(f.result().resource_list == rl)
            except Exception as e:   # grpc.RpcError: its code is what we look at
                codes.add(e.code().name)
    assert "DEADLINE_EXCEEDED" in codes, codes
    if "UNAVAILABLE" in codes:
        # grpcio's core can reset a call it cancels before its HEADERS went
        # out (grpc/grpc#19655; seen here on a starved CPU): RST_STREAM on an
        # idle stream is a connection error (RFC 9113 section 5.1), so the
        # server ends the connection and its other calls fail UNAVAILABLE.
        # Allowed for that cause only, which the server logs.
        assert re.search(r"GOAWAY PROTOCOL_ERROR sent: RST_STREAM: stream (\d+ )?in idle",
                         srv.stderr()), srv.stderr()[-3000:]
        codes.discard("UNAVAILABLE")
    assert codes <= {True, "DEADLINE_EXCEEDED", "CANCELLED"}, codes
    assert srv.evaluate(rl, image="fn:v1").resource_list == rl
    # what remains: the spawner and, with --prespawn 1, one waiting process
    # (the function, its sandbox's first child gone)
    want = 1 + int(prespawn)
    assert wait_for(lambda: len(children_of(srv.pid)) == want), \
        [(p, comm(p)) for p in children_of(srv.pid)]
    assert "left behind by a function" not in srv.stderr()
