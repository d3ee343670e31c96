"""Helpers shared by the integration tests of wrapper-server and runner-client.

The tests drive the real binaries ($BUILD/bin/wrapper-server and
$BUILD/bin/runner-client, BUILD defaulting to "build") with Debian's grpcio
client. Protobuf modules are generated from proto/*.proto at session start
(see conftest.py), so the client always speaks the checked-in contract.
"""

import errno
import os
import shlex
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import grpc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
BUILD_DIR = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
SERVER_BIN = os.path.join(BUILD_DIR, "bin", "wrapper-server")
CLIENT_BIN = os.path.join(BUILD_DIR, "bin", "runner-client")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
FUNCTIONS = os.path.join(FIXTURES, "functions")
PACKAGES = os.path.join(FIXTURES, "packages")

EVALUATE = "/evaluator.FunctionEvaluator/EvaluateFunction"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
HEALTH_LIST = "/grpc.health.v1.Health/List"
HEALTH_WATCH = "/grpc.health.v1.Health/Watch"

DEFAULT_MAX = 6291456

# Hooks for scripts/valgrind.sh (both unset in normal runs):
# KRM_SERVER_WRAPPER: a command prefix (shell words, e.g. "valgrind --tool=
# memcheck ...") put in front of $BUILD/bin/wrapper-server and
# $BUILD/bin/runner-client wherever the tests start them (Server, run_cli).
# KRM_TEST_SLOW: a factor for the time those binaries get to become ready
# (Server.wait_ready), to exit (run_cli) and to stop (Server.stop).
SERVER_WRAPPER = shlex.split(os.environ.get("KRM_SERVER_WRAPPER", ""))
SLOW = float(os.environ.get("KRM_TEST_SLOW") or 1)


class PeakUsage:
    """A process's own CPU seconds and peak RSS, measured by GNU time.

    wait4's ru_maxrss cannot be used from here: a child forked (or vforked)
    by this process starts with this process's pages in its count and the
    kernel keeps that peak across exec, so after a few hundred tests every
    child "peaks" at pytest's own size. time's child is forked from time,
    a small process. Use: argv = usage.argv(argv); run it; usage.read()."""

    def __init__(self, path):
        self.path = str(path)

    def argv(self, argv):
        return ["/usr/bin/time", "-f", "%U %S %M", "-o", self.path, *argv]

    def read(self):
        """(CPU seconds, peak RSS in MiB) of the command time ran."""
        with open(self.path) as f:
            last = f.read().strip().splitlines()[-1]   # after any "Command exited with..." line
        user, system, kib = last.split()
        return float(user) + float(system), int(kib) / 1024


def wrapped(argv):
    """argv with KRM_SERVER_WRAPPER put before our own binary in it (the
    first element that is $BUILD/bin/wrapper-server or runner-client, or a
    symlink to one); unchanged when the hook is unset."""
    argv = list(argv)
    if not SERVER_WRAPPER:
        return argv
    ours = {os.path.realpath(SERVER_BIN), os.path.realpath(CLIENT_BIN)}
    for i, a in enumerate(argv):
        if isinstance(a, (str, bytes, os.PathLike)) and os.path.realpath(a) in ours:
            return argv[:i] + SERVER_WRAPPER + argv[i:]
    return argv

# Every channel gets its own connection (no sharing of subchannels between
# channels of this process) and no client-side message size limits, so what
# a test observes is the server's behaviour.
CHANNEL_OPTIONS = [
    ("grpc.use_local_subchannel_pool", 1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
]


def fn(name):
    """Absolute path of a fixture function script."""
    return os.path.join(FUNCTIONS, name)


def serve_example_fn(start_server, tmp_path, tags):
    """runner-client serve (exec runtime only) with example.com/fn at these
    binaryExecutor tags mapped to a search-replace that changes nothing."""
    fns = tmp_path / "functions"
    fns.mkdir()
    (fns / "fn").write_text(f"#!/bin/sh\nexec sh {fn('search-replace.sh')} a a\n")
    (fns / "fn").chmod(0o755)
    cfg = tmp_path / "functions.yaml"
    cfg.write_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\nmetadata:\n  name: fn\n"
                   "spec:\n  image: fn\n  prefixes: [\"example.com\"]\n"
                   f"  binaryExecutor:\n    tags: [{', '.join(tags)}]\n    path: fn\n")
    return start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(fns),
        "--disable-runtimes=pod"])


def pkg(*parts):
    """Absolute path of a fixture package file or directory."""
    return os.path.join(PACKAGES, *parts)


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def resource_list(*docs, function_config=None):
    """Wraps YAML documents (text) into a ResourceList as `items`.

    Each document is indented below a "- " sequence entry; the output is
    deterministic so tests can compare a function's output byte for byte.
    """
    lines = ["apiVersion: config.kubernetes.io/v1", "kind: ResourceList", "items:"]
    for doc in docs:
        body = [l for l in doc.splitlines() if l.strip() and not l.startswith("#")]
        for i, line in enumerate(body):
            lines.append(("- " if i == 0 else "  ") + line)
    if function_config is not None:
        lines.append("functionConfig:")
        lines.extend("  " + l for l in function_config.splitlines() if l.strip())
    return ("\n".join(lines) + "\n").encode()


def simple_rl(name="example", namespace="default", extra=""):
    """A small valid ResourceList holding one ConfigMap named `name`."""
    doc = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        f"  name: {name}\n  namespace: {namespace}\ndata:\n  key: value\n{extra}"
    )
    return resource_list(doc)


def go_quote(s):
    """Go's %q / strconv.Quote for the strings the tests use: escapes
    backslash, double quote and control characters; printable Unicode is kept."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\v":
            out.append("\\v")
        elif o < 0x20 or o == 0x7F:
            out.append("\\x%02x" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def parse_msg(image, stderr, err):
    return f"failed to parse the output of function {go_quote(image)} with stderr '{stderr}': {err}"


def results_msg(image, results_text, stderr):
    return (
        f"failed to evaluate function {go_quote(image)} with structured results: "
        f"{results_text} and stderr: {stderr}"
    )


EMPTY_OUTPUT = "failed to parse input bytes: expected exactly one object, got 0"


def free_port():
    """A TCP port currently free on the dual-stack wildcard address."""
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind(("::", 0))
    except OSError:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("0.0.0.0", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tcp_state(port, host="127.0.0.1", timeout=0.5):
    """'open' if something accepts on host:port, 'refused' if the connection
    is refused, else 'other:<errno>'."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
        return "open"
    except ConnectionRefusedError:
        return "refused"
    except OSError as e:
        return "other:%s" % errno.errorcode.get(e.errno, e.errno)
    finally:
        s.close()


def ipv6_loopback_available():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


# ---------------------------------------------------------------- /proc helpers

