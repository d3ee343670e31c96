"""A deadline spent waiting for a function slot (issue 26, item 2): the
status says the call waited in the queue and never started, for how long,
and that --max-concurrent-functions bounds it; /metrics counts such calls
apart (krm_function_queue_deadlines_total). A call whose function ran when
its deadline passed says only "deadline exceeded", as before.

A gRPC client ends a call at its own deadline, as the server does at the
grpc-timeout it was sent, so which status it shows is a race; the call
here is curl's (HTTP/2, grpc-timeout 1S, no deadline of its own), which
prints the server's Trailers-Only status as it came."""

import re
import subprocess
import urllib.parse

from krmtest import EVALUATE, SLOW, simple_rl
from test_faults import wait_until
from test_hostile import evaluate_body
from test_observability import curl, series


def call_with_grpc_timeout(srv, tmp_path, rl, timeout):
    """(grpc-status, grpc-message) of an EvaluateFunction sent with
    grpc-timeout `timeout` and no client-side deadline."""
    body = tmp_path / "req.bin"
    body.write_bytes(evaluate_body(srv.pb, rl))
    r = subprocess.run(["curl", "-sS", "--http2-prior-knowledge", "--max-time", "20", "-D", "-",
                        "-o", "/dev/null", "-H", "content-type: application/grpc",
                        "-H", "te: trailers", "-H", f"grpc-timeout: {timeout}",
                        "--data-binary", f"@{body}", f"http://127.0.0.1:{srv.port}{EVALUATE}"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    fields = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    return int(fields["grpc-status"]), urllib.parse.unquote(fields.get("grpc-message", ""))


def test_deadline_in_the_queue_names_the_wait_and_the_flag(start_server, tmp_path):
    srv = start_server(["sh", "-c", "sleep 3; cat"],
                       options=["--max-concurrent-functions", "1", "--prespawn", "0"])
    call = srv.evaluate_callable()
    req = srv.pb.evaluator.EvaluateFunctionRequest
    running = call.future(req(resource_list=simple_rl("first"), image="img"), timeout=30)
    assert wait_until(lambda: series(curl(srv.port, "/metrics")[1], "krm_function_processes") == 1,
                      10), "the first call's function did not start"
    code, details = call_with_grpc_timeout(srv, tmp_path, simple_rl("second"), "1S")
    assert code == 4, (code, details)   # DEADLINE_EXCEEDED
    assert "grpc-timeout 1S" in details, details
    m = re.search(r"it waited ([0-9.]+) s in the queue for a function slot and never started",
                  details)
    assert m and 0.5 <= float(m.group(1)) <= 3.0 * SLOW, details
    assert "--max-concurrent-functions 1" in details, details
    assert running.result().resource_list == simple_rl("first")

    # a call whose function was running when its deadline passed: no queue
    code, details = call_with_grpc_timeout(srv, tmp_path, simple_rl("third"), "1S")
    assert code == 4 and "queue" not in details, details

    code, text = curl(srv.port, "/metrics")
    assert code == 200
    assert series(text, "krm_function_queue_deadlines_total") == 1
    assert series(text, "krm_function_calls_queued_total") == 1
