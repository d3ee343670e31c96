"""grpc.health.v1.Health: Check, List and Watch."""

import threading
import time

import grpc
import pytest

from krmtest import HEALTH_LIST, HEALTH_WATCH, simple_rl

SERVICES = ["", "evaluator.FunctionEvaluator", "grpc.health.v1.Health"]


@pytest.mark.parametrize("service", SERVICES)
def test_check_known_services_serving(cat_server, service):
    resp = cat_server.check(service)
    assert resp.status == cat_server.pb.health.HealthCheckResponse.SERVING


@pytest.mark.parametrize("service", ["nope", "evaluator.FunctionEvaluator/EvaluateFunction", "EVALUATOR.FUNCTIONEVALUATOR", " "])
def test_check_unknown_service_not_found(cat_server, service):
    with pytest.raises(grpc.RpcError) as ei:
        cat_server.check(service)
    assert ei.value.code() == grpc.StatusCode.NOT_FOUND, ei.value.details()


def test_check_empty_request_body(cat_server, pb):
    """An empty request message (service "" omitted) is a whole-server check."""
    call = cat_server.channel().unary_unary(
        "/grpc.health.v1.Health/Check", response_deserializer=pb.health.HealthCheckResponse.FromString
    )
    assert call(b"", timeout=5).status == pb.health.HealthCheckResponse.SERVING


def test_list(cat_server, pb):
    call = cat_server.channel().unary_unary(
        HEALTH_LIST,
        request_serializer=pb.health.HealthListRequest.SerializeToString,
        response_deserializer=pb.health.HealthListResponse.FromString,
    )
    resp = call(pb.health.HealthListRequest(), timeout=5)
    got = {name: st.status for name, st in resp.statuses.items()}
    assert got == {name: pb.health.HealthCheckResponse.SERVING for name in SERVICES}


def watch(srv, service, channel=None, timeout=30):
    pb = srv.pb
    ch = channel or srv.channel()
    call = ch.unary_stream(
        HEALTH_WATCH,
        request_serializer=pb.health.HealthCheckRequest.SerializeToString,
        response_deserializer=pb.health.HealthCheckResponse.FromString,
    )
    return call(pb.health.HealthCheckRequest(service=service), timeout=timeout)


class StreamReader:
    """Reads a server stream in a thread, recording messages and the end."""

    def __init__(self, stream):
        self.stream = stream
        self.messages = []
        self.end = None
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for msg in self.stream:
                with self.cond:
                    self.messages.append(msg.status)
                    self.cond.notify_all()
            end = "ok"
        except grpc.RpcError as e:
            end = e.code()
        with self.cond:
            self.end = end
            self.cond.notify_all()

    def wait_for(self, pred, timeout):
        with self.cond:
            return self.cond.wait_for(lambda: pred(self), timeout)


def test_watch_sends_serving_and_stays_open(cat_server):
    stream = watch(cat_server, "")
    r = StreamReader(stream)
    assert r.wait_for(lambda r: r.messages or r.end, 5), "no first message"
    assert r.messages[:1] == [cat_server.pb.health.HealthCheckResponse.SERVING], (r.messages, r.end)
    time.sleep(0.5)
    assert r.messages == [cat_server.pb.health.HealthCheckResponse.SERVING], r.messages
    assert r.end is None, f"stream ended: {r.end}"
    stream.cancel()
    assert r.wait_for(lambda r: r.end is not None, 5)
    assert r.end == grpc.StatusCode.CANCELLED
    # the server is unaffected by the cancelled stream
    assert cat_server.check("").status == cat_server.pb.health.HealthCheckResponse.SERVING


@pytest.mark.parametrize("service", ["evaluator.FunctionEvaluator", "grpc.health.v1.Health"])
def test_watch_known_service(cat_server, service):
    stream = watch(cat_server, service)
    first = next(stream)
    assert first.status == cat_server.pb.health.HealthCheckResponse.SERVING
    stream.cancel()


def test_watch_unknown_service(cat_server):
    stream = watch(cat_server, "nope")
    r = StreamReader(stream)
    assert r.wait_for(lambda r: r.messages or r.end, 5), "no first message"
    assert r.messages[:1] == [cat_server.pb.health.HealthCheckResponse.SERVICE_UNKNOWN], (r.messages, r.end)
    stream.cancel()
    assert r.wait_for(lambda r: r.end is not None, 5)


@pytest.mark.serial   # each check within 0.5 s while 10 functions run
def test_many_health_checks_while_functions_run(start_server):
    """Health answers promptly while calls are in flight (probes time out after 1 s)."""
    srv = start_server(["sh", "-c", "sleep 1; cat"])
    call = srv.evaluate_callable()
    req = srv.pb.evaluator.EvaluateFunctionRequest
    futs = [call.future(req(resource_list=simple_rl(f"busy-{i}")), timeout=30) for i in range(10)]
    ch = srv.channel("127.0.0.1")
    for _ in range(5):
        t0 = time.monotonic()
        assert srv.check("", timeout=1, channel=ch).status == srv.pb.health.HealthCheckResponse.SERVING
        assert time.monotonic() - t0 < 0.5
        time.sleep(0.05)
    for f in futs:
        f.result()
