"""The exec runtime's sandbox of a runner deployed in the cluster (issue 24):
deploy/'s objects with tests/e2e/runner-lab's patch, as
test_deploy_incluster.py deploys them, once with the pod's default seccomp
profile (Unconfined on Kubernetes 1.20) and once with the pod's
`securityContext.seccompProfile.type: RuntimeDefault` (containerd's
profile). The test reads the sandbox the runner chose from `GET
/debug/sandbox` and `/metrics` and asserts what each profile allows; then
calls two exec functions through the runner: one that answers its
ResourceList unchanged, which must come back as it went, and one that first
reads the runner pod's service-account token, which the sandbox must
refuse. The functions are tests/e2e/sandbox_fn.c built static, on a hostPath
the test prepares and mounts as the Deployment's --functions directory (empty
in the image), with their FunctionConfigs on another (outside what a function
may read). `--sandbox strict` must refuse to start under either, naming the
layers missing there: the pod crash-loops with that in its log. With
`--sandbox off` the token read succeeds: the control.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import grpc
import pytest

from incluster import (RUNNER_NS, container, deployed, deployment_ready, describe_runner,  # noqa: F401
                       evaluator, lab_values, overlay_docs, runner_image, runner_pods, wait_for)  # (a fixture)
from k8s import ROOT, SLOW
from test_serve_pods import RL, free_port, pb  # noqa: F401 (pb: a fixture)

TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
PREFIX = "e2e-sandbox/"
FUNCTIONS, CONFIG = "/home/nonroot/functions", "/home/nonroot/sandbox-config"
FUNCTIONS_BUILT = {   # name: the defines tests/e2e/sandbox_fn.c is built with
    "echo": [],
    "steal-token": [f'-DSTEAL="{TOKEN}"'],
    "connect-api": ["-DCONNECT_PORT={api_port}"],
}


def function_config(name):
    return f"""\
apiVersion: config.porch.kpt.dev/v1alpha1
kind: FunctionConfig
metadata:
  name: {name}
spec:
  image: {name}
  prefixes: ["{PREFIX}"]
  binaryExecutor:
    tags: [v1]
    path: {name}
"""


def hostile_calls(api_port):
    """(function, what its answer must say): each refused under both profiles."""
    return [("steal-token", f"cannot read {TOKEN}: Permission denied"),
            ("connect-api", f"cannot connect to 127.0.0.1:{api_port}: Operation not permitted")]


# What each profile leaves the sandbox, as the lab showed it: the layers
# used, and the reason `auto` names for the first missing one. Under both,
# "proc" is missing (a container's /proc has masked paths, so no new proc can
# be mounted in the function's namespaces); containerd's RuntimeDefault
# refuses the unshare of a user namespace as well (EPERM), so "namespaces"
# goes, and "proc" with it (it needs them).
PROFILES = {
    "default": (None, {"namespaces", "rlimits", "no_new_privs", "landlock", "seccomp"},
                "proc (proc: mount proc on /proc: Operation not permitted)"),
    "RuntimeDefault": ({"type": "RuntimeDefault"}, {"rlimits", "no_new_privs", "landlock", "seccomp"},
                       "namespaces (make the shared network namespace: Operation not permitted)"),
}
ALL_LAYERS = {"namespaces", "proc", "rlimits", "no_new_privs", "landlock", "seccomp"}


@pytest.fixture(scope="module")
def host_dirs(api):
    """A host directory with the functions and one with their
    FunctionConfigs, readable by the runner's user (65532): the pod mounts
    both as hostPath volumes (the lab's node is this machine)."""
    cc = shutil.which("cc")
    if not cc:
        pytest.fail("no C compiler (cc): it builds tests/e2e/sandbox_fn.c", pytrace=False)
    top = tempfile.mkdtemp(prefix="krm-e2e-sandbox-")
    try:
        functions, config = os.path.join(top, "functions"), os.path.join(top, "config")
        os.mkdir(functions)
        os.mkdir(config)
        src = os.path.join(ROOT, "tests", "e2e", "sandbox_fn.c")
        api_port = urllib.parse.urlsplit(api.config.server).port
        for name, defines in FUNCTIONS_BUILT.items():
            defines = [d.format(api_port=api_port) for d in defines]
            subprocess.run([cc, "-static", "-O2", "-Wall", "-Wextra", "-Werror", *defines, "-o",
                            os.path.join(functions, name), src], check=True)
        with open(os.path.join(config, "functions.yaml"), "w") as f:
            f.write("---\n".join(function_config(name) for name in FUNCTIONS_BUILT))
        for d, _, files in os.walk(top):
            os.chmod(d, 0o755)
            for name in files:
                os.chmod(os.path.join(d, name), 0o755)
        yield functions, config
    finally:
        shutil.rmtree(top)


def sandbox_deployment(api, runner_image, images, host_dirs, profile, mode, *flags):
    """deploy/'s objects for the lab, the Deployment with the seccomp
    profile, the functions mounted and --sandbox MODE; and the runner's port."""
    server = urllib.parse.urlsplit(api.config.server)
    if server.hostname != "127.0.0.1":
        pytest.skip("the runner pod reaches the API server on the host's loopback (the lab's layout)")
    docs = overlay_docs()
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    port = free_port()
    lab_values(deployment, runner_image, images.init, server.port, port)
    pod_spec = deployment["spec"]["template"]["spec"]
    if profile:
        pod_spec["securityContext"]["seccompProfile"] = profile
    functions, config = host_dirs
    pod_spec["volumes"] += [{"name": "functions", "hostPath": {"path": functions, "type": "Directory"}},
                            {"name": "sandbox-config", "hostPath": {"path": config, "type": "Directory"}}]
    c = container(deployment)
    c["volumeMounts"] += [{"name": "functions", "mountPath": FUNCTIONS, "readOnly": True},
                          {"name": "sandbox-config", "mountPath": CONFIG, "readOnly": True}]
    assert f"--functions={FUNCTIONS}" in c["command"], c["command"]
    c["command"] += [f"--function-config={CONFIG}", f"--sandbox={mode}", *flags]
    return docs, port


def http_get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10 * SLOW) as r:
        assert r.status == 200, (path, r.status)
        return r.read().decode()


