"""runner-client's Kubernetes client against a real cluster (the k8s lab or
any cluster): `pod list` and `pod delete`, and the errors a user sees for a
bad token, an unreachable server and a missing namespace.

Expects the lab's environment (what ../shared/k8s-lab/up.sh prints):
KUBECONFIG, K8S_LAB_APISERVER, K8S_LAB_TOKEN, K8S_LAB_CA; REGISTRY is not
needed here. BUILD names the build tree (default build). Pods are created
without kubectl: `runner-client pod render` output converted to JSON and
POSTed with curl."""
import json
import os
import subprocess
import time
import uuid

import pytest
import yaml

BUILD = os.environ.get("BUILD", "build")
RC = os.path.join(BUILD, "bin", "runner-client")

NEEDED = ["KUBECONFIG", "K8S_LAB_APISERVER", "K8S_LAB_TOKEN", "K8S_LAB_CA"]
pytestmark = pytest.mark.skipif(any(not os.environ.get(v) for v in NEEDED),
                                reason="needs a cluster: " + ", ".join(NEEDED))


def rc(*args, env=None, timeout=60):
    return subprocess.run([RC, *args], capture_output=True, text=True, env=env, timeout=timeout)


def api(method, path, body=None):
    """One API call with curl; returns (status, parsed body)."""
    cmd = ["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-X", method,
           "--cacert", os.environ["K8S_LAB_CA"],
           "-H", "Authorization: Bearer " + os.environ["K8S_LAB_TOKEN"]]
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
    out = subprocess.run(cmd + [os.environ["K8S_LAB_APISERVER"] + path], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    text, _, code = out.rpartition("\n")
    return int(code), json.loads(text) if text.strip() else None


def wait_for(pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


@pytest.fixture
def namespace():
    """A fresh namespace with its default service account, deleted after."""
    ns = "kc-" + uuid.uuid4().hex[:8]
    code, _ = api("POST", "/api/v1/namespaces",
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert code == 201
    wait_for(lambda: api("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200,
             "the default service account")
    yield ns
    api("DELETE", f"/api/v1/namespaces/{ns}")


def create_function_pod(ns):
    """Porch's pod for a function image, rendered by runner-client."""
    out = subprocess.run([RC, "pod", "render", "--image", "127.0.0.1:1/fn/missing:v1",
                          "--digest", "sha256:" + "ab" * 32, "--wrapper-image",
                          "127.0.0.1:1/wrapper:v1", "--namespace", ns, "--", "/fn"],
                         capture_output=True, text=True, check=True).stdout
    pod = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "Pod")
    code, created = api("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    assert code == 201, created
    return created["metadata"]["name"]


def test_list_empty_namespace(namespace):
    r = rc("pod", "list", "--namespace", namespace)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert f'no function pods in namespace "{namespace}"' in r.stderr


def test_list_then_delete(namespace):
    name = create_function_pod(namespace)
    # a pod without the function label is not listed
    code, _ = api("POST", f"/api/v1/namespaces/{namespace}/pods",
                  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other"},
                   "spec": {"containers": [{"name": "c", "image": "127.0.0.1:1/x:v1"}]}})
    assert code == 201
    r = rc("pod", "list", "--namespace", namespace)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "AGE", "IDLE", "OWNER", "IMAGE"]
    assert len(lines) == 2, r.stdout
    cols = lines[1].split()
    assert cols[0] == name
    assert cols[-1] == "127.0.0.1:1/fn/missing:v1"
    assert cols[3] == "-" and cols[4] == "-"   # no call yet; made by no serve replica
    assert cols[1] in ("Pending", "Init:0/1", "ErrImagePull", "ImagePullBackOff", "PodInitializing"), cols

    r = rc("pod", "delete", name, "--namespace", namespace)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"deleted pod {name}\n"
    # (the deleted pod may linger while the kubelet stops it: ask for one
    # that never existed)
    r = rc("pod", "delete", name + "-none", "--namespace", namespace)
    assert r.returncode == 1
    assert f'pods "{name}-none" in namespace "{namespace}" not found' in r.stderr


def test_delete_all(namespace):
    names = sorted(create_function_pod(namespace) for _ in range(2))
    r = rc("pod", "delete", "--all", "--namespace", namespace)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split("\n")[:-1]) == [f"deleted pod {n}" for n in names]


def test_bad_token_says_what_was_tried(tmp_path):
    cfg = yaml.safe_load(open(os.environ["KUBECONFIG"]))
    for u in cfg["users"]:
        u["user"] = {"token": "0" * 48}
    path = tmp_path / "bad-token"
    path.write_text(yaml.safe_dump(cfg))
    r = rc("pod", "list", "--kubeconfig", str(path))
    assert r.returncode == 1
    assert "refused our credentials (401 Unauthorized): tried bearer token from kubeconfig " \
        + str(path) in r.stderr, r.stderr


def test_unreachable_server_fails_fast(tmp_path):
    cfg = yaml.safe_load(open(os.environ["KUBECONFIG"]))
    for c in cfg["clusters"]:
        c["cluster"]["server"] = "https://127.0.0.1:9"
    path = tmp_path / "unreachable"
    path.write_text(yaml.safe_dump(cfg))
    start = time.monotonic()
    r = rc("pod", "list", "--kubeconfig", str(path), timeout=20)
    assert time.monotonic() - start < 10
    assert r.returncode == 1
    assert "cannot reach the Kubernetes API server https://127.0.0.1:9: " in r.stderr, r.stderr
    assert "Could" in r.stderr or "refused" in r.stderr


def test_wrong_ca_is_a_tls_error(tmp_path):
    cfg = yaml.safe_load(open(os.environ["KUBECONFIG"]))
    for c in cfg["clusters"]:
        c["cluster"].pop("certificate-authority-data", None)
        c["cluster"].pop("certificate-authority", None)
    path = tmp_path / "no-ca"
    path.write_text(yaml.safe_dump(cfg))
    r = rc("pod", "list", "--kubeconfig", str(path))
    assert r.returncode == 1
    assert "TLS with the Kubernetes API server" in r.stderr, r.stderr
    assert "verified against the system CAs" in r.stderr


def test_missing_namespace():
    r = rc("pod", "list", "--namespace", "no-such-ns-" + uuid.uuid4().hex[:6])
    assert r.returncode == 1
    assert "does not exist on " + os.environ["K8S_LAB_APISERVER"] in r.stderr, r.stderr
