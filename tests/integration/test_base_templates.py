"""`runner-client serve` makes function pods from the base templates of the
pod namespace, as Porch's pod evaluator does: the PodTemplate
`--base-pod-template-name` and the ServiceTemplate
`--base-service-template-name`, read from the (scripted) API server,
created from the built-in ones when missing, or with
`--skip-template-creation` waited for (`--template-wait-timeout`) and
refused naming them. The Pod and Service the runner POSTs are checked
field by field: the template's own fields kept, Porch's patches applied,
the PodTemplate's resourceVersion as the template version.
tests/e2e/test_base_templates.py does it on the lab, template changes
included."""

import json
import threading

import pytest
import yaml

from krmtest import CLIENT_BIN, run_cli
from test_hostile_kube import NS, FakeAPI, kubeconfig

PODTEMPLATES = f"/api/v1/namespaces/{NS}/podtemplates"
SERVICETEMPLATES = f"/apis/config.porch.kpt.dev/v1alpha1/namespaces/{NS}/servicetemplates"
PODS = f"/api/v1/namespaces/{NS}/pods"
SERVICES = f"/api/v1/namespaces/{NS}/services"
WRAPPER = "127.0.0.1:1/wrapper-server:v1"


def custom_pod_template(rv="42"):
    return {"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "base-pod-template", "namespace": NS, "resourceVersion": rv},
            "template": {
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "kept"}},
                "spec": {
                    "nodeSelector": {"disk": "ssd"},
                    "initContainers": [{"name": "copy-wrapper-server", "image": "placeholder",
                                        "command": ["cp", "-a", "/home/nonroot/wrapper-server/.",
                                                    "/wrapper-server-tools"]}],
                    "containers": [{"name": "sidecar", "image": "busybox"},
                                   {"name": "function", "image": "to-be-replaced",
                                    "command": ["/wrapper-server-tools/wrapper-server"],
                                    "args": ["--x"],
                                    "resources": {"limits": {"memory": "64Mi"}},
                                    "securityContext": {"runAsUser": 65532}}]}}}


def custom_service_template():
    return {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "ServiceTemplate",
            "metadata": {"name": "base-service-template", "namespace": NS, "resourceVersion": "7"},
            "template": {"metadata": {"labels": {"dropped": "as Porch"}},
                         "spec": {"type": "ClusterIP", "selector": {"fn.kpt.dev/image": "x"},
                                  "ports": [{"name": "server", "port": 9446, "targetPort": 9446}]}}}


class Cluster:
    """The scripted API server: templates held (None: missing, 404), every
    POST body kept, pods answered as created (and never Ready)."""

    def __init__(self, pod_template=None, service_template=None, appear_after=None):
        self.fake = FakeAPI()
        self.image = self.fake.add_image()
        self.templates = {PODTEMPLATES: pod_template, SERVICETEMPLATES: service_template}
        self.appear_after = appear_after   # (path, n GETs, object): it appears after n GETs
        self.gets = {PODTEMPLATES: 0, SERVICETEMPLATES: 0}
        self.posts = []
        self.lock = threading.Lock()
        self.created = threading.Event()
        f = self.fake
        for base in (PODTEMPLATES, SERVICETEMPLATES):
            f.route("GET", base, self.get_template)
            f.route("POST", base, self.post_template)
        f.route("GET", PODS, lambda f, h, p, q: f.send(h, 200, {"kind": "PodList", "metadata": {
            "resourceVersion": "1"}, "items": []}))
        f.route("POST", PODS, self.post_object)
        f.route("POST", SERVICES, self.post_object)

    def base(self, path):
        return PODTEMPLATES if path.startswith(PODTEMPLATES) else SERVICETEMPLATES

    def get_template(self, f, h, path, query):
        base = self.base(path)
        with self.lock:
            self.gets[base] += 1
            if self.appear_after and self.appear_after[0] == base and \
                    self.gets[base] > self.appear_after[1]:
                self.templates[base] = self.appear_after[2]
            obj = self.templates[base]
        if "watch=" in query:   # no event; the watch is reopened later
            return f.send(h, 200, b"")
        if path == base:        # the watch's list, by name
            return f.send(h, 200, {"kind": "List", "metadata": {"resourceVersion": "50"},
                                   "items": [obj] if obj else []})
        if obj is None:   # as the API server answers for a missing object of a served kind
            name = path.rsplit('/', 1)[1]
            return f.send(h, 404, {"kind": "Status", "code": 404, "reason": "NotFound",
                                   "message": f"{name} not found",
                                   "details": {"name": name, "kind": base.rsplit("/", 1)[1]}})
        f.send(h, 200, obj)

    def post_template(self, f, h, path, query):
        obj = json.loads(h.body)
        obj["metadata"]["resourceVersion"] = "100"
        with self.lock:
            self.posts.append((path, obj))
            self.templates[self.base(path)] = obj
        f.send(h, 201, obj)

    def post_object(self, f, h, path, query):
        obj = yaml.safe_load(h.body)   # the built-in Service is sent as YAML
        with self.lock:
            self.posts.append((path, yaml.safe_load(h.body)))
        obj.setdefault("metadata", {}).update(name=obj["metadata"].get("name") or "fn-pod-1",
                                               uid="u-1", resourceVersion="1")
        f.send(h, 201, obj)
        if path == PODS:
            self.created.set()

    def posted(self, path):
        with self.lock:
            return [o for p, o in self.posts if p == path]

    def close(self):
        self.fake.close()


