"""FunctionConfigs from the cluster (issue 23): `serve --function-config-source
cluster` watches the FunctionConfig objects of its pod namespace and applies
them live, as Porch's function runner does. Objects are created, changed and
deleted through the API while serve runs: a call answers with the function
the object names now; serve writes Porch's status
(functionRunnerObservedGeneration, error for a spec it cannot apply) and
its finalizer, and takes the finalizer off a deleted object, whose route
is then gone. The exec runtime alone (--disable-runtimes=pod), so serve
makes its own API client, as a runner of Porch's newer layout would."""

import time

import grpc
import pytest

from k8s import ApiError, SLOW
from test_deploy import crd, fc_path  # noqa: F401  (crd: the FunctionConfig CRD, a fixture)
from test_serve_pods import RL, Runner, pb  # noqa: F401  (pb: Runner's fixture)

FINALIZER = "config.porch.kpt.dev/functionconfig-function-runner"
IMAGE = "example.com/fns/myfn:v1"


def function(path, word):
    """An exec function answering with a result naming it."""
    path.write_text("#!/bin/sh\ncat >/dev/null\n"
                    "printf 'apiVersion: config.kubernetes.io/v1\\nkind: ResourceList\\nitems: []\\n"
                    f"results:\\n- message: {word}\\n'\n")
    path.chmod(0o755)


def config(name, path):
    return {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "FunctionConfig",
            "metadata": {"name": name},
            "spec": {"image": name, "prefixes": ["example.com/fns"],
                     "binaryExecutor": {"tags": ["v1"], "path": path}}}


def answer(r, image=IMAGE):
    """The call's result message, or its gRPC status code."""
    req = r.pb.evaluator.EvaluateFunctionRequest(resource_list=RL, image=image)
    try:
        resp = r.evaluate_rpc(req, timeout=20 * SLOW)
    except grpc.RpcError as e:
        return e.code()
    return resp.resource_list.decode()


def wait_for(what, get, ok, timeout=15):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        got = get()
        if ok(got):
            return got
        assert time.monotonic() < deadline, f"{what}: last seen {got}"
        time.sleep(0.1)


def update(api, ns, name, change):
    """GET, change, PUT (retried on a conflict: serve writes the object too)."""
    for _ in range(20):
        obj = api.request("GET", fc_path(ns, name))
        change(obj)
        try:
            return api.request("PUT", fc_path(ns, name), obj)
        except ApiError as e:
            if e.status != 409:
                raise
    raise AssertionError("20 conflicts in a row")


