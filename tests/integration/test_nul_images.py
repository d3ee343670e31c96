"""A NUL byte in an image name (or any other name a pipeline step gives)
would cut its C string: "example.com/fn:v1\\0..." would run as
"example.com/fn:v1". Each place an image enters with a length (a Kptfile's
YAML, a gRPC request to serve or to the wrapper server) refuses it, naming
the byte, before anything runs."""

import grpc
import pytest

from krmtest import explain, pkg, resource_list, runner_client as client, serve_example_fn, simple_rl


def write_kptfile(tmp_path, step):
    path = tmp_path / "Kptfile"
    path.write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"
                    "pipeline:\n  mutators:\n  - " + step + "\n")
    return path


@pytest.mark.parametrize("step, field, offset", [
    ('image: "example.com/fn:v1\\0/../other:v2"', "image", 17),
    ('{image: example.com/fn:v1, name: "a\\0b"}', "name", 1),
    ('{image: example.com/fn:v1, configPath: "fn.yaml\\0/../../x"}', "configPath", 7),
    ('{image: example.com/fn:v1, tag: "^1\\0|| *"}', "tag", 2),
    ('{image: example.com/fn:v1, configMap: {k: "v\\0w"}}', "configMap.k", 1),
])
def test_kptfile_step_with_nul_is_refused(binaries, tmp_path, step, field, offset):
    kptfile = write_kptfile(tmp_path, step)
    res = client("eval", "--addr", "localhost:1", "--pipeline", str(kptfile), pkg("app"))
    assert res.returncode == 2, explain(res)
    assert f"{kptfile}: pipeline.mutators[0]: {field} \"" in res.err, res.err
    assert f"holds a NUL byte (\\x00) at offset {offset}" in res.err, res.err
    assert res.stdout == b""


@pytest.fixture
def serve_with_fn(start_server, tmp_path):
    """runner-client serve with example.com/fn:v1 mapped to a cat."""
    return serve_example_fn(start_server, tmp_path, ["v1"])


def test_serve_refuses_an_image_with_nul(serve_with_fn):
    srv = serve_with_fn
    rl = resource_list("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    srv.evaluate(rl, image="example.com/fn:v1")          # the configured function runs
    err = srv.evaluate_error(rl, image="example.com/fn:v1\0/../evil")
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    assert err.details() == ('image "example.com/fn:v1\\x00/../evil" has a NUL byte (\\x00) at offset 17: '
                             'not an image name'), err.details()
    long_name = "example.com/fn:v1\0" + "x" * 100000
    err = srv.evaluate_error(rl, image=long_name)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"... ({len(long_name)} bytes) has a NUL byte" in err.details() and len(err.details()) < 400
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING


@pytest.mark.parametrize("size", ["small", "streamed"])
def test_wrapper_server_refuses_an_image_with_nul(cat_server, size):
    """Also when the function was started on the first bytes of a large
    ResourceList, before the image (field 2) arrived: it is stopped and does
    not answer."""
    rl = simple_rl() if size == "small" else resource_list(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  k: " + "x" * (1 << 20) + "\n")
    err = cat_server.evaluate_error(rl, image="example.com/fn:v1\0x")
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "has a NUL byte (\\x00) at offset 17" in err.details()
    assert cat_server.evaluate(rl, image="example.com/fn:v1").resource_list