@pytest.fixture
def make_cluster():
    made = []

    def make(**kw):
        c = Cluster(**kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close()


def serve(start_server, tmp_path, cluster, *extra):
    kc = kubeconfig(tmp_path, cluster.fake.port, "    token: t\n")
    return start_server([], binary=CLIENT_BIN, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                        argv=["serve", "--port", "{port}", "--kubeconfig", str(kc),
                              "--wrapper-server-image", WRAPPER, "--replica-name", "me",
                              "--dial", "pod", *extra])


def pod_posted(srv, cluster):
    """Calls the image (the pod never turns Ready: the call times out) and
    returns the Pod and Service the runner POSTed."""
    srv.evaluate_error(image=cluster.image, timeout=3)
    assert cluster.created.wait(5), srv.stderr()
    return cluster.posted(PODS)[0], cluster.posted(SERVICES)[0]


def test_pod_is_made_from_the_clusters_pod_template(start_server, tmp_path, make_cluster):
    cluster = make_cluster(pod_template=custom_pod_template(), service_template=custom_service_template())
    srv = serve(start_server, tmp_path, cluster)
    pod, svc = pod_posted(srv, cluster)
    meta, spec = pod["metadata"], pod["spec"]
    pod_id = meta["labels"]["fn.kpt.dev/image"]
    assert meta["generateName"] == pod_id + "-" and meta["namespace"] == NS
    assert meta["labels"]["team"] == "a"                               # the template's, kept
    assert meta["annotations"]["note"] == "kept"
    assert meta["annotations"]["fn.kpt.dev/template-version"] == "42"  # its resourceVersion
    assert meta["annotations"]["fn.kpt.dev/owner"] == "me"
    assert spec["nodeSelector"] == {"disk": "ssd"}
    assert spec["initContainers"][0]["image"] == WRAPPER
    sidecar, fn = spec["containers"]
    assert sidecar == {"name": "sidecar", "image": "busybox"}
    assert fn["image"] == cluster.image
    assert fn["args"] == ["--x", "--port", "9446", "--max-request-body-size", "6291456", "--", "/fn"]
    assert fn["resources"] == {"limits": {"memory": "64Mi"}}
    assert fn["securityContext"] == {"runAsUser": 65532}
    assert svc["metadata"] == {"name": pod_id, "namespace": NS, "annotations": {"fn.kpt.dev/owner": "me"}}
    assert svc["spec"] == {"type": "ClusterIP", "selector": {"fn.kpt.dev/image": pod_id},
                           "ports": [{"name": "server", "port": 9446, "targetPort": 9446}]}
    assert not cluster.posted(PODTEMPLATES) and not cluster.posted(SERVICETEMPLATES)


def test_missing_templates_are_created_from_the_built_in_ones(start_server, tmp_path, make_cluster):
    cluster = make_cluster()
    srv = serve(start_server, tmp_path, cluster)
    pod, svc = pod_posted(srv, cluster)
    [pt] = cluster.posted(PODTEMPLATES)
    [st] = cluster.posted(SERVICETEMPLATES)
    assert pt["metadata"]["name"] == "base-pod-template" and pt["metadata"]["namespace"] == NS
    assert pt["template"]["spec"]["initContainers"][0]["image"] == WRAPPER
    assert [c["name"] for c in pt["template"]["spec"]["containers"]] == ["function"]
    assert st["kind"] == "ServiceTemplate" and st["metadata"]["name"] == "base-service-template"
    assert pod["metadata"]["annotations"]["fn.kpt.dev/template-version"] == "100"
    # the pod made from the created template is the built-in pod (`pod render`'s)
    fn = pod["spec"]["containers"][0]
    assert fn["readinessProbe"] == fn["livenessProbe"] == {"exec": {"command": [
        "/wrapper-server-tools/grpc-health-probe", "-addr", "localhost:9446"]}}
    assert pod["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "true"
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "port": 9446, "targetPort": 9446}]


