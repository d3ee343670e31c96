"""The README's quick start, with the files of examples/: the wrapper
server running search-replace.sh with arguments, and the function runner
(serve, examples/function-configs) rendering a copy of examples/package in
place through its Kptfile pipeline (search-replace from its functionConfig,
then the deny-latest validator, which fails the render on a :latest image)."""

import os
import shutil

import pytest
import yaml

from krmtest import CLIENT_BIN, ROOT, explain, runner_client as client, serving

EXAMPLES = os.path.join(ROOT, "examples")
PACKAGE = os.path.join(EXAMPLES, "package")


def objects(text):
    return [d for d in yaml.safe_load_all(text) if d]


def test_wrapper_server_with_the_example_function(module_launcher):
    srv = serving(module_launcher, os.path.join(EXAMPLES, "functions", "search-replace.sh"),
                  "staging", "production")
    res = client("eval", "--addr", srv.addr, "--image", "example/search-replace:v1", "-o", "unwrap", PACKAGE)
    assert res.returncode == 0, explain(res)
    docs = {d["kind"]: d for d in objects(res.out)}
    assert docs["ConfigMap"]["metadata"]["namespace"] == "production"
    assert docs["ConfigMap"]["data"]["environment"] == "production"
    assert docs["Deployment"]["metadata"]["namespace"] == "production"
    # the Kptfile is the package's own configuration: left as it was
    assert docs["Kptfile"]["pipeline"]["mutators"][0]["configMap"]["search"] == "staging"


@pytest.fixture
def runner(start_server):
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=pod",
        "--function-config", os.path.join(EXAMPLES, "function-configs"),
        "--functions", os.path.join(EXAMPLES, "functions")])
    srv.addr = f"localhost:{srv.port}"
    return srv


def test_kptfile_pipeline_renders_the_package_in_place(runner, tmp_path):
    pkg = tmp_path / "nginx"
    shutil.copytree(PACKAGE, pkg)
    res = client("eval", "--addr", runner.addr, "--pipeline", str(pkg), str(pkg))
    assert res.returncode == 0, explain(res)
    assert '[PASS] "example/search-replace:v1"' in res.err and '[PASS] "example/deny-latest:v1"' in res.err
    cm = objects((pkg / "configmap.yaml").read_text())[0]
    deploy = objects((pkg / "deployment.yaml").read_text())[0]
    assert (cm["metadata"]["namespace"], cm["data"]["environment"]) == ("production", "production")
    assert deploy["metadata"]["namespace"] == "production"
    assert (pkg / "Kptfile").read_bytes() == open(os.path.join(PACKAGE, "Kptfile"), "rb").read()
    assert sorted(os.listdir(pkg)) == sorted(os.listdir(PACKAGE))


def test_the_validator_fails_a_latest_image(runner, tmp_path):
    pkg = tmp_path / "nginx"
    shutil.copytree(PACKAGE, pkg)
    deploy = pkg / "deployment.yaml"
    deploy.write_text(deploy.read_text().replace("nginx:1.25", "nginx:latest"))
    before = {f: (pkg / f).read_bytes() for f in os.listdir(pkg)}
    res = client("eval", "--addr", runner.addr, "--pipeline", str(pkg), str(pkg))
    assert res.returncode == 1, explain(res)
    assert '[FAIL] "example/deny-latest:v1"' in res.err, explain(res)
    assert "image nginx:latest is not pinned" in res.err
    assert "apps/v1/Deployment/production/nginx" in res.err
    # a failed render writes nothing, as kpt
    assert {f: (pkg / f).read_bytes() for f in os.listdir(pkg)} == before
