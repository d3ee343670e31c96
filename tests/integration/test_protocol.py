"""gRPC-level behaviour: addresses, unknown methods, malformed requests."""

import grpc
import pytest

from krmtest import EMPTY_OUTPUT, EVALUATE, ipv6_loopback_available, parse_msg, simple_rl


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]"])
def test_listens_on_all_addresses(cat_server, host):
    if host == "[::1]" and not ipv6_loopback_available():
        pytest.skip("no IPv6 loopback here")
    ch = cat_server.channel(host)
    rl = simple_rl(f"via-{host.strip('[]').replace(':', '-').replace('.', '-')}")
    assert cat_server.evaluate(rl, channel=ch).resource_list == rl
    assert cat_server.check("", channel=ch).status == cat_server.pb.health.HealthCheckResponse.SERVING


@pytest.mark.parametrize("path", [
    "/foo.Bar/Baz",
    "/evaluator.FunctionEvaluator/Nope",
    "/grpc.health.v1.Health/Nope",
    "/evaluator.FunctionEvaluator/evaluateFunction",
])
def test_unknown_service_or_method_is_unimplemented(cat_server, path):
    ch = cat_server.channel()
    call = ch.unary_unary(path)  # raw bytes in and out
    with pytest.raises(grpc.RpcError) as ei:
        call(b"\x0a\x03abc", timeout=10)
    assert ei.value.code() == grpc.StatusCode.UNIMPLEMENTED, ei.value.details()
    # same connection still usable
    rl = simple_rl()
    assert cat_server.evaluate(rl, channel=ch).resource_list == rl


@pytest.mark.parametrize("payload", [
    b"\x0a\xff\xff",                 # length varint never ends
    b"\x0a\x10short",                # length beyond the end
    b"\x0b",                         # wire type 3 (group) is not valid here
])
def test_malformed_protobuf_is_internal(cat_server, payload):
    ch = cat_server.channel()
    call = ch.unary_unary(EVALUATE)
    with pytest.raises(grpc.RpcError) as ei:
        call(payload, timeout=10)
    assert ei.value.code() == grpc.StatusCode.INTERNAL, ei.value.details()
    assert ei.value.details().startswith("grpc: error unmarshalling request"), ei.value.details()
    rl = simple_rl()
    assert cat_server.evaluate(rl, channel=ch).resource_list == rl


def test_unknown_fields_and_repeated_fields_are_accepted(cat_server, pb):
    """proto3 decoding: unknown fields skipped, last occurrence wins."""
    first = simple_rl("first")
    last = simple_rl("last")
    req = pb.evaluator.EvaluateFunctionRequest
    raw = (
        req(resource_list=first).SerializeToString()
        + b"\x38\x96\x01"               # field 7, varint (3 is Tag)
        + b"\x25\x01\x02\x03\x04"       # field 4, fixed32
        + b"\x29" + b"\x00" * 8         # field 5, fixed64
        + b"\x32\x02hi"                 # field 6, bytes
        + req(resource_list=last, image="img").SerializeToString()
    )
    ch = cat_server.channel()
    call = ch.unary_unary(EVALUATE, response_deserializer=pb.evaluator.EvaluateFunctionResponse.FromString)
    resp = call(raw, timeout=10)
    assert resp.resource_list == last


def test_non_yaml_resource_list_through_cat(cat_server):
    err = cat_server.evaluate_error(b"\x00\x01 not: [yaml", image="cat-image")
    assert err.code() == grpc.StatusCode.INTERNAL, err.details()
    assert err.details().startswith(
        "failed to parse the output of function \"cat-image\" with stderr '': "
    ), err.details()
    rl = simple_rl()
    assert cat_server.evaluate(rl).resource_list == rl


def test_plain_text_through_cat_is_a_parse_failure(cat_server):
    err = cat_server.evaluate_error(b"", image="cat-image")
    assert err.code() == grpc.StatusCode.INTERNAL
    assert err.details() == parse_msg("cat-image", "", EMPTY_OUTPUT)


def test_many_sequential_calls_on_one_channel(cat_server):
    ch = cat_server.channel()
    for i in range(30):
        rl = simple_rl(f"seq-{i}")
        assert cat_server.evaluate(rl, channel=ch).resource_list == rl
