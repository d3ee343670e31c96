"""`runner-client serve`'s GET /debug/pods and its pod runtime's /metrics
(HTTP/1.1 on the gRPC port). /debug/pods: the
pods its pod cache holds, as JSON and as a text table. Without a cluster:
a call for an image whose registry never answers keeps its pod in the
cache, requested, with the call waiting for it (tests/e2e has serving
pods)."""

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

import krmtest
from krmtest import CLIENT_BIN
from test_registry import DEAD_KUBECONFIG


@pytest.fixture
def silent_registry():
    """A TCP server that accepts connections and never answers: an image
    lookup against it waits (until the call's deadline)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"127.0.0.1:{srv.getsockname()[1]}"
    stop.set()
    t.join()
    for c in held:
        c.close()
    srv.close()


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def serve(start_server, tmp_path, *extra):
    kc = tmp_path / "kubeconfig"
    kc.write_text(DEAD_KUBECONFIG)
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    return start_server([], binary=CLIENT_BIN, env=env, argv=[
        "serve", "--port", "{port}", "--kubeconfig", str(kc),
        "--wrapper-server-image", "127.0.0.1:1/wrapper-server:v1", *extra])


def test_debug_pods_lists_a_pod_waiting_for_its_image(start_server, silent_registry, tmp_path):
    srv = serve(start_server, tmp_path, "--replica-name", "replica-x")
    status, ctype, body = get(srv.port, "/debug/pods")
    assert (status, ctype, json.loads(body)) == (200, "application/json", {"pods": []}), body
    image = f"{silent_registry}/fn:v1"
    call = threading.Thread(target=lambda: srv.evaluate_error(krmtest.simple_rl(), image=image, timeout=6))
    call.start()
    try:
        deadline = time.monotonic() + 5
        while True:
            pods = json.loads(get(srv.port, "/debug/pods")[2])["pods"]
            if pods or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(pods) == 1, pods
        p = pods[0]
        assert (p["image"], p["state"], p["calls"], p["waiting"], p["created"]) == \
            (image, "requested", 0, 1, False), p
        assert p["owner"] == "replica-x", p
        assert "pod" not in p and "node" not in p, p   # not named, not scheduled: left out
        status, ctype, text = get(srv.port, "/debug/pods?format=text")
        assert status == 200 and ctype.startswith("text/plain"), (status, ctype)
        head, row = text.splitlines()
        assert head.split() == ["IMAGE", "POD", "NODE", "STATE", "CALLS", "WAITING", "IDLE", "LAST",
                                "TRANSITION", "ORIGIN", "OWNER"], head
        assert row.split()[-1] == "replica-x", row   # the replica whose pods these are
        assert row.split()[:7] == [image, "-", "-", "requested", "0", "1", "0s"], row
        assert head.index("STATE") == row.index("requested"), (head, row)   # aligned
    finally:
        call.join()
    # the call's deadline passed: it left, and so did its pod
    deadline = time.monotonic() + 5
    while json.loads(get(srv.port, "/debug/pods")[2])["pods"] and time.monotonic() < deadline:
        time.sleep(0.05)


def test_debug_pods_bad_format_and_no_pod_runtime(start_server, tmp_path):
    srv = serve(start_server, tmp_path)
    status, _, body = get(srv.port, "/debug/pods?format=yaml")
    assert status == 400 and "?format=json (the default) or ?format=text" in body, body
    off = start_server([], binary=CLIENT_BIN, argv=["serve", "--port", "{port}", "--disable-runtimes", "pod"])
    status, _, body = get(off.port, "/debug/pods")
    assert status == 404 and "the pod runtime is off" in body, body


def series(metrics, name):
    """{labels: value} of one metric's series in Prometheus' text format."""
    out = {}
    for line in metrics.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name):].rsplit(" ", 1)
            out[labels] = float(value)
    return out


def test_metrics_per_image_with_bounded_images(start_server, silent_registry, tmp_path):
    """/metrics carries the pod runtime's series per image: pods by state,
    calls by gRPC code; past 32 images, calls count under image="other"."""
    srv = serve(start_server, tmp_path)
    waiting = f"{silent_registry}/fn:v1"
    call = threading.Thread(target=lambda: srv.evaluate_error(krmtest.simple_rl(), image=waiting, timeout=4))
    call.start()
    try:
        # images whose registry refuses the connection: each call fails UNAVAILABLE at once
        for i in range(40):
            err = srv.evaluate_error(krmtest.simple_rl(), image=f"127.0.0.1:1/fn{i}:v1", timeout=10)
            assert err.code().name == "UNAVAILABLE", err.details()
        deadline = time.monotonic() + 5
        while True:
            metrics = get(srv.port, "/metrics")[2]
            pods = series(metrics, "krm_pod_runtime_pods")
            if pods.get(f'{{image="{waiting}",state="requested"}}') == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert pods.get(f'{{image="{waiting}",state="requested"}}') == 1, metrics
        assert pods.get(f'{{image="{waiting}",state="serving"}}') == 0, metrics
        calls = series(metrics, "krm_pod_runtime_calls_total")
        # 32 images by name (the waiting one first, then fn0..fn30), the rest as "other"
        assert calls == {**{f'{{image="127.0.0.1:1/fn{i}:v1",code="UNAVAILABLE"}}': 1 for i in range(31)},
                         '{image="other",code="UNAVAILABLE"}': 9}, calls
        assert "# TYPE krm_pod_runtime_calls_total counter" in metrics
        # each call's duration and its wait for a pod (here: until its pod failed), by image;
        # a failed call's results are not known
        fn0 = '{image="127.0.0.1:1/fn0:v1"'
        for name in ("krm_pod_runtime_call_duration_seconds", "krm_pod_runtime_queue_wait_seconds"):
            assert f"# TYPE {name} histogram" in metrics
            assert series(metrics, name + "_count")[fn0 + "}"] == 1, metrics
            assert series(metrics, name + "_count")['{image="other"}'] == 9, metrics
            buckets = series(metrics, name + "_bucket")
            assert buckets[fn0 + ',le="+Inf"}'] == 1 and buckets[fn0 + ',le="60"}'] == 1, buckets
            assert 0 <= series(metrics, name + "_sum")[fn0 + "}"] < 10
        sev = series(metrics, "krm_pod_runtime_calls_by_severity_total")
        assert sev[fn0 + ',severity="unknown"}'] == 1 and sev['{image="other",severity="unknown"}'] == 9, sev
    finally:
        call.join()
