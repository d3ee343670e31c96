"""serve --sandbox-keep: a sandbox kept per function (lib/runtime/sandbox_host).

A host process per function variant holds the namespaces its calls join;
after each call it is reset: the next call sees none of the last one's
files or processes. Functions report what they see on stderr (the call's
log)."""
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from krmtest import CLIENT_BIN, process_gone, simple_rl

from test_pid1 import comm
from test_sandbox_spawner import spawners, the_spawner, wait_for

HOST = "krm-sbx-host"

# What a call sees: its PID namespace and its pid there (1 in a fresh
# sandbox, whose PID namespace is the call's own; not on a host), /tmp (where only the parents of
# --functions' bind are, beneath /tmp in tests), the sleepers running (the
# last call's), the processes waiting in `cat` (another call's, started
# ahead), then it leaves a file and a setsid'd sleeper behind.
SEES = """#!/bin/sh
echo "ns=$(readlink /proc/self/ns/pid)" >&2
echo "pid=$$" >&2
echo "tmp=[$(ls -A /tmp | tr '\\n' ' ')]" >&2
echo "sleepers=$(cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$')" >&2
echo "cats=$(grep -h '^cat$' /proc/[0-9]*/comm 2>/dev/null | wc -l)" >&2
{extra}
touch /tmp/left-by-$$
(setsid sleep 4242 &)
exec cat
"""


def config(tmp_path, names):
    docs = []
    for name in names:
        docs.append("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                    f"metadata:\n  name: {name}\nspec:\n  image: {name}\n  binaryExecutor:\n"
                    f"    path: {name}\n    tags: [v1]\n")
    cfg = tmp_path / "fc.yaml"
    cfg.write_text("---\n".join(docs))
    return cfg


def serve(start_server, tmp_path, *flags, names=("fn",), extra=""):
    functions = tmp_path / "functions"
    functions.mkdir(exist_ok=True)
    for name in names:
        fn = functions / name
        fn.write_text(SEES.format(extra=extra))
        fn.chmod(0o755)
    cfg = config(tmp_path, names)
    return start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(functions),
        "--disable-runtimes=pod", "--sandbox", "auto", "--prespawn", "0", "--verbosity", "3",
        *flags])


def seen(resp):
    log = resp.log.decode()
    out = {}
    for line in log.splitlines():
        key, _, value = line.partition("=")
        out[key] = value
    assert "ns" in out, log
    return out


def call(srv, image="fn:v1"):
    rl = simple_rl("x")
    resp = srv.evaluate(rl, image=image)
    assert resp.resource_list == rl
    return seen(resp)


def hosts(srv):
    found = []
    for spawner in [the_spawner(srv)]:
        found += [int(p) for p in open(f"/proc/{spawner}/task/{spawner}/children").read().split()
                  if comm(int(p)) == HOST]
    return found


def wait_reset(host):
    """Until host's reset after a call is done, seen from outside (we are
    root here, so its /proc/PID/root opens although it is not dumpable):
    its /tmp holds none of what the call left. A spawn waits 5 ms for its
    host's reset, then makes another host: the tests that check the next
    call runs on the same host wait here first."""
    def clean():
        left = os.listdir(f"/proc/{host}/root/tmp")
        return not any(n.startswith(("left-by", "d", "link-to")) for n in left)
    assert wait_for(clean)
    time.sleep(0.1)   # its answer, after /tmp and the IPC objects


def test_the_next_call_sees_none_of_the_last_ones_files_or_processes(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "--sandbox-keep")
    first = call(srv)
    assert "left-by" not in first["tmp"] and first["sleepers"] == "0", first
    [host] = hosts(srv)
    wait_reset(host)
    second = call(srv)
    assert hosts(srv) == [host]
    assert second["ns"] == first["ns"], "the second call should run in the first one's host"
    assert first["pid"] != "1" and second["pid"] != "1"   # the host is PID 1
    assert second["tmp"] == first["tmp"], second   # the first's file is gone
    assert second["sleepers"] == "0", second  # and so is its setsid'd sleeper
    from test_observability import curl
    code, text = curl(srv.port, "/metrics")
    assert "\nkrm_sandbox_kept_hosts 1\n" in text, text
    assert "\nkrm_sandbox_kept_hosts_max " in text, text


def test_without_keep_each_call_has_its_namespace(start_server, tmp_path):
    """--sandbox-keep=false: no host, each call PID 1 of a namespace of its own."""
    srv = serve(start_server, tmp_path, "--sandbox-keep=false")
    assert call(srv)["pid"] == call(srv)["pid"] == "1"
    assert hosts(srv) == []