def test_names_from_the_flags(start_server, tmp_path, make_cluster):
    cluster = make_cluster()
    srv = serve(start_server, tmp_path, cluster, "--base-pod-template-name=my-pods",
                "--base-service-template-name", "my-svcs")
    pod_posted(srv, cluster)
    assert cluster.posted(PODTEMPLATES)[0]["metadata"]["name"] == "my-pods"
    assert cluster.posted(SERVICETEMPLATES)[0]["metadata"]["name"] == "my-svcs"
    assert cluster.fake.requests("GET", PODTEMPLATES + "/my-pods")


def test_skip_creation_refuses_naming_the_template(start_server, tmp_path, make_cluster):
    cluster = make_cluster(service_template=custom_service_template())
    srv = serve(start_server, tmp_path, cluster, "--skip-template-creation")
    err = srv.evaluate_error(image=cluster.image, timeout=10)
    assert "base PodTemplate porch-fn-system/base-pod-template: not found, and " \
           "--skip-template-creation is set" in err.details(), err.details()
    assert not cluster.posted(PODTEMPLATES) and not cluster.posted(PODS)
    assert "--skip-template-creation is set" in srv.stderr()
    # the next call reads it again: created meanwhile by hand, it is used
    with cluster.lock:
        cluster.templates[PODTEMPLATES] = custom_pod_template(rv="43")
    pod, _ = pod_posted(srv, cluster)
    assert pod["metadata"]["annotations"]["fn.kpt.dev/template-version"] == "43"


def test_wait_timeout_waits_for_the_template_to_appear(start_server, tmp_path, make_cluster):
    cluster = make_cluster(service_template=custom_service_template(),
                           appear_after=(PODTEMPLATES, 2, custom_pod_template(rv="44")))
    srv = serve(start_server, tmp_path, cluster, "--skip-template-creation=true",
                "--template-wait-timeout=20s")
    pod, _ = pod_posted(srv, cluster)
    assert pod["metadata"]["annotations"]["fn.kpt.dev/template-version"] == "44"
    assert cluster.gets[PODTEMPLATES] >= 3 and not cluster.posted(PODTEMPLATES)
    assert "waiting up to 20 s for it to appear" in srv.stderr()


def test_a_cluster_without_the_servicetemplate_kind_gets_the_built_in_service(
        start_server, tmp_path, make_cluster):
    """Its CRD not installed: the API server answers 404 naming no object,
    for the GET and the POST alike; even with --skip-template-creation the
    Services are the built-in one's (logged), as before templates were read."""
    cluster = make_cluster(pod_template=custom_pod_template())
    cluster.fake.routes = [r for r in cluster.fake.routes if r[1] != SERVICETEMPLATES]
    srv = serve(start_server, tmp_path, cluster, "--skip-template-creation")
    pod, svc = pod_posted(srv, cluster)
    assert pod["metadata"]["labels"]["team"] == "a"
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "port": 9446, "targetPort": 9446}]
    assert "the cluster has no ServiceTemplate kind" in srv.stderr()


def test_a_template_without_the_function_container_is_refused(start_server, tmp_path, make_cluster):
    bad = custom_pod_template()
    bad["template"]["spec"]["containers"] = [{"name": "other", "image": "x"}]
    cluster = make_cluster(pod_template=bad, service_template=custom_service_template())
    srv = serve(start_server, tmp_path, cluster)
    err = srv.evaluate_error(image=cluster.image, timeout=10)
    assert "failed to find the function container in the pod" in err.details(), err.details()
    assert not cluster.posted(PODS)


