"""The function runner deployed in the cluster from deploy/, as a user does:
every object of deploy/Kustomization with tests/e2e/runner-lab's patch
(hostNetwork and the API server's address: lab-patch.yaml says why), the
runner's image from `make images` (E2E_RUNNER_IMAGE). The Deployment turns
Ready through its startup and readiness probes (the probe built into the
image), the runner answers EvaluateFunction over gRPC (python grpcio, as
Porch's engine calls it) with a function pod it created in porch-fn-system
as its service account, under RBAC, with exactly deploy/rbac.yaml's Role;
deleting the Deployment stops it and leaves nothing of it; its function
pod and Service stay for a successor to adopt (as Porch's do) and are
cleared with `runner-client pod delete --all`.

When kubectl is installed, `kubectl kustomize tests/e2e/runner-lab` must
give the same objects as the test's own merge of the patch. The same runs
with Porch's own function-runner Deployment (its command, flags, user 10001
and probes) holding our image instead of deploy/'s: Porch's older layout.
"""

import os
import shutil
import subprocess
import time
import urllib.parse

import grpc
import pytest
import yaml

from incluster import (CONTAINER, FN_NS, OVERLAY, RUNNER_NS, canonical, deployed, deployment_ready,
                       describe_runner, evaluator, lab_values, load, merge, overlay_docs, runner_image,  # noqa: F401
                       runner_pods, wait_for)  # (runner_image: a fixture)
from k8s import ROOT, SLOW, is_ready, run_client
from test_serve_pods import RL, free_port, pb  # noqa: F401 (pb: a fixture)


def porchs_deployment():
    """Porch's own function-runner Deployment as kptdev/porch ships it
    (deployments/porch/2-function-runner.yaml: its command, flags, user and
    probes; the OTEL settings left out), for the older layout's drop-in:
    only the image and WRAPPER_SERVER_IMAGE are ours."""
    def probe(**timing):
        return {"exec": {"command": ["/home/nonroot/grpc-health-probe", "-addr", "localhost:9445"]}, **timing}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "function-runner", "namespace": RUNNER_NS},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "function-runner"}},
                 "template": {"metadata": {"labels": {"app": "function-runner"}}, "spec": {
                     "serviceAccountName": "porch-fn-runner",
                     "containers": [{
                         "name": CONTAINER, "image": "ghcr.io/kptdev/porch-function-runner:latest",
                         "imagePullPolicy": "IfNotPresent",
                         "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001},
                         "command": ["/home/nonroot/server", "--pod-namespace=porch-fn-system",
                                     "--max-request-body-size=6291456", "--max-parallel-pods-per-function=2",
                                     "--max-waitlist-length=1", "--warm-up-pod-cache=true",
                                     "--functions=/home/nonroot/functions"],
                         "env": [{"name": "WRAPPER_SERVER_IMAGE", "value": "ghcr.io/kptdev/porch-wrapper-server:latest"}],
                         "ports": [{"containerPort": 9445}],
                         "startupProbe": probe(initialDelaySeconds=5, periodSeconds=5, failureThreshold=30,
                                               timeoutSeconds=5),
                         "readinessProbe": probe(periodSeconds=5, failureThreshold=3, timeoutSeconds=3),
                         "livenessProbe": probe(initialDelaySeconds=30, periodSeconds=30, failureThreshold=3,
                                                timeoutSeconds=5),
                         "resources": {"requests": {"memory": "64Mi", "cpu": "125m"}}}]}}}}


