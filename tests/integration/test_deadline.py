"""Deadlines, client cancellation and lost connections kill the function and
everything it started."""

import time

import grpc
import pytest

from krmtest import fn, simple_rl, wait_pidfile, wait_processes_gone

HANG = simple_rl("hang", extra="  hang: true\n")


@pytest.fixture
def hang_server(start_server, tmp_path):
    pidfile = tmp_path / "pids"
    srv = start_server([fn("hang.sh"), str(pidfile)])
    srv.pidfile = str(pidfile)
    return srv


def assert_all_gone(srv, pids):
    survivors = wait_processes_gone(pids, srv.pid, timeout=3.0)
    assert not survivors, f"still present (pid, state, ppid): {survivors}; server pid {srv.pid}"


def assert_still_serving(srv):
    rl = simple_rl("still-serving")
    assert srv.evaluate(rl, timeout=10).resource_list == rl


def test_deadline_exceeded_kills_function_and_children(hang_server):
    srv = hang_server
    t0 = time.monotonic()
    err = srv.evaluate_error(HANG, image="hang", timeout=1)
    assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED, f"{err.code()}: {err.details()}"
    assert time.monotonic() - t0 < 2.5
    pids = wait_pidfile(srv.pidfile)
    assert_all_gone(srv, pids)
    assert_still_serving(srv)


def test_client_cancel_kills_function_and_children(hang_server):
    srv = hang_server
    call = srv.evaluate_callable()
    fut = call.future(srv.pb.evaluator.EvaluateFunctionRequest(resource_list=HANG, image="hang"), timeout=30)
    pids = wait_pidfile(srv.pidfile)
    assert fut.cancel()
    with pytest.raises(grpc.FutureCancelledError):
        fut.result()
    assert_all_gone(srv, pids)
    assert_still_serving(srv)


def test_closed_connection_kills_function_and_children(hang_server):
    srv = hang_server
    ch = srv.channel()
    call = srv.evaluate_callable(ch)
    fut = call.future(srv.pb.evaluator.EvaluateFunctionRequest(resource_list=HANG, image="hang"), timeout=30)
    pids = wait_pidfile(srv.pidfile)
    ch.close()
    with pytest.raises((grpc.RpcError, grpc.FutureCancelledError)):
        fut.result()
    assert_all_gone(srv, pids)
    assert_still_serving(srv)