@pytest.mark.parametrize("keep", [False, True], ids=["fresh", "keep"])
@pytest.mark.parametrize("profile", list(PROFILES))
def test_auto_uses_what_the_profile_allows(api, images, runner_image, pb, host_dirs, figures, profile, keep):
    seccomp_profile, expected, unavailable = PROFILES[profile]
    docs, port = sandbox_deployment(api, runner_image, images, host_dirs, seccomp_profile, "auto",
                                    "--sandbox-keep" if keep else "--sandbox-keep=false")
    with deployed(api, docs):
        wait_for("the Deployment Ready", lambda: deployment_ready(api), 120, lambda: describe_runner(api))
        (pod,) = runner_pods(api)
        assert pod["spec"]["securityContext"].get("seccompProfile") == seccomp_profile, pod["spec"]
        logs = api.logs(RUNNER_NS, pod["metadata"]["name"])
        said = [line.split("] ", 1)[-1] for line in logs.splitlines() if "] sandbox: " in line]
        figures.append(f"sandbox in a pod ({profile} seccomp profile): " + "; ".join(said))

        view = json.loads(http_get(port, "/debug/sandbox"))
        used = {layer for layer, on in view["layers"].items() if on}
        assert view["mode"] == "auto" and used == expected, (view, said)
        assert set(view["layers"]) == ALL_LAYERS, view
        assert view["unavailable"] == unavailable, view
        # without namespaces functions are in the runner's network, seccomp
        # their only bar to it (below)
        assert view["network"] in (("shared", "per call") if "namespaces" in expected else ("the runner's",)), view
        assert said and said[-1].startswith("sandbox: auto: functions run with ") and \
            said[-1].endswith(f"; unavailable: {unavailable}"), said   # said once at start
        metrics = http_get(port, "/metrics")
        for layer in ALL_LAYERS:
            line = f'krm_sandbox_layer{{layer="{layer}"}} {int(layer in expected)}'
            assert line in metrics.splitlines(), (line, metrics)

        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            evaluate = evaluator(pb, channel)
            resp = evaluate(pb.evaluator.EvaluateFunctionRequest(resource_list=RL, image=f"{PREFIX}echo:v1"),
                            timeout=60 * SLOW)
            assert resp.resource_list == RL, resp
            # the token is there for the runner (its pod mounts it) ...
            mounts = [m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]]
            assert os.path.dirname(TOKEN) in mounts, mounts
            # ... and the function asking for it is refused, the reason in the
            # answer; so is one connecting to the API server (the pod has the
            # host's network here)
            for function, refusal in hostile_calls(urllib.parse.urlsplit(api.config.server).port):
                with pytest.raises(grpc.RpcError) as refused:
                    got = evaluate(pb.evaluator.EvaluateFunctionRequest(
                        resource_list=RL, image=f"{PREFIX}{function}:v1"), timeout=60 * SLOW)
                    pytest.fail(f"{function} was not refused: {got}")
                assert refusal in refused.value.details(), refused.value
                figures.append(f"sandbox in a pod ({profile} seccomp profile): {function} refused: "
                               f"{refused.value.code().name}: {refusal}")
            # the spawner (a process forked at start, where the sandbox has a
            # layer to set up) served these calls under the pod's profile:
            # it neither died nor handed its spawns back to the loop
            logs = api.logs(RUNNER_NS, pod["metadata"]["name"])
            lost = [line for line in logs.splitlines() if "sandbox spawner" in line and
                    ("restarted as" in line or "on the server's loop from now" in line or
                     "closing the server's descriptors" in line)]
            assert not lost, lost
            if keep:   # the calls ran on kept hosts where the profile allows namespaces
                metrics = http_get(port, "/metrics").splitlines()
                no_effect = [line for line in logs.splitlines() if "--sandbox-keep: no effect" in line]
                failed = [line for line in logs.splitlines() if "sandbox keep: cannot make a host" in line or
                          "exited unasked" in line]
                assert not failed, failed
                if "namespaces" in expected:
                    hosts = [line for line in metrics if line.startswith("krm_sandbox_kept_hosts ")]
                    assert hosts and int(hosts[0].split()[1]) >= 1 and not no_effect, (hosts, no_effect)
                    figures.append(f"sandbox in a pod ({profile} seccomp profile, --sandbox-keep): {hosts[0]}")
                else:
                    assert len(no_effect) == 1, logs
                    figures.append(f"sandbox in a pod ({profile} seccomp profile, --sandbox-keep): "
                                   f"{no_effect[0].split('] ', 1)[-1]}")
        finally:
            channel.close()