def test_keep_is_the_default(start_server, tmp_path):
    """Without the flag the sandbox is kept: the calls run on one host."""
    srv = serve(start_server, tmp_path)
    first = call(srv)
    [host] = hosts(srv)
    wait_reset(host)
    second = call(srv)
    assert first["pid"] != "1" and second["ns"] == first["ns"], (first, second)
    assert hosts(srv) == [host]
    assert "no effect" not in srv.stderr()


def test_a_prestarted_process_has_a_host_of_its_own(start_server, tmp_path):
    """With --prespawn 1 the process started for the next call waits (in
    `cat`) in a host of its own: no call sees it, and two hosts take turns."""
    srv = serve(start_server, tmp_path, "--sandbox-keep", "--prespawn", "1")
    got = [call(srv) for _ in range(4)]
    assert [g["cats"] for g in got] == ["0"] * 4, got
    assert all(g["pid"] != "1" and "left-by" not in g["tmp"] for g in got), got
    assert wait_for(lambda: len(hosts(srv)) == 2), hosts(srv)


def sched_slice(pid):
    """se.slice of /proc/PID/sched in ns (a kernel with EEVDF and scheduler
    debugging), or the test skipped."""
    try:
        lines = open(f"/proc/{pid}/sched").read().splitlines()
    except OSError as e:
        pytest.skip(f"/proc/{pid}/sched: {e}")
    for line in lines:
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    pytest.skip("no se.slice in /proc/PID/sched here")


def test_only_the_spawner_runs_with_the_short_slice(start_server, tmp_path):
    """The spawner runs with the 0.1 ms slice (a request wakes it at once,
    bench/README.md "Tenth pass"); its hosts and the functions set the
    default back: a host's reset or a function must not preempt others."""
    default = sched_slice("self")
    srv = serve(start_server, tmp_path, "--sandbox-keep", "--prespawn", "1",
                extra='echo "slice=$(sed -n "s/^se.slice *: *//p" /proc/self/sched)" >&2')
    release = tuple(int(n) for n in re.findall(r"\d+", os.uname().release)[:2])
    if release < (6, 12):
        pytest.skip("a slice of one's own needs Linux 6.12")
    assert sched_slice(the_spawner(srv)) == 100_000
    got = [call(srv) for _ in range(3)]
    assert [g["slice"] for g in got] == [str(default)] * 3, got
    assert wait_for(lambda: len(hosts(srv)) == 2), hosts(srv)
    assert [sched_slice(h) for h in hosts(srv)] == [default] * 2


def test_a_killed_host_is_replaced(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "--sandbox-keep")
    assert call(srv)["pid"] != "1"
    [host] = hosts(srv)
    os.kill(host, signal.SIGKILL)
    assert wait_for(lambda: host not in hosts(srv))
    second = call(srv)
    assert second["pid"] != "1"   # on a host again
    assert "left-by" not in second["tmp"], second
    [again] = hosts(srv)
    assert again != host
    # its death is seen, or (killed during its reset after the first call)
    # its reset is not answered
    assert (f"host {host} exited unasked" in srv.stderr() or
            f"host {host} ended: it answered its reset wrongly" in srv.stderr()), srv.stderr()


def test_two_functions_never_share_a_host(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "--sandbox-keep", names=("fn", "fn2"))
    a, b = call(srv, "fn:v1"), call(srv, "fn2:v1")
    assert a["ns"] != b["ns"]
    assert call(srv, "fn:v1")["ns"] == a["ns"]
    assert call(srv, "fn2:v1")["ns"] == b["ns"]
    assert len(hosts(srv)) == 2, srv.stderr()


