"""Porch's function-runner and pod-evaluator flags `serve` does not serve
yet: a Porch Deployment's args that would make it do something else are
refused at start, naming the flag and what to do; those that, as given,
change nothing in Porch either are taken (the runner then serves)."""

import os

import pytest

from krmtest import CLIENT_BIN, run_cli
from test_registry import DEAD_KUBECONFIG

# The function runner's command line in Porch's manifest
# (deployments/porch/2-function-runner.yaml), after the binary's path.
PORCH_RUNNER_ARGS = ["--pod-namespace=porch-fn-system", "--max-request-body-size=6291456",
                     "--max-parallel-pods-per-function=2", "--max-waitlist-length=1",
                     "--warm-up-pod-cache=true", "--functions={functions}"]

REFUSED = [
    (["--config=/config.yaml"], "--config is a flag of Porch releases before the FunctionConfig CRD "
     "and is not read here: give the exec runtime's functions as FunctionConfig objects "
     "(spec.binaryExecutor) with --function-config"),
    (["--pod-cache-config", "/pod-cache-config/pod-cache-config.yaml"],
     "--pod-cache-config is a flag of Porch releases before the FunctionConfig CRD"),
    (["--function-pod-template=kpt-function-eval-pod-template"],
     "--function-pod-template is a flag of Porch releases before the FunctionConfig CRD"),
    (["--enable-private-registries-tls=true"], "--enable-private-registries-tls needs "
     "--enable-private-registries"),
]


@pytest.mark.parametrize("args, message", REFUSED, ids=[a[0].split("=")[0] for a, _ in REFUSED])
def test_porch_flags_not_served_are_refused_at_start(args, message):
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod", *args])
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode().startswith("runner-client serve: " + message), r.stderr


def test_help_names_them():
    r = run_cli([CLIENT_BIN, "serve", "--help"])
    assert r.returncode == 0
    assert b"--enable-private-registries" in r.stdout and b"--skip-template-creation" in r.stdout


def test_porchs_command_line_serves(start_server, tmp_path):
    """Porch's Deployment args as they are, with its WRAPPER_SERVER_IMAGE
    env (the cluster here answers nothing; the runner serves meanwhile), and
    the Porch flags that change nothing as given."""
    (tmp_path / "functions").mkdir()
    kc = tmp_path / "kubeconfig"
    kc.write_text(DEAD_KUBECONFIG)
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env.update(KUBECONFIG=str(kc), WRAPPER_SERVER_IMAGE="docker.io/nephio/porch-wrapper-server:latest")
    args = [a.format(functions=tmp_path / "functions") for a in PORCH_RUNNER_ARGS] + [
        "--enable-private-registries=false",
        "--registry-auth-secret-path=/var/tmp/config-secret/.dockerconfigjson",
        "--registry-auth-secret-name=auth-secret", "--enable-private-registries-tls=false",
        "--tls-secret-path=/var/tmp/tls-secret/", "--config=", "--pod-cache-config=",
        # porch-server's pod evaluator (served: test_base_templates.py)
        "--base-pod-template-name=base-pod-template",
        "--base-service-template-name=base-service-template", "--skip-template-creation=false",
        "--template-wait-timeout=0"]
    srv = start_server([], binary=CLIENT_BIN, env=env, argv=["serve", "--port", "{port}", *args])
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING
