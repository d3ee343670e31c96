"""Issue 17: mistakes that used to pass silently, and the client bugs.

- the demo uses its own server: a free port by default, DEMO_PORT honoured and
  refused clearly when another process holds it;
- every client command has a deadline: a peer that accepts and never answers
  ends in DEADLINE_EXCEEDED (exit 1), a peer that never completes the TCP
  handshake in a connect timeout;
- image references are checked the same way by every command;
- eval on a directory without objects is "no resources found";
- serve with nothing to run warns at load; NOT_FOUND lists what is configured;
- a call to something that is not a gRPC server says so, and only then.

Every peer here is a real process or thread on a real socket."""

import os
import re
import socket
import subprocess
import threading
import time

import grpc
import pytest

import krmtest
from krmtest import BUILD_DIR, CLIENT_BIN, ROOT, pkg, run_cli, simple_rl

BAD_IMAGE_MESSAGE = ('invalid image reference "Bad Image!": repository name "Bad Image!" '
                     'must be lowercase')


def client(*args, timeout=20, input=None):
    res = run_cli([CLIENT_BIN, *args], timeout=timeout, input=input)
    res.out = res.stdout.decode("utf-8", "replace")
    res.err = res.stderr.decode("utf-8", "replace")
    return res


class Peer:
    """A TCP listener on 127.0.0.1 that treats every connection with
    `handle(conn)` in a thread of its own; the connections stay open until
    close()."""

    def __init__(self, handle, backlog=16, accept=True):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.addr = f"127.0.0.1:{self.port}"
        self.handle = handle
        self.conns = []
        self.accepted = 0
        self.stopping = False
        if accept:
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(conn)
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def close(self):
        self.stopping = True
        for c in self.conns:
            c.close()
        self.sock.close()


def silent(conn):
    """Accepts and never says a word (reads what comes, so nothing blocks)."""
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def drain(conn, quiet=0.3):
    """Reads until the client has been quiet for `quiet` seconds: it has sent
    its preface and request and waits for an answer. (Not earlier: a send
    that fails inside gc_call ends the call before gc_unary runs its loop,
    which then waits forever, a lib/grpc bug reported to its owners.)"""
    conn.settimeout(quiet)
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def http1(conn):
    """An HTTP/1.1 server's answer to bytes it cannot parse (Go's net/http,
    nginx and busybox httpd answer the HTTP/2 preface this way), then close."""
    drain(conn)
    try:
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     b"Connection: close\r\n\r\n400 Bad Request")
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def hang_up(conn):
    """Closes without a byte, before any HTTP/2 SETTINGS."""
    drain(conn)
    conn.close()


@pytest.fixture
def peer():
    made = []

    def make(handle, **kw):
        p = Peer(handle, **kw)
        made.append(p)
        return p
    yield make
    for p in made:
        p.close()


# ------------------------------------------------------------------ the demo

def run_demo(port=None, timeout=60):
    env = dict(os.environ)
    env.pop("DEMO_PORT", None)
    if port is not None:
        env["DEMO_PORT"] = str(port)
    return subprocess.run([os.path.join(ROOT, "scripts", "demo.sh"), BUILD_DIR], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, text=True)


@pytest.fixture
def decoy(start_server):
    """Another wrapper server, with `cat` as its function: were the demo to
    talk to it, its output would keep "staging" (the demo's function
    replaces it with "production")."""
    return start_server(["cat"])


def test_demo_with_a_taken_demo_port_fails_naming_it(decoy):
    res = run_demo(port=decoy.port)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"port {decoy.port} (DEMO_PORT) is already taken by another process" in res.stderr
    assert "Address already in use" in res.stderr
    # nothing was asked of the other server
    assert "== health" not in res.stdout and "kind: ResourceList" not in res.stdout


def test_demo_uses_its_own_server_on_a_free_port(decoy):
    res = run_demo()
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"listening on :(\d+)", res.stdout)
    assert m, res.stdout
    port = int(m.group(1))
    assert port != decoy.port
    # its own server's log says it listened there, and its function ran
    assert f"Listening on :{port}" in res.stdout
    assert "== health: SERVING" in res.stdout
    output = res.stdout.split("== evaluating")[1].split("== stopping")[0]
    assert "environment: production" in output and "namespace: staging" not in output, output


def test_demo_with_a_free_demo_port_uses_it(binaries):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    res = run_demo(port=port)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"listening on :{port}" in res.stdout


def test_demo_refuses_a_bad_demo_port(binaries):
    res = run_demo(port="ninety")
    assert res.returncode == 2
    assert 'DEMO_PORT="ninety" is not a port number' in res.stderr


# ------------------------------------------------------------------ deadlines

def test_eval_against_a_silent_peer_ends_deadline_exceeded(peer):
    p = peer(silent)
    t0 = time.monotonic()
    res = client("eval", "--addr", p.addr, "--timeout", "1s", pkg("app", "configmap.yaml"))
    took = time.monotonic() - t0
    assert res.returncode == 1, res.err
    assert res.err.startswith(f'[RUNNING] "{p.addr}"\n[FAIL] "{p.addr}" in '), res.err
    assert "\n  Error: DEADLINE_EXCEEDED: context deadline exceeded" in res.err, res.err
    assert (f"(is {p.addr} a gRPC server? It accepted the connection but sent no HTTP/2 "
            "SETTINGS within 2s)") in res.err
    assert took < 8, took
    assert res.stdout == b""


def test_pipeline_against_a_silent_peer_ends_deadline_exceeded(peer):
    p = peer(silent)
    res = client("eval", "--addr", p.addr, "--timeout", "1s", "--fn", "example.com/a:v1",
                 pkg("app", "configmap.yaml"))
    assert res.returncode == 1, res.err
    assert '[FAIL] "example.com/a:v1"' in res.err, res.err
    assert "\n  Error: DEADLINE_EXCEEDED: " in res.err, res.err


def test_health_has_a_default_deadline(peer):
    p = peer(silent)
    t0 = time.monotonic()
    res = client("health", "--addr", p.addr, timeout=30)
    took = time.monotonic() - t0
    assert res.returncode == 1, res.err
    assert "DEADLINE_EXCEEDED" in res.err
    assert 4.5 < took < 12, took   # 5s, then the 2s look at the peer


def test_connect_timeout(peer):
    """A listener whose accept queue is full: the kernel drops further SYNs,
    so connecting never completes."""
    p = peer(silent, backlog=0, accept=False)
    held = []
    for _ in range(3):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", p.port))
        except BlockingIOError:
            pass
        held.append(s)
    time.sleep(0.2)
    try:
        t0 = time.monotonic()
        res = client("eval", "--addr", p.addr, "--timeout", "1s", pkg("app", "configmap.yaml"))
        took = time.monotonic() - t0
    finally:
        for s in held:
            s.close()
    assert res.returncode == 1, res.err
    assert f"UNAVAILABLE: failed to connect to {p.addr}: Connection timed out" in res.err
    assert took < 5, took


def test_image_against_a_silent_registry_times_out(peer):
    p = peer(silent)
    t0 = time.monotonic()
    res = client("image", "--timeout", "1s", f"{p.addr}/fn:v1")
    assert res.returncode == 1, res.err
    assert f"cannot reach registry {p.addr}" in res.err and "timed out" in res.err, res.err
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("cmd,want", [
    (["eval"], "--timeout DUR        deadline of each call (default 5m; 0: none)"),
    (["health"], "--timeout DUR    deadline of the call, e.g. 1s (default 5s; 0: none)"),
    (["image"], "per HTTP request (default 30s; connecting: at most 10s of it)"),
])
def test_deadlines_are_documented_in_help(binaries, cmd, want):
    res = client(*cmd, "--help")
    assert res.returncode == 0
    assert want in res.out, res.out


def test_timeout_zero_means_none(start_server):
    """--timeout 0 is "no deadline": a 1.5 s function is waited for."""
    srv = start_server(["sh", "-c", "sleep 1.5; cat"])
    res = client("eval", "--addr", f"localhost:{srv.port}", "--timeout", "0", pkg("resourcelist.yaml"))
    assert res.returncode == 0, res.err


# ------------------------------------------------------------------ not a gRPC server

