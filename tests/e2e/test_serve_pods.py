"""`runner-client serve` with the pod runtime on a real cluster, called as
Porch's engine calls its function runner (EvaluateFunction over gRPC, with
the python grpc client as tests/integration does): an image with no exec
FunctionConfig runs in its function pod; the first call creates the pod and
answers, the second reuses it (same UID through the API), a pod deleted
through the API is replaced, concurrent first calls for an image share one
pod creation, and an image that cannot be pulled answers a clear error
within 10 s. One server per test, in the test's namespace, `--dial=pod`
(the lab has no kube-proxy or cluster DNS).
"""

import importlib
import os
import signal
import socket
import subprocess
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from k8s import CLIENT_BIN, ROOT, SLOW

EVALUATE = "/evaluator.FunctionEvaluator/EvaluateFunction"
HEALTH = "/grpc.health.v1.Health/Check"
RL = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
      b"- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: web\n  spec:\n    replicas: 1\n")
FAIL_FAST = 10   # issue 15: fail within 10 s with the reason


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """Python modules generated from proto/evaluator.proto and proto/health.proto."""
    out = tmp_path_factory.mktemp("pb")
    subprocess.run(["protoc", "--proto_path=proto", f"--python_out={out}", "proto/evaluator.proto",
                    "proto/health.proto"], cwd=ROOT, check=True)
    sys.path.insert(0, str(out))
    try:
        return types.SimpleNamespace(evaluator=importlib.import_module("evaluator_pb2"),
                                     health=importlib.import_module("health_pb2"))
    finally:
        sys.path.remove(str(out))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runner:
    """A `runner-client serve` process with the pod runtime on."""

    def __init__(self, pb, k8s, ns, tmp_path, *extra):
        if not k8s.kubeconfig:
            pytest.fail("KUBECONFIG is needed for runner-client serve", pytrace=False)
        self.pb = pb
        self.port = free_port()
        self.log = tmp_path / "serve.log"
        self.proc = subprocess.Popen(
            [CLIENT_BIN, "serve", "--port", str(self.port), "--kubeconfig", k8s.kubeconfig,
             "--namespace", ns, "--dial", "pod", "--ready-timeout", "60s", "--log-level", "3", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.log, "wb"),
            start_new_session=True)
        # connect only once it listens: a refused first connect would put the
        # channel in grpc's reconnect backoff (seconds)
        deadline = time.monotonic() + 10 * SLOW
        while f"Listening on :{self.port}" not in self.stderr():
            assert self.proc.poll() is None, f"serve exited {self.proc.returncode}:\n{self.stderr()}"
            assert time.monotonic() < deadline, f"serve not listening:\n{self.stderr()}"
            time.sleep(0.02)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        self.evaluate_rpc = self.channel.unary_unary(
            EVALUATE, request_serializer=pb.evaluator.EvaluateFunctionRequest.SerializeToString,
            response_deserializer=pb.evaluator.EvaluateFunctionResponse.FromString)
        check = self.channel.unary_unary(
            HEALTH, request_serializer=pb.health.HealthCheckRequest.SerializeToString,
            response_deserializer=pb.health.HealthCheckResponse.FromString)
        deadline = time.monotonic() + 10 * SLOW
        while True:
            assert self.proc.poll() is None, f"serve exited {self.proc.returncode}:\n{self.stderr()}"
            try:
                check(pb.health.HealthCheckRequest(), timeout=1)
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, f"serve not answering health:\n{self.stderr()}"
                time.sleep(0.05)

    def stderr(self):
        return self.log.read_text(errors="replace")[-6000:]

    def evaluate(self, image, timeout=120):
        req = self.pb.evaluator.EvaluateFunctionRequest(resource_list=RL, image=image)
        return self.evaluate_rpc(req, timeout=timeout * SLOW)

    def stop(self):
        self.channel.close()
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15 * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.returncode == 0, f"serve exited {self.proc.returncode}:\n{self.stderr()}"


@pytest.fixture
def serve(pb, k8s, namespace, tmp_path):
    r = Runner(pb, k8s, namespace, tmp_path)
    yield r
    r.stop()


def function_pods(api, ns, live_only=True):
    return [p for p in api.list("pods", ns)
            if "fn.kpt.dev/image" in p["metadata"].get("labels", {})
            and not (live_only and p["metadata"].get("deletionTimestamp"))]


def check_answer(resp):
    assert b"replicas: 3" in resp.resource_list, resp.resource_list
    assert b"fn parent: wrapper-server" in resp.log, resp.log


def test_serve_creates_reuses_and_replaces(api, serve, images, namespace, figures):
    t0 = time.monotonic()
    check_answer(serve.evaluate(images.fn))
    cold = time.monotonic() - t0
    pods = function_pods(api, namespace)
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    uid = pods[0]["metadata"]["uid"]

    t0 = time.monotonic()
    check_answer(serve.evaluate(images.fn))
    warm = time.monotonic() - t0
    assert [p["metadata"]["uid"] for p in function_pods(api, namespace)] == [uid]
    assert "reused" in serve.stderr(), serve.stderr()
    figures.append(f"serve (pod runtime): first call (lookup, create, wrapper SERVING, call) {cold:.2f} s; "
                   f"second call through the same pod {warm * 1000:.1f} ms")

    # deleted through the API: the server's watch drops it, the next call makes another
    api.delete("pods", namespace, pods[0]["metadata"]["name"], grace=0)
    api.wait_gone("pods", namespace, pods[0]["metadata"]["name"], timeout=30 * SLOW)
    check_answer(serve.evaluate(images.fn))
    uids = [p["metadata"]["uid"] for p in function_pods(api, namespace)]
    assert len(uids) == 1 and uids[0] != uid, uids


