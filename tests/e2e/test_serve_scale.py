"""`runner-client serve` with several pods per function (issue 22), on the
cluster: Porch's routing (a call to the least-loaded pod; a new pod when
the best one has reached --max-waitlist-length and the function is below
--max-parallel-pods-per-function). Which pod served how many calls is read
from each pod's wrapper server (/metrics on its gRPC port, HTTP/1.1), not
from the runner's own word.
"""

import json
import socket
import threading
import urllib.request
import time
from concurrent.futures import ThreadPoolExecutor

from k8s import SLOW, is_ready
from test_pod_speed import method_count, wrapper_metrics
from test_serve_pods import Runner, check_answer, function_pods, pb  # noqa: F401  (pb: Runner's fixture)


def evaluations(pod):
    return method_count(wrapper_metrics(pod["status"]["podIP"]), "grpc_server_handled_total",
                        "EvaluateFunction")


def concurrent_calls(serve, image, n):
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda _: serve.evaluate(image), range(n)))


def test_eight_first_calls_with_cap_1_make_one_pod(pb, k8s, api, images, namespace, tmp_path):
    serve = Runner(pb, k8s, namespace, tmp_path, "--max-parallel-pods-per-function", "1")
    try:
        for a in concurrent_calls(serve, images.fn, 8):
            check_answer(a)
        pods = function_pods(api, namespace, live_only=False)
        assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
        assert evaluations(pods[0]) == 8
    finally:
        serve.stop()


def test_cap_2_waitlist_1_makes_two_pods_and_uses_both(pb, k8s, api, images, namespace, tmp_path):
    serve = Runner(pb, k8s, namespace, tmp_path, "--max-parallel-pods-per-function", "2",
                   "--max-waitlist-length", "1")
    try:
        for a in concurrent_calls(serve, images.fn, 8):
            check_answer(a)
        pods = function_pods(api, namespace, live_only=False)
        assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
        # one podId (and Service) per pod: postfix 1 and 2, as Porch names them
        ids = sorted(p["metadata"]["labels"]["fn.kpt.dev/image"] for p in pods)
        assert ids[0].rsplit("-", 2)[1] == "1" and ids[1].rsplit("-", 2)[1] == "2", ids
        for i in ids:
            api.get("services", namespace, i)
        counts = {p["metadata"]["name"]: evaluations(p) for p in pods}
        assert sum(counts.values()) == 8 and all(c > 0 for c in counts.values()), counts
        # the runner's own view (GET /debug/pods) names the same pods, serving, on their node
        with urllib.request.urlopen(f"http://127.0.0.1:{serve.port}/debug/pods", timeout=5 * SLOW) as r:
            seen = json.load(r)["pods"]
        assert sorted((p["pod"], p["podId"], p["node"], p["state"], p["calls"]) for p in seen) == \
            sorted((p["metadata"]["name"], p["metadata"]["labels"]["fn.kpt.dev/image"],
                    p["spec"]["nodeName"], "serving", 0) for p in pods), seen
        # warm: the next 8 still spread over both, and no third pod
        for a in concurrent_calls(serve, images.fn, 8):
            check_answer(a)
        again = {p["metadata"]["name"]: evaluations(p) for p in pods}
        assert sum(again.values()) == 16 and all(again[n] > counts[n] for n in again), (counts, again)
        assert len(function_pods(api, namespace, live_only=False)) == 2
        # and its /metrics, per image
        with urllib.request.urlopen(f"http://127.0.0.1:{serve.port}/metrics", timeout=5 * SLOW) as r:
            text = r.read().decode()
        label = f'image="{images.fn}"'
        for line in (f'krm_pod_runtime_pods{{{label},state="serving"}} 2',
                     f'krm_pod_runtime_pods_created_total{{{label}}} 2',
                     f'krm_pod_runtime_calls_total{{{label},code="OK"}} 16',
                     f'krm_pod_runtime_pod_start_seconds_count{{{label}}} 2'):
            assert line in text.splitlines(), (line, [x for x in text.splitlines() if "pod_runtime" in x])
    finally:
        serve.stop()