def test_http1_server_gets_a_hint(peer):
    p = peer(http1)
    res = client("eval", "--addr", p.addr, pkg("app", "configmap.yaml"))
    assert res.returncode == 1, res.err
    assert re.search(r"\n  Error: UNAVAILABLE: connection (closed by the server|lost) \(is "
                    + re.escape(p.addr) + r' a gRPC server\? It answers HTTP/1.x: "HTTP/1.1 400 Bad Request"\)',
                    res.err), res.err
    res = client("health", "--addr", p.addr)
    assert res.returncode == 1
    assert f'(is {p.addr} a gRPC server? It answers HTTP/1.x: "HTTP/1.1 400 Bad Request")' in res.err


def test_peer_closing_before_settings_gets_a_hint(peer):
    p = peer(hang_up)
    res = client("eval", "--addr", p.addr, pkg("app", "configmap.yaml"))
    assert res.returncode == 1, res.err
    assert "UNAVAILABLE" in res.err
    assert f"(is {p.addr} a gRPC server? It closed the connection without sending HTTP/2 SETTINGS)" in res.err


def test_no_hint_for_a_grpc_server(start_server):
    """A real server that misses the deadline is an HTTP/2 server: no hint."""
    srv = start_server(["sh", "-c", "sleep 5; cat"])
    res = client("eval", "--addr", f"localhost:{srv.port}", "--timeout", "300ms", pkg("app", "configmap.yaml"))
    assert res.returncode == 1
    assert "DEADLINE_EXCEEDED" in res.err and "gRPC server?" not in res.err, res.err


def test_no_hint_when_nothing_listens(binaries):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    res = client("eval", "--addr", f"127.0.0.1:{port}", pkg("app", "configmap.yaml"))
    assert res.returncode == 1
    assert "Connection refused" in res.err and "gRPC server?" not in res.err, res.err


# ------------------------------------------------------------------ image references

@pytest.fixture
def kptfile_with_bad_image(tmp_path):
    k = tmp_path / "Kptfile"
    k.write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"
                 "pipeline:\n  mutators:\n  - image: Bad Image!\n")
    return str(k)


@pytest.mark.parametrize("args", [
    ["pod", "render", "--image", "Bad Image!", "--wrapper-image", "w", "--digest", "sha256:" + "0" * 64,
     "--", "fn"],
    ["pod", "id", "--image", "Bad Image!", "--digest", "sha256:" + "0" * 64],
    ["image", "Bad Image!"],
    ["eval", "--addr", "127.0.0.1:1", "--image", "Bad Image!", "-"],
    ["eval", "--addr", "127.0.0.1:1", "--fn", "Bad Image!", "-"],
    ["eval", "--addr", "127.0.0.1:1", "--pipeline", "KPTFILE", "-"],
], ids=["pod-render", "pod-id", "image", "eval-image", "eval-fn", "eval-pipeline"])
def test_bad_image_is_refused_the_same_way_everywhere(binaries, kptfile_with_bad_image, args):
    args = [kptfile_with_bad_image if a == "KPTFILE" else a for a in args]
    res = client(*args, input=b"")
    assert res.returncode == 2, f"exit {res.returncode}: {res.out[:300]} {res.err}"
    assert BAD_IMAGE_MESSAGE in res.err, res.err
    assert res.stdout == b""


def test_good_images_still_render(binaries):
    res = client("pod", "render", "--image", "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1",
                 "--wrapper-image", "w", "--digest", "sha256:" + "0" * 64, "--", "fn")
    assert res.returncode == 0, res.err
    assert "kind: Pod" in res.out


# ------------------------------------------------------------------ eval: no resources

@pytest.mark.parametrize("files", [
    {},
    {"README.md": "kind: NotRead\n", "notes.txt": "x"},
    {"empty.yaml": "", "comments.yml": "# nothing\n---\n"},
], ids=["empty", "no-yaml", "only-empty-documents"])
def test_eval_directory_without_resources_is_an_error(binaries, tmp_path, files):
    d = tmp_path / "pkg"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    # no server: nothing may be called
    res = client("eval", "--addr", "127.0.0.1:1", str(d))
    assert res.returncode == 2, res.err
    assert res.err == (f"runner-client eval: {d}: no resources found (no KRM object in a Kptfile, "
                       "*.yaml, *.yml or *.json file beneath it)\n"), res.err
    assert res.stdout == b""


