"""What the in-cluster tests share (test_deploy_incluster.py,
test_sandbox_incluster.py): deploy/'s objects with tests/e2e/runner-lab's
patch, the values only a running test knows, creating them and taking them
away again, and what a failure message shows of the runner's pods."""

import contextlib
import copy
import os
import time

import pytest
import yaml

from k8s import ROOT, SLOW, ApiError
from test_serve_pods import EVALUATE

OVERLAY = os.path.join(ROOT, "tests", "e2e", "runner-lab")
RUNNER_NS, FN_NS = "porch-system", "porch-fn-system"
CONTAINER = "function-runner"


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def merge(base, patch):
    """A strategic merge patch as far as lab-patch.yaml needs it: maps
    merged key by key, lists of named items (containers, env) by name."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            out[k] = merge(base[k], v) if k in base else v
        return out
    if isinstance(base, list) and isinstance(patch, list) and all(
            isinstance(i, dict) and "name" in i for i in base + patch):
        out = [dict(i) for i in base]
        for item in patch:
            same = [i for i, b in enumerate(out) if b["name"] == item["name"]]
            if same:
                out[same[0]] = merge(out[same[0]], item)
            else:
                out.insert(0, item)   # as kustomize places them
        return out
    return patch


def overlay_docs():
    """deploy/'s objects with the overlay's patches, in the kustomization's order."""
    (kust,) = load(os.path.join(OVERLAY, "kustomization.yaml"))
    docs = []
    for res in kust["resources"]:
        base = os.path.normpath(os.path.join(OVERLAY, res))
        (base_kust,) = load(os.path.join(base, "Kustomization"))
        docs += [d for f in base_kust["resources"] for d in load(os.path.join(base, f))]
    for p in kust["patches"]:
        (patch,) = load(os.path.join(OVERLAY, p["path"]))
        key = (patch["kind"], patch["metadata"]["name"])
        docs = [merge(d, patch) if (d["kind"], d["metadata"]["name"]) == key else d for d in docs]
    return docs


def canonical(docs):
    """Objects keyed by kind and name, env lists ordered by name (kustomize
    and our merge may order them differently)."""
    out = {}
    for d in copy.deepcopy(docs):
        if d["kind"] == "Deployment":
            for c in d["spec"]["template"]["spec"]["containers"]:
                c["env"] = sorted(c.get("env", []), key=lambda e: e["name"])
        out[(d["kind"], d["metadata"]["name"])] = d
    return out


def collection(doc):
    group_version = doc["apiVersion"]
    base = "/api/" + group_version if "/" not in group_version else "/apis/" + group_version
    ns = doc["metadata"].get("namespace")
    plural = doc["kind"].lower() + "s"
    return base + (f"/namespaces/{ns}" if ns else "") + "/" + plural


def container(deployment):
    (c,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == CONTAINER]
    return c


def lab_values(deployment, image, wrapper_image, api_port, port, also_port=None):
    """The values only the running test knows: images, the API server's port,
    free loopback ports for the runner (it shares the host's network): its
    --port and, where the manifest has one, its --pod-evaluator-port
    (also_port; None: that listener left out)."""
    c = container(deployment)
    c["image"] = image
    env = {e["name"]: e for e in c["env"]}
    env["WRAPPER_SERVER_IMAGE"]["value"] = wrapper_image
    env["KUBERNETES_SERVICE_PORT"]["value"] = str(api_port)
    also = "--pod-evaluator-port=9447" in c["command"] and also_port is not None
    c["command"] = [a for a in c["command"] if a not in ("--port=9445", "--pod-evaluator-port=9447")] + [
        f"--port={port}", "--address=127.0.0.1", "--dial=pod", "--log-level=3"] + (
        [f"--pod-evaluator-port={also_port}"] if also else [])
    c["ports"] = [{"name": "grpc", "containerPort": port}] + (
        [{"name": "pod-evaluator", "containerPort": also_port}] if also else [])
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        if probe not in c:
            continue
        argv = c[probe]["exec"]["command"]
        assert argv[-2:] == ["-addr", "localhost:9445"], argv
        argv[-1] = f"127.0.0.1:{port}"


def wait_for(what, check, timeout, describe=lambda: ""):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what} within {timeout * SLOW} s\n{describe()}"
        time.sleep(0.2)


@pytest.fixture
def runner_image():
    image = os.environ.get("E2E_RUNNER_IMAGE")
    if not image:
        pytest.fail("missing environment: E2E_RUNNER_IMAGE; run `make e2e` (scripts/e2e.sh), "
                    "which pushes the function-runner image", pytrace=False)
    return image


def runner_pods(api):
    """The runner's pods that are not on their way out."""
    return [p for p in api.list("pods", RUNNER_NS, labelSelector="app=function-runner")
            if not p["metadata"].get("deletionTimestamp")]


def describe_runner(api):
    """Each runner pod's state, events and last log lines: for failure messages."""
    out = []
    for p in runner_pods(api):
        out.append(api.describe_pod(RUNNER_NS, p["metadata"]["name"]))
        try:
            out.append(api.logs(RUNNER_NS, p["metadata"]["name"], tail=40))
        except ApiError as e:
            out.append(str(e))
    return "\n".join(out)


def deployment_ready(api):
    got = api.request("GET", f"/apis/apps/v1/namespaces/{RUNNER_NS}/deployments/function-runner")
    return (got.get("status") or {}).get("readyReplicas") == 1


@contextlib.contextmanager
def deployed(api, docs):
    """Creates docs (a namespace that exists already is left as it is, and
    not deleted after); yields the list of (collection, name) it made, which
    the test may shorten for what it deleted itself; then deletes the rest in
    reverse order and waits for its namespaces to be gone."""
    made = []
    try:
        for doc in docs:
            name = doc["metadata"]["name"]
            try:
                if doc["kind"] == "Namespace":
                    api.create_namespace(name)   # and its default service account
                else:
                    api.request("POST", collection(doc), doc)
                made.append((collection(doc), name))
            except ApiError as e:
                assert e.status == 409 and doc["kind"] != "Deployment", f"{doc['kind']} {name}: {e}"
        yield made
    finally:
        for path, name in reversed(made):
            try:
                api.request("DELETE", f"{path}/{name}")
            except (OSError, ApiError) as e:
                print(f"e2e: deleting {path}/{name}: {e}")
        for path, name in reversed(made):
            if path.endswith("/namespaces"):
                api.wait_gone("namespaces", None, name, timeout=90 * SLOW)


def evaluator(pb, channel):
    """EvaluateFunction on channel, as Porch's engine calls it."""
    return channel.unary_unary(
        EVALUATE, request_serializer=pb.evaluator.EvaluateFunctionRequest.SerializeToString,
        response_deserializer=pb.evaluator.EvaluateFunctionResponse.FromString)