@pytest.mark.parametrize("args, message", [
    (["--template-wait-timeout=soon"], 'invalid value "soon" for --template-wait-timeout'),
    (["--template-wait-timeout=-1s"], 'invalid value "-1s" for --template-wait-timeout'),
    (["--base-pod-template-name=Not_A_Name"], 'invalid value "Not_A_Name" for --base-pod-template-name'),
    (["--base-service-template-name", "a/b"], 'invalid value "a/b" for --base-service-template-name'),
])
def test_bad_template_flags_refused(args, message):
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", *args])
    assert r.returncode == 2, r.stderr
    assert message in r.stderr.decode(), r.stderr


OVERRIDES_CONFIG = """\
apiVersion: config.porch.kpt.dev/v1alpha1
kind: FunctionConfig
metadata:
  name: fn
spec:
  image: fn
  prefixes: ["127.0.0.1:{port}/"]
  podExecutor:
    tags: [v1]
    templateOverrides:
      serviceAccountName: function-sa
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
      initContainer:
        resources:
          limits: {{cpu: 100m}}
      container:
        resources:
          requests: {{memory: 32Mi}}
          limits: {{memory: "1Gi", cpu: 1}}
        env:
        - name: LEVEL
          value: "3"
        envFrom:
        - configMapRef: {{name: fn-env}}
"""


def test_function_configs_template_overrides_are_merged(start_server, tmp_path, make_cluster):
    """podExecutor.templateOverrides merged as Porch's mergeTemplateOverrides:
    service account, pod security context, and the first init container's
    and first container's resources (requests and limits each replaced when
    given), env and envFrom, typed as YAML reads them (1 a number, "3" a
    string)."""
    cluster = make_cluster(pod_template=custom_pod_template(), service_template=custom_service_template())
    tmpl = cluster.templates[PODTEMPLATES]
    # as Porch, the first container: put the function container first
    spec = tmpl["template"]["spec"]
    spec["containers"].reverse()
    cfg = tmp_path / "fnconfig.yaml"
    cfg.write_text(OVERRIDES_CONFIG.format(port=cluster.fake.port))
    srv = serve(start_server, tmp_path, cluster, "--function-config", str(cfg))
    pod, _ = pod_posted(srv, cluster)
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "function-sa"
    assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532}
    assert spec["initContainers"][0]["resources"] == {"limits": {"cpu": "100m"}}
    fn = spec["containers"][0]
    assert fn["name"] == "function"
    assert fn["resources"] == {"limits": {"memory": "1Gi", "cpu": 1}, "requests": {"memory": "32Mi"}}
    assert fn["env"] == [{"name": "LEVEL", "value": "3"}]
    assert fn["envFrom"] == [{"configMapRef": {"name": "fn-env"}}]
    assert fn["securityContext"] == {"runAsUser": 65532}   # the container's own: not touched
    assert spec["containers"][1] == {"name": "sidecar", "image": "busybox"}


@pytest.mark.parametrize("in_cluster", [True, False], ids=["templates", "none"])
def test_pod_create_makes_the_pods_a_serve_of_the_namespace_would(tmp_path, make_cluster, in_cluster):
    """`pod create` (as `eval --kube`) reads the namespace's base templates and
    makes its pod from them, stamped with their version, so that a `serve`
    using them adopts it; with none there, the built-in ones, and a
    one-shot command creates no template."""
    from test_hostile_kube import rc
    cluster = make_cluster(pod_template=custom_pod_template() if in_cluster else None,
                           service_template=custom_service_template() if in_cluster else None)
    kc = kubeconfig(tmp_path, cluster.fake.port, "    token: t\n")
    r = rc(tmp_path, "pod", "create", "--image", cluster.image, "--kubeconfig", str(kc),
           "--namespace", NS, "--wrapper-server-image", WRAPPER, "--ready-timeout", "1s",
           "--insecure-registry", f"127.0.0.1:{cluster.fake.port}", timeout=30)
    assert r.returncode == 1, r.err   # the scripted pod never turns Ready
    [pod] = cluster.posted(PODS)
    meta = pod["metadata"]
    assert cluster.posted(PODTEMPLATES) == [] and cluster.posted(SERVICETEMPLATES) == []
    if in_cluster:
        assert meta["labels"]["team"] == "a" and meta["annotations"]["note"] == "kept"
        assert meta["annotations"]["fn.kpt.dev/template-version"] == "42"
        assert pod["spec"]["nodeSelector"] == {"disk": "ssd"}
    else:
        assert "team" not in meta["labels"]
        assert meta["annotations"]["fn.kpt.dev/template-version"] == "inline-v1"
    assert cluster.gets[PODTEMPLATES] == 1, "read once, not waited for or watched"
