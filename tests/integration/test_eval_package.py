"""runner-client eval on a package directory, as kpt fn eval: written back
in place by default (changed files rewritten, new resources in new files,
emptied files removed, the rest untouched), -o stdout / unwrap / DIR,
--results-dir's results.yaml, the [RUNNING]/[PASS]/[FAIL] progress on
stderr, and the exit codes.

The servers run real functions: tests/fixtures/functions/edit-package.py
(changes one resource, deletes two, adds two), multi-fn.py for pipelines
and fail-with-results.sh for failures."""

import os
import re

import pytest
import yaml

from krmtest import explain, fn, runner_client as client, serving

IMAGE = "example.com/edit:v1"

KPTFILE = """\
# the package's Kptfile: no function touches it
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: shop
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
"""

SETTINGS_HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n"

MULTI = ("# settings and the service, and an old secret\n" + SETTINGS_HEAD
         + "  size: large   # changed by the function\n---\n" + SERVICE
         + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: old-secret\n")

DEPLOY = """\
# nested, untouched: comments and the wide list indent stay
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    owner: shop-team
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: web
          image: nginx
"""

GONE = """\
apiVersion: v1
kind: Secret
metadata:
  name: gone
"""

README = "# not KRM\nitems: [not, a, resource]\n"

# What the package holds after edit-package.py, file by file.
MULTI_AFTER = SETTINGS_HEAD + "  size: large\n  color: blue\n---\n" + SERVICE

ADDED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: added
data:
  source: edit-package
"""

EXTRA = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: extra
  namespace: shop
spec:
  replicas: 1
"""

BOOKKEEPING = ("config.kubernetes.io/", "config.k8s.io/")


@pytest.fixture(scope="module")
def edit(module_launcher):
    return serving(module_launcher, fn("edit-package.py"))


@pytest.fixture(scope="module")
def multi(module_launcher):
    return serving(module_launcher, fn("multi-fn.py"))


@pytest.fixture
def package(tmp_path):
    d = tmp_path / "pkg"
    (d / "sub").mkdir(parents=True)
    (d / "Kptfile").write_text(KPTFILE)
    (d / "multi.yaml").write_text(MULTI)
    (d / "sub" / "deploy.yaml").write_text(DEPLOY)
    (d / "gone.yaml").write_text(GONE)
    (d / "README.md").write_text(README)
    return d


def snapshot(d):
    """{relative path: (bytes, inode, mtime_ns)} of every file under d."""
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            st = os.stat(p)
            out[os.path.relpath(p, d)] = (open(p, "rb").read(), st.st_ino, st.st_mtime_ns)
    return out


def texts(d):
    return {k: v[0].decode() for k, v in snapshot(d).items()}


PASS_BLOCK = (r'\[RUNNING\] "{img}"\n\[PASS\] "{img}" in [0-9.]+m?s\n'
              r"  Results:\n    \[info\] v1/ConfigMap/settings data\.color: color set\n")


# ------------------------------------------------------------------ in place

def test_package_is_updated_in_place(edit, package):
    before = snapshot(package)
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, str(package))
    assert res.returncode == 0, explain(res)
    assert res.stdout == b""
    after = snapshot(package)
    assert sorted(after) == ["Kptfile", "README.md", "configmap_added.yaml", "multi.yaml",
                             "shop/deployment_extra.yaml", "sub/deploy.yaml"]
    # the Kptfile, the nested Deployment and the non-KRM file were not touched
    # at all: same bytes, same inode, same modification time
    for f in ("Kptfile", "sub/deploy.yaml", "README.md"):
        assert after[f] == before[f], f
    # the changed file lost a resource; new ones went to files named after them
    assert after["multi.yaml"][0].decode() == MULTI_AFTER
    assert after["configmap_added.yaml"][0].decode() == ADDED
    assert after["shop/deployment_extra.yaml"][0].decode() == EXTRA
    # no bookkeeping annotation anywhere (the Deployment's own one stays)
    for f, (data, _, _) in after.items():
        for key in BOOKKEEPING:
            assert key.encode() not in data, f
    assert b"owner: shop-team" in after["sub/deploy.yaml"][0]


