"""runner-client: `eval` builds a ResourceList from a file, a directory or
stdin and prints the function's output; `health` checks the server."""

import time

import pytest

from krmtest import CLIENT_BIN, fn, free_port, ipv6_loopback_available, pkg, read, run_cli


def client(*args, input=None, timeout=20):
    res = run_cli([CLIENT_BIN, *args], input=input, timeout=timeout)
    res.out = res.stdout.decode("utf-8", "replace")
    res.err = res.stderr.decode("utf-8", "replace")
    return res


def addr(srv, host="localhost"):
    return f"{host}:{srv.port}"


def assert_ok(res):
    assert res.returncode == 0, f"exit {res.returncode}\nstdout: {res.out[:2000]}\nstderr: {res.err[:2000]}"


# ------------------------------------------------------------------ eval input

def test_eval_multi_object_file(binaries, cat_server):
    res = client("eval", "--addr", addr(cat_server), pkg("app", "resources.yaml"))
    assert_ok(res)
    assert "kind: ResourceList" in res.out
    assert "items:" in res.out
    for name in ("name: web\n", "name: web-svc\n", "kind: Deployment", "kind: Service"):
        assert name in res.out, f"{name!r} missing from output:\n{res.out}"
    assert "web-config" not in res.out


def test_eval_directory(binaries, cat_server):
    res = client("eval", "--addr", addr(cat_server), "-o", "stdout", pkg("app"))
    assert_ok(res)
    assert "kind: ResourceList" in res.out
    for name in ("name: web\n", "name: web-svc\n", "name: web-config\n"):
        assert name in res.out, f"{name!r} missing from output:\n{res.out}"


def test_eval_stdin(binaries, cat_server):
    """stdin is read when named `-`, as kpt reads it (with no argument the
    current directory is: test_kpt_second_day.py)."""
    data = read(pkg("app", "configmap.yaml"))
    res = client("eval", "--addr", addr(cat_server), "-", input=data)
    assert_ok(res)
    assert "kind: ResourceList" in res.out
    assert "name: web-config\n" in res.out


def test_eval_existing_resource_list_passes_through(binaries, cat_server):
    path = pkg("resourcelist.yaml")
    res = client("eval", f"--addr={addr(cat_server, '127.0.0.1')}", path)
    assert_ok(res)
    assert res.stdout == read(path)


def test_eval_existing_resource_list_from_stdin(binaries, cat_server):
    data = read(pkg("resourcelist.yaml"))
    res = client("eval", "--addr", addr(cat_server), "-", input=data)
    assert_ok(res)
    assert res.stdout == data


@pytest.mark.skipif(not ipv6_loopback_available(), reason="no IPv6 loopback")
def test_eval_ipv6_address(binaries, cat_server):
    path = pkg("resourcelist.yaml")
    res = client("eval", "--addr", addr(cat_server, "[::1]"), path)
    assert_ok(res)
    assert res.stdout == read(path)


def test_eval_prints_function_log_on_stderr(start_server):
    srv = start_server(["sh", "-c", 'cat; echo "function says hi" >&2'])
    res = client("eval", "--addr", addr(srv), pkg("resourcelist.yaml"))
    assert_ok(res)
    assert res.stdout == read(pkg("resourcelist.yaml"))
    assert "function says hi" in res.err


def test_eval_missing_input_file(binaries, cat_server, tmp_path):
    missing = str(tmp_path / "does-not-exist.yaml")
    res = client("eval", "--addr", addr(cat_server), missing)
    assert res.returncode != 0
    assert "does-not-exist.yaml" in res.err
    assert res.stdout == b""


# ------------------------------------------------------------------ Porch scenario

def test_eval_search_and_replace(start_server):
    srv = start_server([fn("search-replace.sh"), "hello-server-namespace", "hello-server-namespace-new"])
    res = client("eval", "--addr", addr(srv), "--image", "search-and-replace", pkg("porch", "deployment.yaml"))
    assert_ok(res)
    assert "kind: ResourceList" in res.out
    assert "namespace: hello-server-namespace-new\n" in res.out
    assert "namespace: hello-server-namespace\n" not in res.out
    assert "name: hello-server\n" in res.out


def test_eval_search_and_replace_wrong_arguments(start_server):
    srv = start_server([fn("search-replace.sh")])
    res = client("eval", "--addr", addr(srv), "--image", "search-and-replace", pkg("porch", "deployment.yaml"))
    assert res.returncode == 1, res.err
    assert "INTERNAL" in res.err
    assert ("failed to parse the output of function \"search-and-replace\" with stderr "
            "'usage: search-replace SEARCH REPLACE") in res.err
    assert res.stdout == b""


# ------------------------------------------------------------------ errors

def test_eval_grpc_error_structured_results(start_server):
    srv = start_server([fn("fail-with-results.sh")])
    res = client("eval", "--addr", addr(srv), "--image", "my-image:v9", pkg("app", "configmap.yaml"))
    assert res.returncode == 1, res.err
    line = next((l for l in res.err.splitlines() if "INTERNAL" in l), None)
    assert line is not None, res.err
    assert 'failed to evaluate function "my-image:v9" with structured results: ' in line, line
    assert "[error] apps/v1/Deployment/prod/web spec.replicas: replicas must be greater than zero" in res.err
    assert "validation failed" in res.err
    assert res.stdout == b""


def test_eval_timeout(start_server):
    srv = start_server(["sh", "-c", "sleep 5; cat"])
    t0 = time.monotonic()
    res = client("eval", "--addr", addr(srv), "--timeout", "500ms", pkg("app", "configmap.yaml"))
    assert res.returncode == 1, res.err
    assert "DEADLINE_EXCEEDED" in res.err
    assert time.monotonic() - t0 < 3


def test_eval_server_down(binaries):
    port = free_port()
    res = client("eval", "--addr", f"127.0.0.1:{port}", "--timeout", "3s", pkg("app", "configmap.yaml"), timeout=15)
    assert res.returncode == 1, res.err
    assert "UNAVAILABLE" in res.err


@pytest.mark.parametrize("args", [
    [],
    ["eval"],                                   # no --addr
    ["frobnicate", "--addr", "localhost:1"],    # unknown command
    ["eval", "--addr", "localhost:1", "--bogus", "x.yaml"],
    ["eval", "--addr", "localhost:1", "--timeout", "soon", "x.yaml"],
    ["eval", "--addr"],                         # missing value
    ["health"],                                 # no --addr
    ["health", "--addr", "localhost:1", "--nope"],
])
def test_bad_usage_exits_2(binaries, args):
    res = client(*args)
    assert res.returncode == 2, f"exit {res.returncode} for {args}: {res.err}"
    assert res.err.strip(), "no message on stderr"


# ------------------------------------------------------------------ health

def test_health_serving(binaries, cat_server):
    res = client("health", "--addr", addr(cat_server))
    assert_ok(res)
    for service in ("evaluator.FunctionEvaluator", "grpc.health.v1.Health"):
        assert_ok(client("health", "--addr", addr(cat_server, "127.0.0.1"), "--service", service))


def test_health_unknown_service(binaries, cat_server):
    res = client("health", "--addr", addr(cat_server), "--service", "nope")
    assert res.returncode != 0, f"exit {res.returncode}: {res.err}"


def test_health_server_down(binaries):
    port = free_port()
    res = client("health", "--addr", f"127.0.0.1:{port}", timeout=15)
    assert res.returncode != 0, f"exit {res.returncode}: {res.err}"