def test_calls_in_flight_at_once_get_a_host_each(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra="sleep 1")
    got = []
    threads = [threading.Thread(target=lambda: got.append(call(srv))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2
    assert got[0]["ns"] != got[1]["ns"]
    assert len(hosts(srv)) == 2


def test_idle_hosts_are_ended(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "--sandbox-keep", "--prespawn-idle", "1s")
    call(srv)
    [host] = hosts(srv)
    assert wait_for(lambda: process_gone(host, srv.pid), timeout=5)
    assert "left-by" not in call(srv)["tmp"]


def kept_hosts_metric(srv):
    from test_observability import curl, series
    code, text = curl(srv.port, "/metrics")
    assert code == 200, text
    return series(text, "krm_sandbox_kept_hosts")


def test_the_hosts_metric_counts_a_host_ended_between_calls(start_server, tmp_path):
    """krm_sandbox_kept_hosts drops when a host ends with no call running,
    idle or killed, without another call: the spawner tells serve unasked
    (it was the count as of the spawner's last answer, 1 until a call)."""
    srv = serve(start_server, tmp_path, "--sandbox-keep", "--prespawn-idle", "1s")
    call(srv)
    [host] = hosts(srv)
    assert kept_hosts_metric(srv) == 1
    assert wait_for(lambda: process_gone(host, srv.pid), timeout=5)
    assert wait_for(lambda: kept_hosts_metric(srv) == 0, timeout=2), "ended idle, still counted"
    call(srv)
    [again] = hosts(srv)
    assert again != host
    assert kept_hosts_metric(srv) == 1
    os.kill(again, signal.SIGKILL)
    assert wait_for(lambda: kept_hosts_metric(srv) == 0, timeout=2), "killed, still counted"


def sleeping_functions(srv):
    """The processes running `sleep 30` (the function's) in srv's hosts' PID
    namespaces, by pid: not those of another test running beside this one
    (test_sandbox's process limit starts 400)."""
    spaces = set()
    for host in hosts(srv):
        try:
            spaces.add(os.readlink(f"/proc/{host}/ns/pid"))
        except OSError:
            pass
    found = []
    for p in os.listdir("/proc"):
        try:
            if (p.isdigit() and os.readlink(f"/proc/{p}/ns/pid") in spaces and
                    open(f"/proc/{p}/cmdline").read() == "sleep\x0030\x00"):
                found.append(int(p))
        except OSError:
            pass
    return found


def test_nothing_is_left_after_sigterm(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "--sandbox-keep", "--shutdown-grace", "1s",
                extra="sleep 30")
    rl = simple_rl("x")
    pending = threading.Thread(target=lambda: srv.evaluate_error(rl, image="fn:v1"))
    pending.start()
    assert wait_for(lambda: sleeping_functions(srv))
    left = hosts(srv) + sleeping_functions(srv)
    assert len(left) == 2, left
    srv.terminate()
    assert srv.wait() is not None
    pending.join()
    for pid in left:
        assert wait_for(lambda: process_gone(pid, srv.pid), timeout=5), pid


def test_a_host_that_cannot_be_made_gives_fresh_sandboxes(start_server, tmp_path):
    """pidfd_open refused (EPERM, by a seccomp filter in front of serve, as
    an old container profile would): no host can be watched, so none is
    kept, the failure is said once, and every call runs in a fresh sandbox
    of its own (its PID namespace differs each time), answered as ever."""
    from test_sandbox_spawner import NO_CLOSE_RANGE
    wrapper = tmp_path / "no_pidfd_open.py"
    wrapper.write_text(NO_CLOSE_RANGE.replace("436", "434").replace("close_range", "pidfd_open"))
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "fn").write_text(SEES.format(extra=""))
    (functions / "fn").chmod(0o755)
    cfg = config(tmp_path, ["fn"])
    srv = start_server([], binary=CLIENT_BIN, wrapper=["/usr/bin/python3", str(wrapper)], argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions",
        str(functions), "--disable-runtimes=pod", "--sandbox", "auto", "--prespawn", "0",
        "--sandbox-keep"])
    assert [call(srv)["pid"] for _ in range(3)] == ["1"] * 3   # each its own namespace
    assert hosts(srv) == []
    assert srv.stderr().count("cannot make a host") == 1, srv.stderr()
    assert "pidfd_open: Operation not permitted" in srv.stderr(), srv.stderr()


def test_the_reset_empties_a_deep_tree_and_follows_no_link(start_server, tmp_path):
    """The reset walks /tmp without recursion or paths: 1,000 nested
    directories go, and so do links to a directory functions may write
    (--sandbox-write, bound into /tmp) without what they point to being
    touched; that directory, a mount of ours, keeps its files."""
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "precious").write_text("x")
    extra = (f"if [ ! -e {kept}/made-by-call ]; then touch {kept}/made-by-call; "
             "( cd /tmp && i=0; while [ $i -lt 1000 ]; do mkdir d && cd d || exit 1; "
             "i=$((i+1)); done; touch deep-file ); "
             f"ln -s {kept} /tmp/link-to-kept; ln -s / /tmp/link-to-root; fi; "
             "echo \"made=$(ls -A /tmp | tr '\\n' ' ')\" >&2; "
             "echo \"deep=$(find /tmp/d -type d 2>/dev/null | wc -l)\" >&2")
    srv = serve(start_server, tmp_path, "--sandbox-keep", "--sandbox-write", str(kept), extra=extra)
    first = call(srv)
    assert first["deep"] == "1000" and "link-to-kept" in first["made"], first
    [host] = hosts(srv)
    wait_reset(host)
    second = call(srv)
    assert second["deep"] == "0", second
    assert hosts(srv) == [host], srv.stderr()   # its reset succeeded
    assert second["tmp"] == first["tmp"], (first, second)   # no d, no links
    assert (kept / "precious").read_text() == "x"
    assert (kept / "made-by-call").exists()


