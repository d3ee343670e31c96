"""Graceful shutdown on SIGTERM: drain in-flight calls, report NOT_SERVING,
close the listener, exit 0; --shutdown-grace bounds the wait."""

import os
import signal
import threading
import time

import grpc

from krmtest import (
    HEALTH_WATCH, fn, ipv6_loopback_available, simple_rl, tcp_state, wait_pidfile,
    wait_processes_gone,
)


class WatchReader:
    def __init__(self, srv, service=""):
        pb = srv.pb
        call = srv.channel().unary_stream(
            HEALTH_WATCH,
            request_serializer=pb.health.HealthCheckRequest.SerializeToString,
            response_deserializer=pb.health.HealthCheckResponse.FromString,
        )
        self.stream = call(pb.health.HealthCheckRequest(service=service), timeout=30)
        self.messages = []
        self.end = None
        self.cond = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

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


def wait_file(path, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} not created"
        time.sleep(0.02)


def test_sigterm_drains_in_flight_call(start_server, tmp_path):
    started = str(tmp_path / "started")
    srv = start_server([fn("slow-cat.sh"), "1.5", started])
    health = srv.pb.health.HealthCheckResponse

    watcher = WatchReader(srv)
    assert watcher.wait_for(lambda w: w.messages, 5), "Watch sent nothing"
    assert watcher.messages[0] == health.SERVING

    rl = simple_rl("drained")
    call = srv.evaluate_callable(srv.channel())
    fut = call.future(srv.pb.evaluator.EvaluateFunctionRequest(resource_list=rl, image="slow"), timeout=20)
    wait_file(started)

    srv.terminate(signal.SIGTERM)

    # Health watchers learn that the server is going away.
    assert watcher.wait_for(lambda w: health.NOT_SERVING in w.messages, 2), (
        f"no NOT_SERVING on Watch: {watcher.messages}, end={watcher.end}"
    )

    # The listener closes: new connections are refused while the call still runs.
    deadline = time.monotonic() + 1.0
    hosts = ["127.0.0.1"] + (["::1"] if ipv6_loopback_available() else [])
    while True:
        states = {h: tcp_state(srv.port, h) for h in hosts}
        if all(s == "refused" for s in states.values()):
            break
        assert time.monotonic() < deadline, f"listener still accepting after SIGTERM: {states}"
        time.sleep(0.02)
    assert not fut.done(), "the slow call finished before the listener closed (test timing)"

    # The in-flight call completes normally.
    resp = fut.result()
    assert resp.resource_list == rl
    t_done = time.monotonic()

    rc = srv.wait(timeout=5)
    assert rc == 0, f"exit code {rc}; {srv.describe()}"
    assert time.monotonic() - t_done < 3, "server took too long to exit after the last call"
    assert watcher.wait_for(lambda w: w.end is not None, 5), "Watch stream never ended"


def test_sigterm_with_idle_connections_exits_promptly(start_server):
    srv = start_server(["cat"])
    channels = [srv.channel(), srv.channel("127.0.0.1")]
    for ch in channels:
        rl = simple_rl("idle")
        assert srv.evaluate(rl, channel=ch).resource_list == rl
    t0 = time.monotonic()
    srv.terminate(signal.SIGTERM)
    rc = srv.wait(timeout=5)
    assert rc == 0, f"exit code {rc}; {srv.describe()}"
    assert time.monotonic() - t0 < 2.5


def test_sigint_is_graceful_too(start_server):
    srv = start_server(["cat"])
    rl = simple_rl()
    assert srv.evaluate(rl).resource_list == rl
    srv.terminate(signal.SIGINT)
    assert srv.wait(timeout=5) == 0, srv.describe()


def test_shutdown_grace_kills_hanging_function(start_server, tmp_path):
    pidfile = str(tmp_path / "pids")
    srv = start_server([fn("hang.sh"), pidfile], options=["--shutdown-grace", "1s"])
    hang = simple_rl("hang", extra="  hang: true\n")
    call = srv.evaluate_callable(srv.channel())
    fut = call.future(srv.pb.evaluator.EvaluateFunctionRequest(resource_list=hang, image="hang"), timeout=30)
    pids = wait_pidfile(pidfile)

    t0 = time.monotonic()
    srv.terminate(signal.SIGTERM)
    rc = srv.wait(timeout=6)
    elapsed = time.monotonic() - t0
    assert rc == 0, f"exit code {rc} after {elapsed:.1f}s; {srv.describe()}"
    assert elapsed < 3.0, f"server needed {elapsed:.1f}s with --shutdown-grace 1s"

    err = fut.exception(timeout=5)
    assert err is not None, "the hanging call succeeded"
    assert err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL), (
        f"{err.code()}: {err.details()}"
    )
    survivors = wait_processes_gone(pids, srv.pid, timeout=3.0)
    assert not survivors, f"function processes survived the server: {survivors}"
