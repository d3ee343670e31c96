"""`runner-client pod render` / `pod id`: the Pod and Service of a function
as Porch's function runner creates them, parsed back with PyYAML (the same
YAML 1.1 resolution rules as the go-yaml Kubernetes uses) and checked field
by field; the podId rule and its repairs through the CLI; usage errors.
Optionally validated by `kubectl create --dry-run=client` when a cluster
answers (skipped otherwise)."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from krmtest import CLIENT_BIN, run_cli

IMAGE = "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1"
HEX = "0123abcd4567ef890123abcd4567ef890123abcd4567ef890123abcd4567ef89"
DIGEST = "sha256:" + HEX
WRAPPER = "docker.io/nephio/porch-wrapper-server:latest"
POD_ID = "set-namespace-v041-1-0123abcd"
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


def pod(*args, env_wrapper=WRAPPER):
    env = {k: v for k, v in os.environ.items() if k != "WRAPPER_SERVER_IMAGE"}
    if env_wrapper is not None:
        env["WRAPPER_SERVER_IMAGE"] = env_wrapper
    res = run_cli([CLIENT_BIN, "pod", *args], env=env)
    res.out = res.stdout.decode("utf-8", "replace")
    res.err = res.stderr.decode("utf-8", "replace")
    return res


def render(*args, **kw):
    """Renders and returns (pod, service) as parsed by PyYAML."""
    res = pod("render", *args, **kw)
    assert res.returncode == 0, f"exit {res.returncode}: {res.err}"
    assert res.err == ""
    docs = list(yaml.safe_load_all(res.out))
    assert len(docs) == 2, res.out
    return docs[0], docs[1]


def default_render(*extra):
    return render("--image", IMAGE, "--digest", DIGEST, "--entrypoint", "/usr/local/bin/function", *extra)


def function_container(p):
    assert [c["name"] for c in p["spec"]["containers"]] == ["function"]
    return p["spec"]["containers"][0]


# ------------------------------------------------------------------ structure

def test_pod_matches_porch_template():
    p, _ = default_render()
    assert p["apiVersion"] == "v1" and p["kind"] == "Pod"
    meta = p["metadata"]
    assert meta == {
        "generateName": POD_ID + "-",
        "namespace": "porch-fn-system",
        "labels": {"fn.kpt.dev/image": POD_ID},
        "annotations": {
            "cluster-autoscaler.kubernetes.io/safe-to-evict": "true",   # a string, not a bool
            "fn.kpt.dev/template-version": "inline-v1",
        },
    }
    spec = p["spec"]
    assert sorted(spec) == ["containers", "initContainers", "volumes"]
    assert spec["initContainers"] == [{
        "name": "copy-wrapper-server",
        "image": WRAPPER,
        "imagePullPolicy": "IfNotPresent",
        "command": ["cp", "-a", "/home/nonroot/wrapper-server/.", "/wrapper-server-tools"],
        "volumeMounts": [{"name": "wrapper-server-tools", "mountPath": "/wrapper-server-tools"}],
    }]
    c = function_container(p)
    assert c["image"] == IMAGE
    assert c["imagePullPolicy"] == "IfNotPresent"
    assert c["command"] == ["/wrapper-server-tools/wrapper-server"]
    assert c["args"] == ["--port", "9446", "--max-request-body-size", "6291456", "--",
                         "/usr/local/bin/function"]
    assert c["env"] == [
        {"name": "OTEL_METRICS_EXPORTER", "value": "prometheus"},
        {"name": "OTEL_TRACES_EXPORTER", "value": "none"},
        {"name": "OTEL_EXPORTER_PROMETHEUS_HOST", "value": "0.0.0.0"},
    ]
    exec_probe = {"exec": {"command": ["/wrapper-server-tools/grpc-health-probe", "-addr", "localhost:9446"]}}
    assert c["readinessProbe"] == exec_probe
    assert c["livenessProbe"] == exec_probe
    assert c["volumeMounts"] == [{"name": "wrapper-server-tools", "mountPath": "/wrapper-server-tools"}]
    assert spec["volumes"] == [{"name": "wrapper-server-tools", "emptyDir": {}}]


def test_service_selects_the_pod():
    p, s = default_render()
    assert s == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": POD_ID, "namespace": "porch-fn-system"},
        "spec": {
            "type": "ClusterIP",
            "selector": {"fn.kpt.dev/image": POD_ID},
            "ports": [{"protocol": "TCP", "port": 9446, "targetPort": 9446}],
        },
    }
    # podId agreement: label == selector == Service name == generateName prefix
    label = p["metadata"]["labels"]["fn.kpt.dev/image"]
    assert label == s["spec"]["selector"]["fn.kpt.dev/image"] == s["metadata"]["name"]
    assert p["metadata"]["generateName"] == label + "-"
    assert p["metadata"]["namespace"] == s["metadata"]["namespace"]
    assert DNS1035.match(label)


def test_every_string_field_is_a_string():
    """PyYAML resolves YAML 1.1 (yes/no/on/off, dates, octal...), like go-yaml v2:
    nothing Kubernetes expects as a string may come back as another type."""
    p, s = render("--image", "fn:v1", "--digest", DIGEST, "--entrypoint-json",
                  json.dumps(["true", "yes", "on", "9446", "0.0.0.0", "2024-01-01", "0x1F", "1e3",
                              "null", "~", "", "a: b", "#c", "- d", "*e", "multi\nline", "ünï"]))

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                assert isinstance(k, str), f"{path}: key {k!r}"
                walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")
        elif not path.endswith(("port", "targetPort")):
            assert isinstance(node, str), f"{path} = {node!r} is not a string"
    walk(p, "pod")
    walk(s, "service")
    assert function_container(p)["args"][5:] == [
        "true", "yes", "on", "9446", "0.0.0.0", "2024-01-01", "0x1F", "1e3",
        "null", "~", "", "a: b", "#c", "- d", "*e", "multi\nline", "ünï"]


# ------------------------------------------------------------------ arguments

def test_entrypoint_forms_agree():
    argv = ["/bin/sh", "-c", "exec /fn \"$@\"", "--"]
    by_flags = render("--image", IMAGE, "--digest", DIGEST,
                      *[x for a in argv for x in ("--entrypoint", a)])
    by_json = render("--image", IMAGE, "--digest", DIGEST, "--entrypoint-json", json.dumps(argv))
    by_dashdash = render("--image", IMAGE, "--digest", DIGEST, "--", *argv)
    by_equals = render("--image", IMAGE, "--digest", DIGEST, *[f"--entrypoint={a}" for a in argv])
    assert by_flags == by_json == by_dashdash == by_equals
    assert function_container(by_flags[0])["args"] == [
        "--port", "9446", "--max-request-body-size", "6291456", "--", *argv]


def test_empty_entrypoint():
    for form in (["--entrypoint-json", "[]"], ["--"]):
        p, _ = render("--image", IMAGE, "--digest", DIGEST, *form)
        assert function_container(p)["args"] == ["--port", "9446", "--max-request-body-size", "6291456", "--"]


def test_dollar_escaping():
    """Kubernetes expands $(VAR) and $$ in args: a $ before $ or ( is doubled by
    default so the function gets its entrypoint unchanged; --escape-dollar
    false is Porch's unescaped copy."""
    argv = ["sh", "-c", "echo $$ $(OTEL_TRACES_EXPORTER) $HOME \"$@\" $", "a$$$b", "$(", "$$("]
    env = {"OTEL_TRACES_EXPORTER": "none"}
    p, _ = render("--image", IMAGE, "--digest", DIGEST, "--", *argv)
    args = function_container(p)["args"][5:]
    assert args == ["sh", "-c", "echo $$$ $$(OTEL_TRACES_EXPORTER) $HOME \"$@\" $", "a$$$$$b", "$$(",
                    "$$$$("]
    assert [kubernetes_expand(a, env) for a in args] == argv
    p, _ = render("--image", IMAGE, "--digest", DIGEST, "--escape-dollar", "false", "--", *argv)
    args = function_container(p)["args"][5:]
    assert args == argv
    assert [kubernetes_expand(a, env) for a in args][2] == "echo $ none $HOME \"$@\" $"   # what Porch's pods get


def kubernetes_expand(s, env):
    """Kubernetes' third_party/forked/golang/expansion.Expand: "$$" -> "$",
    "$(VAR)" -> its value when defined, anything else kept."""
    out, i = [], 0
    while i < len(s):
        if s[i] != "$" or i + 1 >= len(s):
            out.append(s[i])
            i += 1
        elif s[i + 1] == "$":
            out.append("$")
            i += 2
        elif s[i + 1] == "(" and ")" in s[i + 2:]:
            end = s.index(")", i + 2)
            name = s[i + 2:end]
            out.append(env.get(name, f"$({name})"))
            i = end + 1
        else:
            out.append(s[i:i + 2])
            i += 2
    return "".join(out)


def test_options():
    p, s = default_render("--namespace", "fns", "--max-request-body-size", "12345",
                          "--template-version", "4711", "--postfix", "3", "--wrapper-image", "w:1")
    pod_id = "set-namespace-v041-3-0123abcd"
    assert p["metadata"]["namespace"] == s["metadata"]["namespace"] == "fns"
    assert p["metadata"]["annotations"]["fn.kpt.dev/template-version"] == "4711"
    assert p["metadata"]["labels"]["fn.kpt.dev/image"] == s["metadata"]["name"] == pod_id
    assert p["spec"]["initContainers"][0]["image"] == "w:1"     # the flag wins over the environment
    assert function_container(p)["args"][:4] == ["--port", "9446", "--max-request-body-size", "12345"]


def test_grpc_probe():
    p, _ = default_render("--probe", "grpc")
    c = function_container(p)
    assert c["readinessProbe"] == {"grpc": {"port": 9446}}
    assert c["livenessProbe"] == {"grpc": {"port": 9446}}


def test_fixed_names():
    p, _ = default_render("--warm-up")
    assert p["metadata"]["name"] == POD_ID and "generateName" not in p["metadata"]
    p, s = default_render("--name", "my-pod.x")
    assert p["metadata"]["name"] == "my-pod.x" and "generateName" not in p["metadata"]
    assert s["metadata"]["name"] == POD_ID


def test_digest_from_reference():
    p, s = render("--image", "ghcr.io/a/fn@" + DIGEST, "--entrypoint", "/fn")
    assert s["metadata"]["name"] == "fn-0123abcd-1-0123abcd"
    assert p["metadata"]["labels"]["fn.kpt.dev/image"] == "fn-0123abcd-1-0123abcd"
    assert function_container(p)["image"] == "ghcr.io/a/fn@" + DIGEST


# ------------------------------------------------------------------ podId

@pytest.mark.parametrize("image,postfix,porch,ours", [
    (IMAGE, 1, POD_ID, POD_ID),
    ("gcr.io/kpt-fn/set_labels", 2, "set-labels-latest-2-0123abcd", "set-labels-latest-2-0123abcd"),
    ("localhost:5000/fns/starlark:v0.5.0", 1, "starlark-v050-1-0123abcd", "starlark-v050-1-0123abcd"),
    ("ghcr.io/a/fn:V1.2_rc", 1, "fn-V12_rc-1-0123abcd", "fn-v12-rc-1-0123abcd"),
    ("ghcr.io/a/1password:v1", 1, "1password-v1-1-0123abcd", "fn-1password-v1-1-0123abcd"),
    ("ghcr.io/a/fn@" + DIGEST, 1, f"fn-sha256:{HEX}-1-0123abcd", "fn-0123abcd-1-0123abcd"),
    ("ghcr.io/a/this-is-a-very-long-function-name-that-goes-on-and-on:v1.2.3-alpha.1", 12,
     "this-is-a-very-long-function-name-that-goes-on-and-on-v123-alpha1-12-0123abcd",
     "this-is-a-very-long-function-name-that-goes-on-and-12-0123abcd"),
])
def test_pod_id(image, postfix, porch, ours):
    res = pod("id", "--image", image, "--digest", DIGEST, "--postfix", str(postfix), "--porch", "true")
    assert res.returncode == 0, res.err
    assert res.out == porch + "\n"
    res = pod("id", "--image", image, "--digest", DIGEST, "--postfix", str(postfix))
    assert res.returncode == 0, res.err
    assert res.out == ours + "\n"
    assert DNS1035.match(ours) and len(ours) <= 63
    _, s = render("--image", image, "--digest", DIGEST, "--postfix", str(postfix), "--entrypoint", "x")
    assert s["metadata"]["name"] == ours


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("args,message", [
    (["--digest", DIGEST, "--entrypoint", "x"], "--image is required"),
    (["--image", IMAGE, "--digest", DIGEST], "the image's entrypoint is required"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--", "y"], "give the entrypoint once"),
    (["--image", IMAGE, "--entrypoint", "x"], "--digest sha256:HEX is required"),
    (["--image", IMAGE, "--digest", "sha256:XYZ", "--entrypoint", "x"], "invalid image digest"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--max-request-body-size", "0"],
     "invalid --max-request-body-size \"0\""),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--max-request-body-size", "6MiB"],
     "invalid --max-request-body-size \"6MiB\""),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--max-request-body-size", "2147483648"],
     "invalid --max-request-body-size"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--postfix", "0"], "invalid --postfix"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--probe", "http"], "invalid --probe \"http\""),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--namespace", "Bad_NS"],
     "invalid --namespace \"Bad_NS\""),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--name", "Bad"], "invalid --name"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--name", "a", "--warm-up"],
     "--name and --warm-up exclude each other"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint-json", "[1, 2]"], "JSON array of strings"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint-json", "{\"a\": \"b\"}"], "JSON array of strings"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint-json", "[\"a\""], "not valid JSON"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--escape-dollar", "yes"],
     "invalid --escape-dollar"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint"], "flag --entrypoint needs a value"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--bogus", "1"], "unknown flag --bogus"),
    (["--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "stray"], "unexpected argument \"stray\""),
])
def test_usage_errors(args, message):
    res = pod("render", *args)
    assert res.returncode == 2, res.out
    assert res.out == ""
    assert res.err.startswith("runner-client pod render: ") and message in res.err, res.err
    assert res.err.count("\n") == 1