def test_the_next_call_sees_none_of_the_last_ones_ipc_objects(start_server, tmp_path):
    """System V objects one call made (a message queue, a semaphore set,
    shared memory) are gone for the next: each reset gives the host a new
    IPC namespace. (POSIX message queues go with it too, but a sandboxed
    function cannot make one: Landlock refuses the open of the mqueue
    filesystem's file, EACCES.)"""
    count = ('$(tail -q -n +2 /proc/sysvipc/msg /proc/sysvipc/sem /proc/sysvipc/shm | wc -l)')
    extra = (f'echo "sysv={count}" >&2; '
             "ipcmk -Q >/dev/null && ipcmk -S 1 >/dev/null && ipcmk -M 4096 >/dev/null; "
             f'echo "made={count}" >&2')
    srv = serve(start_server, tmp_path, "--sandbox-keep", extra=extra)
    first = call(srv)
    assert first["sysv"] == "0" and first["made"] == "3", first
    [host] = hosts(srv)
    wait_reset(host)
    second = call(srv)
    assert hosts(srv) == [host]
    assert second["sysv"] == "0" and second["made"] == "3", second


def test_keep_with_the_sandbox_off_is_said_to_do_nothing(start_server, tmp_path):
    srv = serve(start_server, tmp_path, "--sandbox-keep", "--sandbox", "off")
    assert wait_for(lambda: "--sandbox-keep: no effect with --sandbox off" in srv.stderr())
    assert spawners(srv) == []


def test_a_kept_host_is_not_called_a_functions_leftover_at_sigterm(start_server, tmp_path):
    """At serve's stop the spawner's hosts end with it: none is reported as
    a process a function left behind (the orphan killer's line and metric)."""
    srv = serve(start_server, tmp_path, "--sandbox-keep")
    call(srv)
    left = hosts(srv)
    assert len(left) == 1, left
    srv.terminate()
    assert srv.wait() is not None
    for pid in left:
        assert wait_for(lambda: process_gone(pid, srv.pid), timeout=5), pid
    assert "left behind by a function" not in srv.stderr()


@pytest.mark.parametrize("asked", [True, False], ids=["asked", "default"])
def test_keep_without_namespaces_is_said_to_do_nothing(start_server, tmp_path, asked):
    """Where user namespaces are off (a nested limit of 0, as a container's
    seccomp profile can make it), there is no host to keep: said once at
    start (a warning to whoever gave the flag, a note otherwise), no host is
    tried, and calls are sandboxed as without the flag."""
    jail = ["unshare", "-U", "-r", "sh", "-c",
            'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "jail"]
    if subprocess.run([*jail, "unshare", "-U", "true"], capture_output=True).returncode == 0:
        pytest.skip("cannot turn user namespaces off here")
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "fn").write_text(SEES.format(extra=""))
    (functions / "fn").chmod(0o755)
    cfg = config(tmp_path, ["fn"])
    srv = start_server([], binary=CLIENT_BIN, wrapper=jail, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(functions),
        "--disable-runtimes=pod", "--sandbox", "auto", *(["--sandbox-keep"] if asked else []),
        "--prespawn", "0", "--verbosity", "3"])
    for _ in range(2):
        assert srv.evaluate(simple_rl("x"), image="fn:v1").resource_list == simple_rl("x")
    err = srv.stderr()
    said = ("--sandbox-keep: no effect without the sandbox's namespaces" if asked
            else "sandboxes are not kept per function here (no namespaces to keep)")
    assert err.count(said) == 1, err
    assert ("W" if asked else "I") == err[err.index(said) - 200:err.index(said)].splitlines()[-1][:1], err
    assert "cannot make a host" not in err and "host " not in err.split(said, 1)[1], err
    from test_observability import curl
    code, text = curl(srv.port, "/metrics")
    assert "krm_sandbox_kept_hosts" not in text, text   # no host is kept
