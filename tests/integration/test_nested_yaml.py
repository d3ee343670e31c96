"""Deeply nested YAML (issue 13, item 8): what it costs to read it.

libyaml spends time in proportion to the flow depth ([...] and {...}) on
every token it scans, so nesting was an attack on every YAML reader: a
4.8 MiB function output of [[[...]]] 999 deep held the server's event loop
for 4.5 s, runner-client took 15 s to read a 195 KiB input and 412 MiB of
memory for a 4 MiB one. Flow nesting now stops at 128 levels wherever YAML
is read (lib/krm/yaml_depth.h), and the server judges an output in steps, so
Health/Check is answered while it does.
"""

import concurrent.futures
import resource
import subprocess
import time

import grpc
import pytest

from krmtest import CLIENT_BIN, DEFAULT_MAX, parse_msg, run_cli

FLOW_PROBLEM = "flow collections ([...] or {...}) nested more than 128 deep"
HEADER = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
SIZE = int(4.8 * 1024 * 1024)


def nested_items(depth, size=SIZE):
    """A ResourceList whose items are `- a: [[[...1,1,1...]]]` nested `depth`
    deep, repeated to `size` bytes: every token libyaml scans inside them
    costs it time in proportion to the depth."""
    item = b"- a: " + b"[" * depth + b"1," * 2000 + b"1" + b"]" * depth + b"\n"
    n = (size - len(HEADER)) // len(item)
    return HEADER + item * n, n


def hammer_health(srv, until, latencies):
    """Health/Check on its own connection, back to back, until `until` is
    done; every answer's latency goes into `latencies`."""
    ch = srv.channel()
    while not until.done():
        t0 = time.monotonic()
        resp = srv.check("", timeout=30, channel=ch)
        latencies.append(time.monotonic() - t0)
        assert resp.status == srv.pb.health.HealthCheckResponse.SERVING


def evaluate_while_checking(srv, image):
    latencies = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        started = time.monotonic()
        call = pool.submit(srv.evaluate, b"kind: ResourceList\n", image, 60)
        hammer_health(srv, call, latencies)
        try:
            result = call.result()
        except grpc.RpcError as e:
            result = e
        took = time.monotonic() - started
    return result, latencies, took


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("nested")
    files = {}
    for name, depth in (("limit", 128), ("attack", 990)):
        data, n = nested_items(depth)
        path = d / f"{name}.yaml"
        path.write_bytes(data)
        files[name] = (str(path), data, n)
    return files


def start_printer(start_server, path, options=()):
    """A wrapper-server whose function reads its input and prints `path`."""
    return start_server(["/bin/sh", "-c", f'cat >/dev/null; exec cat "{path}"'], options=options)


@pytest.mark.serial   # every Health/Check within 1 s while a second of CPU is spent judging
def test_health_is_answered_while_the_deepest_allowed_output_is_judged(start_server, outputs):
    path, data, n = outputs["limit"]
    srv = start_printer(start_server, path)
    result, latencies, took = evaluate_while_checking(srv, "nested:128")
    assert not isinstance(result, grpc.RpcError), f"{result.code()}: {result.details()[:500]}"
    assert result.resource_list == data
    # Judging 4.8 MiB at the limit takes libyaml about a second of CPU; a
    # check now waits for one step of it (a few ms), before for all of it.
    assert len(latencies) >= 5, f"only {len(latencies)} checks in {took:.2f} s"
    assert max(latencies) < 1.0, f"slowest Health/Check {max(latencies):.3f} s of {len(latencies)}"


@pytest.mark.serial   # every Health/Check within 1 s
def test_the_attack_output_is_refused_at_once_naming_the_limit(start_server, outputs):
    path, data, n = outputs["attack"]
    srv = start_printer(start_server, path)
    result, latencies, took = evaluate_while_checking(srv, "nested:990")
    assert max(latencies, default=0) < 1.0, f"slowest Health/Check {max(latencies):.3f} s"
    assert took < 5, f"the call took {took:.2f} s"
    assert isinstance(result, grpc.RpcError), "a 990-deep output was accepted"
    assert result.code() == grpc.StatusCode.INTERNAL
    assert result.details() == parse_msg(
        "nested:990", "",
        f"failed to parse input bytes: failed to parse input bytes: yaml: line 4: {FLOW_PROBLEM}")


def test_a_deadline_passing_while_judging_cancels_the_judging(start_server, outputs):
    """The judging is stopped half way (its timer cancelled, its state freed:
    the ASan build checks) and the server goes on as before."""
    path, data, n = outputs["limit"]
    srv = start_printer(start_server, path, options=["--verbosity", "3"])
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as e:
        srv.evaluate(b"kind: ResourceList\n", "nested:128", timeout=0.3)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    # The server's own deadline and the client's reset (grpcio cancels at its
    # deadline too) race; either one cancels the call and its judging.
    while "deadline exceeded" not in srv.stderr() and "reset by the client" not in srv.stderr():
        assert time.monotonic() - started < 10, srv.describe()
        time.sleep(0.02)
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING
    assert srv.evaluate(b"kind: ResourceList\n", "nested:128", timeout=60).resource_list == data


def run_measured(args, timeout=30):
    """Runs a binary under /usr/bin/time; returns (CompletedProcess, seconds,
    peak RSS in KiB)."""
    t0 = time.monotonic()
    res = run_cli(["/usr/bin/time", "-f", "maxrss=%M", *args], timeout=timeout)
    took = time.monotonic() - t0
    line = [l for l in res.stderr.decode().splitlines() if l.startswith("maxrss=")][-1]
    return res, took, int(line.split("=")[1])


@pytest.mark.parametrize("size", [195 * 1024, 4 * 1024 * 1024])
def test_eval_refuses_a_deeply_nested_input_quickly(tmp_path, cat_server, size):
    half = size // 2
    deep = tmp_path / "deep.yaml"
    deep.write_bytes(b"[" * half + b"]" * half)
    res, took, rss_kib = run_measured(
        [CLIENT_BIN, "eval", "--addr", f"localhost:{cat_server.port}", str(deep)])
    assert took < 5, f"took {took:.2f} s (15 s before for 195 KiB)"
    # the input itself, read whole, and libyaml's buffers: no event list
    assert rss_kib < 64 * 1024, f"peak RSS {rss_kib} KiB (412 MiB before for 4 MiB)"
    assert res.returncode == 2, res.stderr   # as for any input it cannot read
    assert f"{deep}: YAML error at line 1, column 129: {FLOW_PROBLEM}".encode() in res.stderr, res.stderr


def test_serve_refuses_a_nested_function_config_quickly(tmp_path):
    config = tmp_path / "nested.yaml"
    config.write_bytes(
        b"apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\nmetadata:\n  name: x\n"
        b"status: " + b"{a: " * 50000 + b"}" * 50000 + b"\n")
    res, took, rss_kib = run_measured(
        [CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod", "--function-config",
         str(config)])
    assert took < 5, f"took {took:.2f} s (15 s before)"
    assert res.returncode == 2, res.stderr
    assert f"{config}: document 1: line 5, column {9 + 4 * 128}: {FLOW_PROBLEM}".encode() in res.stderr, res.stderr