def test_progress_shows_results_and_stderr_truncated(edit, package):
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, str(package))
    assert res.returncode == 0, explain(res)
    want = PASS_BLOCK.format(img=re.escape(IMAGE)) + (
        '  Stderr:\n    "edited the package"\n    "deleted 2"\n    "added 2"\n    "changed 1"\n'
        r"    \.\.\.\(1 line\(s\) truncated, use '--truncate-output=false' to disable\)" "\n")
    assert re.fullmatch(want, res.err), res.err


def test_truncate_output_false_shows_every_line(edit, package):
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, "--truncate-output=false",
                 "-o", "stdout", str(package))
    assert res.returncode == 0, explain(res)
    assert res.err.endswith('    "changed 1"\n    "done"\n'), res.err
    assert "truncated" not in res.err


@pytest.mark.parametrize("op", ["none", "reverse"])
def test_unchanged_package_is_not_rewritten(multi, package, op):
    # reversed, the items still carry their files' indexes: same files
    before = snapshot(package)
    res = client("eval", "--addr", multi.addr, "--fn", f"example.com/fn:v1=op={op}",
                 str(package))
    assert res.returncode == 0, explain(res)
    assert snapshot(package) == before


# ------------------------------------------------------------------ -o

def test_output_stdout_keeps_the_package(edit, package):
    before = snapshot(package)
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, "-o", "stdout", str(package))
    assert res.returncode == 0, explain(res)
    assert snapshot(package) == before
    doc = yaml.safe_load(res.stdout)
    assert doc["kind"] == "ResourceList"
    names = [i["metadata"]["name"] for i in doc["items"]]
    assert names == ["shop", "settings", "web", "web", "added", "extra"]
    # a ResourceList keeps kpt's path annotations, as kpt's -o stdout does
    settings = doc["items"][1]["metadata"]["annotations"]
    assert settings["internal.config.kubernetes.io/path"] == "multi.yaml"
    assert doc["results"][0]["message"] == "color set"


def test_output_unwrap_has_no_bookkeeping(edit, package):
    before = snapshot(package)
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, "-o", "unwrap", str(package))
    assert res.returncode == 0, explain(res)
    assert snapshot(package) == before
    docs = list(yaml.safe_load_all(res.stdout))
    assert [d["metadata"]["name"] for d in docs] == ["shop", "settings", "web", "web", "added",
                                                    "extra"]
    for key in BOOKKEEPING:
        assert key not in res.out, res.out
    assert res.out.endswith(ADDED + "---\n" + EXTRA), res.out
    # the objects that had annotations of their own keep them
    assert docs[3]["metadata"]["annotations"] == {"owner": "shop-team"}


def test_object_without_metadata_comes_back_without(multi, tmp_path):
    # the reader had to create metadata.annotations for its bookkeeping:
    # both go again, the object is written as it was read
    text = "apiVersion: example.com/v1\nkind: Settings\nspec:\n  a: 1\n"
    (tmp_path / "settings.yaml").write_text(text)
    res = client("eval", "--addr", multi.addr, "--fn", "example.com/fn:v1=op=none", "-o", "unwrap",
                 str(tmp_path))
    assert res.returncode == 0, explain(res)
    assert res.out == text


def test_output_dir_writes_a_new_package(edit, package, tmp_path):
    before = snapshot(package)
    out = tmp_path / "out" / "pkg"
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, "-o", str(out), str(package))
    assert res.returncode == 0, explain(res)
    assert res.stdout == b""
    assert snapshot(package) == before
    got = texts(out)
    # the resources only, laid out as in place (non-KRM files are not copied)
    assert sorted(got) == ["Kptfile", "configmap_added.yaml", "multi.yaml",
                           "shop/deployment_extra.yaml", "sub/deploy.yaml"]
    assert got["multi.yaml"] == MULTI_AFTER
    assert got["Kptfile"] == "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: shop\n"
    assert yaml.safe_load(got["sub/deploy.yaml"]) == yaml.safe_load(DEPLOY)


