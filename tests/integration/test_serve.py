"""runner-client serve: the function runner. Images are mapped to local
binaries by FunctionConfig files (Porch's schema), run by the exec runtime,
and served over the same gRPC transport as the wrapper server; unknown
images answer NOT_FOUND; SIGHUP reloads the configuration without dropping
calls in flight."""

import os
import signal
import textwrap
import time

import grpc
import pytest

from krmtest import CLIENT_BIN, fn, resource_list, run_cli, wait_pidfile

FULL = "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1"


def function_config(name, image, tags, path, prefixes=None, extra=""):
    text = textwrap.dedent(f"""\
        apiVersion: config.porch.kpt.dev/v1alpha1
        kind: FunctionConfig
        metadata:
          name: {name}
        spec:
          image: {image}
        """)
    if prefixes is not None:
        text += "  prefixes: [" + ", ".join(f'"{p}"' for p in prefixes) + "]\n"
    text += f"  binaryExecutor:\n    tags: [{', '.join(tags)}]\n    path: {path}\n" + extra
    return text


@pytest.fixture
def functions(tmp_path):
    """A --functions directory with small executables (run with no arguments)."""
    d = tmp_path / "functions"
    d.mkdir()
    scripts = {
        "set-ns": f'exec sh {fn("search-replace.sh")} "namespace: default" "namespace: prod"\n',
        "failing": f"exec sh {fn('fail-with-results.sh')} 1\n",
        "slow": f"exec sh {fn('slow-cat.sh')} 1 {tmp_path / 'slow.pid'}\n",
    }
    for name, body in scripts.items():
        path = d / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
    return d


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "functions.yaml"
    path.write_text(
        function_config("set-namespace", "set-namespace", ["v0.4.1"], "set-ns", prefixes=[""])
        + "---\n"
        + function_config("failing", "failing", ["v1"], "failing")
        + "---\n"
        + function_config("slow", "slow", ["v1"], "slow")
    )
    return path


@pytest.fixture
def runner(start_server, functions, config_file):
    def start(*extra):
        return start_server([], binary=CLIENT_BIN, argv=[
            "serve", "--port", "{port}", "--function-config", str(config_file),
            "--functions", str(functions), *extra])
    return start


def cm_rl():
    return resource_list("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n")


@pytest.mark.parametrize("image", [FULL, "set-namespace:v0.4.1"])
def test_configured_image_runs_its_binary(runner, image):
    srv = runner("--disable-runtimes=pod")
    out = srv.evaluate(cm_rl(), image=image).resource_list
    assert b"namespace: prod" in out and b"namespace: default" not in out
    assert "in executable mode" in srv.stderr()


@pytest.mark.parametrize("image", [
    "set-namespace:v0.5.0",                               # tag not configured
    "docker.io/someone/set-namespace:v0.4.1",             # prefix not accepted
    "ghcr.io/kptdev/krm-functions-catalog/unknown:v1",    # no FunctionConfig
    f"{FULL.split(':')[0]}@sha256:{'0' * 64}",            # digest references never match
])
def test_unknown_image_is_not_found(runner, image):
    srv = runner("--disable-runtimes=pod")
    err = srv.evaluate_error(cm_rl(), image=image)
    assert err.code() == grpc.StatusCode.NOT_FOUND
    # issue 17: the answer lists what is configured (it used to stop at "not found")
    # (failing and slow have no prefixes: any repository, so their bare names)
    assert err.details() == f'function "{image}" not found; configured: {FULL}, failing:v1, slow:v1'
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING


def test_failing_function_is_internal_not_a_fallback(runner):
    srv = runner("--disable-runtimes=pod")
    err = srv.evaluate_error(cm_rl(), image="ghcr.io/kptdev/krm-functions-catalog/failing:v1")
    assert err.code() == grpc.StatusCode.INTERNAL
    assert "failed to evaluate function" in err.details()


