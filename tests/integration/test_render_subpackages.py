"""`runner-client render` over a package with subpackages, as `kpt fn
render`: a subdirectory with a Kptfile of its own is rendered first (its
pipeline on its own resources and its rendered subpackages'), then its
parent's pipeline on the parent's resources and every subpackage's
rendered ones; results go back in place, nothing when a package fails.

Every step is tests/fixtures/functions/multi-fn.py on one wrapper server:
its functionConfig says what it does (set a label, check one, fail,
record the paths it was given)."""

import os

import pytest
import yaml

from krmtest import explain, fn, runner_client as client, serving


@pytest.fixture(scope="module")
def multi(module_launcher):
    return serving(module_launcher, fn("multi-fn.py"))


def kptfile(dir, name, steps, labels=""):
    dir.mkdir(parents=True, exist_ok=True)
    (dir / "Kptfile").write_text(
        f"apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: {name}\n{labels}"
        f"pipeline:\n{steps}")


def configmap(path, name, labels=""):
    path.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{labels}"
                    "data:\n  a: b\n")


def step(kind, image, **config):
    body = ", ".join(f"{k}: {v}" for k, v in config.items())
    return f"  {kind}:\n  - image: example.com/{image}:v1\n    configMap: {{{body}}}\n"


def snapshot(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(root) for f in files}


def recorded(trace):
    """The path lists each record-paths step saw, in the order they ran."""
    return [block.splitlines() for block in trace.read_text().split("--\n") if block]


def labels_of(path):
    return [(d["metadata"].get("labels") or {}) for d in yaml.safe_load_all(path.read_text()) if d]


TIER = "  labels:\n    tier: web\n"


def two_levels(tmp_path, child_validator=None):
    """root: cm.yaml (labelled tier already), a pipeline that records its
    paths, labels everything team=shop and checks every object has tier;
    root/sub: deploy.yaml, a pipeline that records its paths and sets tier."""
    trace = tmp_path / "trace"
    root = tmp_path / "pkg"
    kptfile(root, "root",
            step("mutators", "record", op="record-paths", trace=str(trace)) +
            "  - image: example.com/set-label:v1\n    configMap: {op: set-label, key: team, value: shop}\n"
            "  validators:\n  - image: example.com/validate:v1\n    configMap: {op: validate, key: tier}\n",
            labels=TIER)
    configmap(root / "cm.yaml", "root-cm", labels=TIER)
    sub = root / "sub"
    steps = (step("mutators", "record", op="record-paths", trace=str(trace)) +
             "  - image: example.com/set-label:v1\n    configMap: {op: set-label, key: tier, value: db}\n")
    if child_validator:
        steps += f"  validators:\n  - image: example.com/check:v1\n    configMap: {child_validator}\n"
    kptfile(sub, "sub", steps)
    configmap(sub / "deploy.yaml", "sub-cm")
    return root, trace


def test_the_parent_sees_its_subpackage_rendered(multi, tmp_path):
    root, trace = two_levels(tmp_path)
    res = client("render", "--addr", multi.addr, str(root))
    assert res.returncode == 0, explain(res)
    # the subpackage's pipeline first, on its own resources, paths relative to it;
    # then the parent's on the subpackage's rendered resources, then its own
    assert recorded(trace) == [["Kptfile", "deploy.yaml"],
                               ["sub/Kptfile", "sub/deploy.yaml", "Kptfile", "cm.yaml"]]
    err = res.err
    assert err.index('Package "sub":') < err.index(f'Package "{root}":'), err
    assert '[PASS] "example.com/validate:v1"' in err, err
    # the child's label (which the parent's validator needed) and the parent's, in place
    assert labels_of(root / "sub" / "deploy.yaml") == [{"tier": "db", "team": "shop"}]
    assert labels_of(root / "cm.yaml") == [{"tier": "web", "team": "shop"}]
    assert sorted(snapshot(root)) == ["Kptfile", "cm.yaml", "sub/Kptfile", "sub/deploy.yaml"]