def test_eval_directory_with_only_a_kptfile_is_evaluated(cat_server, tmp_path):
    d = tmp_path / "pkg"
    d.mkdir()
    (d / "Kptfile").write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n")
    res = client("eval", "--addr", f"localhost:{cat_server.port}", "-o", "stdout", str(d))
    assert res.returncode == 0, res.err
    assert "kind: Kptfile" in res.out


def test_eval_empty_stdin_is_still_allowed(cat_server):
    res = client("eval", "--addr", f"localhost:{cat_server.port}", "-", input=b"")
    assert res.returncode == 0, res.err
    assert "items: []" in res.out


# ------------------------------------------------------------------ serve

def serve(start_server, *args):
    return start_server([], binary=CLIENT_BIN, argv=["serve", "--port", "{port}", "--disable-runtimes=pod", *args])


def test_serve_without_function_config_warns(start_server):
    srv = serve(start_server)
    assert ("no --function-config given: no image is configured, every call will be answered "
            "NOT_FOUND") in srv.stderr()
    err = srv.evaluate_error(simple_rl(), image="set-namespace:v1")
    assert err.code() == grpc.StatusCode.NOT_FOUND
    assert err.details() == 'function "set-namespace:v1" not found; no image is configured (no --function-config)'


def test_serve_with_an_empty_config_directory_warns_naming_it(start_server, tmp_path):
    d = tmp_path / "configs"
    d.mkdir()
    (d / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    srv = serve(start_server, "--function-config", str(d))
    line = next((l for l in srv.stderr().splitlines() if "no FunctionConfig found" in l), None)
    assert line and f"{d}: no FunctionConfig found (read the *.yaml and *.yml files of this directory" in line, \
        srv.stderr()
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING


def test_serve_not_found_lists_configured_images_bounded(start_server, tmp_path):
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "f").write_text("#!/bin/sh\nexec cat\n")
    (functions / "f").chmod(0o755)
    cfg = tmp_path / "fc.yaml"
    docs = []
    for i in range(4):
        docs.append("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                    f"metadata:\n  name: fn{i}\nspec:\n  image: fn{i}\n  prefixes: [\"\"]\n"
                    "  binaryExecutor:\n    tags: [v1, v2]\n    path: f\n")
    cfg.write_text("---\n".join(docs))
    srv = serve(start_server, "--function-config", str(cfg), "--functions", str(functions))
    err = srv.evaluate_error(simple_rl(), image="fn0:v9")
    assert err.code() == grpc.StatusCode.NOT_FOUND
    p = "ghcr.io/kptdev/krm-functions-catalog/"
    assert err.details() == (f'function "fn0:v9" not found; configured: {p}fn0:v1, {p}fn0:v2, {p}fn1:v1, '
                             f'{p}fn1:v2, {p}fn2:v1 and 3 more'), err.details()
    # and what is listed is what runs
    assert srv.evaluate(simple_rl(), image=f"{p}fn2:v1").resource_list == simple_rl()


def test_a_functions_text_never_drives_the_terminal(start_server, tmp_path):
    """A function's stderr and results reach the user's terminal inside
    runner-client's messages: an ESC sequence (clear screen, set the title)
    or a C1 control arrives escaped, never raw."""
    fn = tmp_path / "evil.sh"
    fn.write_text("#!/bin/sh\ncat >/dev/null\nprintf 'owned \\033]0;title\\007 \\033[2J \\302\\233\\n' >&2\nexit 1\n")
    fn.chmod(0o755)
    srv = start_server([str(fn)])
    rl = tmp_path / "rl.yaml"
    rl.write_bytes(krmtest.simple_rl())
    res = krmtest.runner_client("eval", "--addr", f"localhost:{srv.port}", "--image", "evil:v1", str(rl))
    assert res.returncode == 1, krmtest.explain(res)
    assert b"\x1b" not in res.stderr and b"\x07" not in res.stderr and b"\xc2\x9b" not in res.stderr, res.stderr
    assert b"owned" in res.stderr and b"\\x1b[2J" in res.stderr, res.stderr