def test_function_configs_from_the_cluster_applied_live(pb, k8s, api, crd, namespace, tmp_path):
    fns = tmp_path / "functions"
    fns.mkdir()
    function(fns / "a", "from-a")
    function(fns / "b", "from-b")
    r = Runner(pb, k8s, namespace, tmp_path, "--disable-runtimes=pod",
               "--function-config-source", "cluster", "--functions", str(fns))
    get = lambda name="myfn": api.request("GET", fc_path(namespace, name))  # noqa: E731
    try:
        wait_for("the first list", r.stderr, lambda t: "0 applied, 0 not" in t)
        assert answer(r) == grpc.StatusCode.NOT_FOUND

        # created: routed, finalizer and status written
        t0 = time.monotonic()
        api.request("POST", fc_path(namespace), config("myfn", "a"))
        wait_for("the new object routed", lambda: answer(r), lambda a: "from-a" in str(a))
        print(f"created -> routed in {time.monotonic() - t0:.2f} s")
        obj = wait_for("status and finalizer", get, lambda o: (o.get("status") or {}).get(
            "functionRunnerObservedGeneration") == 1 and FINALIZER in o["metadata"].get("finalizers", []))
        assert "error" not in obj["status"], obj["status"]

        # changed: the new binary answers, the new generation is written
        update(api, namespace, "myfn", lambda o: o["spec"]["binaryExecutor"].update(path="b"))
        wait_for("the changed object routed", lambda: answer(r), lambda a: "from-b" in str(a))
        wait_for("generation 2 observed", get,
                 lambda o: o["status"].get("functionRunnerObservedGeneration") == 2)

        # a spec serve cannot apply (a path out of --functions): status.error says why, the
        # generation applied stays 2, and the object's route is gone (no stale binary)
        update(api, namespace, "myfn", lambda o: o["spec"]["binaryExecutor"].update(path="../x"))
        obj = wait_for("the bad spec's error", get, lambda o: o["status"].get("error"))
        assert "resolves outside --functions" in obj["status"]["error"], obj["status"]
        assert obj["status"]["functionRunnerObservedGeneration"] == 2, obj["status"]
        assert obj["metadata"]["generation"] == 3
        assert answer(r) == grpc.StatusCode.NOT_FOUND
        # fixed: the error is cleared (as Porch, the field is gone)
        update(api, namespace, "myfn", lambda o: o["spec"]["binaryExecutor"].update(path="a"))
        obj = wait_for("the fix applied", get,
                       lambda o: o["status"].get("functionRunnerObservedGeneration") == 4)
        assert "error" not in obj["status"], obj["status"]
        assert "from-a" in str(answer(r))

        # a second object for the same image is refused with the reason, the first serves on
        api.request("POST", fc_path(namespace), {**config("myfn", "b"), "metadata": {"name": "twin"}})
        obj = wait_for("the duplicate's error", lambda: get("twin"),
                       lambda o: (o.get("status") or {}).get("error"))
        assert "myfn" in obj["status"]["error"], obj["status"]
        assert "from-a" in str(answer(r))

        # deleted: serve takes its finalizer off, the object goes, the route with it
        api.request("DELETE", fc_path(namespace, "twin"))
        api.request("DELETE", fc_path(namespace, "myfn"))
        for name in ("myfn", "twin"):
            wait_for(f"{name} gone", lambda: gone(api, fc_path(namespace, name)),
                     lambda g: g is None)
        assert answer(r) == grpc.StatusCode.NOT_FOUND
        # nothing written in a loop: the status writes are few (one per change)
        writes = r.log.read_text(errors="replace").count("/status -> 200")
        assert 5 <= writes <= 8, (writes, r.stderr())
    finally:
        r.stop()
        release(api, namespace)


def release(api, ns):
    """Takes serve's finalizer off what a failed test left (serve is gone, so
    nothing else will, and the CRD's deletion would wait for them)."""
    for obj in api.request("GET", fc_path(ns)).get("items", []):
        if obj["metadata"].get("finalizers"):
            obj["metadata"]["finalizers"] = []
            try:
                api.request("PUT", fc_path(ns, obj["metadata"]["name"]), obj)
            except ApiError as e:
                print(f"releasing {obj['metadata']['name']}: {e}")


def gone(api, path):
    """None once the object is gone, else the object."""
    try:
        return api.request("GET", path)
    except ApiError as e:
        if e.status == 404:
            return None
        raise


def test_the_documented_role_is_enough_for_function_configs(pb, k8s, api, crd, namespace, tmp_path):
    """serve as a service account with exactly deploy/rbac.yaml's Role
    (the lab runs RBAC): the list and watch, the finalizer written and
    taken off, the status written for an applied object and for one it
    cannot apply, and no request refused."""
    from types import SimpleNamespace
    from test_rbac import RUNNER_RULES, account, require_rbac
    kubeconfig, token = account(api, namespace, "fn-runner", RUNNER_RULES, k8s, tmp_path)
    require_rbac(api, token)
    fns = tmp_path / "functions"
    fns.mkdir()
    function(fns / "a", "from-a")
    api.request("POST", fc_path(namespace), config("myfn", "a"))
    api.request("POST", fc_path(namespace), config("bad", "../a"))
    r = Runner(pb, SimpleNamespace(kubeconfig=kubeconfig), namespace, tmp_path, "--disable-runtimes=pod",
               "--function-config-source", "cluster", "--functions", str(fns))
    get = lambda name: api.request("GET", fc_path(namespace, name))  # noqa: E731
    try:
        assert "from-a" in str(wait_for("routed", lambda: answer(r), lambda a: "from-a" in str(a)))
        wait_for("status written", lambda: get("myfn"),
                 lambda o: (o.get("status") or {}).get("functionRunnerObservedGeneration") == 1
                 and FINALIZER in o["metadata"].get("finalizers", []))
        wait_for("the error written", lambda: get("bad"), lambda o: (o.get("status") or {}).get("error"))
        for name in ("myfn", "bad"):
            api.request("DELETE", fc_path(namespace, name))
        for name in ("myfn", "bad"):
            wait_for(f"{name} gone", lambda: gone(api, fc_path(namespace, name)), lambda g: g is None)
        log = r.log.read_text(errors="replace")
        assert "forbidden" not in log.lower(), log[-3000:]
    finally:
        r.stop()
        release(api, namespace)