def proc_stat(pid):
    """(state, ppid) of a process, or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    rest = data[data.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def children_of(pid):
    """Direct children of pid (all threads), from /proc/<pid>/task/*/children."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except FileNotFoundError:
            pass
    return out


def prespawn_waiting(port):
    """krm_prespawn_waiting from the server's /metrics: function processes
    started ahead and waiting for a call (--prespawn); 0 when absent."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("krm_prespawn_waiting "):
            return int(float(line.split()[1]))
    return 0


def call_children(srv):
    """The server's children, unless they are no more than the pre-started
    functions waiting for a call (--prespawn): those belong to no call."""
    kids = children_of(srv.pid)
    if kids and len(kids) <= prespawn_waiting(srv.port):
        return []
    return kids


def process_gone(pid, server_pid):
    """True when pid no longer runs. A zombie counts as gone only when its
    parent is not the server: zombies the server is responsible for must be
    reaped by it (the container's init here does not reap orphans)."""
    st = proc_stat(pid)
    if st is None:
        return True
    state, ppid = st
    return state == "Z" and ppid != server_pid


def wait_processes_gone(pids, server_pid, timeout=3.0):
    """Waits until every pid is gone; returns the list of survivors
    (pid, state, ppid)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if not process_gone(p, server_pid)]
        if not alive or time.monotonic() > deadline:
            return [(p,) + (proc_stat(p) or ("gone", 0)) for p in alive]
        time.sleep(0.05)


def wait_pidfile(path, count=2, timeout=5.0):
    """Reads `count` pids (one per line) from a file a function writes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        lines = text.split("\n")[:-1]  # complete lines only
        if len(lines) >= count:
            return [int(l) for l in lines[:count]]
        time.sleep(0.02)
    raise AssertionError(f"function did not write {count} pids to {path} within {timeout}s")


# ---------------------------------------------------------------- the server

class Server:
    """A running wrapper-server (possibly wrapped, e.g. by unshare)."""

    def __init__(self, pb, argv, port, stderr_path, stdout_path, env=None, cwd=None):
        self.pb = pb
        self.argv = argv
        self.port = port
        self.stderr_path = stderr_path
        self.stdout_path = stdout_path
        self._err = open(stderr_path, "wb")
        self._out = open(stdout_path, "wb")
        self.proc = subprocess.Popen(
            wrapped(argv), stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err, env=env,
            cwd=cwd, start_new_session=True,
        )
        # The process that receives SIGTERM (the server itself; differs from
        # proc.pid when the server runs under a wrapper such as unshare).
        self.server_pid = self.proc.pid
        self.channels = []
        self.returncode = None
        self.checked = False

    @property
    def pid(self):
        return self.server_pid

    def stderr(self):
        return read(self.stderr_path).decode("utf-8", "replace")

    def assert_logged(self, lines, timeout=10.0):
        """Waits until every one of `lines` is in stderr; asserts they all are
        and that no state move was refused (state_step's error)."""
        deadline = time.monotonic() + timeout
        while any(w not in self.stderr() for w in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        log = self.stderr()
        for w in lines:
            assert w in log, f"{w!r} not logged:\n{log[-3000:]}"
        assert "refused after" not in log

    def describe(self):
        return f"server {self.argv!r} on port {self.port}; stderr:\n{self.stderr()[-4000:]}"

    def channel(self, host="localhost", options=None):
        target = f"{host}:{self.port}"
        ch = grpc.insecure_channel(target, options=(options if options is not None else CHANNEL_OPTIONS))
        self.channels.append(ch)
        return ch

    def evaluate_callable(self, channel=None):
        ch = channel or self.channel()
        return ch.unary_unary(
            EVALUATE,
            request_serializer=self.pb.evaluator.EvaluateFunctionRequest.SerializeToString,
            response_deserializer=self.pb.evaluator.EvaluateFunctionResponse.FromString,
        )

    def evaluate(self, resource_list=b"", image="", timeout=20, channel=None, tag=None):
        fields = {"image": image}
        if tag is not None:
            fields["Tag"] = tag
        if resource_list is not None:  # None: leave the field unset (a nil ResourceList)
            fields["resource_list"] = resource_list
        req = self.pb.evaluator.EvaluateFunctionRequest(**fields)
        return self.evaluate_callable(channel)(req, timeout=timeout)

    def evaluate_error(self, resource_list=b"", image="", timeout=20, channel=None, tag=None):
        """Calls EvaluateFunction expecting a failure; returns the RpcError."""
        try:
            resp = self.evaluate(resource_list, image, timeout, channel, tag)
        except grpc.RpcError as e:
            return e
        raise AssertionError(
            f"expected an error, got OK with resource_list={resp.resource_list[:300]!r} log={resp.log[:300]!r}"
        )

    def check(self, service="", timeout=5, channel=None):
        ch = channel or self.channel()
        call = ch.unary_unary(
            HEALTH_CHECK,
            request_serializer=self.pb.health.HealthCheckRequest.SerializeToString,
            response_deserializer=self.pb.health.HealthCheckResponse.FromString,
        )
        return call(self.pb.health.HealthCheckRequest(service=service), timeout=timeout)

    def wait_ready(self, timeout=5.0, status=None):
        """Polls until Health/Check answers SERVING, or `status` when given
        (≤ timeout × KRM_TEST_SLOW seconds)."""
        want = self.pb.health.HealthCheckResponse.SERVING if status is None else status
        timeout *= SLOW
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited early with {self.proc.returncode}; {self.describe()}")
            if tcp_state(self.port) != "open":
                time.sleep(0.01)
                continue
            ch = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=CHANNEL_OPTIONS)
            try:
                resp = self.check("", timeout=1, channel=ch)
                if resp.status == want:
                    return
                last = f"status {resp.status}"
            except grpc.RpcError as e:
                last = f"{e.code()}: {e.details()}"
            finally:
                ch.close()
            time.sleep(0.02)
        raise AssertionError(f"server not ready within {timeout}s (last: {last}); {self.describe()}")

    def terminate(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            try:
                os.kill(self.server_pid, sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout=10.0):
        """Waits for the (wrapper) process to exit; returns the exit code or
        None when it is still running after `timeout`."""
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.returncode

    def stop(self, timeout=10.0):
        """SIGTERM, then wait; kills it when it does not exit in time.
        Returns the exit code (None when it had to be killed).

        The test's channels are closed first: a draining server may wait a
        little for idle connections to go away (tests of shutdown with open
        connections send SIGTERM themselves)."""
        for ch in self.channels:
            ch.close()
        self.channels.clear()
        self.terminate()
        rc = self.wait(timeout * SLOW)
        if rc is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._err.close()
        self._out.close()
        return rc


SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")


def sanitizer_reports(text):
    """Sanitizer report lines found in a process's stderr (ASan build)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [l for l in text.splitlines() if any(m in l for m in SANITIZER_MARKERS)]


def run_cli(args, timeout=10, input=None, env=None, cwd=None):
    """Runs a binary to completion; returns CompletedProcess with bytes.
    Fails the test when the binary printed a sanitizer report."""
    res = subprocess.run(
        wrapped(args), input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        timeout=timeout * SLOW, env=env, cwd=cwd,
    )
    reports = sanitizer_reports(res.stderr)
    assert not reports, f"{args!r} printed sanitizer reports:\n" + res.stderr.decode("utf-8", "replace")[-4000:]
    return res


def runner_client(*args, input=None, timeout=30):
    """runner-client run to completion, its output also as text (.out, .err)."""
    res = run_cli([CLIENT_BIN, *args], input=input, timeout=timeout)
    res.out = res.stdout.decode("utf-8", "replace")
    res.err = res.stderr.decode("utf-8", "replace")
    return res


def explain(res):
    """A finished command's exit status and output, for assertion messages."""
    return f"exit {res.returncode}\nstdout: {res.out[:3000]}\nstderr: {res.err[:3000]}"


def serving(launcher, *argv):
    """A wrapper-server started by `launcher` (conftest's module_launcher)
    running argv, with .addr to give runner-client."""
    srv = launcher.start(list(argv))
    srv.addr = f"localhost:{srv.port}"
    return srv


# ---------------------------------------------------------------- registries

def start_registry(work, extra_config=""):
    """Debian's docker-registry on a loopback port; returns (addr, proc)."""
    port = free_port()
    cfg = work / "config.yml"
    cfg.write_text(
        "version: 0.1\n"
        "log:\n  level: error\n  accesslog:\n    disabled: true\n"
        f"storage:\n  filesystem:\n    rootdirectory: {work / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n" + extra_config
    )
    log = open(work / "registry.log", "wb")
    proc = subprocess.Popen(["docker-registry", "serve", str(cfg)], stdout=log, stderr=log)
    log.close()
    addr = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 15
    while True:
        try:
            with urllib.request.urlopen(f"http://{addr}/v2/", timeout=1):
                break
        except urllib.error.HTTPError:
            break            # 401 from an authenticated registry: it is up
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _fail("docker-registry did not start: " + (work / "registry.log").read_text(), pytrace=False)
        time.sleep(0.1)
    return addr, proc


def _fail(text, pytrace=False):
    import pytest
    pytest.fail(text, pytrace=pytrace)
