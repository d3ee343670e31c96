"""Calls run in parallel, each with its own function process."""

import time

import grpc
import pytest

from krmtest import fn, simple_rl


@pytest.mark.serial   # 16 x 0.3 s overlapped in under 4 s of wall clock
def test_16_concurrent_calls_get_their_own_output(start_server):
    # Each call sleeps a little so they really overlap.
    srv = start_server(["sh", "-c", "sleep 0.3; exec sed 's/ns-in/ns-out/'"])
    ch = srv.channel()
    call = srv.evaluate_callable(ch)
    req = srv.pb.evaluator.EvaluateFunctionRequest
    inputs = [simple_rl(f"item-{i:02d}", "ns-in") for i in range(16)]
    t0 = time.monotonic()
    futures = [call.future(req(resource_list=rl, image=f"img-{i}"), timeout=30) for i, rl in enumerate(inputs)]
    outputs = [f.result() for f in futures]
    elapsed = time.monotonic() - t0
    for rl, out in zip(inputs, outputs):
        assert out.resource_list == rl.replace(b"ns-in", b"ns-out")
    # 16 sequential calls would take >= 4.8 s
    assert elapsed < 4.0, f"calls did not run in parallel ({elapsed:.1f}s)"


def test_more_than_100_concurrent_calls(start_server):
    srv = start_server(["cat"])
    ch = srv.channel()
    call = srv.evaluate_callable(ch)
    req = srv.pb.evaluator.EvaluateFunctionRequest
    inputs = [simple_rl(f"many-{i:03d}") for i in range(120)]
    futures = [call.future(req(resource_list=rl), timeout=60) for rl in inputs]
    failures = []
    for rl, f in zip(inputs, futures):
        try:
            out = f.result()
            if out.resource_list != rl:
                failures.append(("wrong output", rl[:80], out.resource_list[:80]))
        except grpc.RpcError as e:
            failures.append((e.code(), e.details()))
    assert not failures, failures[:5]


def test_concurrent_calls_over_several_connections(start_server):
    srv = start_server([fn("search-replace.sh"), "from", "to"])
    req = srv.pb.evaluator.EvaluateFunctionRequest
    futures = []
    for c in range(4):
        call = srv.evaluate_callable(srv.channel("127.0.0.1" if c % 2 else "localhost"))
        for i in range(8):
            rl = simple_rl(f"conn{c}-call{i}", "from")
            futures.append((rl, call.future(req(resource_list=rl), timeout=30)))
    for rl, f in futures:
        assert f.result().resource_list == rl.replace(b"from", b"to")
