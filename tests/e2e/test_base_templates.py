"""`runner-client serve` makes function pods from the namespace's base
PodTemplate on a real cluster, as porch-server does: a namespace without
one gets the built-in one created (its resourceVersion stamped on the
pod); a template written by hand, with a label of its own, is used for the
pods; an edit of it (a new resourceVersion) replaces the idle pod made from
the older version, and the next call runs in a pod of the new one.
tests/integration/test_base_templates.py checks the bodies field by field
against a scripted API server."""

import time

from k8s import SLOW
from test_serve_pods import Runner, check_answer, function_pods, pb  # noqa: F401

VERSION = "fn.kpt.dev/template-version"


def hand_made_template(init_image):
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "base-pod-template"},
            "template": {
                "metadata": {"labels": {"made-by": "hand"}},
                "spec": {
                    "initContainers": [{"name": "copy-wrapper-server", "image": init_image,
                                        "command": ["cp", "-a", "/home/nonroot/wrapper-server/.",
                                                    "/wrapper-server-tools"],
                                        "volumeMounts": [{"name": "wrapper-server-tools",
                                                          "mountPath": "/wrapper-server-tools"}]}],
                    "containers": [{"name": "function", "image": "to-be-replaced",
                                    "command": ["/wrapper-server-tools/wrapper-server"],
                                    "volumeMounts": [{"name": "wrapper-server-tools",
                                                      "mountPath": "/wrapper-server-tools"}]}],
                    "volumes": [{"name": "wrapper-server-tools", "emptyDir": {}}]}}}


def wait_for(pred, what, timeout):
    deadline = time.monotonic() + timeout * SLOW
    while not (v := pred()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return v


def test_missing_template_is_created_and_stamped(api, pb, k8s, images, namespace, tmp_path):  # noqa: F811
    assert api.get_or_none("podtemplates", namespace, "base-pod-template") is None
    r = Runner(pb, k8s, namespace, tmp_path)
    try:
        check_answer(r.evaluate(images.fn))
        tmpl = api.get("podtemplates", namespace, "base-pod-template")
        [pod] = function_pods(api, namespace)
        assert pod["metadata"]["annotations"][VERSION] == tmpl["metadata"]["resourceVersion"]
        assert tmpl["template"]["spec"]["initContainers"][0]["image"] == images.init
        assert "PodTemplate " + namespace + "/base-pod-template not found: created" in r.stderr()
    finally:
        r.stop()


def test_hand_made_template_is_used_and_an_edit_replaces_the_pod(api, pb, k8s, images, namespace,  # noqa: F811
                                                                 tmp_path, figures):
    made = api.create(hand_made_template(images.init), namespace)
    r = Runner(pb, k8s, namespace, tmp_path, "--skip-template-creation")
    try:
        check_answer(r.evaluate(images.fn))
        [old] = function_pods(api, namespace)
        assert old["metadata"]["labels"]["made-by"] == "hand"
        assert old["metadata"]["annotations"][VERSION] == made["metadata"]["resourceVersion"]

        # an edit: a new resourceVersion; the idle pod of the old one goes
        made["template"]["metadata"]["labels"]["made-by"] = "hand-v2"
        edited = api.request("PUT", api.path("podtemplates", namespace, "base-pod-template"), made)
        t0 = time.monotonic()
        wait_for(lambda: old["metadata"]["uid"] not in
                 [p["metadata"]["uid"] for p in function_pods(api, namespace)],
                 "the pod of the older template to be deleted", 30)
        retired = time.monotonic() - t0
        check_answer(r.evaluate(images.fn))
        [new] = function_pods(api, namespace)
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        assert new["metadata"]["labels"]["made-by"] == "hand-v2"
        assert new["metadata"]["annotations"][VERSION] == edited["metadata"]["resourceVersion"]
        assert "changed (resourceVersion " + edited["metadata"]["resourceVersion"] in r.stderr()
        figures.append(f"base template edited: the idle pod of the older version deleted "
                       f"{retired:.2f} s after the PUT")
    finally:
        r.stop()


def test_template_overrides_reach_the_pod(api, pb, k8s, images, namespace, tmp_path):  # noqa: F811
    """A FunctionConfig's podExecutor.templateOverrides on a real pod: the
    function container's env and memory limit, the kubelet running it."""
    repo, tag = images.fn.rsplit(":", 1)
    prefix, name = repo.rsplit("/", 1)
    cfg = tmp_path / "fnconfig.yaml"
    cfg.write_text(f"""apiVersion: config.porch.kpt.dev/v1alpha1
kind: FunctionConfig
metadata:
  name: {name}
spec:
  image: {name}
  prefixes: ["{prefix}/"]
  podExecutor:
    tags: [{tag}]
    templateOverrides:
      container:
        resources:
          limits: {{memory: 64Mi}}
        env:
        - name: FROM_OVERRIDES
          value: "yes"
""")
    r = Runner(pb, k8s, namespace, tmp_path, "--function-config", str(cfg))
    try:
        check_answer(r.evaluate(images.fn))
        [pod] = function_pods(api, namespace)
        fn = pod["spec"]["containers"][0]
        assert fn["env"] == [{"name": "FROM_OVERRIDES", "value": "yes"}]
        assert fn["resources"]["limits"] == {"memory": "64Mi"}
    finally:
        r.stop()


def test_eval_kube_uses_the_namespaces_template_and_serve_reuses_its_pod(api, pb, k8s, images, runner,  # noqa: F811
                                                                         namespace, tmp_path):
    """eval --kube reads the namespace's PodTemplate (never creates one): its
    pod carries the template's label and version, as serve's would, and a
    serve started next calls that same pod."""
    from test_pod_runtime import check_answer as check_eval, eval_kube
    made = api.create(hand_made_template(images.init), namespace)
    r, _ = eval_kube(runner, tmp_path, namespace, images.fn)
    check_eval(r)
    [pod] = function_pods(api, namespace)
    assert pod["metadata"]["labels"]["made-by"] == "hand"
    assert pod["metadata"]["annotations"][VERSION] == made["metadata"]["resourceVersion"]
    srv = Runner(pb, k8s, namespace, tmp_path, "--skip-template-creation")
    try:
        check_answer(srv.evaluate(images.fn))
        assert [p["metadata"]["uid"] for p in function_pods(api, namespace)] == [pod["metadata"]["uid"]]
    finally:
        srv.stop()


def test_eval_kube_without_templates_creates_none(api, images, runner, namespace, tmp_path):
    from test_pod_runtime import check_answer as check_eval, eval_kube
    r, _ = eval_kube(runner, tmp_path, namespace, images.fn)
    check_eval(r)
    [pod] = function_pods(api, namespace)
    assert pod["metadata"]["annotations"][VERSION] == "inline-v1"
    assert api.get_or_none("podtemplates", namespace, "base-pod-template") is None
