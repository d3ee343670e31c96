"""The server as PID 1 of a PID namespace (as in a function pod): orphaned
grandchildren are reparented to it and must be reaped; SIGTERM still drains."""

import os
import signal
import subprocess
import time

import pytest

from krmtest import children_of, proc_stat, simple_rl


def unshare_works():
    try:
        r = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def zombie_children(pid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = proc_stat(int(name))
        if st and st[1] == pid and st[0] == "Z":
            out.append(int(name))
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def find_server_pid(unshare_pid, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = children_of(unshare_pid)
        if kids:
            return kids[0]
        time.sleep(0.01)
    raise AssertionError("unshare has no child")


def start_pid1(start_server, entry, options):
    """A wrapper-server that is PID 1 of its own PID namespace, with its own
    /proc (skips the test where that cannot be made)."""
    if os.geteuid() != 0:
        pytest.skip("needs root for unshare --pid")
    if not unshare_works():
        pytest.skip("unshare --pid is not permitted here")
    srv = start_server(entry, options=options, ready=False,
                       wrapper=["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"])
    srv.server_pid = find_server_pid(srv.proc.pid)
    srv.wait_ready()
    return srv


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for unshare --pid")
def test_pid1_reaps_orphans_and_drains(start_server):
    if not unshare_works():
        pytest.skip("unshare --pid is not permitted here")
    srv = start_server(
        ["sh", "-c", "(sleep 0.3 &) ; sleep 0.4; cat"],
        wrapper=["unshare", "--pid", "--fork", "--kill-child"],
        ready=False,
    )
    srv.server_pid = find_server_pid(srv.proc.pid)
    srv.wait_ready()
    with open(f"/proc/{srv.server_pid}/status") as f:
        nspid = [l for l in f if l.startswith("NSpid:")]
    assert nspid and nspid[0].split()[-1] == "1", f"server is not PID 1 in its namespace: {nspid}"

    call = srv.evaluate_callable()
    req = srv.pb.evaluator.EvaluateFunctionRequest
    inputs = [simple_rl(f"orphans-{i}") for i in range(6)]
    futs = [call.future(req(resource_list=rl), timeout=20) for rl in inputs]
    # While the functions run, their orphaned `sleep 0.3` belong to the server.
    orphans = []
    deadline = time.monotonic() + 1.5
    while not orphans and time.monotonic() < deadline:
        orphans = [c for c in children_of(srv.server_pid) if comm(c) == "sleep"]
        time.sleep(0.01)
    for rl, f in zip(inputs, futs):
        assert f.result().resource_list == rl
    assert orphans, "no orphan was reparented to the server: is it really PID 1?"

    # The orphans have exited by now; the server must have reaped them.
    time.sleep(1.0)
    deadline = time.monotonic() + 1.0
    while zombie_children(srv.server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    zombies = zombie_children(srv.server_pid)
    assert not zombies, f"zombies left under the server (host pid {srv.server_pid}): {zombies}"

    # SIGTERM to PID 1 still drains: a call in flight completes, then exit 0.
    rl = simple_rl("last-call")
    fut = call.future(req(resource_list=rl), timeout=20)
    time.sleep(0.2)
    os.kill(srv.server_pid, signal.SIGTERM)
    assert fut.result().resource_list == rl
    rc = srv.wait(timeout=6)
    assert rc == 0, f"unshare/server exit code {rc}; {srv.describe()}"
