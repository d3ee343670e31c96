"""The scenarios of Porch's own wrapper-server test
(func/wrapper-server/wrapper_server_test.go, TestWrapperServerEvaluate),
run against the C server over gRPC:

* search-and-replace shell function over a Deployment, a ConfigMap and a
  CronJob (each object's namespace is replaced by "<namespace>-new");
* the same function started with wrong arguments (fails: no output);
* a nil ResourceList (fails: the function outputs nothing);
* a ResourceList that is not YAML (fails: unparsable output);
* a function that echoes its input and exits 1 (fails with structured
  results, here none).

Porch's test only checks "expect fail"; the messages asserted here are what
its Go server returns for the same cases.
"""

import grpc
import pytest

from krmtest import EMPTY_OUTPUT, fn, pkg, read, resource_list, results_msg, parse_msg

IMAGE = "search-and-replace"


def rl_from(path):
    return resource_list(read(path, "r"))


@pytest.mark.parametrize("name,search", [
    ("deployment.yaml", "hello-server-namespace"),
    ("config-map.yaml", "configmap-namespace"),
    ("cron-job.yaml", "cronjob-namespace"),
])
def test_search_and_replace(start_server, name, search):
    srv = start_server([fn("search-replace.sh"), search, search + "-new"])
    resp = srv.evaluate(rl_from(pkg("porch", name)), image=IMAGE)
    assert resp.resource_list.decode() == rl_from(pkg("porch", "replaced", name)).decode()
    assert f"namespace: {search}-new\n".encode() in resp.resource_list
    assert resp.log == b""


def test_wrong_function_arguments(start_server):
    srv = start_server([fn("search-replace.sh")])
    err = srv.evaluate_error(rl_from(pkg("porch", "replaced", "deployment.yaml")), image=IMAGE)
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details() == parse_msg(IMAGE, "usage: search-replace SEARCH REPLACE\n", EMPTY_OUTPUT)


def test_nil_resource_list(start_server):
    srv = start_server([fn("search-replace.sh"), "hello-server-namespace", "hello-server-namespace-new"])
    err = srv.evaluate_error(None, image=IMAGE)
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details() == parse_msg(IMAGE, "", EMPTY_OUTPUT)


def test_invalid_yaml_resource_list(start_server):
    srv = start_server([fn("search-replace.sh"), "hello-server-namespace", "hello-server-namespace-new"])
    bad = b"apiVersion: apps/v1 kind: Deployment metadata: name: hello-server namespace: hello-server-namespace"
    err = srv.evaluate_error(bad, image=IMAGE)
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details().startswith(
        "failed to parse the output of function \"search-and-replace\" with stderr '': failed to parse input bytes"
    ), err.details()
    # The server is still fine afterwards.
    ok = srv.evaluate(rl_from(pkg("porch", "deployment.yaml")), image=IMAGE)
    assert b"hello-server-namespace-new" in ok.resource_list


def test_echo_and_exit_1(start_server):
    srv = start_server([fn("echo-exit1.sh")])
    err = srv.evaluate_error(rl_from(pkg("porch", "deployment.yaml")), image=IMAGE)
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details() == results_msg(IMAGE, "", "")
