"""Function pods fast, on a real cluster (issue 15, figures part):

- a cold `eval --kube --dial pod` is answered as soon as the pod's wrapper
  server answers Health/Check SERVING, before the kubelet's exec readiness
  probe (every 10 s, Porch's template) turns the pod Ready; the pod still
  turns Ready later, as the cluster sees it;
- a wrapper server that answers NOT_SERVING (its function cannot be run)
  never gets a call: the wait ends at --ready-timeout naming its health,
  and the wrapper's own /metrics count no EvaluateFunction;
- a runner that finds a Ready pod of the image costs one API round trip
  (the LIST by label; kube_http logs each request at --log-level 3);
- `runner-client serve` keeps one HTTP/2 connection per pod: successive and
  concurrent calls arrive on it (the wrapper's krm_connections_accepted_total,
  minus the connections of the kubelet's probes, one Check each, does not
  move); a deleted pod's connection is closed and the next call succeeds on
  the new pod, on one new connection; a connection the pod's wrapper closed
  (its idle timeout) is replaced at the next call; a call running when its
  pod is deleted is answered (the wrapper drains) before the connection is
  closed.

The wrapper's /metrics is read at <podIP>:9446 (HTTP/1.1 on the gRPC port),
so this machine must reach pod IPs, as the other tests need.
"""

import json
import re
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from busybox_image import push_busybox_image, registry_tls_verify
from k8s import SLOW, is_ready
from test_pod_runtime import check_answer, eval_kube, function_pods
from test_base_templates import hand_made_template
from test_pod_template import render
from test_serve_pods import Runner, pb  # noqa: F401  (pb: the fixture Runner needs)
from test_serve_pods import check_answer as check_answer_pb

PORT = 9446


def wrapper_metrics(ip):
    """The wrapper server's counters: {series (name{labels}): value}."""
    with urllib.request.urlopen(f"http://{ip}:{PORT}/metrics", timeout=5 * SLOW) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def method_count(m, kind, method):
    """Calls of method in the series kind (grpc_server_started_total, ...), all codes."""
    return sum(v for k, v in m.items()
               if k.startswith(kind + "{") and f'grpc_method="{method}"' in k)


def call_connections(before, after):
    """Connections accepted between two /metrics reads that were not the
    kubelet's probes (grpc-health-probe: one connection, one Check) nor the
    second read itself."""
    accepted = after["krm_connections_accepted_total"] - before["krm_connections_accepted_total"]
    checks = (method_count(after, "grpc_server_started_total", "Check")
              - method_count(before, "grpc_server_started_total", "Check"))
    return int(accepted - checks - 1)


@pytest.fixture(scope="module")
def absent_fn_image(k8s, tmp_path_factory):
    """A function image whose entrypoint names no file: its wrapper server
    starts and answers health NOT_SERVING (the function cannot be run)."""
    return push_busybox_image(k8s.registry, "krm-e2e-fn-absent", ["/bin/no-such-function"],
                              str(tmp_path_factory.mktemp("absent")), registry_tls_verify(k8s.is_lab))


def test_cold_eval_answers_on_health_before_ready(api, runner, images, namespace, tmp_path, figures):
    r, cold = eval_kube(runner, tmp_path, namespace, images.fn)
    check_answer(r)
    assert "(created, wrapper SERVING before the pod was Ready)" in r.stderr, r.stderr
    assert "health SERVING" in r.stderr, r.stderr
    pod = function_pods(api, namespace)[0]
    # readiness is still the cluster's signal: the probe is there, and Ready comes
    probe = pod["spec"]["containers"][0]["readinessProbe"]
    assert probe["exec"]["command"][0].endswith("grpc-health-probe"), probe
    _, later = api.wait_pod(namespace, pod["metadata"]["name"], is_ready, 30 * SLOW, "Ready")
    figures.append(f"eval --kube --dial pod, cold (lookup, create, answered on the wrapper's health; "
                   f"whole process): {cold:.2f} s; the pod turned Ready {later:.2f} s after that")