def test_a_failing_subpackage_stops_the_render_and_writes_nothing(multi, tmp_path):
    root, trace = two_levels(tmp_path, child_validator="{op: fail}")
    before = snapshot(root)
    res = client("render", "--addr", multi.addr, str(root))
    assert res.returncode == 1, explain(res)
    assert '[FAIL] "example.com/check:v1"' in res.err, res.err
    assert 'runner-client render: subpackage "sub" failed: nothing is written' in res.err, res.err
    # the parent's pipeline never ran
    assert recorded(trace) == [["Kptfile", "deploy.yaml"]]
    assert f'Package "{root}":' not in res.err
    assert snapshot(root) == before


def test_a_subpackage_kptfile_is_read_as_strictly(multi, tmp_path):
    root, trace = two_levels(tmp_path)
    (root / "sub" / "Kptfile").write_text(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\npipeline:\n  mutator: []\n")
    before = snapshot(root)
    res = client("render", "--addr", multi.addr, str(root))
    assert res.returncode == 2, explain(res)
    assert f"runner-client render: {root}/sub/Kptfile: line 6: field mutator not found" in res.err, \
        res.err
    assert not trace.exists()
    assert snapshot(root) == before


def test_packages_render_depth_first_in_name_order(multi, tmp_path):
    """a/b before a, a before c, the root last; a directory without a
    Kptfile (d) is part of the package above it."""
    trace = tmp_path / "trace"
    root = tmp_path / "pkg"
    record = step("mutators", "record", op="record-paths", trace=str(trace))
    kptfile(root, "root", record)
    for rel in ("a", "a/b", "c"):
        kptfile(root / rel, rel.replace("/", "-"), record)
        configmap(root / rel / "cm.yaml", rel.replace("/", "-"))
    (root / "a" / "d").mkdir()
    configmap(root / "a" / "d" / "cm.yaml", "a-d")
    res = client("render", "--addr", multi.addr, str(root))
    assert res.returncode == 0, explain(res)
    assert recorded(trace) == [
        ["Kptfile", "cm.yaml"],                                                   # a/b
        ["b/Kptfile", "b/cm.yaml", "Kptfile", "cm.yaml", "d/cm.yaml"],            # a
        ["Kptfile", "cm.yaml"],                                                   # c
        ["a/b/Kptfile", "a/b/cm.yaml", "a/Kptfile", "a/cm.yaml", "a/d/cm.yaml",   # the root
         "c/Kptfile", "c/cm.yaml", "Kptfile"],
    ]
    packages = [line for line in res.err.splitlines() if line.startswith("Package ")]
    assert packages == ['Package "a/b":', 'Package "a":', 'Package "c":', f'Package "{root}":']


def test_an_object_a_subpackage_adds_goes_into_it(multi, tmp_path):
    root = tmp_path / "pkg"
    kptfile(root, "root", step("mutators", "noop", op="none"))
    kptfile(root / "sub", "sub", step("mutators", "add", op="add-configmap", name="made"))
    configmap(root / "sub" / "cm.yaml", "sub-cm")
    res = client("render", "--addr", multi.addr, str(root))
    assert res.returncode == 0, explain(res)
    made = root / "sub" / "configmap_made.yaml"
    assert made.exists(), sorted(snapshot(root))
    assert yaml.safe_load(made.read_text()) == {"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "made"}}
    assert sorted(snapshot(root)) == ["Kptfile", "sub/Kptfile", "sub/cm.yaml",
                                      "sub/configmap_made.yaml"]


def test_a_subpackage_without_a_pipeline_passes_its_resources_on(multi, tmp_path):
    """An upstream package fetched whole often has a Kptfile without a
    pipeline: kpt renders it as no step, and so does render (the root still
    needs a pipeline of its own)."""
    trace = tmp_path / "trace"
    root = tmp_path / "pkg"
    kptfile(root, "root", step("mutators", "record", op="record-paths", trace=str(trace)) +
            "  - image: example.com/set-label:v1\n    configMap: {op: set-label, key: team, value: shop}\n")
    (root / "upstream").mkdir()
    (root / "upstream" / "Kptfile").write_text(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: upstream\n"
        "info:\n  description: no pipeline\n")
    configmap(root / "upstream" / "cm.yaml", "up")
    res = client("render", "--addr", multi.addr, str(root))
    assert res.returncode == 0, explain(res)
    assert recorded(trace) == [["upstream/Kptfile", "upstream/cm.yaml", "Kptfile"]]
    assert labels_of(root / "upstream" / "cm.yaml") == [{"team": "shop"}]
