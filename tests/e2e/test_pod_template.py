"""What stands today, on a real cluster: the Pod and Service `runner-client
pod render` prints are created through the API as they are, the init
container copies the wrapper server in, the function's entrypoint runs
under it, and `runner-client eval --addr <podIP>:9446` gets the function's
output; the embedded image (images/embed) serves with no init container;
a missing image and a crashing container show the kubelet's reason in the
API within seconds. Also measures (prints, never asserts) the cold-start
figures of issue 15: create -> wrapper answers health, create -> first
EvaluateFunction answered, create -> Ready, with the template's exec
readiness probe at its default period (10 s) and at 1 s.
"""

import json
import statistics
import subprocess
import time

import pytest
import yaml

from k8s import POD_READY_TIMEOUT, SLOW, container_status, is_ready

PORT = 9446
DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
# The reason must show this fast (issue 15: "fail within 10 s with the reason").
FAIL_FAST = 10


@pytest.fixture(scope="module")
def fn_image(runner, images):
    """The function image's digest and entrypoint, as Porch finds them
    before it creates a pod: from the registry (runner-client image)."""
    r = runner(["image", "--output", "json", images.fn], check=True)
    info = json.loads(r.stdout)
    assert info["entrypoint"][:2] == ["/bin/sh", "-c"], info
    return info


def render(runner, images, ns, image, digest, entrypoint, *extra):
    r = runner(["pod", "render", "--image", image, "--digest", digest, "--wrapper-image", images.init,
                "--namespace", ns, "--entrypoint-json", json.dumps(entrypoint), *extra], check=True)
    docs = [d for d in yaml.safe_load_all(r.stdout) if d]
    assert [d["kind"] for d in docs] == ["Pod", "Service"], r.stdout
    return docs


def create_pod(api, pod):
    """Creates the pod; returns (its name, time.monotonic() just before the POST)."""
    t0 = time.monotonic()
    created = api.create(pod)
    return created["metadata"]["name"], t0


def eval_deployment(runner, tmp_path, addr, image):
    src = tmp_path / "deploy.yaml"
    src.write_text(DEPLOYMENT)
    return runner(["eval", "--addr", addr, "--image", image, "--timeout", "30s", str(src)])


def check_answer(r):
    assert r.returncode == 0, f"eval exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    assert "replicas: 3" in r.stdout, r.stdout
    # The function reports the name of its parent process: the wrapper server.
    assert "fn parent: wrapper-server" in r.stderr, r.stderr


def test_rendered_pod_serves(api, runner, images, namespace, fn_image, tmp_path, figures):
    pod, svc = render(runner, images, namespace, images.fn, fn_image["digest"], fn_image["entrypoint"])
    api.create(svc)
    name, _ = create_pod(api, pod)
    ready, waited = api.wait_pod(namespace, name, is_ready, POD_READY_TIMEOUT, "Ready")

    init = container_status(ready, "copy-wrapper-server", init=True)
    term = (init or {}).get("state", {}).get("terminated") or {}
    assert term.get("exitCode") == 0 and term.get("reason") == "Completed", init
    fn = container_status(ready, "function")
    assert fn["ready"] and "running" in fn["state"] and fn["restartCount"] == 0, fn
    assert ready["metadata"]["labels"]["fn.kpt.dev/image"] == svc["metadata"]["name"]

    ip = ready["status"]["podIP"]
    health = runner(["health", "--addr", f"{ip}:{PORT}", "--timeout", "10s"])
    assert health.returncode == 0 and "SERVING" in health.stdout, health.stdout + health.stderr
    check_answer(eval_deployment(runner, tmp_path, f"{ip}:{PORT}", images.fn))

    # The container's process is the wrapper server copied in by the init container.
    log = api.logs(namespace, name, "function")
    assert f"Listening on :{PORT}" in log, log
    # The copier runs as 65532 and cannot give the emptyDir root's owner or
    # times: busybox's warnings, exit 0 (as Porch's image). Nothing else.
    init_log = api.logs(namespace, name, "copy-wrapper-server").splitlines()
    assert all(line.startswith("cp: can't preserve ") for line in init_log), init_log

    # The Service selects the pod: its EndpointSlice lists the pod's address, ready.
    def slice_ready():
        for s in api.list("endpointslices", namespace,
                          labelSelector=f"kubernetes.io/service-name={svc['metadata']['name']}"):
            for ep in s.get("endpoints") or []:
                if ip in ep.get("addresses", []) and ep.get("conditions", {}).get("ready"):
                    return True
        return False
    deadline = time.monotonic() + 60 * SLOW
    while not slice_ready():
        assert time.monotonic() < deadline, f"no ready EndpointSlice entry for {ip} within 60 s"
        time.sleep(0.2)

    api.delete("pods", namespace, name, grace=0)
    api.delete("services", namespace, svc["metadata"]["name"])
    api.wait_gone("pods", namespace, name, 60 * SLOW)
    figures.append(f"rendered pod: Ready {waited:.1f} s after the create (image pulls included if not on the node yet)")


