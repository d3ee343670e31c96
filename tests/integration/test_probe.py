"""The grpc-health-probe built into wrapper-server and runner-client: invoked
through the `grpc-health-probe` name (a symlink, as in the init image and the
runner image) or as `wrapper-server probe`, with grpc-health-probe's flags and
exit codes: 0 SERVING, 1 bad arguments, 2 connection failure, 3 RPC failure,
4 not SERVING. runner-client invoked as `server` is `runner-client serve`
(Porch's function-runner Deployment runs /home/nonroot/server)."""

import os
import subprocess
import time
from concurrent import futures

import grpc
import pytest

from krmtest import CLIENT_BIN, SERVER_BIN, free_port, run_cli


@pytest.fixture(scope="module", params=[SERVER_BIN, CLIENT_BIN], ids=["wrapper-server", "runner-client"])
def probe(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("probe")
    link = d / "grpc-health-probe"
    os.symlink(os.path.abspath(request.param), link)
    return str(link)


def run_probe(probe, *args):
    res = run_cli([probe, *args])
    return res.returncode, res.stderr.decode()


def test_serving_exit_0(probe, cat_server):
    rc, err = run_probe(probe, "-addr", f"localhost:{cat_server.port}")
    assert (rc, err) == (0, "status: SERVING\n")


def test_flag_forms_and_headers(probe, cat_server):
    rc, err = run_probe(probe, f"--addr=127.0.0.1:{cat_server.port}", "-service",
                        "evaluator.FunctionEvaluator", "-connect-timeout=2s", "-rpc-timeout", "500ms",
                        "-user-agent", "kube-probe/1.20", "-rpc-header", "X-Trace: abc", "-v")
    assert rc == 0, err
    assert "status: SERVING" in err and "parsed options" in err


def test_multicall_subcommand(cat_server):
    res = run_cli([SERVER_BIN, "probe", "-addr", f"localhost:{cat_server.port}"])
    assert res.returncode == 0, res.stderr


def test_unknown_service_is_rpc_failure_3(probe, cat_server):
    rc, err = run_probe(probe, "-addr", f"localhost:{cat_server.port}", "-service", "nope")
    assert rc == 3
    assert err == "error: health rpc failed: rpc error: code = NotFound desc = unknown service\n"


def test_stopped_server_is_connection_failure_2(probe):
    port = free_port()
    rc, err = run_probe(probe, "-addr", f"127.0.0.1:{port}")
    assert rc == 2
    assert err.startswith(f'error: failed to connect service at "127.0.0.1:{port}"')


@pytest.mark.parametrize("args, message", [
    ([], "error: -addr not specified\n"),
    (["-addr", "x:1", "-bogus"], "error: flag provided but not defined: -bogus\n"),
    (["-addr", "x:1", "-connect-timeout", "0s"], "error: --connect-timeout must be greater than zero (specified: 0s)\n"),
    (["-addr", "x:1", "-rpc-timeout", "soon"], "error: --rpc-timeout must be greater than zero (specified: soon)\n"),
    (["-addr", "x:1", "-rpc-header", "no-colon"], "error: invalid -rpc-header \"no-colon\": want 'name: value'\n"),
    (["-addr", "x:1", "-tls"], "error: -tls is not supported: this probe speaks cleartext gRPC only\n"),
])
def test_bad_arguments_exit_1(probe, args, message):
    rc, err = run_probe(probe, *args)
    assert (rc, err) == (1, message)


def test_help_exit_1(probe):
    rc, err = run_probe(probe, "-h")
    assert rc == 1 and "-addr" in err


class _Health(grpc.GenericRpcHandler):
    """An independent gRPC server (grpcio) answering Check with a fixed status,
    or failing it, to reach the probe's other exit codes."""

    def __init__(self, answer):
        self.answer = answer

    def service(self, details):
        if details.method != "/grpc.health.v1.Health/Check":
            return None

        def check(request, context):
            if isinstance(self.answer, grpc.StatusCode):
                context.abort(self.answer, "test says no")
            return self.answer
        return grpc.unary_unary_rpc_method_handler(check)


@pytest.fixture
def grpcio_server():
    servers = []

    def start(answer):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[_Health(answer)])
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return port
    yield start
    for s in servers:
        s.stop(None)


def test_not_serving_exit_4(probe, grpcio_server):
    port = grpcio_server(b"\x08\x02")   # HealthCheckResponse{status: NOT_SERVING}
    rc, err = run_probe(probe, "-addr", f"127.0.0.1:{port}")
    assert (rc, err) == (4, 'service unhealthy (responded with "NOT_SERVING")\n')


def test_unimplemented_health_exit_3(probe, grpcio_server):
    port = grpcio_server(grpc.StatusCode.UNIMPLEMENTED)
    rc, err = run_probe(probe, "-addr", f"127.0.0.1:{port}")
    assert rc == 3
    assert err == ("error: this server does not implement the grpc health protocol "
                   "(grpc.health.v1.Health): test says no\n")


def test_rpc_timeout_exit_3(probe, start_server, pb):
    # a server whose Check cannot answer in time: grpcio with a slow handler
    import threading
    gate = threading.Event()

    class Slow(grpc.GenericRpcHandler):
        def service(self, details):
            def check(request, context):
                gate.wait(2)
                return b"\x08\x01"
            return grpc.unary_unary_rpc_method_handler(check)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[Slow()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        rc, err = run_probe(probe, "-addr", f"127.0.0.1:{port}", "-rpc-timeout", "200ms")
        assert (rc, err) == (3, "timeout: health rpc did not complete within 200ms\n")
    finally:
        gate.set()
        server.stop(None)


def test_runner_client_as_porch_server_serves(probe, tmp_path):
    """Porch's Deployment: `/home/nonroot/server --port=N ...` and its probe."""
    server = tmp_path / "server"
    os.symlink(os.path.abspath(CLIENT_BIN), server)
    port = free_port()
    proc = subprocess.Popen([str(server), f"--port={port}", "--disable-runtimes=pod"],
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while (rc := run_probe(probe, "-addr", f"localhost:{port}"))[0] != 0:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, rc
            time.sleep(0.05)
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    assert "function runner: 0 FunctionConfigs" in proc.stderr.read()