@pytest.mark.parametrize("profile", list(PROFILES))
def test_strict_refuses_to_start_naming_the_missing_layers(api, images, runner_image, host_dirs, figures, profile):
    seccomp_profile, expected, _ = PROFILES[profile]
    docs, _ = sandbox_deployment(api, runner_image, images, host_dirs, seccomp_profile, "strict")
    with deployed(api, docs):
        def crash_looping():
            for p in runner_pods(api):
                for s in (p.get("status") or {}).get("containerStatuses") or []:
                    waiting = (s.get("state") or {}).get("waiting") or {}
                    if waiting.get("reason") == "CrashLoopBackOff":
                        return p["metadata"]["name"]
            return None
        start = time.monotonic()
        replica = wait_for("the runner pod in CrashLoopBackOff", crash_looping, 120, lambda: describe_runner(api))
        figures.append(f"sandbox in a pod ({profile} seccomp profile, --sandbox strict): CrashLoopBackOff after "
                       f"{time.monotonic() - start:.1f} s")
        logs = api.logs(RUNNER_NS, replica, previous=True)
        assert not deployment_ready(api)
        refusal = [line for line in logs.splitlines() if "--sandbox strict: unavailable here:" in line]
        assert refusal, logs
        for layer in ALL_LAYERS - expected:
            assert f" {layer}, which needs " in refusal[0], refusal[0]
        for layer in expected:
            assert f" {layer}, which needs " not in refusal[0], refusal[0]
        figures.append(f"sandbox in a pod ({profile} seccomp profile, --sandbox strict): {refusal[0][-300:]}")


def test_off_lets_the_hostile_functions_through(api, images, runner_image, pb, host_dirs):
    """The control: with --sandbox off the same functions read the token and
    connect to the API server, and their calls succeed, so the refusals
    above are the sandbox's doing."""
    docs, port = sandbox_deployment(api, runner_image, images, host_dirs, None, "off")
    with deployed(api, docs):
        wait_for("the Deployment Ready", lambda: deployment_ready(api), 120, lambda: describe_runner(api))
        view = json.loads(http_get(port, "/debug/sandbox"))
        assert view["mode"] == "off" and not any(view["layers"].values()), view
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            for function, _ in hostile_calls(urllib.parse.urlsplit(api.config.server).port):
                resp = evaluator(pb, channel)(pb.evaluator.EvaluateFunctionRequest(
                    resource_list=RL, image=f"{PREFIX}{function}:v1"), timeout=60 * SLOW)
                assert resp.resource_list == RL, (function, resp)
