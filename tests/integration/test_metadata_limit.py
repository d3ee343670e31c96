"""Request metadata (issue 26, item 1). A request's header list may hold
1 MiB (SERVER_MAX_HEADER_LIST, advertised as SETTINGS_MAX_HEADER_LIST_SIZE);
a bigger one is refused on its own stream with RESOURCE_EXHAUSTED naming the
limit, and the connection's other calls go on. Before, nghttp2's default of
8 CONTINUATION frames (since CVE-2024-28182) ended the connection at 130-150
KB of metadata with a reset: every call on it failed UNAVAILABLE, and the log
said nothing at the default verbosity.

grpcio (C core) sends what it is given and is answered by the server;
grpc-go, which Porch uses, reads the server's SETTINGS and refuses a request
over them itself, naming the size. A raw client shows both answers the
server gives a peer that ignores the setting: a header list that decodes
past the limit (HPACK references: a few bytes each) is refused on its
stream; a header block in more CONTINUATION frames than 16 MiB needs ends
the connection with a GOAWAY naming the limit."""

import struct

import grpc

from krmtest import simple_rl
from test_faults import (DATA, GOAWAY, HEADERS, RST_STREAM, RawH2, frame, grpc_message, hpack,
                         hpack_int, summary)
from test_grpc_go import goclient, write_rl  # noqa: F401 - goclient is a fixture
from test_observability import curl, series

CONTINUATION = 0x9
END_HEADERS = 0x4
SETTINGS_MAX_HEADER_LIST_SIZE = 0x6
ENHANCE_YOUR_CALM = 0xB
LIMIT = 1 << 20
SLOW_CAT = ["sh", "-c", "sleep 1; cat"]


