"""Fixtures for the end-to-end tests: a real Kubernetes cluster and registry.

`make e2e` (scripts/e2e.sh) starts the lab (../shared/k8s-lab), pushes the
images and runs this directory with the environment below; against any other
cluster, give KUBECONFIG and REGISTRY to scripts/e2e.sh instead. Running
pytest by hand works too once the variables are exported:

    KUBECONFIG        admin kubeconfig (or K8S_LAB_APISERVER, K8S_LAB_TOKEN, K8S_LAB_CA)
    REGISTRY          the registry the node pulls from (host:port)
    E2E_INIT_IMAGE    our init-container image (make images), pushed to REGISTRY
    E2E_FN_IMAGE      a plain busybox function image (tests/e2e/fn_image.py)
    E2E_EMBEDDED_IMAGE  the same image through images/embed
    E2E_CRASH_WRAPPER_IMAGE  a wrapper image whose server exits 3 at start (crash_image.py)
    E2E_RUNNER_IMAGE  our function-runner image (make images), pushed to REGISTRY
    WRAPPER_SERVER_IMAGE  = E2E_INIT_IMAGE (runner-client's default, as Porch's)
    BUILD             build tree of runner-client (default build)
    K8S_LAB_*         set when the cluster is the lab (the k8s fixture's is_lab)
    E2E_SLOW          factor for every deadline (default 1)
    E2E_FIGURES       file the figures are also written to

Fixtures: `k8s` (the environment above), `api` (a small Kubernetes API
client over urllib: create, get, list, delete, wait for a pod condition with
a deadline, pod logs), `namespace` (a fresh namespace per test, deleted
after it), `images` (the pushed image names), `runner` (runs
$BUILD/bin/runner-client), `figures` (lines printed in the summary).
The client and the pod predicates live in k8s.py, for tests to import.
Nothing here needs kubectl (test_deploy_incluster.py compares its overlay
with `kubectl kustomize` when kubectl is there).
"""

import os
import re
import secrets
import types

import pytest

from k8s import CLIENT_BIN, BUILD, BUILD_DIR, Api, ApiError, lab_config, load_kubeconfig, run_client


# ---- fixtures -----------------------------------------------------------------------------


def _need(names):
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        pytest.fail(f"missing environment: {', '.join(missing)}; run `make e2e` (scripts/e2e.sh), "
                    f"which starts the lab and pushes the images", pytrace=False)


@pytest.fixture(scope="session")
def k8s(tmp_path_factory):
    """The cluster's environment (see the module's docstring)."""
    if not os.environ.get("KUBECONFIG") and not os.environ.get("K8S_LAB_APISERVER"):
        _need(["KUBECONFIG"])
    _need(["REGISTRY"])
    return types.SimpleNamespace(
        kubeconfig=os.environ.get("KUBECONFIG"),
        registry=os.environ["REGISTRY"],
        is_lab=bool(os.environ.get("K8S_LAB_DIR")),
        lab_dir=os.environ.get("K8S_LAB_DIR"),
        build=BUILD_DIR,
        client=CLIENT_BIN,
        tmp=str(tmp_path_factory.mktemp("k8s")),
    )


@pytest.fixture(scope="session")
def api(k8s):
    """An Api on the cluster, from KUBECONFIG, else the lab's K8S_LAB_* variables."""
    if k8s.kubeconfig:
        cfg = load_kubeconfig(k8s.kubeconfig, k8s.tmp)
    else:
        cfg = lab_config()
    client = Api(cfg)
    try:
        client.request("GET", "/version")
    except (OSError, ApiError) as e:
        pytest.fail(f"API server {cfg.server} ({cfg.source}) does not answer: {e}", pytrace=False)
    return client


@pytest.fixture(scope="session")
def images(k8s):
    """The image names scripts/e2e.sh pushed, plus one that does not exist."""
    _need(["E2E_INIT_IMAGE", "E2E_FN_IMAGE", "E2E_EMBEDDED_IMAGE", "E2E_CRASH_WRAPPER_IMAGE"])
    return types.SimpleNamespace(
        init=os.environ["E2E_INIT_IMAGE"],
        crash_wrapper=os.environ["E2E_CRASH_WRAPPER_IMAGE"],
        fn=os.environ["E2E_FN_IMAGE"],
        embedded=os.environ["E2E_EMBEDDED_IMAGE"],
        missing=f"{k8s.registry}/krm-e2e-no-such-image:{secrets.token_hex(4)}",
    )


def _ns_name(nodeid):
    base = re.sub(r"[^a-z0-9]+", "-", nodeid.split("::")[-1].lower()).strip("-")
    base = base.removeprefix("test-")[:40].strip("-")
    return f"e2e-{base}-{secrets.token_hex(3)}"


@pytest.fixture
def namespace(api, request):
    """A fresh namespace for the test (default service account ready);
    deleted afterwards, its pods first with no grace period."""
    name = _ns_name(request.node.nodeid)
    api.create_namespace(name)
    yield name
    try:
        for pod in api.list("pods", name):
            api.delete("pods", name, pod["metadata"]["name"], grace=0)
        api.delete("namespaces", None, name)
    except (OSError, ApiError) as e:
        print(f"e2e: cleaning namespace {name}: {e}")



@pytest.fixture(scope="session")
def runner(k8s):
    if not os.access(CLIENT_BIN, os.X_OK):
        pytest.fail(f"{CLIENT_BIN} not built (make all BUILD={BUILD})", pytrace=False)
    return run_client


# Figures measured by the tests, printed after the run (never asserted).
FIGURES = []


@pytest.fixture(scope="session")
def figures():
    return FIGURES


def pytest_terminal_summary(terminalreporter):
    if not FIGURES:
        return
    terminalreporter.section("figures (measured, not asserted)")
    for line in FIGURES:
        terminalreporter.write_line(line)
    out = os.environ.get("E2E_FIGURES")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(FIGURES) + "\n")

