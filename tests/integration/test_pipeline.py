"""runner-client eval pipelines: `--fn IMG[=k=v,...]` repeated and
`--pipeline KPTFILE` run functions one after another against one endpoint.

A wrapper-server runs one fixed function, so every test starts one server
with tests/fixtures/functions/multi-fn.py, which does what its
functionConfig's `op` says; each step picks its behaviour with op=...
(the image names are only labels here: the server ignores them)."""

import re

import pytest
import yaml

from krmtest import explain, fn, pkg, runner_client as client, serving

STEP = "fn.kpt.dev/step"
IMAGE = "fn.kpt.dev/image"


def rl_of(res):
    doc = yaml.safe_load(res.stdout)
    assert doc["kind"] == "ResourceList", res.out
    return doc


def by_name(doc):
    return {i["metadata"]["name"]: i for i in doc["items"]}


def tags(doc):
    return [(r["tags"][STEP], r["tags"][IMAGE]) for r in doc.get("results") or []]


@pytest.fixture(scope="module")
def multi(module_launcher):
    return serving(module_launcher, fn("multi-fn.py"))


# ------------------------------------------------------------------ --fn

def test_two_mutators_chained(multi):
    res = client("eval", "--addr", multi.addr,
                 "--fn", "example.com/append:v1=op=append,key=notes,value=first",
                 "--fn", "example.com/append:v1=op=append,key=notes,value=second",
                 "-o", "stdout", pkg("app"))
    assert res.returncode == 0, explain(res)
    items = by_name(rl_of(res))
    assert set(items) == {"web", "web-svc", "web-config"}
    for item in items.values():
        annos = item["metadata"]["annotations"]
        # the second step saw the first one's change
        assert annos["notes"] == "first,second", item
        # kpt's reader annotations are passed through untouched
        assert annos["internal.config.kubernetes.io/path"] in ("resources.yaml", "configmap.yaml")
        assert "internal.config.kubernetes.io/index" in annos
    assert "functionConfig" not in rl_of(res)
    assert "results" not in rl_of(res)


def test_each_step_prints_its_progress(multi):
    res = client("eval", "--addr", multi.addr, "--fn", "img-one=op=none", "--fn=img-two",
                 pkg("app", "configmap.yaml"))
    assert res.returncode == 0, explain(res)
    block = (r'\[RUNNING\] "{0}"\n\[PASS\] "{0}" in [0-9.]+m?s\n'
             '  Stderr:\n    "op none: 1 items"\n    "done"\n')
    assert re.fullmatch(block.format("img-one") + block.format("img-two"), res.err), res.err


def test_failing_mutator_stops_the_pipeline(multi, tmp_path):
    trace = tmp_path / "trace"
    res = client("eval", "--addr", multi.addr,
                 "--fn", f"img-a=op=set-label,key=a,value=yes,trace={trace}",
                 "--fn", f"img-b=op=fail,trace={trace}",
                 "--fn", f"img-c=op=set-label,key=c,value=yes,trace={trace}",
                 "-o", "stdout", pkg("app"))
    assert res.returncode == 1, explain(res)
    assert trace.read_text().split() == ["set-label", "fail"]  # step 3 never ran
    assert '[PASS] "img-a"' in res.err and '[FAIL] "img-b"' in res.err and "img-c" not in res.err
    assert '\n  Error: INTERNAL: failed to evaluate function "img-b"' in res.err
    doc = rl_of(res)
    for item in doc["items"]:  # step 1's changes are kept, nothing else
        assert item["metadata"]["labels"].get("a") == "yes", item
        assert "c" not in item["metadata"]["labels"], item
    assert tags(doc) == [("2", "img-b")]
    failure = doc["results"][0]
    assert failure["severity"] == "error"
    assert failure["message"].startswith("INTERNAL: failed to evaluate function \"img-b\"")


def test_error_results_with_exit_0_fail_the_step(multi, tmp_path):
    trace = tmp_path / "trace"
    res = client("eval", "--addr", multi.addr,
                 "--fn", f"img-a=op=error-results,trace={trace}",
                 "--fn", f"img-b=op=set-label,key=b,value=x,trace={trace}",
                 pkg("app", "configmap.yaml"))
    assert res.returncode == 1, explain(res)
    assert trace.read_text().split() == ["error-results"]
    assert re.match('\\[RUNNING\\] "img-a"\n\\[FAIL\\] "img-a" in [0-9.]+m?s\n'
                    "  Results:\n    \\[error\\]: error-results was asked for\n", res.err), res.err
    doc = rl_of(res)
    assert tags(doc) == [("1", "img-a")]
    assert "labels" not in doc["items"][0]["metadata"]


