"""HTTP/1.1 on the gRPC port: /healthz and /readyz for Kubernetes httpGet
probes, /metrics for Prometheus, told apart from gRPC by the first bytes.
Driven with curl, the client those probes resemble."""

import re
import shutil
import signal
import socket
import subprocess
import time

import grpc
import pytest

from krmtest import fn, simple_rl, wait_pidfile

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def curl(port, path, *extra):
    r = subprocess.run(["curl", "-sS", "--max-time", "5", "-o", "-", "-w", "\n%{http_code}", *extra,
                        f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    body, _, code = r.stdout.rpartition("\n")
    return int(code), body


def series(text, name, **labels):
    """The value of one sample in Prometheus text format (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
        if m and m.group(1) == name and (m.group(3) or "") == want:
            return float(m.group(4))
    return 0.0


def test_healthz_readyz_and_grpc_share_the_port(cat_server):
    assert curl(cat_server.port, "/healthz") == (200, "ok\n")
    assert curl(cat_server.port, "/readyz") == (200, "ok\n")
    rl = simple_rl()
    assert cat_server.evaluate(rl).resource_list == rl      # gRPC still works alongside
    code, body = curl(cat_server.port, "/nope")
    assert code == 404 and "/healthz, /readyz and /metrics" in body
    code, _ = curl(cat_server.port, "/healthz", "-X", "POST")
    assert code == 405
    code, body = curl(cat_server.port, "/healthz", "-I")
    assert code == 200


def test_metrics_count_calls_exits_and_bytes(start_server):
    srv = start_server(["cat"])
    code, before = curl(srv.port, "/metrics")
    assert code == 200
    rl = simple_rl()
    for _ in range(3):
        srv.evaluate(rl)
    srv.evaluate_error(b"not a resource list")
    code, text = curl(srv.port, "/metrics")
    assert code == 200
    labels = dict(grpc_type="unary", grpc_service="evaluator.FunctionEvaluator", grpc_method="EvaluateFunction")
    assert series(text, "grpc_server_started_total", **labels) == 4
    assert series(text, "grpc_server_handled_total", **labels, grpc_code="OK") == 3
    assert series(text, "grpc_server_handled_total", **labels, grpc_code="Internal") == 1
    assert series(text, "grpc_server_handling_seconds_count", **labels) == 4
    assert series(text, "grpc_server_handling_seconds_bucket", **labels, le="+Inf") == 4
    assert series(text, "krm_function_exits_total", code="0", signal="") == 4   # cat exits 0 each time
    assert series(text, "krm_calls_in_flight") == 0
    # none running; pre-started ones waiting for a call (--prespawn) are processes too
    assert series(text, "krm_function_processes") == series(text, "krm_prespawn_waiting")
    assert series(text, "krm_received_bytes_total") > 3 * len(rl)
    assert series(text, "krm_sent_bytes_total") > 3 * len(rl)
    assert "# TYPE grpc_server_handling_seconds histogram" in text


def test_metrics_show_calls_in_flight_and_children(start_server, tmp_path):
    srv = start_server(["sh", fn("slow-cat.sh"), "3", str(tmp_path / "pid")])
    fut = srv.evaluate_callable().future(srv.pb.evaluator.EvaluateFunctionRequest(resource_list=simple_rl()),
                                         timeout=20)
    wait_pidfile(str(tmp_path / "pid"), count=1)
    _, text = curl(srv.port, "/metrics")
    assert series(text, "krm_calls_in_flight") == 1
    assert series(text, "krm_function_processes") >= 1
    fut.cancel()
    labels = dict(grpc_type="unary", grpc_service="evaluator.FunctionEvaluator", grpc_method="EvaluateFunction")

    def killed(text):
        return series(text, "krm_function_exits_total", code="", signal=str(int(signal.SIGTERM))) + \
            series(text, "krm_function_exits_total", code="", signal=str(int(signal.SIGKILL)))

    # the call ends at the cancel; its function is reaped a moment later
    deadline = time.monotonic() + 5
    while True:
        _, text = curl(srv.port, "/metrics")
        if series(text, "grpc_server_handled_total", **labels, grpc_code="Canceled") == 1 and killed(text) >= 1:
            break
        assert time.monotonic() < deadline, text
        time.sleep(0.05)


def test_readyz_is_503_while_draining(start_server, tmp_path):
    """A probe connection accepted before SIGTERM is answered 503 while the
    server drains (new connections are refused: the listener is closed)."""
    srv = start_server(["sh", fn("slow-cat.sh"), "2", str(tmp_path / "pid")])
    probe = socket.create_connection(("127.0.0.1", srv.port))
    fut = srv.evaluate_callable().future(srv.pb.evaluator.EvaluateFunctionRequest(resource_list=simple_rl()),
                                         timeout=20)
    wait_pidfile(str(tmp_path / "pid"), count=1)
    srv.terminate()
    deadline = time.monotonic() + 5
    while "Shutting down server" not in srv.stderr():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    probe.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    probe.settimeout(5)
    reply = b""
    while chunk := probe.recv(4096):
        reply += chunk
    probe.close()
    assert reply.startswith(b"HTTP/1.1 503 "), reply
    assert b"Connection: close" in reply and reply.endswith(b"draining\n")
    assert fut.result().resource_list == simple_rl()          # the call in flight still completes
    assert srv.wait(10) == 0


def test_oversized_and_malformed_http1_requests(cat_server):
    s = socket.create_connection(("127.0.0.1", cat_server.port))
    s.sendall(b"GET /healthz HTTP/1.1\r\n" + b"X-Big: " + b"a" * 9000 + b"\r\n\r\n")
    s.settimeout(5)
    reply = b""
    while chunk := s.recv(4096):
        reply += chunk
    s.close()
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:100]

    s = socket.create_connection(("127.0.0.1", cat_server.port))
    s.sendall(b"GET healthz\r\n\r\n")
    s.settimeout(5)
    reply = s.recv(4096)
    s.close()
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert cat_server.check().status == cat_server.pb.health.HealthCheckResponse.SERVING


def test_runner_serve_answers_http1_too(start_server, tmp_path):
    from krmtest import CLIENT_BIN
    srv = start_server([], binary=CLIENT_BIN, argv=["serve", "--port", "{port}", "--disable-runtimes=pod"])
    assert curl(srv.port, "/readyz") == (200, "ok\n")
    err = srv.evaluate_error(simple_rl(), image="x:v1")
    assert err.code() == grpc.StatusCode.NOT_FOUND
    _, text = curl(srv.port, "/metrics")
    assert series(text, "grpc_server_handled_total", grpc_type="unary", grpc_service="evaluator.FunctionEvaluator",
                  grpc_method="EvaluateFunction", grpc_code="NotFound") == 1


def test_a_calls_life_reads_as_named_phases_at_verbosity_4(start_server):
    """Each step of a call and of its handler is one line at verbosity 4:
    answered, failed by the function, and refused before any response."""
    srv = start_server(["cat"], options=["--verbosity", "4"])
    rl = simple_rl()
    assert srv.evaluate(rl).resource_list == rl
    srv.evaluate_error(b"not a resource list")
    refused = srv.channel().unary_unary("/evaluator.FunctionEvaluator/Nope")
    with pytest.raises(grpc.RpcError) as e:
        refused(b"", timeout=5)
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    want = [
        "/evaluator.FunctionEvaluator/EvaluateFunction: HEADERS -> READING",
        "/evaluator.FunctionEvaluator/EvaluateFunction: handler IDLE -> RUNNING",
        "/evaluator.FunctionEvaluator/EvaluateFunction: READING -> FINISHED",
        "/evaluator.FunctionEvaluator/EvaluateFunction: handler RUNNING -> ENDED",
        # the function's output refused: a status decided before any response
        "/evaluator.FunctionEvaluator/EvaluateFunction: READING -> TRAILERS_ONLY",
        "/evaluator.FunctionEvaluator/Nope: HEADERS -> TRAILERS_ONLY",
    ]
    srv.assert_logged(want)
