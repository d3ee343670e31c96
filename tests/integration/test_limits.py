"""Message size limits, large payloads, oversized function output and
functions that do not read their input."""

import grpc
import pytest

from krmtest import DEFAULT_MAX, resource_list, simple_rl

LIMIT = 65536
IMAGE = "example.com/limits:1"


def request_size(pb, rl, image=""):
    return len(pb.evaluator.EvaluateFunctionRequest(resource_list=rl, image=image).SerializeToString())


def rl_of_request_size(pb, size, image=""):
    """A valid ResourceList whose EvaluateFunctionRequest encodes to exactly
    `size` bytes (padding goes into a YAML comment)."""
    base = simple_rl("padded")
    pad = size - request_size(pb, base, image) - 3
    for _ in range(10):
        rl = base + b"#" + b"p" * max(pad, 0) + b"\n"
        got = request_size(pb, rl, image)
        if got == size:
            return rl
        pad += size - got
    raise AssertionError(f"cannot build a request of {size} bytes")


def big_rl(nbytes, tag="big"):
    """A ResourceList of about nbytes: many ConfigMaps."""
    docs = []
    total = 0
    i = 0
    while total < nbytes:
        d = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {tag}-{i:06d}\n"
             f"data:\n  payload: {'x' * 400}\n")
        docs.append(d)
        total += len(d) + 4
        i += 1
    return resource_list(*docs)


@pytest.fixture(scope="module")
def limited_cat(module_launcher):
    return module_launcher.start(["cat"], options=["--max-request-body-size", str(LIMIT)])


def test_request_over_limit_is_resource_exhausted(limited_cat, pb):
    for size in (LIMIT + 1, 3 * LIMIT):
        rl = rl_of_request_size(pb, size)
        err = limited_cat.evaluate_error(rl)
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, f"{err.code()}: {err.details()}"
        assert err.details() == f"grpc: received message larger than max ({size} vs. {LIMIT})"
        # the connection and the server keep working
        ok = simple_rl("after-limit")
        assert limited_cat.evaluate(ok).resource_list == ok


def test_request_exactly_at_limit_is_accepted(limited_cat, pb):
    rl = rl_of_request_size(pb, LIMIT)
    assert request_size(pb, rl) == LIMIT
    resp = limited_cat.evaluate(rl)
    assert resp.resource_list == rl


def test_function_output_over_limit_is_internal(start_server, tmp_path):
    out = tmp_path / "big-output.yaml"
    out.write_bytes(big_rl(LIMIT + 40000))
    srv = start_server(
        ["sh", "-c", 'input=$(cat); case "$input" in *BIG*) cat "$1";; *) printf "%s\\n" "$input";; esac',
         "fn", str(out)],
        options=["--max-request-body-size", str(LIMIT)],
    )
    err = srv.evaluate_error(simple_rl("BIG"), image=IMAGE)
    assert err.code() == grpc.StatusCode.INTERNAL, f"{err.code()}: {err.details()}"
    assert str(LIMIT) in err.details(), err.details()
    ok = simple_rl("small")
    assert srv.evaluate(ok, image=IMAGE).resource_list == ok


def test_stderr_over_1mib_is_cut_with_marker(start_server, tmp_path):
    mib = 1 << 20
    stderr = b"".join(b"stderr line %08d\n" % i for i in range((3 * mib // 2) // 20 + 1))
    assert len(stderr) > mib + mib // 4
    path = tmp_path / "stderr.txt"
    path.write_bytes(stderr)
    srv = start_server(["sh", "-c", 'cat; cat "$1" >&2', "fn", str(path)])
    rl = simple_rl()
    resp = srv.evaluate(rl, image=IMAGE)
    assert resp.resource_list == rl
    log = resp.log
    assert log[:mib] == stderr[:mib], "the first MiB of stderr is not kept verbatim"
    tail = log[mib:]
    assert b"stderr truncated" in tail, f"no marker after the first MiB: {tail[:200]!r}"
    assert len(log) <= mib + 512, f"log is {len(log)} bytes"
    assert srv.evaluate(rl, image=IMAGE).resource_list == rl


def test_5mib_round_trip_with_default_limit(cat_server):
    rl = big_rl(5 << 20, "five")
    assert (5 << 20) <= len(rl) < DEFAULT_MAX - 1024
    resp = cat_server.evaluate(rl, image=IMAGE, timeout=60)
    assert resp.resource_list == rl
    assert resp.log == b""
    ok = simple_rl("after-5mib")
    assert cat_server.evaluate(ok).resource_list == ok


@pytest.mark.parametrize("script", [
    'exec 0<&-; cat "$1"',   # closes stdin at once
    'cat "$1"',              # never reads stdin, exits right away
])
def test_function_not_reading_large_stdin(start_server, tmp_path, script):
    fixture = tmp_path / "answer.yaml"
    answer = simple_rl("answer")
    fixture.write_bytes(answer)
    srv = start_server(["sh", "-c", script, "fn", str(fixture)])
    request = big_rl(2 << 20, "ignored")
    for _ in range(3):
        resp = srv.evaluate(request, image=IMAGE, timeout=30)
        assert resp.resource_list == answer