def metadata(nbytes):
    """About nbytes of metadata, in entries of 8,000 bytes."""
    return [(f"x-md-{i}", "v" * 8000) for i in range((nbytes + 7999) // 8000)]


def refused_lines(srv):
    return [l for l in srv.stderr().splitlines() if "over this server's limit" in l]


def test_grpcio_large_metadata_is_refused_on_its_own_stream(start_server):
    srv = start_server(SLOW_CAT)
    ch = srv.channel()
    call = srv.evaluate_callable(ch)
    req = srv.pb.evaluator.EvaluateFunctionRequest
    rl = simple_rl("plain")
    plain = call.future(req(resource_list=rl, image="img"), timeout=30)
    ok = call(req(resource_list=rl, image="img"), metadata=metadata(200_000), timeout=30)
    assert ok.resource_list == rl, "200 KB of metadata is within the limit"
    for _ in range(2):
        try:
            call(req(resource_list=rl, image="img"), metadata=metadata(2_000_000), timeout=30)
            raise AssertionError("2 MB of metadata was accepted")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (e.code(), e.details())
            assert "limit of 1048576 bytes" in e.details(), e.details()
    assert plain.result().resource_list == rl, "the call in flight on the connection was lost"
    # the same connection serves on
    assert srv.check(channel=ch).status == srv.pb.health.HealthCheckResponse.SERVING
    lines = refused_lines(srv)
    assert len(lines) == 1 and "more are logged at verbosity 3" in lines[0], srv.stderr()
    code, text = curl(srv.port, "/metrics")
    assert series(text, "krm_request_headers_refused_total") == 2


def test_grpc_go_large_metadata_names_the_servers_limit(start_server, goclient, tmp_path):  # noqa: F811
    srv = start_server(SLOW_CAT)
    r = goclient("metadata", "-addr", f"127.0.0.1:{srv.port}", "-in",
                 write_rl(tmp_path, simple_rl("plain")), "-sizes", "200000,2000000")
    assert r["plain"]["code"] == "OK", r
    small, big = r["sized"]
    assert small["code"] == "OK", small
    # grpc-go reads SETTINGS_MAX_HEADER_LIST_SIZE and does not send it
    assert big["code"] != "OK" and "1048576" in big["message"], big
    assert srv.check().status == srv.pb.health.HealthCheckResponse.SERVING


def test_one_header_over_64_kib_ends_the_connection_said_in_the_log(start_server):
    """nghttp2's HPACK takes one header of at most 64 KiB; a bigger one is a
    connection error it answers with GOAWAY COMPRESSION_ERROR by itself. It
    used to go unsaid; now the log names it, once at the default level."""
    srv = start_server(["cat"])
    call = srv.evaluate_callable()
    req = srv.pb.evaluator.EvaluateFunctionRequest(resource_list=simple_rl("one"), image="img")
    for _ in range(2):
        try:
            call(req, metadata=[("x-big", "v" * 100_000)], timeout=20)
            raise AssertionError("a 100 KB header was accepted")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.UNAVAILABLE, (e.code(), e.details())
    lines = [l for l in srv.stderr().splitlines() if "GOAWAY COMPRESSION_ERROR" in l]
    assert len(lines) == 1 and "64 KiB" in lines[0], srv.stderr()
    assert srv.evaluate(simple_rl("after"), image="img").resource_list == simple_rl("after")


def raw_client(srv):
    c = RawH2(srv.port)
    c.handshake()
    assert c.peer_settings.get(SETTINGS_MAX_HEADER_LIST_SIZE) == LIMIT, c.peer_settings
    return c


def test_raw_header_list_over_the_limit_is_refused_on_its_stream(start_server):
    """4 KB entered in HPACK's table once, then referred to 300 times: 1.2 MB
    of header list in a 5 KB block."""
    srv = start_server(["cat"])
    c = raw_client(srv)
    name, value = b"x-bomb", b"b" * 4000
    block = hpack([(":method", "POST"), (":scheme", "http"),
                   (":path", "/grpc.health.v1.Health/Check"), (":authority", "localhost"),
                   ("content-type", "application/grpc"), ("te", "trailers")])
    block += b"\x40" + hpack_int(len(name), 7) + name + hpack_int(len(value), 7) + value
    block += hpack_int(62, 7, 0x80) * 300
    c.send(frame(HEADERS, END_HEADERS, 1, block))
    c.send(frame(DATA, 0x1, 1, grpc_message(b"")))
    f, seen = c.read_until(lambda f: f[2] == 1 and f[0] in (HEADERS, RST_STREAM), 10)
    # Trailers-Only (the status, HPACK-coded), no answer: refused
    assert f[0] == HEADERS and f[1] & 0x1, summary(seen)
    assert "stream 1: request metadata of 1" in srv.stderr(), srv.stderr()
    c.health_check(3)   # the connection serves on
    c.close()


def test_raw_header_block_past_the_frame_limit_gets_goaway(start_server):
    srv = start_server(["cat"])
    c = raw_client(srv)
    c.health_check(1)
    block = hpack([(":method", "POST"), (":scheme", "http"),
                   (":path", "/grpc.health.v1.Health/Check"), (":authority", "localhost"),
                   ("x-long", "l" * 30000)])
    pieces = [block[i:i + 20] for i in range(0, len(block), 20)]
    assert len(pieces) > 1100
    out = frame(HEADERS, 0, 3, pieces[0])
    out += b"".join(frame(CONTINUATION, 0, 3, p) for p in pieces[1:-1])
    out += frame(CONTINUATION, END_HEADERS, 3, pieces[-1])
    c.send(out)
    frames = c.read_until_closed(10)
    goaway = [f for f in frames if f[0] == GOAWAY]
    assert goaway, summary(frames)
    last, code = struct.unpack(">II", goaway[-1][3][:8])
    assert code == ENHANCE_YOUR_CALM and b"1048576" in goaway[-1][3][8:], goaway[-1]
    assert "CONTINUATION frames" in srv.stderr()
    c.close()
    again = raw_client(srv)   # the server serves on
    again.health_check(1)
    again.close()
