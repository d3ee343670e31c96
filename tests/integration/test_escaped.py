"""Processes a function leaves outside its process group (issue 13): a
setsid'd sleeper, a double-forked daemon, a setsid'd shell with children of
its own, and one left by a call the deadline cancels. The call's kill goes to
the function's process group and misses them; the server, a child subreaper
(or PID 1), gets them as children and kills them when the call ends. A call
still running keeps what it left until it ends, whatever other calls do.

Each case runs against a wrapper-server that is not PID 1 and one that is
PID 1 of its own PID namespace (unshare, with its own /proc). The function is
tests/fixtures/functions/escape.sh; every process it leaves has a marker in
its argv, and the test looks for it in /proc."""

import os
import random
import signal
import time
import urllib.request

import grpc
import pytest

from krmtest import call_children, fn, proc_stat, simple_rl
from test_faults import baseline_fds, close_channels, fd_table, own_fds, wait_until
from test_pid1 import start_pid1

IMAGE = "example.com/escape:1"
MODE_DIGIT = {"setsid": "1", "daemon": "2", "tree": "3", "hang": "4", "hold-5": "5", "hold-6": "6"}


def marked(marker):
    """Pids of live (not zombie) processes with `marker` in their argv."""
    needle = marker.encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        st = proc_stat(int(name))
        if needle in argv and st is not None and st[0] != "Z":
            out.append(int(name))
    return out


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return 0.0


class Escape:
    """A server running escape.sh, and what the test needs to judge it."""

    def __init__(self, srv, base, work):
        self.srv = srv
        self.base = base        # a mode's processes carry base + digit (the server: base)
        self.work = work

    def marker(self, mode):
        return self.base + MODE_DIGIT[mode]

    def leftovers(self, mode, timeout=5.0):
        """Marked processes of `mode` still running after `timeout` (or []
        as soon as there are none)."""
        wait_until(lambda: not marked(self.marker(mode)), timeout)
        return marked(self.marker(mode))

    def one(self, mode):
        """The one running process `mode` left."""
        pids = marked(self.marker(mode))
        assert len(pids) == 1, (
            f"{mode}: want one process marked {self.marker(mode)}, found {pids}; "
            f"{self.srv.describe()}")
        return pids[0]

    def call(self, mode, **kw):
        return self.srv.evaluate(simple_rl(f"{mode}-x"), image=IMAGE, **kw)

    def assert_clean(self, base_fds):
        """It still serves, has no child left and no more fds than before."""
        rl = simple_rl("plain")
        assert self.srv.evaluate(rl, image=IMAGE, timeout=20).resource_list == rl
        close_channels(self.srv)
        assert wait_until(lambda: not call_children(self.srv), 5), (
            f"children left under the server: {call_children(self.srv)}")
        assert wait_until(lambda: own_fds(self.srv) == base_fds, 10), (
            f"fd leak: {fd_table(self.srv.pid)} (baseline {base_fds})")
        assert self.srv.proc.poll() is None, self.srv.describe()


@pytest.fixture(params=["subreaper", "pid1"])
def escape(request, start_server, tmp_path):
    base = "299.%09d" % random.randrange(10 ** 9)
    entry = [fn("escape.sh"), base, str(tmp_path)]
    opts = ["--verbosity", "3"]
    if request.param == "pid1":
        srv = start_pid1(start_server, entry, opts)
    else:
        srv = start_server(entry, options=opts)
    yield Escape(srv, base, tmp_path)
    # A failing test must not leave its sleepers behind for the next ones.
    for pid in [p for d in MODE_DIGIT.values() for p in marked(base + d)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("mode,killed", [("setsid", 1), ("daemon", 1), ("tree", 3)])
def test_escaped_processes_end_with_the_call(escape, mode, killed):
    srv = escape.srv
    base_fds = baseline_fds(srv)
    before = metric(srv.port, "krm_orphans_killed_total")
    rl = simple_rl(f"{mode}-x")
    assert escape.call(mode, timeout=20).resource_list == rl
    survivors = escape.leftovers(mode)
    assert not survivors, f"{mode}: processes outlived the call: {survivors}"
    # they were there (the function waited for them) and were killed, not lucky
    assert wait_until(lambda: metric(srv.port, "krm_orphans_killed_total") >= before + killed, 5), (
        f"krm_orphans_killed_total went from {before} to "
        f"{metric(srv.port, 'krm_orphans_killed_total')}; {srv.describe()}")
    assert "left behind by a function" in srv.stderr()
    escape.assert_clean(base_fds)


def test_deadline_cancel_takes_the_escaped_child_too(escape):
    srv = escape.srv
    base_fds = baseline_fds(srv)
    err = srv.evaluate_error(simple_rl("hang-x"), image=IMAGE, timeout=3)
    assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED, f"{err.code()}: {err.details()}"
    assert (escape.work / "hanging").exists(), "the function did not get to setsid its child"
    # SIGTERM to the group, SIGKILL 1 s later if needed, then the orphan
    survivors = escape.leftovers("hang", timeout=6)
    assert not survivors, f"the escaped child outlived the cancelled call: {survivors}"
    escape.assert_clean(base_fds)


def test_one_calls_orphan_spares_a_running_call(escape):
    """An orphan goes once every call running when it started has ended, and
    not before: call B runs and has an orphan; call A leaves one and ends;
    call D starts and leaves one. A's end kills nothing of B's or D's (and A's
    own orphan waits for B, which may own it); B's end kills B's and A's
    orphans but not D's; D's end kills D's."""
    srv = escape.srv
    base_fds = baseline_fds(srv)
    req = srv.pb.evaluator.EvaluateFunctionRequest
    call = srv.evaluate_callable()

    def hold(digit):
        fut = call.future(req(resource_list=simple_rl(f"hold-{digit}"), image=IMAGE), timeout=30)
        assert wait_until(lambda: (escape.work / f"held-{digit}").exists(), 10), (
            f"call hold-{digit} did not start; {srv.describe()}")
        pid = escape.one(f"hold-{digit}")
        # an orphan already: the server's child, its parent gone
        assert proc_stat(pid)[1] == srv.pid, proc_stat(pid)
        return fut, pid

    def release(digit, fut):
        (escape.work / f"go-{digit}").write_text("")
        resp = fut.result()
        assert resp.resource_list == simple_rl(f"hold-{digit}")
        assert b"orphan alive" in resp.log, f"hold-{digit}'s orphan died while it ran: {resp.log}"

    b, ob = hold(5)
    time.sleep(0.05)   # start times count in 10 ms ticks; a tie means "maybe owned"
    assert escape.call("setsid", timeout=20).resource_list == simple_rl("setsid-x")
    oa = escape.one("setsid")
    time.sleep(0.05)
    d, od = hold(6)
    time.sleep(0.3)    # a wrong kill would have landed by now
    assert marked(escape.marker("hold-5")) == [ob], "call A's end killed call B's orphan"
    assert marked(escape.marker("setsid")) == [oa], "A's orphan went while B, which may own it, ran"

    release(5, b)
    assert not escape.leftovers("hold-5"), "call B's orphan outlived call B"
    assert not escape.leftovers("setsid"), "call A's orphan outlived the calls that may own it"
    assert marked(escape.marker("hold-6")) == [od], "call B's end killed call D's orphan"

    release(6, d)
    assert not escape.leftovers("hold-6"), "call D's orphan outlived call D"
    escape.assert_clean(base_fds)
