"""deploy/: every object of its kustomization applies (namespaces, the
runner's account and Role, the CRDs); functionconfig-crd.yaml, Porch's
FunctionConfig schema, and servicetemplate-crd.yaml, its ServiceTemplate
schema, as the API server takes them. The CRD is created (or found: Porch's own may be
installed), becomes Established, the FunctionConfigs the runner reads from
files (examples/function-configs) are accepted as they are, with their
status subresource, and objects Porch's schema refuses are refused."""

import os
import time

import pytest
import yaml

from k8s import ApiError, SLOW

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NAME = "functionconfigs.config.porch.kpt.dev"


def load(path):
    with open(os.path.join(ROOT, path)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def establish(api, path):
    """Creates the CRD of that file (or finds it: Porch's may be installed),
    waits until it is Established; returns (it, whether it was created)."""
    (doc,) = load(path)
    name = doc["metadata"]["name"]
    created = False
    try:
        api.request("POST", CRDS, doc)
        created = True
    except ApiError as e:
        if e.status != 409:   # already there (Porch's, or an earlier run's)
            raise
    deadline = time.monotonic() + 30 * SLOW
    while True:
        got = api.request("GET", f"{CRDS}/{name}")
        if any(c["type"] == "Established" and c["status"] == "True"
               for c in (got.get("status") or {}).get("conditions") or []):
            return got, created
        assert time.monotonic() < deadline, f"the CRD is not Established: {got.get('status')}"
        time.sleep(0.1)


@pytest.fixture
def crd(api):
    got, created = establish(api, "deploy/functionconfig-crd.yaml")
    yield got
    if created:
        delete_crd(api, NAME)


def delete_crd(api, name):
    """Deletes a CRD and waits until it is gone: its deletion runs on (the
    API server empties its objects first), and the next test's create would
    otherwise meet the one going away (409, then 404 a moment later)."""
    api.request("DELETE", f"{CRDS}/{name}")
    deadline = time.monotonic() + 60 * SLOW
    while True:
        try:
            api.request("GET", f"{CRDS}/{name}")
        except ApiError as e:
            if e.status == 404:
                return
            raise
        assert time.monotonic() < deadline, f"the CRD {name} is still there 60 s after its delete"
        time.sleep(0.1)


def fc_path(ns, name=None):
    return f"/apis/config.porch.kpt.dev/v1alpha1/namespaces/{ns}/functionconfigs" + (f"/{name}" if name else "")


def test_the_runners_function_configs_are_accepted_with_status(api, crd, namespace):
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    docs = load("examples/function-configs/examples.yaml")
    assert docs
    for doc in docs:
        made = api.request("POST", fc_path(namespace), doc)
        assert made["spec"] == doc["spec"], made   # nothing pruned: every field is in the schema
    name = docs[0]["metadata"]["name"]
    obj = api.request("GET", fc_path(namespace, name))
    # as the runner will write it (Porch's status.error is omitted when empty)
    obj["status"] = {"functionRunnerObservedGeneration": obj["metadata"]["generation"]}
    done = api.request("PUT", fc_path(namespace, name) + "/status", obj)
    assert done["status"]["functionRunnerObservedGeneration"] == obj["metadata"]["generation"], done


def test_pod_executor_fields_and_defaults(api, crd, namespace):
    doc = {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "FunctionConfig",
           "metadata": {"name": "set-namespace"},
           "spec": {"image": "set-namespace", "podExecutor": {
               "tags": ["v0.4.1"], "maxParallelExecutions": 2, "preferredMaxQueueLength": 3,
               "templateOverrides": {"serviceAccountName": "fn", "container": {
                   "env": [{"name": "A", "value": "b"}]}}}}}
    made = api.request("POST", fc_path(namespace), doc)
    assert made["spec"]["podExecutor"]["timeToLive"] == "30m", made   # Porch's default
    assert made["spec"]["podExecutor"]["templateOverrides"] == doc["spec"]["podExecutor"]["templateOverrides"]


@pytest.mark.parametrize("spec, field", [
    ({}, "spec.image"),                                                      # required
    ({"image": ""}, "spec.image"),                                           # minLength 1
    ({"image": "x", "binaryExecutor": {"tags": [], "path": "x"}}, "spec.binaryExecutor.tags"),
    ({"image": "x", "binaryExecutor": {"tags": ["v1"]}}, "spec.binaryExecutor.path"),
    ({"image": "x", "podExecutor": {"maxParallelExecutions": "two"}}, "spec.podExecutor.maxParallelExecutions"),
])
def test_what_porchs_schema_refuses_is_refused(api, crd, namespace, spec, field):
    doc = {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "FunctionConfig",
           "metadata": {"name": "bad"}, "spec": spec}
    with pytest.raises(ApiError) as e:
        api.request("POST", fc_path(namespace), doc)
    assert e.value.status == 422 and field in e.value.body, e.value.body


def collection(doc):
    """The API path a manifest is POSTed to."""
    group_version = doc["apiVersion"]
    base = "/api/" + group_version if "/" not in group_version else "/apis/" + group_version
    plural = {"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "Role": "roles",
              "RoleBinding": "rolebindings", "CustomResourceDefinition": "customresourcedefinitions",
              "Deployment": "deployments", "Service": "services"}
    ns = doc["metadata"].get("namespace")
    return base + (f"/namespaces/{ns}" if ns else "") + "/" + plural[doc["kind"]]


def test_the_kustomization_applies(api):
    (kust,) = load("deploy/Kustomization")
    docs = [d for f in kust["resources"] for d in load(os.path.join("deploy", f))]
    assert {d["kind"] for d in docs} >= {"Namespace", "ServiceAccount", "Role", "RoleBinding",
                                        "CustomResourceDefinition", "Deployment", "Service"}
    made = []
    try:
        for doc in docs:
            # namespaces for real (the rest lives in them), the rest as a dry run
            query = None if doc["kind"] == "Namespace" else {"dryRun": "All"}
            try:
                api.request("POST", collection(doc), doc, query=query)
                if query is None:
                    made.append(doc["metadata"]["name"])
            except ApiError as e:
                assert e.status == 409, f"{doc['kind']} {doc['metadata']['name']}: {e}"
    finally:
        for name in made:
            api.delete("namespaces", None, name)
        for name in made:   # gone, so that the next run can make them again
            api.wait_gone("namespaces", None, name, timeout=60)


def test_a_base_service_template_as_porch_keeps_one(api, namespace):
    """Porch's base-service-template: a Service spec under template.spec."""
    got, created = establish(api, "deploy/servicetemplate-crd.yaml")
    try:
        doc = {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "ServiceTemplate",
               "metadata": {"name": "base-service-template"},
               "template": {"spec": {"ports": [{"port": 9446, "protocol": "TCP", "targetPort": 9446}],
                                     "selector": {"fn.kpt.dev/image": "to-be-replaced"},
                                     "type": "ClusterIP"}}}
        path = f"/apis/config.porch.kpt.dev/v1alpha1/namespaces/{namespace}/servicetemplates"
        made = api.request("POST", path, doc)
        assert made["template"] == doc["template"], made   # nothing pruned
        doc["metadata"]["name"] = "bad"
        doc["template"]["spec"]["ports"][0]["port"] = "nine"
        with pytest.raises(ApiError) as e:
            api.request("POST", path, doc)
        assert e.value.status == 422 and "template.spec.ports" in e.value.body, e.value.body
    finally:
        if created:
            delete_crd(api, got["metadata"]["name"])