def test_pod_killed_while_eight_calls_stream(pb, k8s, api, images, namespace, tmp_path, figures):
    """A pod deleted with grace 0 while 8 callers call it back to back:
    every call answers (a call its pod ended without an answer is sent
    again, after one GET of the pod, to the pod that replaces it), and
    what is left is the new pod and the Service, nothing else."""
    serve = Runner(pb, k8s, namespace, tmp_path)
    try:
        check_answer(serve.evaluate(images.fn))
        old = function_pods(api, namespace)
        assert len(old) == 1
        old_name, old_uid = old[0]["metadata"]["name"], old[0]["metadata"]["uid"]
        stop = threading.Event()
        answered = [0] * 8
        slowest = [0.0] * 8
        errors = []

        def stream(i):
            while not stop.is_set():
                try:
                    t0 = time.monotonic()
                    check_answer(serve.evaluate(images.fn, timeout=60))
                    slowest[i] = max(slowest[i], time.monotonic() - t0)
                    answered[i] += 1
                except Exception as e:  # every call must answer: collect, fail below
                    errors.append(repr(e))
                    return

        threads = [threading.Thread(target=stream, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        time.sleep(1)
        before = sum(answered)
        api.delete("pods", namespace, old_name, grace=0)
        deadline = time.monotonic() + 60 * SLOW
        while time.monotonic() < deadline and not errors:   # until the new pod has served
            new = [p for p in function_pods(api, namespace) if p["metadata"]["uid"] != old_uid]
            if new and sum(answered) > before + 50:
                break
            time.sleep(0.2)
        time.sleep(1)
        stop.set()
        for t in threads:
            t.join(timeout=90 * SLOW)
        assert not errors, errors[:3]
        assert before > 0 and all(a > 0 for a in answered), answered
        api.wait_gone("pods", namespace, old_name, timeout=30 * SLOW)
        pods = function_pods(api, namespace, live_only=False)
        assert len(pods) == 1 and pods[0]["metadata"]["uid"] != old_uid, [p["metadata"]["name"] for p in pods]
        assert evaluations(pods[0]) > 0
        services = api.list("services", namespace)
        assert [s["metadata"]["name"] for s in services] == [pods[0]["metadata"]["labels"]["fn.kpt.dev/image"]]
        log = serve.log.read_text(errors="replace")   # whole: the calls log a lot
        # dropped by its watch (terminating, deleted) or by the check after a failed call
        assert any(w in log for w in (f"function pod {old_name} is being deleted",
                                      f"function pod {old_name} was deleted",
                                      f"function pod {namespace}/{old_name} for")), log[-3000:]
        figures.append(f"serve, pod deleted (grace 0) under 8 streaming callers: {sum(answered)} calls "
                       f"answered, none failed; {log.count('sending the call again')} sent again; "
                       f"slowest call {max(slowest):.2f} s (waited for the new pod)")
    finally:
        serve.stop()


def test_call_to_a_pod_deleted_unseen_is_sent_again_after_a_check(pb, k8s, api, images, namespace,
                                                                     tmp_path):
    """A Ready pod found by its label (adopted) is not watched: its deletion
    is first seen by a call, whose connection cannot be made. The call is
    not failed: the runner reads the pod once (gone), drops it and sends
    the call again, to a new pod."""
    (tmp_path / "first").mkdir()
    first = Runner(pb, k8s, namespace, tmp_path / "first")
    check_answer(first.evaluate(images.fn))
    first.stop()
    old = function_pods(api, namespace)
    assert len(old) == 1
    old_name = old[0]["metadata"]["name"]
    # Ready (its probe runs every 10 s): the next runner serves it at once, unwatched
    api.wait_pod(namespace, old_name, is_ready, timeout=30 * SLOW, what="Ready")
    serve = Runner(pb, k8s, namespace, tmp_path)
    try:
        check_answer(serve.evaluate(images.fn))
        assert f"pod {old_name}: adopted" in serve.log.read_text(errors="replace")
        ip = api.get("pods", namespace, old_name)["status"]["podIP"]
        api.delete("pods", namespace, old_name, grace=0)
        api.wait_gone("pods", namespace, old_name, timeout=30 * SLOW)
        # the object goes at once; its wrapper server a moment later (the kubelet kills it)
        deadline = time.monotonic() + 30 * SLOW
        while True:
            try:
                socket.create_connection((ip, 9446), timeout=1).close()
            except OSError:
                break
            assert time.monotonic() < deadline, f"{ip}:9446 still answers after its pod was deleted"
            time.sleep(0.1)
        check_answer(serve.evaluate(images.fn))
        log = serve.log.read_text(errors="replace")
        assert f"pod {old_name} for {images.fn} failed a call" in log, log[-3000:]
        assert "sending the call again (retry 1 of 2)" in log, log[-3000:]
        pods = function_pods(api, namespace, live_only=False)
        assert len(pods) == 1 and pods[0]["metadata"]["name"] != old_name, [p["metadata"]["name"] for p in pods]
        assert evaluations(pods[0]) == 1
    finally:
        serve.stop()
