"""Porch's function-runner and pod-evaluator flags `serve` does not serve
yet: a Porch Deployment's args that would make it do something else are
refused at start, naming the flag and what to do; those that, as given,
change nothing in Porch either are taken (the runner then serves)."""

import pytest

from krmtest import CLIENT_BIN, run_cli

REFUSED = [
    (["--config=/config.yaml"], "--config is a flag of Porch releases before the FunctionConfig CRD "
     "and is not read here: give the exec runtime's functions as FunctionConfig objects "
     "(spec.binaryExecutor) with --function-config"),
    (["--pod-cache-config", "/pod-cache-config/pod-cache-config.yaml"],
     "--pod-cache-config is a flag of Porch releases before the FunctionConfig CRD"),
    (["--function-pod-template=kpt-function-eval-pod-template"],
     "--function-pod-template is a flag of Porch releases before the FunctionConfig CRD"),
    (["--enable-private-registries"], "--enable-private-registries is not implemented yet: the pod "
     "runtime cannot hand a pull secret to function pods"),
    (["--enable-private-registries=true", "--registry-auth-secret-name=auth-secret"],
     "--enable-private-registries is not implemented yet"),
    (["--enable-private-registries-tls=true"], "--enable-private-registries-tls is not implemented yet"),
    (["--base-pod-template-name=base-pod-template"], "--base-pod-template-name is not implemented yet: "
     "base templates are not read from the cluster"),
    (["--base-service-template-name", "x"], "--base-service-template-name is not implemented yet"),
    (["--template-wait-timeout=30s"], "--template-wait-timeout is not implemented yet"),
    (["--skip-template-creation=false"], "--skip-template-creation is not implemented yet"),
]


@pytest.mark.parametrize("args, message", REFUSED, ids=[a[0].split("=")[0] for a, _ in REFUSED])
def test_porch_flags_not_served_are_refused_at_start(args, message):
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod", *args])
    assert r.returncode == 2, r.stderr
    assert r.stderr.decode().startswith("runner-client serve: " + message), r.stderr


def test_porch_flags_that_change_nothing_are_taken(start_server):
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=pod", "--enable-private-registries=false",
        "--registry-auth-secret-path=/var/tmp/config-secret/.dockerconfigjson",
        "--registry-auth-secret-name=auth-secret", "--enable-private-registries-tls=false",
        "--tls-secret-path=/var/tmp/tls-secret/", "--config=", "--pod-cache-config="])
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING


def test_help_names_them():
    r = run_cli([CLIENT_BIN, "serve", "--help"])
    assert r.returncode == 0
    assert b"--enable-private-registries" in r.stdout and b"--skip-template-creation" in r.stdout