def test_not_serving_wrapper_never_gets_a_call(api, runner, images, namespace, tmp_path,
                                               absent_fn_image):
    r, took = eval_kube(runner, tmp_path, namespace, absent_fn_image, "--ready-timeout", "6s")
    assert r.returncode == 1, r.stderr
    assert "not ready after 6 s" in r.stderr, r.stderr
    assert "the wrapper server: health NOT_SERVING" in r.stderr, r.stderr
    assert took < 30 * SLOW, r.stderr
    pod = function_pods(api, namespace)[0]
    assert not is_ready(pod), pod["status"]
    m = wrapper_metrics(pod["status"]["podIP"])
    assert method_count(m, "grpc_server_started_total", "Check") >= 1, m   # it was asked
    assert method_count(m, "grpc_server_started_total", "EvaluateFunction") == 0, m


def test_serve_calls_share_one_connection_per_pod(api, pb, k8s, images, namespace,  # noqa: F811
                                                  tmp_path, figures):
    srv = Runner(pb, k8s, namespace, tmp_path)
    try:
        check_answer_pb(srv.evaluate(images.fn))
        pod = function_pods(api, namespace)[0]
        ip = pod["status"]["podIP"]
        before = wrapper_metrics(ip)
        t0 = time.monotonic()
        for _ in range(10):
            check_answer_pb(srv.evaluate(images.fn))
        successive = (time.monotonic() - t0) / 10
        with ThreadPoolExecutor(8) as pool:
            for a in pool.map(lambda _: srv.evaluate(images.fn), range(16)):
                check_answer_pb(a)
        after = wrapper_metrics(ip)
        evaluated = (method_count(after, "grpc_server_handled_total", "EvaluateFunction")
                     - method_count(before, "grpc_server_handled_total", "EvaluateFunction"))
        assert evaluated == 26, (before, after)
        assert call_connections(before, after) == 0, (before, after)
        assert after["krm_connections_accepted_total"] >= 1
        # the runner's side: one connection opened to that pod in all
        assert len(re.findall(rf"function pod {pod['metadata']['name']}: connected to",
                              srv.log.read_text())) == 1, srv.stderr()
        figures.append(f"serve, warm call through the pod on its kept connection: "
                       f"{successive * 1000:.1f} ms (mean of 10, whole gRPC round trip from python)")

        # deleted: the watch drops the entry, its connection is closed, the next call makes a pod
        name = pod["metadata"]["name"]
        api.delete("pods", namespace, name, grace=0)
        api.wait_gone("pods", namespace, name, timeout=30 * SLOW)
        deadline = time.monotonic() + 10 * SLOW
        closed = f"function pod {name}: connection to {ip}:{PORT} closed"
        while closed not in srv.log.read_text():
            assert time.monotonic() < deadline, srv.stderr()
            time.sleep(0.05)
        check_answer_pb(srv.evaluate(images.fn))
        check_answer_pb(srv.evaluate(images.fn))
        new = function_pods(api, namespace)
        assert len(new) == 1 and new[0]["metadata"]["name"] != name, new
        assert len(re.findall(rf"function pod {new[0]['metadata']['name']}: connected to",
                              srv.log.read_text())) == 1, srv.stderr()
    finally:
        srv.stop()


def create_templated_pod(api, runner, images, namespace, wrapper_args=()):
    """The function's pod as serve makes it from the namespace's base
    PodTemplate (created here): `pod render`'s pod, with
    the template's resourceVersion as its template version, and
    wrapper_args before the wrapper's own. Returns its name."""
    rv = api.create(hand_made_template(images.init), namespace)["metadata"]["resourceVersion"]
    info = json.loads(runner(["image", "--output", "json", images.fn], check=True).stdout)
    pod, _ = render(runner, images, namespace, images.fn, info["digest"], info["entrypoint"],
                    "--template-version", rv)
    pod["spec"]["containers"][0]["args"][:0] = list(wrapper_args)
    return api.create(pod)["metadata"]["name"]