def test_the_overlay_is_what_kubectl_kustomize_builds():
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl not installed: the overlay is checked by the test's own merge only")
    r = subprocess.run([kubectl, "kustomize", OVERLAY], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert canonical([d for d in yaml.safe_load_all(r.stdout) if d]) == canonical(overlay_docs())


@pytest.mark.parametrize("manifest", ["deploy", "porch"])
def test_the_runner_deployed_answers_with_a_function_pod(api, k8s, images, runner_image, pb, figures, manifest):
    """manifest: deploy/'s Deployment, or Porch's own with our image in it."""
    server = urllib.parse.urlsplit(api.config.server)
    if server.hostname != "127.0.0.1":
        pytest.skip("the runner pod reaches the API server on the host's loopback (the lab's layout)")
    docs = overlay_docs()
    if manifest == "porch":
        (patch,) = load(os.path.join(OVERLAY, "lab-patch.yaml"))
        docs = [merge(porchs_deployment(), patch) if d["kind"] == "Deployment" else d for d in docs]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    port, also_port = free_port(), free_port()
    lab_values(deployment, runner_image, images.init, server.port, port, also_port)

    with deployed(api, docs) as made:
        start = time.monotonic()

        def describe():
            return describe_runner(api)

        wait_for("the Deployment Ready", lambda: deployment_ready(api), 120, describe)
        figures.append(f"deploy ({manifest}'s Deployment): created -> Ready (startup and readiness "
                       f"probes passed): {time.monotonic() - start:.1f} s")
        (pod,) = runner_pods(api)
        assert is_ready(pod)
        replica = pod["metadata"]["name"]

        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        evaluate = evaluator(pb, channel)
        t0 = time.monotonic()
        resp = evaluate(pb.evaluator.EvaluateFunctionRequest(resource_list=RL, image=images.fn),
                        timeout=120 * SLOW)
        figures.append(f"deploy ({manifest}'s Deployment): first call (function pod created): "
                       f"{time.monotonic() - t0:.1f} s")
        assert b"replicas: 3" in resp.resource_list and b"replicas: 1" not in resp.resource_list, resp
        channel.close()
        if manifest == "deploy":   # the newer layout's port (porch-server's 9447), the same answer
            channel = grpc.insecure_channel(f"127.0.0.1:{also_port}")
            again = evaluator(pb, channel)(
                pb.evaluator.EvaluateFunctionRequest(resource_list=RL, image=images.fn), timeout=60 * SLOW)
            assert again.resource_list == resp.resource_list
            channel.close()
        fn_pods = [p for p in api.list("pods", FN_NS)
                   if "fn.kpt.dev/image" in p["metadata"].get("labels", {})]
        owners = [p["metadata"]["annotations"].get("fn.kpt.dev/owner") for p in fn_pods]
        # deploy/ names each replica after its pod (POD_NAME); Porch's
        # manifest does not, and a host-network pod's host name is the node's
        assert owners == [replica if manifest == "deploy" else owners[0]] and owners[0], fn_pods
        logs = api.logs(RUNNER_NS, replica)
        assert "forbidden" not in logs.lower(), logs   # the Role grants what it does
        sandbox = [line.split("] ", 1)[-1] for line in logs.splitlines() if "] sandbox: " in line]
        figures.append(f"deploy ({manifest}'s Deployment): the runner's " + "; ".join(sandbox))

        # The Deployment deleted: the runner gets SIGTERM and goes, and
        # nothing of the Deployment is left.
        api.request("DELETE", f"/apis/apps/v1/namespaces/{RUNNER_NS}/deployments/function-runner",
                    {"propagationPolicy": "Foreground"})
        made[:] = [m for m in made if m[1] != "function-runner" or "deployments" not in m[0]]
        wait_for("the runner's pod gone", lambda: not api.list(
            "pods", RUNNER_NS, labelSelector="app=function-runner"), 60, describe)
        wait_for("the Deployment and its ReplicaSet gone", lambda: not api.request(
            "GET", f"/apis/apps/v1/namespaces/{RUNNER_NS}/replicasets",
            query={"labelSelector": "app=function-runner"})["items"] and not api.request(
            "GET", f"/apis/apps/v1/namespaces/{RUNNER_NS}/deployments")["items"], 60)
        # What it leaves: its function pod and that pod's Service, for the
        # next runner to adopt once its Lease expires, as Porch's runner
        # leaves its pods (serve does not delete them on SIGTERM). Cleared
        # as a user would: `runner-client pod delete --all`, then the Services.
        def function_objects():
            pods = [p for p in api.list("pods", FN_NS) if "fn.kpt.dev/image" in p["metadata"].get("labels", {})]
            services = [s for s in api.list("services", FN_NS)
                        if "fn.kpt.dev/image" in (s["spec"].get("selector") or {})]
            return pods, services
        pods, services = function_objects()
        assert [p["metadata"]["name"] for p in pods] == [p["metadata"]["name"] for p in fn_pods]
        assert len(services) == len(pods), services
        figures.append(f"deploy ({manifest}'s Deployment): left by the stopped runner for its successor: {len(pods)} function pod(s), "
                       f"{len(services)} Service(s), its Lease")
        run_client(["pod", "delete", "--all", "--namespace", FN_NS, "--kubeconfig", k8s.kubeconfig], check=True)
        for svc in services:
            api.delete("services", FN_NS, svc["metadata"]["name"])
        wait_for("no function pod or Service left", lambda: function_objects() == ([], []), 60)


@pytest.mark.parametrize("how", ["-f", "-k"])
def test_kubectl_applies_deploy(api, k8s, how):
    """`kubectl apply -f deploy/` and `-k deploy/` both create every object
    (-f takes the files in name order: namespaces before what lives in them,
    and passes the Kustomization by), and `kubectl delete` takes them away.
    On the lab only, and only where none of it exists yet."""
    kubectl = shutil.which("kubectl")
    if not kubectl or not k8s.kubeconfig:
        pytest.skip("kubectl not installed (the objects are applied through the API by the test above)")
    if urllib.parse.urlsplit(api.config.server).hostname != "127.0.0.1":
        pytest.skip("creates and deletes Porch's namespaces: on the lab only")
    if api.get_or_none("namespaces", None, RUNNER_NS) or api.get_or_none("namespaces", None, FN_NS):
        pytest.skip("Porch's namespaces exist already: not the test's to delete")
    docs = overlay_docs()
    base = ["--kubeconfig", k8s.kubeconfig]
    # before Kubernetes 1.25 kubectl's own check does not know the CRD's CEL rule
    r = subprocess.run([kubectl, *base, "apply", how, os.path.join(ROOT, "deploy"), "--validate=false"],
                       capture_output=True, text=True, timeout=120 * SLOW)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        for doc in docs:
            assert f"/{doc['metadata']['name']} created" in r.stdout, (doc["kind"], r.stdout)
    finally:
        d = subprocess.run([kubectl, *base, "delete", how, os.path.join(ROOT, "deploy"), "--wait=false"],
                           capture_output=True, text=True, timeout=120 * SLOW)
        for ns in (RUNNER_NS, FN_NS):
            api.wait_gone("namespaces", None, ns, timeout=90 * SLOW)
        crds = [d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"]

        def crds_gone():
            have = {c["metadata"]["name"] for c in api.request(
                "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]}
            return not have & set(crds)
        wait_for("the CRDs gone", crds_gone, 60)
    assert d.returncode == 0, d.stdout + d.stderr