def test_continue_after_failure(multi, tmp_path):
    trace = tmp_path / "trace"
    res = client("eval", "--addr", multi.addr, "--stop-on-error=false",
                 "--fn", f"img-a=op=fail,trace={trace}",
                 "--fn", f"img-b=op=set-label,key=b,value=x,trace={trace}",
                 "--fn", f"img-w=op=warn,trace={trace}",
                 pkg("app", "configmap.yaml"))
    assert res.returncode == 1, explain(res)  # a step failed
    assert trace.read_text().split() == ["fail", "set-label", "warn"]
    assert '[FAIL] "img-a"' in res.err and '[PASS] "img-b"' in res.err
    assert '[PASS] "img-w"' in res.err and "    [warning]: just a warning\n" in res.err
    doc = rl_of(res)
    assert doc["items"][0]["metadata"]["labels"] == {"b": "x"}
    assert tags(doc) == [("1", "img-a"), ("3", "img-w")]
    warning = doc["results"][1]
    assert warning["severity"] == "warning"
    # the function's own tags are kept, ours are added
    assert warning["tags"] == {"owner": "multi-fn", STEP: "3", IMAGE: "img-w"}


def test_stop_on_error_explicit_true(multi, tmp_path):
    trace = tmp_path / "trace"
    res = client("eval", "--addr", multi.addr, "--stop-on-error",
                 "--fn", f"img-a=op=fail,trace={trace}", "--fn", f"img-b=trace={trace}",
                 pkg("app", "configmap.yaml"))
    assert res.returncode == 1, explain(res)
    assert trace.read_text().split() == ["fail"]


def test_unreachable_endpoint_is_a_failed_step(binaries):
    from krmtest import free_port
    res = client("eval", "--addr", f"127.0.0.1:{free_port()}", "--timeout", "3s",
                 "--fn", "img-a", pkg("app", "configmap.yaml"))
    assert res.returncode == 1, explain(res)
    assert '[FAIL] "img-a"' in res.err and "\n  Error: UNAVAILABLE: " in res.err
    doc = rl_of(res)
    assert doc["items"][0]["metadata"]["name"] == "web-config"
    assert doc["results"][0]["message"].startswith("UNAVAILABLE")
    assert tags(doc) == [("1", "img-a")]


def test_string_values_stay_strings(multi):
    res = client("eval", "--addr", multi.addr, "--fn", "img=op=set-label,key=n,value=007",
                 pkg("app", "configmap.yaml"))
    assert res.returncode == 0, explain(res)
    assert rl_of(res)["items"][0]["metadata"]["labels"] == {"n": "007"}


# ------------------------------------------------------------------ Kptfile

def write_kptfile(tmp_path, body):
    path = tmp_path / "Kptfile"
    path.write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n" + body)
    return path


def test_kptfile_pipeline(multi, tmp_path):
    trace = tmp_path / "trace"
    (tmp_path / "fns").mkdir()
    (tmp_path / "fns" / "label.yaml").write_text(
        "apiVersion: fn.example.com/v1\nkind: LabelIt\nmetadata:\n  name: label-it\n"
        f"spec:\n  op: set-label\n  key: tier\n  value: web\n  trace: {trace}\n")
    kptfile = write_kptfile(tmp_path, f"""pipeline:
  mutators:
  - image: example.com/set-label:v1
    configMap:
      op: set-label
      key: team
      value: shop
      trace: {trace}
  - image: example.com/label-it:v1
    name: tier
    configPath: fns/label.yaml
  validators:
  - image: example.com/validate:v1
    configMap: {{op: validate, key: team, trace: {trace}}}
  - image: example.com/sneaky:v1
    configMap: {{op: set-label, key: sneaky, value: "yes", trace: {trace}}}
""")
    res = client("eval", "--addr", multi.addr, "--pipeline", str(kptfile), "-o", "stdout",
                 pkg("app"))
    assert res.returncode == 0, explain(res)
    assert trace.read_text().split() == ["set-label", "set-label", "validate", "set-label"]
    doc = rl_of(res)
    for item in doc["items"]:
        # validators' output items are discarded: no "sneaky" label
        assert item["metadata"]["labels"] == {"team": "shop", "tier": "web"}, item
    assert tags(doc) == [("3", "example.com/validate:v1")]
    assert ('[RUNNING] "example.com/label-it:v1"\n[PASS] "example.com/label-it:v1" in '
            in res.err), res.err