def test_output_dir_that_exists_is_refused(edit, package, tmp_path):
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, "-o", str(tmp_path), str(package))
    assert res.returncode == 2, explain(res)
    assert res.err == (f'runner-client eval: -o {tmp_path}: directory "{tmp_path}" already '
                       "exists, please delete the directory and retry\n")


@pytest.mark.parametrize("args, message", [
    (["-o", ""], "-o needs stdout, unwrap or a directory"),
    (["--truncate-output=maybe"], 'invalid --truncate-output "maybe": want true or false'),
    (["--results-dir", "/dev/null/x"], 'cannot read or create results dir "/dev/null/x"'),
])
def test_bad_output_flags_exit_2(edit, package, args, message):
    before = snapshot(package)
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, *args, str(package))
    assert res.returncode == 2, explain(res)
    assert message in res.err, res.err
    assert "[RUNNING]" not in res.err
    assert snapshot(package) == before


def test_stdin_and_file_inputs_print_the_answer(edit, package):
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, str(package / "multi.yaml"))
    assert res.returncode == 0, explain(res)
    assert yaml.safe_load(res.stdout)["kind"] == "ResourceList"
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, "-", input=MULTI.encode())
    assert res.returncode == 0, explain(res)
    assert yaml.safe_load(res.stdout)["kind"] == "ResourceList"
    assert (package / "multi.yaml").read_text() == MULTI


# ------------------------------------------------------------------ results and failures

def test_results_dir(edit, package, tmp_path):
    results = tmp_path / "results" / "new"
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, "--results-dir", str(results),
                 str(package))
    assert res.returncode == 0, explain(res)
    assert res.err.endswith(f"\nFor complete results, see {results}/results.yaml\n"), res.err
    assert yaml.safe_load((results / "results.yaml").read_text()) == {
        "apiVersion": "kpt.dev/v1", "kind": "FunctionResultList",
        "metadata": {"name": "fnresults"}, "exitCode": 0,
        "items": [{"image": IMAGE, "exitCode": 0, "results": [
            {"message": "color set", "severity": "info",
             "resourceRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "settings"},
             "field": {"path": "data.color"}}]}]}


@pytest.fixture(scope="module")
def failing(module_launcher):
    return serving(module_launcher, fn("fail-with-results.sh"), "1")


@pytest.fixture(scope="module")
def error_results(module_launcher):
    return serving(module_launcher, fn("fail-with-results.sh"), "0")


def test_failing_function_leaves_the_package(failing, package, tmp_path):
    before = snapshot(package)
    res = client("eval", "--addr", failing.addr, "--image", "example.com/check:v1",
                 "--results-dir", str(tmp_path), str(package))
    assert res.returncode == 1, explain(res)
    assert snapshot(package) == before
    assert res.stdout == b""
    assert re.match(r'\[RUNNING\] "example.com/check:v1"\n\[FAIL\] "example.com/check:v1" in '
                    r'[0-9.]+m?s\n  Error: INTERNAL: failed to evaluate function '
                    r'"example.com/check:v1" with structured results: \[error\] apps/v1/'
                    r"Deployment/prod/web spec.replicas: replicas must be greater than zero\n",
                    res.err), res.err
    doc = yaml.safe_load((tmp_path / "results.yaml").read_text())
    assert doc["exitCode"] == 1
    [item] = doc["items"]
    assert item["exitCode"] == 1 and item["image"] == "example.com/check:v1"
    assert item["results"][0]["severity"] == "error"
    assert item["results"][0]["message"].startswith("INTERNAL: failed to evaluate function")


