"""runner-client serve's exec runtime runs only binaries beneath --functions.

A FunctionConfig whose binaryExecutor.path is absolute, climbs out with
"..", or reaches outside through a symlink is refused when the config is
loaded (exit 2 at start, naming file, document, field and reason), as is one
naming a missing or non-executable file. At call time the binary is opened
beneath the directory again and run by descriptor, so a symlink swapped to
lead out after the load fails that call (FAILED_PRECONDITION) while the
server keeps serving. Every "outside" binary here would leave a marker file
if it ever ran."""

import os
import signal
import textwrap
import time

import grpc
import pytest

from krmtest import CLIENT_BIN, resource_list, run_cli

RL = resource_list("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")


def function_config(name, path):
    return textwrap.dedent(f"""\
        apiVersion: config.porch.kpt.dev/v1alpha1
        kind: FunctionConfig
        metadata:
          name: {name}
        spec:
          image: {name}
          binaryExecutor:
            tags: [v1]
            path: '{path}'
        """)


@pytest.fixture
def tree(tmp_path):
    """tmp/outside (would mark its run), tmp/functions/{real, plain, subdir/deep}."""
    marker = tmp_path / "outside-ran"
    outside = tmp_path / "outside"
    outside.write_text(f"#!/bin/sh\ntouch {marker}\nexec cat\n")
    outside.chmod(0o755)
    d = tmp_path / "functions"
    (d / "subdir").mkdir(parents=True)
    for rel, mode in [("real", 0o755), ("plain", 0o644), ("subdir/deep", 0o755)]:
        (d / rel).write_text("#!/bin/sh\nexec cat\n")
        (d / rel).chmod(mode)
    return tmp_path, d, marker


def serve_with(tmp_path, functions, path, setup=None):
    """Starts serve on a config whose document 2 has `path`; returns the run."""
    if setup:
        setup(functions)
    cfg = tmp_path / "fc.yaml"
    cfg.write_text(function_config("good", "real") + "---\n" + function_config("bad", path))
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod",
                 "--function-config", str(cfg), "--functions", str(functions)])
    return cfg, r


def link(name, target):
    return lambda d: os.symlink(target, d / name)


OUTSIDE = "resolves outside --functions {dir}"


@pytest.mark.parametrize("path,setup,reason", [
    ("/bin/sh", None, OUTSIDE + " (absolute paths are refused"),
    ("{tmp}/outside", None, OUTSIDE),
    ("../../bin/sh", None, OUTSIDE),
    ("../outside", None, OUTSIDE),
    ("a/../../outside", None, OUTSIDE),
    ("out-link", link("out-link", "../outside"), OUTSIDE + ": a symlink on the way leads out"),
    ("abs-link", link("abs-link", "/bin/sh"), OUTSIDE + ": a symlink on the way leads out"),
    ("up/outside", link("up", ".."), OUTSIDE + ": a symlink on the way leads out"),
    ("bin/sh", link("bin", "/bin"), OUTSIDE + ": a symlink on the way leads out"),
    ("nope", None, "({dir}/nope): No such file or directory"),
    ("plain", None, "({dir}/plain) is not executable (mode 0644)"),
    ("subdir", None, "({dir}/subdir) is not a regular file"),
], ids=["absolute", "absolute-to-outside", "dotdot-bin-sh", "dotdot", "inner-dotdot",
        "symlink-out", "symlink-absolute", "symlink-dir-component", "dir-symlink-absolute",
        "missing", "not-executable", "directory"])
def test_bad_binary_path_is_refused_at_start(tree, path, setup, reason):
    tmp, functions, marker = tree
    path = path.format(tmp=tmp)
    cfg, r = serve_with(tmp, functions, path, setup)
    assert r.returncode == 2, r.stderr
    want = (f'runner-client serve: {cfg}: document 2 (FunctionConfig "bad"): '
            f'spec.binaryExecutor.path: "{path}" ' + reason.format(dir=functions))
    text = r.stderr.decode()
    assert text.startswith(want), text
    assert text.count("\n") == 1, text           # one clear line, nothing served
    assert not marker.exists()


@pytest.mark.parametrize("path,setup", [
    ("subdir/deep", None),
    ("./subdir/../real", None),
    ("in-link", link("in-link", "subdir/deep")),
    ("dir-link/deep", link("dir-link", "subdir")),
])
def test_paths_and_links_inside_are_served(tree, start_server, path, setup):
    tmp, functions, marker = tree
    setup and setup(functions)
    cfg = tmp / "fc.yaml"
    cfg.write_text(function_config("inside", path))
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=pod", "--function-config", str(cfg),
        "--functions", str(functions)])
    assert srv.evaluate(RL, image="inside:v1").resource_list == RL


def test_symlink_swapped_after_load_is_refused_at_call_time(tree, start_server):
    tmp, functions, marker = tree
    os.symlink("real", functions / "fn")
    cfg = tmp / "fc.yaml"
    cfg.write_text(function_config("fn", "fn") + "---\n" + function_config("other", "subdir/deep"))
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=pod", "--function-config", str(cfg),
        "--functions", str(functions)])
    assert srv.evaluate(RL, image="fn:v1").resource_list == RL

    for target in ["../outside", str(tmp / "outside"), "/bin/sh"]:
        os.unlink(functions / "fn")
        os.symlink(target, functions / "fn")
        err = srv.evaluate_error(RL, image="fn:v1")
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err.details()
        assert err.details() == (
            'Failed to execute function "fn:v1": "fn" resolves outside --functions '
            f"{functions}: a symlink on the way leads out of it or is absolute (only relative "
            f'links that stay inside are followed) ({cfg}: document 1, FunctionConfig "fn", '
            "spec.binaryExecutor.path)")
        # the server keeps serving, other functions included
        assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING
        assert srv.evaluate(RL, image="other:v1").resource_list == RL
    assert not marker.exists()
    assert "resolves outside --functions" in srv.stderr()   # the operator hears of it

    # A reload sees the bad link and keeps the previous config (which still
    # refuses the call); mended, the function runs again.
    os.kill(srv.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "keeping the previous FunctionConfigs" not in srv.stderr():
        assert time.monotonic() < deadline, srv.describe()
        time.sleep(0.05)
    os.unlink(functions / "fn")
    os.symlink("subdir/deep", functions / "fn")
    assert srv.evaluate(RL, image="fn:v1").resource_list == RL
    assert not marker.exists()


def test_binary_deleted_after_load_fails_the_call_clearly(tree, start_server):
    tmp, functions, marker = tree
    (functions / "gone").write_text("#!/bin/sh\nexec cat\n")
    (functions / "gone").chmod(0o755)
    cfg = tmp / "fc.yaml"
    cfg.write_text(function_config("gone", "gone"))
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=pod", "--function-config", str(cfg),
        "--functions", str(functions)])
    (functions / "gone").unlink()
    err = srv.evaluate_error(RL, image="gone:v1")
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert err.details().startswith(
        f'Failed to execute function "gone:v1": "gone" ({functions}/gone): No such file or directory'), \
        err.details()
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING


def test_exec_runtime_disabled_does_not_check_binaries(tree, start_server):
    """A runner without the exec runtime need not have the binaries a shared
    config names: it starts, and nothing runs them."""
    tmp, functions, marker = tree
    cfg = tmp / "fc.yaml"
    cfg.write_text(function_config("elsewhere", "/opt/fns/elsewhere"))
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=exec,pod", "--function-config", str(cfg),
        "--functions", str(functions / "none")])
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING
    assert "1 FunctionConfigs" in srv.stderr()