def test_serve_concurrent_first_calls_share_one_pod(api, serve, images, namespace):
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: serve.evaluate(images.fn), range(4)))
    for a in answers:
        assert b"replicas: 3" in a.resource_list, a.resource_list
    # every pod ever made for it, terminating ones included: exactly one
    pods = function_pods(api, namespace, live_only=False)
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    assert serve.stderr().count("pod " + pods[0]["metadata"]["name"] + " created") <= 1


def test_serve_missing_image_fails_fast(serve, images):
    t0 = time.monotonic()
    with pytest.raises(grpc.RpcError) as e:
        serve.evaluate(images.missing, timeout=60)
    took = time.monotonic() - t0
    assert took < FAIL_FAST * SLOW, f"took {took:.1f} s: {e.value.details()}"
    assert e.value.code() != grpc.StatusCode.DEADLINE_EXCEEDED, e.value.details()
    assert images.missing in e.value.details() and "not found" in e.value.details(), e.value.details()
    # the server serves on
    assert serve.proc.poll() is None


def test_serve_unpullable_image_fails_fast_with_kubelet_reason(pb, k8s, api, images, namespace, tmp_path):
    # The wrapper image cannot be pulled: the function's registry lookup
    # succeeds, the pod is created, and its init container never starts.
    srv = Runner(pb, k8s, namespace, tmp_path, "--wrapper-server-image", images.missing)
    try:
        t0 = time.monotonic()
        with pytest.raises(grpc.RpcError) as e:
            srv.evaluate(images.fn, timeout=60)
        took = time.monotonic() - t0
        details = e.value.details()
        assert took < FAIL_FAST * SLOW, f"took {took:.1f} s: {details}"
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE, details
        assert "ErrImagePull" in details or "ImagePullBackOff" in details, details
        assert images.missing in details and 'init container "copy-wrapper-server"' in details, details
        assert srv.proc.poll() is None
    finally:
        srv.stop()


def test_serve_reclaims_idle_pods_with_their_service(api, pb, k8s, images, namespace, tmp_path):
    """--pod-ttl: a pod with no call for its time to live is deleted with its
    Service, as Porch's runner reclaims idle pods; the next call makes a new
    one. A call in flight keeps its pod (the function here answers at once,
    so only the idle rule is exercised)."""
    r = Runner(pb, k8s, namespace, tmp_path, "--pod-ttl", "3s", "--scan-interval", "500ms")
    try:
        check_answer(r.evaluate(images.fn))
        (pod,) = function_pods(api, namespace)
        svc = pod["metadata"]["labels"]["fn.kpt.dev/image"]
        assert api.get("services", namespace, svc)
        # calls within the time to live keep it
        time.sleep(2)
        check_answer(r.evaluate(images.fn))
        time.sleep(2)
        (now,) = function_pods(api, namespace)
        assert now["metadata"]["uid"] == pod["metadata"]["uid"]
        # the scans wrote its last call's time, which `pod list` shows as idle time
        assert "fn.kpt.dev/last-call" in now["metadata"].get("annotations", {}), now["metadata"]
        listed = subprocess.run([CLIENT_BIN, "pod", "list", "--kubeconfig", k8s.kubeconfig,
                                 "--namespace", namespace], capture_output=True, text=True, timeout=30)
        row = [line for line in listed.stdout.splitlines() if line.startswith(pod["metadata"]["name"])]
        assert row and row[0].split()[3] != "-", listed.stdout
        # then it goes, Service included
        api.wait_gone("pods", namespace, pod["metadata"]["name"], timeout=15 * SLOW)
        api.wait_gone("services", namespace, svc, timeout=15 * SLOW)
        assert "time to live 3 s): deleting it and its Service" in r.stderr(), r.stderr()
        check_answer(r.evaluate(images.fn))
        uids = [p["metadata"]["uid"] for p in function_pods(api, namespace)]
        assert len(uids) == 1 and uids[0] != pod["metadata"]["uid"], uids
    finally:
        r.stop()


def test_serve_warms_up_pods_of_its_function_configs(api, pb, k8s, images, namespace, tmp_path):
    """--warm-up-pod-cache (on by default, as Porch's): a FunctionConfig with
    podExecutor.tags gets its pod at start, before any call; the first call
    then finds it serving."""
    repo, tag = images.fn.rsplit(":", 1)
    prefix, short = repo.rsplit("/", 1)
    cfg = tmp_path / "fc.yaml"
    cfg.write_text(f"apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                   f"metadata:\n  name: {short}\n  namespace: {namespace}\n"
                   f"spec:\n  image: {short}\n  prefixes: [\"{prefix}/\"]\n"
                   f"  podExecutor:\n    tags: [\"{tag}\"]\n")
    r = Runner(pb, k8s, namespace, tmp_path, "--function-config", str(cfg))
    try:
        deadline = time.monotonic() + 60 * SLOW
        while "warm-up: pod " not in r.stderr():
            assert time.monotonic() < deadline, r.stderr()
            time.sleep(0.2)
        assert f"warm-up: starting the pod for {images.fn}" in r.stderr(), r.stderr()
        (pod,) = function_pods(api, namespace)
        check_answer(r.evaluate(images.fn))
        assert [p["metadata"]["uid"] for p in function_pods(api, namespace)] == [pod["metadata"]["uid"]]
    finally:
        r.stop()
