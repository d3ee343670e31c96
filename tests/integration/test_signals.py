"""Signals (issue 13): a server that is not PID 1 gets each signal's default
action, so every one whose default would kill it is handled or ignored
(lib/runtime/proc_signals.h has the table): after each, wrapper-server and
runner-client serve answer a real call; SIGTERM and SIGQUIT still drain.
Functions get none of it back: default dispositions and an empty mask, even
when the server itself was started with signals ignored, and they still die
of SIGUSR1, SIGPIPE and the rest."""

import signal
import textwrap
import time

import grpc
import pytest

from krmtest import CLIENT_BIN, fn, resource_list, simple_rl, wait_pidfile

IMAGE = "ghcr.io/kptdev/krm-functions-catalog/cat-fn:v1"   # serve: by FunctionConfig

# Every signal whose default action ends a process, but for the faults
# (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP), SIGKILL and
# the draining ones (SIGTERM, SIGINT, SIGQUIT).
SURVIVED = [
    signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM,
    signal.SIGPROF, signal.SIGIO, signal.SIGPWR, signal.SIGSTKFLT, signal.SIGXCPU,
    signal.SIGXFSZ, signal.SIGPIPE,
    *range(signal.SIGRTMIN, signal.SIGRTMAX + 1),
]

CAT_FN = "cat-fn"


@pytest.fixture(params=["wrapper-server", "serve"])
def server(request, start_server, tmp_path):
    """A server of either kind whose function echoes its input (cat), for
    IMAGE; `options` go before the function (wrapper-server) or after the
    serve flags."""
    def start(options=(), wrapper=None):
        if request.param == "wrapper-server":
            return start_server(["cat"], options=options, wrapper=wrapper)
        functions = tmp_path / "functions"
        functions.mkdir(exist_ok=True)
        script = functions / CAT_FN
        script.write_text("#!/bin/sh\nexec cat\n")
        script.chmod(0o755)
        config = tmp_path / "functions.yaml"
        config.write_text(textwrap.dedent(f"""\
            apiVersion: config.porch.kpt.dev/v1alpha1
            kind: FunctionConfig
            metadata:
              name: cat
            spec:
              image: cat-fn
              binaryExecutor:
                tags: [v1]
                path: {CAT_FN}
            """))
        return start_server([], binary=CLIENT_BIN, wrapper=wrapper, argv=[
            "serve", "--port", "{port}", "--function-config", str(config),
            "--functions", str(functions), "--disable-runtimes=pod", *options])
    start.kind = request.param
    return start


def sig_name(s):
    if signal.SIGRTMIN <= s <= signal.SIGRTMAX:
        return f"SIGRTMIN+{s - signal.SIGRTMIN}"
    return signal.Signals(s).name


def test_every_terminating_signal_is_survived(server):
    srv = server()
    for s in SURVIVED:
        srv.terminate(s)
        rl = simple_rl(f"after-{sig_name(s).lower().replace('+', '-')}")
        try:
            resp = srv.evaluate(rl, image=IMAGE, timeout=20)
        except grpc.RpcError as e:
            raise AssertionError(f"after {sig_name(s)}: {e.code()} {e.details()}; {srv.describe()}")
        assert resp.resource_list == rl
        assert srv.proc.poll() is None, f"{sig_name(s)} ended the server; {srv.describe()}"
    log = srv.stderr()
    # said once at the normal level (SIGHUP reloads instead under serve)
    for s in SURVIVED:
        if s in (signal.SIGPIPE, signal.SIGPROF, signal.SIGVTALRM):
            continue   # ignored outright
        if s == signal.SIGHUP and server.kind == "serve":
            assert "SIGHUP: loaded 1 FunctionConfigs" in log
            continue
        assert f"received {sig_name(s)}:" in log, f"{sig_name(s)} not logged; {srv.describe()}"


def test_repeated_signal_is_logged_once(server):
    srv = server()
    for _ in range(5):
        srv.terminate(signal.SIGUSR1)
        time.sleep(0.02)
    rl = simple_rl("after-usr1")
    assert srv.evaluate(rl, image=IMAGE, timeout=20).resource_list == rl
    assert srv.stderr().count("received SIGUSR1") == 1, srv.describe()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGQUIT])