def test_embedded_image_serves(api, runner, images, namespace, tmp_path):
    """images/embed: the function image serves on its own (no init
    container), from its entrypoint; the probe link is in the image."""
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "embedded", "namespace": namespace},
        "spec": {"containers": [{
            "name": "function", "image": images.embedded, "imagePullPolicy": "IfNotPresent",
            "readinessProbe": {"exec": {"command": ["/wrapper-server-tools/grpc-health-probe",
                                                   "-addr", f"localhost:{PORT}"]},
                               "periodSeconds": 1},
        }]},
    }
    api.create(pod)
    ready, _ = api.wait_pod(namespace, "embedded", is_ready, POD_READY_TIMEOUT, "Ready")
    check_answer(eval_deployment(runner, tmp_path, f"{ready['status']['podIP']}:{PORT}", images.embedded))
    assert f"Listening on :{PORT}" in api.logs(namespace, "embedded")


def waiting_reason(pod, container):
    st = container_status(pod, container) or {}
    return (st.get("state", {}).get("waiting") or {}).get("reason")


def test_missing_image_reason(api, runner, images, namespace, fn_image, figures):
    """A function image that is not in the registry: the API shows
    ErrImagePull or ImagePullBackOff, naming the image, within 10 s."""
    digest = "sha256:" + "0" * 64
    pod, _ = render(runner, images, namespace, images.missing, digest, fn_image["entrypoint"])
    name, t0 = create_pod(api, pod)
    seen, waited = api.wait_pod(namespace, name,
                                lambda p: waiting_reason(p, "function") in ("ErrImagePull", "ImagePullBackOff"),
                                60 * SLOW, "ErrImagePull or ImagePullBackOff")
    elapsed = time.monotonic() - t0
    waiting = container_status(seen, "function")["state"]["waiting"]
    assert images.missing in waiting.get("message", ""), waiting
    assert seen["status"]["phase"] == "Pending"
    assert not is_ready(seen)
    figures.append(f"missing image: {waiting['reason']} in the API {elapsed:.1f} s after the create")
    assert elapsed <= FAIL_FAST * SLOW, f"{waiting['reason']} only {elapsed:.1f} s after the create"


