"""EvaluateFunction: running the entrypoint and classifying its outcome the
way Porch's Go wrapper-server does (status INTERNAL with Porch's messages)."""

import os
import socket
import time

import grpc
import pytest

from krmtest import (
    EMPTY_OUTPUT, fn, go_quote, parse_msg, results_msg, simple_rl,
)

IMAGE = "ghcr.io/example/fn:v1.2.3"

# The text fail-with-results.sh's results must render to (Results.Error():
# one line per result, joined by a blank line).
RESULTS_TEXT = "\n\n".join([
    "[error] apps/v1/Deployment/prod/web spec.replicas: replicas must be greater than zero",
    '[warning] v1/ConfigMap/settings: key "color" is deprecated',
    "[error] metadata.name: name is too long",
    "[info]: checked 1 object",
])


def sh(script, *args):
    return ["sh", "-c", script, "fn", *args]


def expect_internal(err, message):
    assert err.code() == grpc.StatusCode.INTERNAL, f"{err.code()}: {err.details()!r}"
    assert err.details() == message


# ------------------------------------------------------------------ success

def test_output_and_log_are_returned_byte_for_byte(cat_server):
    rl = (
        b"# leading comment\n"
        b"apiVersion: config.kubernetes.io/v1\n"
        b"kind:   ResourceList   \n"
        b"items:\n"
        b"- {apiVersion: v1, kind: ConfigMap, metadata: {name: c1}}   # flow style\n"
        b"- apiVersion: v1\n"
        b"  kind: Secret\n"
        b"  metadata:\n"
        b"    name: \"s\\u00e9\"\n"
        b"  data: {k: dmFsdWU=}"  # no final newline
    )
    resp = cat_server.evaluate(rl, image=IMAGE)
    assert resp.resource_list == rl
    assert resp.log == b""


def test_log_is_stderr_bytes_exactly(start_server):
    srv = start_server(sh(r'cat; printf "note: \303\251 \377 done\n\tindented\n" >&2'))
    rl = simple_rl()
    resp = srv.evaluate(rl, image=IMAGE)
    assert resp.resource_list == rl
    assert resp.log == b"note: \xc3\xa9 \xff done\n\tindented\n"


def test_absolute_path_entrypoint_with_args(start_server):
    """Porch's search-and-replace function, started by absolute path with two
    arguments."""
    srv = start_server([fn("search-replace.sh"), "old-ns", "new-ns"])
    rl = simple_rl("x", "old-ns")
    resp = srv.evaluate(rl, image=IMAGE)
    assert resp.resource_list == rl.replace(b"old-ns", b"new-ns")


def test_function_inherits_server_environment(start_server):
    env = dict(os.environ, KRM_TEST_VALUE="from-the-server-env")
    srv = start_server(sh('cat; printf "%s" "$KRM_TEST_VALUE" >&2'), env=env)
    resp = srv.evaluate(simple_rl(), image=IMAGE)
    assert resp.log == b"from-the-server-env"


def test_function_runs_in_server_working_directory(start_server, tmp_path):
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    srv = start_server(sh("cat; pwd >&2"), cwd=str(workdir))
    resp = srv.evaluate(simple_rl(), image=IMAGE)
    assert resp.log == f"{workdir}\n".encode()


def test_json_resource_list_output_is_accepted(start_server):
    out = '{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[]}'
    srv = start_server(sh(f"cat >/dev/null; printf '%s' '{out}'"))
    resp = srv.evaluate(simple_rl(), image=IMAGE)
    assert resp.resource_list == out.encode()


def test_empty_request_is_passed_to_the_function(start_server):
    """The wrapper does not validate its input: an empty resource_list is
    given to the function as empty stdin."""
    srv = start_server(sh('n=$(cat | sed -n "$="); cat <<EOF\nkind: ResourceList\nitems: []\nEOF\necho "lines=${n:-0}" >&2'))
    resp = srv.evaluate(b"", image=IMAGE)
    assert resp.resource_list == b"kind: ResourceList\nitems: []\n"
    assert resp.log == b"lines=0\n"


# ------------------------------------------------------- output not a ResourceList

def test_exit0_empty_stdout(start_server):
    srv = start_server(sh("cat >/dev/null"))
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, parse_msg(IMAGE, "", EMPTY_OUTPUT))


def test_exit0_wrong_kind(start_server):
    srv = start_server(sh("cat >/dev/null; printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: x\\n'; echo oops >&2"))
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, parse_msg(IMAGE, "oops\n", 'input was of unexpected kind "ConfigMap"; expected ResourceList'))


def test_exit0_two_documents(start_server):
    srv = start_server(sh("cat >/dev/null; printf 'kind: ResourceList\\n---\\nkind: ResourceList\\n'"))
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, parse_msg(IMAGE, "", "failed to parse input bytes: expected exactly one object, got 2"))


def test_nonzero_exit_with_unparsable_output(start_server):
    srv = start_server(sh("cat >/dev/null; echo 'something broke' >&2; exit 3"))
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, parse_msg(IMAGE, "something broke\n", EMPTY_OUTPUT))


def test_stderr_with_newlines_and_utf8_survives_exactly(start_server):
    srv = start_server(sh(
        r"""cat >/dev/null; printf 'línea 1 — ünïcödé ✓ 😀\n\tTab%%25 and %%0A literal\r\nlast' >&2; exit 7"""
    ))
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    stderr = "línea 1 — ünïcödé ✓ 😀\n\tTab%25 and %0A literal\r\nlast"
    expect_internal(err, parse_msg(IMAGE, stderr, EMPTY_OUTPUT))