def test_wrapper_image_required():
    res = pod("render", "--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", env_wrapper=None)
    assert res.returncode == 2
    assert res.err == "runner-client pod render: --wrapper-server-image or WRAPPER_SERVER_IMAGE is required\n"
    res = pod("render", "--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", env_wrapper="")
    assert res.returncode == 2 and "--wrapper-server-image or WRAPPER_SERVER_IMAGE is required" in res.err
    p, _ = render("--image", IMAGE, "--digest", DIGEST, "--entrypoint", "x", "--wrapper-image", "w:2",
                  env_wrapper=None)
    assert p["spec"]["initContainers"][0]["image"] == "w:2"


def test_not_utf8_fails():
    res = run_cli([CLIENT_BIN.encode(), b"pod", b"render", b"--image", IMAGE.encode(), b"--digest",
                   DIGEST.encode(), b"--wrapper-image", b"w", b"--entrypoint", b"\xff"])
    assert res.returncode == 1
    assert b"not valid UTF-8" in res.stderr


def test_help_and_unknown_subcommand():
    res = pod("render", "--help")
    assert res.returncode == 0 and "--entrypoint-json" in res.out
    res = pod("bogus")
    assert res.returncode == 2 and "unknown subcommand \"bogus\"" in res.err
    res = pod()
    assert res.returncode == 2 and "Usage:" in res.err
    res = run_cli([CLIENT_BIN, "--help"])
    assert b"pod " in res.stdout


# ------------------------------------------------------------------ kubectl

def test_kubectl_accepts_it(tmp_path):
    """kubectl's client-side dry run still needs an API server for discovery;
    skipped when none answers."""
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl not installed")
    res = pod("render", "--image", IMAGE, "--digest", DIGEST, "--entrypoint", "/fn", "--probe", "grpc")
    path = tmp_path / "pod.yaml"
    path.write_text(res.out)
    try:
        k = subprocess.run([kubectl, "create", "--dry-run=client", "-o", "yaml", "--request-timeout=5s",
                            "-f", str(path)], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.skip("kubectl timed out (no cluster)")
    if k.returncode != 0 and re.search(r"connection refused|unable to recognize|no such host|"
                                       r"failed to download openapi|the server could not", k.stderr):
        pytest.skip("kubectl needs a cluster: " + k.stderr.strip().splitlines()[-1])
    assert k.returncode == 0, k.stderr
    back = list(yaml.safe_load_all(k.stdout))
    assert [d["kind"] for d in back] == ["Pod", "Service"]
