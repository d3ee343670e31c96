"""wrapper-server command line: flags, usage errors, help/version, busy port,
and a server started without an entrypoint."""

import socket

import grpc
import pytest

from krmtest import SERVER_BIN, free_port, run_cli, simple_rl, tcp_state


def assert_usage_error(args, port):
    res = run_cli([SERVER_BIN, *args], timeout=10)
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode == 2, f"exit {res.returncode}, stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"want exactly one line on stderr, got {err!r}"
    assert lines[0].strip(), "the error line is empty"
    assert tcp_state(port) == "refused", "something is listening on the port after a usage error"


@pytest.mark.parametrize(
    "make_args",
    [
        pytest.param(lambda p: ["--port", str(p)], id="no-double-dash"),
        pytest.param(lambda p: ["--port", str(p), "--bogus", "--", "cat"], id="unknown-flag"),
        pytest.param(lambda p: ["--port", str(p), "--bogus=1", "--", "cat"], id="unknown-flag-with-value"),
        pytest.param(lambda p: ["--port", "abc", "--", "cat"], id="port-not-a-number"),
        pytest.param(lambda p: ["--port=abc", "--", "cat"], id="port-not-a-number-eq"),
        pytest.param(lambda p: ["--port", "70000", "--", "cat"], id="port-out-of-range"),
        pytest.param(lambda p: ["--port", str(p), "--max-request-body-size", "-1", "--", "cat"], id="negative-max-size"),
        pytest.param(lambda p: ["--port", str(p), "--max-request-body-size=12abc", "--", "cat"], id="max-size-garbage"),
        pytest.param(lambda p: ["--port", str(p), "--verbosity", "loud", "--", "cat"], id="verbosity-not-a-number"),
        pytest.param(lambda p: ["--port", str(p), "--shutdown-grace", "soon", "--", "cat"], id="bad-shutdown-grace"),
        pytest.param(lambda p: ["--port"], id="missing-port-value"),
        pytest.param(lambda p: ["--port", str(p), "--max-concurrent-functions", "0", "--", "cat"], id="zero-functions"),
        pytest.param(lambda p: ["--port", str(p), "--stalled-send-timeout", "0", "--", "cat"], id="zero-stall"),
        pytest.param(lambda p: ["--port", str(p), "--max-request-body-size", "1000",
                                "--max-pending-request-bytes-per-connection", "999", "--", "cat"],
                     id="budget-below-one-message"),
        pytest.param(lambda p: ["--port", str(p), "--max-pending-request-bytes", "10",
                                "--max-pending-request-bytes-per-connection", "20", "--", "cat"],
                     id="total-budget-below-connection-budget"),
    ],
)
def test_usage_errors_exit_2_with_one_line(binaries, make_args):
    port = free_port()
    assert_usage_error(make_args(port), port)


def test_help_exits_0_with_usage_on_stdout(binaries):
    res = run_cli([SERVER_BIN, "--help"])
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode()
    assert "usage" in out.lower(), out
    for flag in ("--port", "--max-request-body-size", "--verbosity", "--shutdown-grace"):
        assert flag in out, f"{flag} not documented in --help:\n{out}"


def test_version_exits_0(binaries):
    res = run_cli([SERVER_BIN, "--version"])
    assert res.returncode == 0, res.stderr
    assert (res.stdout + res.stderr).strip(), "--version printed nothing"


def test_busy_port_fails_naming_the_port(binaries):
    holder = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    holder.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    holder.bind(("::", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        res = run_cli([SERVER_BIN, "--port", str(port), "--", "cat"], timeout=10)
    finally:
        holder.close()
    err = res.stderr.decode("utf-8", "replace")
    assert res.returncode != 0, f"server started on a busy port; stderr: {err!r}"
    assert str(port) in err, f"message does not name port {port}: {err!r}"


@pytest.mark.parametrize("style", ["separate", "equals"])
def test_flag_value_styles(start_server, style):
    """`--flag value` and `--flag=value` both work (checked through the
    effect of --max-request-body-size)."""
    if style == "separate":
        argv = ["--port", "{port}", "--max-request-body-size", "1000", "--verbosity", "3",
                "--shutdown-grace", "2s", "--", "cat"]
    else:
        argv = ["--port={port}", "--max-request-body-size=1000", "--verbosity=3",
                "--shutdown-grace=2s", "--", "cat"]
    srv = start_server(None, argv=argv)
    rl = simple_rl()
    assert srv.evaluate(rl).resource_list == rl
    big = simple_rl(extra="  pad: " + "x" * 1200 + "\n")
    err = srv.evaluate_error(big)
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
    assert "vs. 1000)" in err.details(), err.details()


def test_entrypoint_args_are_passed_verbatim(start_server):
    """Everything after `--` is the function argv, including things that look
    like flags of the server."""
    srv = start_server(["sh", "-c", 'cat; printf "%s|" "$@" >&2', "fn", "--port", "1", "a b", ""])
    rl = simple_rl()
    resp = srv.evaluate(rl)
    assert resp.resource_list == rl
    assert resp.log == b"--port|1|a b||"


def test_empty_entrypoint_returns_internal(start_server):
    """Nothing after "--": the server starts, says NOT_SERVING (its pod must
    not turn Ready) and every call fails with INTERNAL saying why."""
    srv = start_server([], ready=False)
    srv.wait_ready(status=srv.pb.health.HealthCheckResponse.NOT_SERVING)
    for _ in range(2):
        err = srv.evaluate_error(simple_rl(), image="some-image")
        assert err.code() == grpc.StatusCode.INTERNAL, err
        assert "no entrypoint" in err.details(), err.details()
    assert srv.check("").status == srv.pb.health.HealthCheckResponse.NOT_SERVING
    assert srv.proc.poll() is None