def test_pod_runtime_follows_the_cluster_function_config(pb, k8s, api, crd, images, namespace, tmp_path):
    """The pod runtime's parameters from the cluster, live: a FunctionConfig
    whose fn.kpt.dev/min-ready-pods annotation is "1" gives its image one
    Ready pod before any call (the call is answered by it); the annotation
    raised to "2" (no generation change: metadata only) starts a second; the
    object deleted, its minimum goes with it and the idle TTL takes both."""
    from test_serve_pods import check_answer
    from test_serve_warm import function_pods, wait_ready
    repo, tag = images.fn.rsplit(":", 1)
    prefix, short = repo.rsplit("/", 1)
    doc = {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "FunctionConfig",
           "metadata": {"name": short, "annotations": {"fn.kpt.dev/min-ready-pods": "1"}},
           "spec": {"image": short, "prefixes": [f"{prefix}/"], "podExecutor": {"tags": [tag]}}}
    r = Runner(pb, k8s, namespace, tmp_path, "--function-config-source", "cluster",
               "--pod-ttl", "3s", "--scan-interval", "1s")
    try:
        api.request("POST", fc_path(namespace), doc)
        first = wait_ready(api, namespace, 1, "one warm pod from the cluster's FunctionConfig")
        check_answer(r.evaluate(images.fn))
        update(api, namespace, short, lambda o: o["metadata"]["annotations"].update(
            {"fn.kpt.dev/min-ready-pods": "2"}))
        both = wait_ready(api, namespace, 2, "a second warm pod after the annotation changed")
        assert first < both, (first, both)
        assert api.request("GET", fc_path(namespace, short))["metadata"]["generation"] == 1
        api.request("DELETE", fc_path(namespace, short))
        wait_for("the object gone", lambda: gone(api, fc_path(namespace, short)), lambda g: g is None)
        wait_for("the idle pods reclaimed once the minimum went",
                 lambda: function_pods(api, namespace, live_only=False), lambda p: not p, timeout=60)
    finally:
        r.stop()
        release(api, namespace)


def test_warm_up_on_the_first_list(pb, k8s, api, crd, images, namespace, tmp_path):
    """--warm-up-pod-cache (default true) with the cluster source: a
    FunctionConfig with podExecutor.tags that exists when serve starts gets
    its pod from the first list's set, before any call, as Porch warms up
    once its cache has synced."""
    from test_serve_warm import wait_ready
    repo, tag = images.fn.rsplit(":", 1)
    prefix, short = repo.rsplit("/", 1)
    api.request("POST", fc_path(namespace), {
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "FunctionConfig",
        "metadata": {"name": short},
        "spec": {"image": short, "prefixes": [f"{prefix}/"], "podExecutor": {"tags": [tag]}}})
    r = Runner(pb, k8s, namespace, tmp_path, "--function-config-source", "cluster")
    try:
        wait_ready(api, namespace, 1, "the warm-up's pod from the cluster's FunctionConfig")
        assert f"warm-up: starting the pod for {images.fn}" in r.log.read_text(errors="replace")
    finally:
        r.stop()
        release(api, namespace)