def test_invalid_utf8_in_stderr_becomes_replacement_characters(start_server):
    """grpc-message must be valid UTF-8 (porch-compat.md §3). Porch's Go
    server gets this from grpc-go's encodeGrpcMessage, which replaces every
    byte that is not part of valid UTF-8 with U+FFFD. (grpcio decodes an
    invalid message as Latin-1, which would also garble the valid "é".)"""
    srv = start_server(sh(r"cat >/dev/null; printf 'caf\303\251 \377\376 bad \303(\n' >&2; exit 1"))
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, parse_msg(IMAGE, "café \ufffd\ufffd bad \ufffd(\n", EMPTY_OUTPUT))


# ------------------------------------------------------- structured results

def test_nonzero_exit_with_structured_results(start_server):
    srv = start_server([fn("fail-with-results.sh")])
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, results_msg(IMAGE, RESULTS_TEXT, "validation failed\n"))


def test_nonzero_exit_other_status_with_structured_results(start_server):
    srv = start_server([fn("fail-with-results.sh"), "42"])
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, results_msg(IMAGE, RESULTS_TEXT, "validation failed\n"))


def test_killed_by_signal_after_valid_output(start_server):
    srv = start_server(sh("cat; kill -9 $$"))
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, results_msg(IMAGE, "", ""))


def test_exit0_with_error_results_is_ok_and_logged(start_server):
    srv = start_server([fn("fail-with-results.sh"), "0"])
    resp = srv.evaluate(simple_rl(), image=IMAGE)
    assert resp.resource_list.startswith(b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n")
    assert b"replicas must be greater than zero" in resp.resource_list
    assert resp.log == b"validation failed\n"
    deadline = time.monotonic() + 2
    while "failed to evaluate function" not in srv.stderr() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [l for l in srv.stderr().splitlines() if "failed to evaluate function" in l]
    assert lines, f"no warning logged; server stderr:\n{srv.stderr()}"
    assert go_quote(IMAGE) in lines[0], lines[0]


# ------------------------------------------------------- cannot start

def readyz(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = b""
    while chunk := s.recv(4096):
        reply += chunk
    s.close()
    return reply.decode("utf-8", "replace")


def test_entrypoint_not_found(start_server):
    """A function that cannot run: the server says so at start and in health
    (NOT_SERVING, /readyz 503 with the reason: unlike Porch's server, which
    reports SERVING), so its pod never turns Ready; calls fail as Porch's."""
    not_serving = 2   # HealthCheckResponse.NOT_SERVING
    srv = start_server(["no-such-krm-function-xyz", "arg"], ready=False)
    srv.wait_ready(status=not_serving)
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(
        err,
        f'Failed to execute function {go_quote(IMAGE)}: exec: "no-such-krm-function-xyz": '
        "executable file not found in $PATH ()",
    )
    assert srv.check("").status == srv.pb.health.HealthCheckResponse.NOT_SERVING
    assert srv.check("evaluator.FunctionEvaluator").status == srv.pb.health.HealthCheckResponse.NOT_SERVING
    reply = readyz(srv.port)
    assert reply.startswith("HTTP/1.1 503 ") and 'not ready: exec: "no-such-krm-function-xyz": ' \
        "executable file not found in $PATH" in reply, reply
    assert "the function cannot be run" in srv.stderr()


def test_entrypoint_not_executable(start_server, tmp_path):
    path = tmp_path / "not-executable.sh"
    path.write_text("#!/bin/sh\ncat\n")
    path.chmod(0o644)
    srv = start_server([str(path)], ready=False)
    srv.wait_ready(status=srv.pb.health.HealthCheckResponse.NOT_SERVING)
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    expect_internal(err, f"Failed to execute function {go_quote(IMAGE)}: fork/exec {path}: permission denied ()")
    assert f"not ready: fork/exec {path}: permission denied" in readyz(srv.port)


# ------------------------------------------------------- image quoting

@pytest.mark.parametrize("image", [
    "plain",
    "",
    'quo"te\\back',
    "tab\there\nnewline",
    "ünïcode/✓:1",
])
def test_image_is_go_quoted(start_server, image):
    srv = start_server(sh("cat >/dev/null; exit 1"))
    err = srv.evaluate_error(simple_rl(), image=image)
    expect_internal(err, parse_msg(image, "", EMPTY_OUTPUT))


# ------------------------------------------------------- very long messages

def test_very_long_message_is_truncated(start_server, tmp_path):
    big = tmp_path / "stderr.txt"
    line = "e" * 99 + "\n"
    big.write_text(line * 1024)  # 100 KiB
    srv = start_server(sh('cat >/dev/null; cat "$1" >&2; exit 1', str(big)))
    # A default client (default metadata limits): the server must keep the
    # status message small enough to be delivered.
    ch = grpc.insecure_channel(f"localhost:{srv.port}", options=[("grpc.use_local_subchannel_pool", 1)])
    srv.channels.append(ch)
    err = srv.evaluate_error(simple_rl(), image=IMAGE, channel=ch)
    assert err.code() == grpc.StatusCode.INTERNAL, f"{err.code()}: {err.details()[:500]!r}"
    details = err.details()
    prefix = f"failed to parse the output of function {go_quote(IMAGE)} with stderr '"
    assert details.startswith(prefix), details[:400]
    assert "e" * 99 in details, "none of stderr is kept"
    assert "truncated" in details
    assert len(details.encode()) < 8192, f"message still {len(details.encode())} bytes"
    assert srv.check("").status == srv.pb.health.HealthCheckResponse.SERVING