def test_kptfile_directory_and_validator_errors(multi, tmp_path):
    write_kptfile(tmp_path, """pipeline:
  mutators:
  - image: example.com/set-label:v1
    name: label
    configMap: {op: set-label, key: team, value: shop}
  validators:
  - image: example.com/validate:v1
    name: needs-owner
    configMap: {op: validate, key: owner}
""")
    res = client("eval", "--addr", multi.addr, "--pipeline", str(tmp_path), "-o", "stdout",
                 pkg("app"))
    assert res.returncode == 1, explain(res)
    assert ('[FAIL] "example.com/validate:v1" in ' in res.err
            and "  Results:\n    [error] v1/ConfigMap/web-config: label owner is missing\n"
            in res.err), res.err
    doc = rl_of(res)
    errors = [r for r in doc["results"] if r["severity"] == "error"]
    assert len(errors) == 3
    for r in doc["results"]:
        assert r["tags"] == {STEP: "2", IMAGE: "example.com/validate:v1",
                             "fn.kpt.dev/name": "needs-owner"}
    assert all(i["metadata"]["labels"] == {"team": "shop"} for i in doc["items"])


@pytest.mark.parametrize("body, message", [
    ("pipeline:\n  mutators:\n  - name: x\n", "pipeline.mutators[0]: image is required"),
    ("pipeline:\n  mutators:\n  - image: a\n    configPath: missing.yaml\n",
     "pipeline.mutators[0]: configPath"),
    ("pipeline:\n  mutators:\n  - image: a\n    configPath: c.yaml\n    configMap: {a: b}\n",
     "cannot both be set"),
    ("pipeline:\n  validators:\n  - exec: ./fn\n", "exec functions are not supported"),
    ("pipeline:\n  mutators:\n  - image: a\n    selectors: [{kind: Deployment}]\n", "not supported"),
    ("info: {}\n", "the pipeline has no mutators or validators"),
    ("pipeline:\n  mutators: {image: a}\n", "pipeline.mutators is not a sequence"),
])
def test_bad_kptfile_exits_2(multi, tmp_path, body, message):
    kptfile = write_kptfile(tmp_path, body)
    res = client("eval", "--addr", multi.addr, "--pipeline", str(kptfile), pkg("app"))
    assert res.returncode == 2, explain(res)
    assert message in res.err, res.err
    assert str(kptfile) in res.err
    assert res.stdout == b""


def test_not_a_kptfile_exits_2(multi):
    res = client("eval", "--addr", multi.addr, "--pipeline", pkg("app", "configmap.yaml"), pkg("app"))
    assert res.returncode == 2, explain(res)
    assert "not a Kptfile" in res.err


# ------------------------------------------------------------------ usage

@pytest.mark.parametrize("args, message", [
    (["--fn", ""], "no image"),
    (["--fn=img=novalue"], "is not KEY=VALUE"),
    (["--fn", "img="], "want KEY=VALUE"),
    (["--fn", "img==v"], "is not KEY=VALUE"),
    (["--fn"], "flag --fn needs a value"),
    (["--pipeline", "/does/not/exist/Kptfile"], "/does/not/exist/Kptfile: No such file"),
    (["--image", "img", "--fn", "img2"], "--image makes one call"),
    (["--image", "img", "--pipeline", "Kptfile"], "--image makes one call"),
    (["--fn", "img", "--pipeline", "Kptfile"], "not both"),
    (["--fn", "img", "--stop-on-error=maybe"], "invalid --stop-on-error"),
])
def test_bad_usage_exits_2(binaries, args, message):
    res = client("eval", "--addr", "localhost:1", pkg("app"), *args)
    assert res.returncode == 2, explain(res)
    assert message in res.err, res.err
    assert res.stdout == b""


def test_single_image_unchanged(multi):
    """--image keeps making one call whose answer is printed verbatim."""
    res = client("eval", "--addr", multi.addr, "--image", "img", pkg("resourcelist.yaml"))
    assert res.returncode == 0, explain(res)
    assert '[PASS] "img"' in res.err
    assert '    "op none: 1 items"' in res.err