def test_warm_pod_lookup_is_one_api_round_trip(api, pb, k8s, runner, images, namespace,  # noqa: F811
                                               tmp_path):
    # a Ready pod of the image, of the namespace's base template (serve's
    # template version), then a runner that has never seen it
    name = create_templated_pod(api, runner, images, namespace)
    api.wait_pod(namespace, name, is_ready, 30 * SLOW, "Ready")
    srv = Runner(pb, k8s, namespace, tmp_path)   # --log-level 3: one line per API request
    try:
        check_answer_pb(srv.evaluate(images.fn))
        log = srv.log.read_text()
        lookup = log[:log.index(f"pod {name} serves")]
        # serve's own Lease (replicas) and its reading of the base templates
        # at start are no part of the lookup; a pod no replica owns is
        # claimed (one PATCH of its owner annotation, on its
        # resourceVersion, so of two replicas one wins) before it serves
        calls = [c for c in re.findall(r"API (\w+ \S+) -> ", lookup)
                 if not re.search("/(leases|podtemplates|servicetemplates)", c)]
        assert len(calls) == 2 and calls[0].startswith("GET /api/v1/namespaces/"), calls
        assert calls[1].startswith("PATCH /api/v1/namespaces/") and calls[1].endswith(f"/pods/{name}"), calls
        assert f"pod {name}: adopted" in log, log[-3000:]
    finally:
        srv.stop()


def test_serve_replaces_a_connection_the_pod_closed(api, pb, k8s, runner, images, namespace,  # noqa: F811
                                                    tmp_path):
    # The function's pod as Porch's template makes it, but its wrapper closes
    # connections idle for 1 s (GOAWAY, then close): serve adopts it by its
    # label, and its kept connection is gone by the second call.
    name = create_templated_pod(api, runner, images, namespace, ["--idle-timeout", "1s"])
    srv = Runner(pb, k8s, namespace, tmp_path)
    try:
        check_answer_pb(srv.evaluate(images.fn))
        assert f"pod {name}: adopted" in srv.log.read_text(), srv.stderr()
        time.sleep(2.5 * SLOW)
        check_answer_pb(srv.evaluate(images.fn))
        log = srv.log.read_text()
        assert len(re.findall(rf"function pod {name}: connected to", log)) == 2, srv.stderr()
        assert f"function pod {name}: connection to" in log and " closed" in log, srv.stderr()
        assert [p["metadata"]["name"] for p in function_pods(api, namespace)] == [name]
    finally:
        srv.stop()


def test_serve_call_running_when_its_pod_is_deleted(api, pb, k8s, images, namespace,  # noqa: F811
                                                   tmp_path, tmp_path_factory):
    # The pod's wrapper drains on the kubelet's SIGTERM: the call running in
    # it is answered; the runner has dropped the pod meanwhile and closes its
    # connection once that call is done; the next call makes a new pod.
    slow = push_busybox_image(k8s.registry, "krm-e2e-fn-slow",
                              ["/bin/sh", "-c", 'x=$(cat); sleep 3; printf "%s\\n" "$x"'],
                              str(tmp_path_factory.mktemp("slow")), registry_tls_verify(k8s.is_lab))
    srv = Runner(pb, k8s, namespace, tmp_path)
    try:
        assert b"replicas: 1" in srv.evaluate(slow).resource_list
        old = function_pods(api, namespace)[0]["metadata"]["name"]
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(srv.evaluate, slow)
            time.sleep(1)   # the call runs in the pod (its function sleeps 3 s once it has its input)
            api.delete("pods", namespace, old, grace=0)
            assert b"replicas: 1" in running.result(timeout=60 * SLOW).resource_list
        log = srv.log.read_text()
        dropped = log.index(f"function pod {old} is being deleted")
        closed = log.index(f"function pod {old}: connection to")
        assert dropped < log.index("Evaluated", dropped) < closed, srv.stderr()
        assert b"replicas: 1" in srv.evaluate(slow).resource_list
        new = [p["metadata"]["name"] for p in function_pods(api, namespace)]
        assert len(new) == 1 and new[0] != old, new
    finally:
        srv.stop()