def test_crashing_container_reason(api, runner, images, namespace, fn_image, figures):
    """A function container that exits at start (here the wrapper server
    refuses an unknown flag, exit 2): the API shows the termination (reason
    Error, exit code 2) or CrashLoopBackOff within 10 s, and the container's
    log says why."""
    pod, _ = render(runner, images, namespace, images.fn, fn_image["digest"], fn_image["entrypoint"])
    fn = pod["spec"]["containers"][0]
    fn["args"] = ["--no-such-flag"] + fn["args"]
    name, t0 = create_pod(api, pod)

    def crashed(p):
        st = container_status(p, "function") or {}
        term = st.get("state", {}).get("terminated") or st.get("lastState", {}).get("terminated")
        return term is not None
    seen, _ = api.wait_pod(namespace, name, crashed, 60 * SLOW, "terminated function container")
    elapsed = time.monotonic() - t0
    st = container_status(seen, "function")
    term = st["state"].get("terminated") or st["lastState"]["terminated"]
    assert term["exitCode"] == 2 and term["reason"] == "Error", st
    assert not is_ready(seen)
    log = api.logs(namespace, name, "function", previous=st["restartCount"] > 0)
    assert "no-such-flag" in log, log
    figures.append(f"crashing container: terminated ({term['reason']}, exit {term['exitCode']}) in the API "
                   f"{elapsed:.1f} s after the create")
    assert elapsed <= FAIL_FAST * SLOW, f"termination shown only {elapsed:.1f} s after the create"

    # Then the kubelet backs off: CrashLoopBackOff, the reason Porch's runner will report.
    api.wait_pod(namespace, name, lambda p: waiting_reason(p, "function") == "CrashLoopBackOff",
                 60 * SLOW, "CrashLoopBackOff")


# ---- cold-start figures ------------------------------------------------------------------------

RUNS = 5


def cold_start(api, runner, tmp_path, pod, image):
    """Creates the pod and polls: (s to answered health, s to first
    EvaluateFunction answered, s to Ready), from just before the POST."""
    name, t0 = create_pod(api, pod)
    ns = pod["metadata"]["namespace"]
    t_health = t_eval = t_ready = None
    deadline = t0 + POD_READY_TIMEOUT
    while t_ready is None or t_eval is None:
        p = api.get("pods", ns, name)
        now = time.monotonic()
        if t_ready is None and is_ready(p):
            t_ready = now - t0
        ip = p.get("status", {}).get("podIP")
        if ip and t_health is None:
            try:
                h = runner(["health", "--addr", f"{ip}:{PORT}", "--timeout", "1s"], timeout=10)
            except subprocess.TimeoutExpired:
                pytest.fail(f"runner-client health --timeout 1s on a starting pod ({ip}) still ran after "
                            f"{10 * SLOW:.0f} s", pytrace=False)
            if h.returncode == 0:
                t_health = time.monotonic() - t0
        if t_health is not None and t_eval is None:
            check_answer(eval_deployment(runner, tmp_path, f"{ip}:{PORT}", image))
            t_eval = time.monotonic() - t0
        if now > deadline:
            pytest.fail(f"cold start: not Ready and answered within {POD_READY_TIMEOUT:.0f} s\n"
                        f"{api.describe_pod(ns, name)}", pytrace=False)
        time.sleep(0.05)
    api.delete("pods", ns, name, grace=0)
    return t_health, t_eval, t_ready


def summary(label, values):
    return (f"{label}: p50 {statistics.median(values):.2f} s, min {min(values):.2f}, max {max(values):.2f} "
            f"({', '.join(f'{v:.2f}' for v in values)})")


@pytest.mark.parametrize("period", [None, 1], ids=["probe-period-default", "probe-period-1s"])
def test_cold_start_figures(api, runner, images, namespace, fn_image, tmp_path, figures, period):
    """Pods of the rendered template, created one after the other (images
    already on the node). The readiness probe runs every periodSeconds
    (default 10) from the container's start, so Ready lags the wrapper's
    first answer by up to a period."""
    pod, _ = render(runner, images, namespace, images.fn, fn_image["digest"], fn_image["entrypoint"])
    if period:
        pod["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = period
    results = [cold_start(api, runner, tmp_path, pod, images.fn) for _ in range(RUNS)]
    label = f"readinessProbe periodSeconds {period or 'default (10)'}"
    figures.append(f"cold start, {label}, {RUNS} pods:")
    figures.append("  " + summary("create -> wrapper answers health", [r[0] for r in results]))
    figures.append("  " + summary("create -> first EvaluateFunction answered", [r[1] for r in results]))
    figures.append("  " + summary("create -> pod Ready", [r[2] for r in results]))