def test_error_results_fail_the_function(error_results, package, tmp_path):
    before = snapshot(package)
    res = client("eval", "--addr", error_results.addr, "--image", "example.com/check:v1",
                 "--results-dir", str(tmp_path), str(package))
    assert res.returncode == 1, explain(res)
    assert snapshot(package) == before
    assert re.fullmatch(
        r'\[RUNNING\] "example.com/check:v1"\n\[FAIL\] "example.com/check:v1" in [0-9.]+m?s\n'
        r"  Results:\n"
        r"    \[error\] apps/v1/Deployment/prod/web spec.replicas: replicas must be greater than zero\n"
        r'    \[warning\] v1/ConfigMap/settings: key "color" is deprecated\n'
        r"    \[error\] metadata.name: name is too long\n"
        r"    \[info\]: checked 1 object\n"
        r'  Stderr:\n    "validation failed"\n'
        r"\nFor complete results, see .*/results.yaml\n", res.err), res.err
    doc = yaml.safe_load((tmp_path / "results.yaml").read_text())
    assert doc["exitCode"] == 1
    [item] = doc["items"]
    assert item["exitCode"] == 1 and item["stderr"] == "validation failed\n"
    assert item["results"][0] == {
        "message": "replicas must be greater than zero", "severity": "error",
        "resourceRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                        "namespace": "prod"},
        "field": {"path": "spec.replicas"}}
    assert item["results"][3] == {"message": "checked 1 object"}


# ------------------------------------------------------------------ pipelines

def test_kptfile_pipeline_in_place_prints_each_step(multi, package, tmp_path):
    (package / "Kptfile").write_text(KPTFILE + """\
pipeline:
  mutators:
  - image: example.com/set-label:v1
    configMap: {op: set-label, key: team, value: shop}
  validators:
  - image: example.com/validate:v1
    configMap: {op: validate, key: team}
""")
    results = tmp_path / "results"
    res = client("eval", "--addr", multi.addr, "--pipeline", str(package),
                 "--results-dir", str(results), str(package))
    assert res.returncode == 0, explain(res)
    step = (r'\[RUNNING\] "{0}"\n\[PASS\] "{0}" in [0-9.]+m?s\n{1}'
            r'  Stderr:\n    "op {2}: 6 items"\n    "done"\n')
    assert re.fullmatch(
        step.format("example.com/set-label:v1", "", "set-label")
        + step.format("example.com/validate:v1",
                      r"  Results:\n    \[info\]: checked 6 items\n", "validate")
        + r"\nFor complete results, see .*\n", res.err), res.err
    got = texts(package)
    assert sorted(got) == ["Kptfile", "README.md", "gone.yaml", "multi.yaml", "sub/deploy.yaml"]
    for f in ("Kptfile", "multi.yaml", "gone.yaml", "sub/deploy.yaml"):
        docs = list(yaml.safe_load_all(got[f]))
        assert all(d["metadata"]["labels"] == {"team": "shop"} for d in docs), f
        for key in BOOKKEEPING:
            assert key not in got[f], f
    doc = yaml.safe_load((results / "results.yaml").read_text())
    assert [(i["image"], i["exitCode"]) for i in doc["items"]] == [
        ("example.com/set-label:v1", 0), ("example.com/validate:v1", 0)]


# ------------------------------------------------------------------ links

def test_a_linked_directory_never_takes_a_write_outside(edit, package, tmp_path):
    """The function adds shop/deployment_extra.yaml; shop is a link to a
    directory outside the package: refused, naming the link, and nothing is
    written there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, package / "shop")
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, str(package))
    assert res.returncode == 1, explain(res)
    assert b"shop is a symbolic link: files are written only beneath the package" in res.stderr, explain(res)
    assert os.listdir(outside) == []


def test_a_linked_file_is_skipped_never_read_nor_written(edit, package, tmp_path):
    """multi.yaml is a link to a file outside the package: kpt ignores links
    inside a package, and so do we, with a warning: its objects never reach
    the function, the link stays a link and the file outside keeps its bytes."""
    outside = tmp_path / "outside.yaml"
    outside.write_text(MULTI)
    (package / "multi.yaml").unlink()
    os.symlink(outside, package / "multi.yaml")
    res = client("eval", "--addr", edit.addr, "--image", IMAGE, str(package))
    assert res.returncode == 0, explain(res)
    assert (f"warning: {package}/multi.yaml: skipped: a symbolic link (links inside a package "
            "are not followed, as kpt ignores them)") in res.err, explain(res)
    assert outside.read_text() == MULTI
    assert os.readlink(package / "multi.yaml") == str(outside)