def test_sigterm_and_sigquit_still_drain(start_server, tmp_path, sig):
    started = str(tmp_path / "started")
    srv = start_server([fn("slow-cat.sh"), "1", started])
    for s in (signal.SIGUSR1, signal.SIGHUP, signal.SIGRTMIN):
        srv.terminate(s)
    rl = simple_rl("drained")
    call = srv.evaluate_callable(srv.channel())
    fut = call.future(srv.pb.evaluator.EvaluateFunctionRequest(resource_list=rl, image=IMAGE),
                      timeout=20)
    wait_pidfile(started, count=1)
    srv.terminate(sig)
    assert fut.result().resource_list == rl, "the call in flight did not finish"
    assert srv.wait(timeout=5) == 0, srv.describe()


# ---- what functions get ---------------------------------------------------------

# The shell's own masks, read by builtins (a child reading /proc/$$ would see
# the shell while it waits, when dash blocks every signal), then a program's.
MASK_SCRIPT = """while IFS= read -r line; do
    case "$line" in SigBlk:*|SigIgn:*) echo "$line" >&2;; esac
done < /proc/$$/status
grep -E '^Sig(Blk|Ign):' /proc/self/status >&2
exec cat"""

# The server's parent ignores some signals, as nohup or a non-interactive
# shell's `&` would: the server must not pass that on either.
IGNORING_PARENT = ["sh", "-c", 'trap "" HUP INT QUIT USR2; exec "$@"', "sh"]


def test_function_sees_default_dispositions_and_an_empty_mask(start_server):
    srv = start_server(["sh", "-c", MASK_SCRIPT], wrapper=IGNORING_PARENT)
    srv.terminate(signal.SIGUSR1)   # the server is routing signals by now
    rl = simple_rl("mask")
    resp = srv.evaluate(rl, image=IMAGE, timeout=20)
    assert resp.resource_list == rl
    lines = resp.log.decode().split("\n")
    masks = [l for l in lines if l.startswith(("SigBlk:", "SigIgn:"))]
    assert len(masks) == 4, resp.log
    # glibc's posix_spawn leaves its own two internal signals (32 and 33,
    # below SIGRTMIN; a glibc program sets them up again when it needs them)
    # ignored in the child; musl's (the static build) leaves nothing.
    libc_internal = sum(1 << (s - 1) for s in range(32, signal.SIGRTMIN))
    for line in masks:
        value = int(line.split()[1], 16)
        if line.startswith("SigIgn:"):
            value &= ~libc_internal
        assert value == 0, f"function started with {line!r}: {resp.log}"
    # and the server itself did route and ignore them
    with open(f"/proc/{srv.pid}/status") as f:
        status = {k: int(v, 16) for k, v in
                  (l.split(":\t") for l in f.read().splitlines() if l.startswith(("SigBlk", "SigIgn")))}
    assert status["SigBlk"] & (1 << (signal.SIGUSR1 - 1)), status
    assert status["SigIgn"] & (1 << (signal.SIGPROF - 1)), status


DIE_SCRIPT = """input=$(cat)
sig=$(printf '%s\\n' "$input" | sed -n 's/.*name: sig-\\([A-Z0-9]*\\).*/\\1/p' | head -n 1)
kill -s "$sig" $$
echo "survived $sig" >&2
printf '%s\\n' "$input"
"""


@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE, signal.SIGHUP,
                                 signal.SIGALRM, signal.SIGPROF, signal.SIGVTALRM])
def test_function_dies_of_a_default_signal(start_server, sig):
    srv = start_server(["sh", "-c", DIE_SCRIPT], wrapper=IGNORING_PARENT)
    name = signal.Signals(sig).name[3:]
    err = srv.evaluate_error(resource_list(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sig-{name}\n"), image=IMAGE, timeout=20)
    assert err.code() == grpc.StatusCode.INTERNAL, f"{err.code()}: {err.details()}"
    assert "survived" not in err.details(), f"the function survived SIG{name}: {err.details()}"
    metrics = srv_metrics(srv)
    assert f'krm_function_exits_total{{code="",signal="{int(sig)}"}} 1' in metrics, metrics


def srv_metrics(srv):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/metrics", timeout=5) as r:
        return r.read().decode()