def test_pod_runtime_without_a_cluster_fails_at_start(tmp_path, config_file, functions):
    """The pod runtime is on by default (as Porch's): with no Kubernetes
    configuration the runner refuses to start, saying where it looked and
    how to run without pods (tests/e2e/test_serve_pods.py runs it on a
    cluster)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--function-config", str(config_file),
                 "--functions", str(functions), "--wrapper-server-image", "localhost:5000/w:1"], env=env)
    assert r.returncode == 2, r.stderr
    assert b"no Kubernetes configuration found" in r.stderr, r.stderr
    assert f"{tmp_path}/.kube/config does not exist".encode() in r.stderr, r.stderr
    assert b"--disable-runtimes=pod" in r.stderr, r.stderr
    # a kubeconfig alone is not enough: the wrapper image is named, in Porch's words
    kc = tmp_path / "kc"
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
                  "    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: k\n"
                  "    user: u\nusers:\n- name: u\n  user:\n    token: t\n")
    env.pop("WRAPPER_SERVER_IMAGE", None)
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--kubeconfig", str(kc)], env=env)
    assert r.returncode == 2, r.stderr
    assert (b"\nrunner-client serve: environment variable WRAPPER_SERVER_IMAGE must be set to use "
            b"pod function evaluator runtime (") in b"\n" + r.stderr, r.stderr
    assert b"--wrapper-server-image is the same" in r.stderr, r.stderr


def test_all_runtimes_disabled(runner):
    srv = runner("--disable-runtimes", "exec,pod")
    err = srv.evaluate_error(cm_rl(), image=FULL)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "no function runtime is enabled" in err.details()


def test_runner_client_eval_against_serve(runner, tmp_path):
    srv = runner("--disable-runtimes=pod")
    pkg = tmp_path / "cm.yaml"
    pkg.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n")
    r = run_cli([CLIENT_BIN, "eval", "--addr", f"localhost:{srv.port}", "--image", FULL, str(pkg)])
    assert r.returncode == 0, r.stderr
    assert b"namespace: prod" in r.stdout
    r = run_cli([CLIENT_BIN, "eval", "--addr", f"localhost:{srv.port}", "--image", "nope:v1", str(pkg)])
    assert r.returncode == 1
    assert b'NOT_FOUND: function "nope:v1" not found' in r.stderr


def test_sighup_reloads_and_keeps_calls_in_flight(runner, config_file, tmp_path):
    srv = runner("--disable-runtimes=pod")
    slow = srv.evaluate_callable().future(
        srv.pb.evaluator.EvaluateFunctionRequest(resource_list=cm_rl(), image="ghcr.io/kptdev/krm-functions-catalog/slow:v1"),
        timeout=20)
    wait_pidfile(str(tmp_path / "slow.pid"), count=1)
    # New config: set-namespace gains tag v0.5.0, slow disappears.
    config_file.write_text(
        function_config("set-namespace", "set-namespace", ["v0.4.1", "v0.5.0"], "set-ns", prefixes=[""]))
    os.kill(srv.pid, signal.SIGHUP)
    deadline = time.monotonic() + 5
    while "SIGHUP: loaded 1 FunctionConfigs" not in srv.stderr():
        assert time.monotonic() < deadline, srv.describe()
        time.sleep(0.02)
    assert slow.result().resource_list == cm_rl()          # the call in flight finished
    assert b"namespace: prod" in srv.evaluate(cm_rl(), image="set-namespace:v0.5.0").resource_list
    err = srv.evaluate_error(cm_rl(), image="ghcr.io/kptdev/krm-functions-catalog/slow:v1")
    assert err.code() == grpc.StatusCode.NOT_FOUND

    # A broken config is refused and the previous one stays.
    config_file.write_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                           "metadata:\n  name: x\nspec:\n  image: x\n")
    os.kill(srv.pid, signal.SIGHUP)
    deadline = time.monotonic() + 5
    while "keeping the previous FunctionConfigs" not in srv.stderr():
        assert time.monotonic() < deadline, srv.describe()
        time.sleep(0.02)
    assert str(config_file) in srv.stderr()
    assert b"namespace: prod" in srv.evaluate(cm_rl(), image="set-namespace:v0.5.0").resource_list


def test_bad_config_at_start_exits_2_naming_the_file(tmp_path, functions):
    bad = tmp_path / "bad.yaml"
    bad.write_text(function_config("a", "a", [], "set-ns"))
    # the pod runtime off: without its wrapper image that flag error would come first
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod", "--function-config", str(bad),
                 "--functions", str(functions)])
    assert r.returncode == 2
    assert str(bad).encode() in r.stderr and b"tags" in r.stderr, r.stderr

    dup = tmp_path / "dup.yaml"
    dup.write_text(function_config("a", "a", ["v1"], "set-ns") + "---\n" + function_config("a", "b", ["v1"], "set-ns"))
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod", "--function-config", str(dup)])
    assert r.returncode == 2 and b"a" in r.stderr, r.stderr


@pytest.mark.parametrize("args,message", [
    (["--disable-runtimes", "exec,gpu"], b'invalid value "gpu" for --disable-runtimes'),
    (["--port", "70000"], b'invalid value "70000" for --port'),
    (["--idle-timeout", "soon"], b'invalid value "soon" for --idle-timeout'),
    (["--dial", "dns"], b'invalid value "dns" for --dial'),
    (["--namespace", "Bad_NS"], b'invalid value "Bad_NS" for --namespace'),
    (["--ready-timeout", "soon"], b'invalid value "soon" for --ready-timeout'),
    # Porch's names for the same two, named as typed
    (["--pod-namespace", "Bad_NS"], b'invalid value "Bad_NS" for --pod-namespace'),
    (["--pod-ready-timeout", "0s"], b'invalid value "0s" for --pod-ready-timeout'),
    (["--max-parallel-pods-per-function", "0"],
     b'invalid value "0" for --max-parallel-pods-per-function: want a whole number 1-64'),
    (["--max-parallel-pods-per-function", "65"], b'for --max-parallel-pods-per-function'),
    (["--max-waitlist-length", "-1"], b'invalid value "-1" for --max-waitlist-length'),
    (["--max-grpc-retries", "11"], b'invalid value "11" for --max-grpc-retries: want a whole number 0-10'),
    (["--bogus", "1"], b"--bogus"),
    (["extra"], b"extra"),
])
def test_bad_flags_exit_2(args, message):
    r = run_cli([CLIENT_BIN, "serve", *args])
    assert r.returncode == 2
    assert message in r.stderr, r.stderr


def test_help():
    r = run_cli([CLIENT_BIN, "serve", "--help"])
    assert r.returncode == 0 and b"--function-config" in r.stdout


def test_pod_cap_beyond_the_limit_is_said(start_server, functions, tmp_path):
    """A FunctionConfig asking for more pods per function than the runner
    starts (64) is told so at load, not silently cut."""
    cfg = tmp_path / "pods.yaml"
    cfg.write_text(textwrap.dedent("""\
        apiVersion: config.porch.kpt.dev/v1alpha1
        kind: FunctionConfig
        metadata:
          name: wide
        spec:
          image: wide
          podExecutor:
            tags: [v1]
            maxParallelExecutions: 100
        """))
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(functions),
        "--disable-runtimes=pod"])
    assert ('FunctionConfig "wide": podExecutor.maxParallelExecutions 100: at most 64 pods per '
            'function are started') in srv.stderr(), srv.stderr()


def test_pod_evaluator_port_serves_the_same_calls(runner, binaries):
    """--pod-evaluator-port: porch-server's pod evaluator port (9447, Porch's
    newer layout, which porch-controllers dial through POD_EVALUATOR_ADDRESS)
    beside --port, with the same methods and limits: the same answer on
    either port, health on both, and both closed at SIGTERM's drain."""
    from krmtest import free_port, tcp_state
    also = free_port()
    srv = runner("--disable-runtimes=pod", "--pod-evaluator-port", str(also))
    srv.wait_ready()
    via_port = srv.evaluate(cm_rl(), image="set-namespace:v0.4.1")
    ch = grpc.insecure_channel(f"127.0.0.1:{also}")
    try:
        via_also = srv.evaluate(cm_rl(), image="set-namespace:v0.4.1", channel=ch)
        assert via_also.resource_list == via_port.resource_list
        assert b"namespace: prod" in via_also.resource_list
        assert srv.check(channel=ch).status == srv.pb.health.HealthCheckResponse.SERVING
    finally:
        ch.close()
    assert f"Listening on :{also}" in srv.stderr()
    assert srv.stop() == 0
    assert tcp_state(also) == "refused"


@pytest.mark.parametrize("args, message", [
    (["--pod-evaluator-port", "70000"], "--pod-evaluator-port"),
    (["--port", "9999", "--pod-evaluator-port", "9999"], "--pod-evaluator-port 9999 is --port's"),
])
def test_bad_pod_evaluator_port_refused(binaries, args, message):
    r = run_cli([CLIENT_BIN, "serve", "--disable-runtimes=pod", *args])
    assert r.returncode != 0 and message in r.stderr.decode(), r.stderr
