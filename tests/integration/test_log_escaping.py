"""Log injection: text from a request (the image name) or from a function (its
stderr, quoted in failure messages) reaches the server's log escaped. The
log must hold no raw control byte (CR, ESC, BEL, ...), no C1 control, no
invalid UTF-8, and one klog record per line: a forged record inside an
image name stays inside its own line."""

import re

import grpc

from krmtest import read, simple_rl

FORGED = "E1124 00:00:00.000000       1 forged.go:1] forged record"
IMAGE = f"ghcr.io/x/fn:v1\r\x1b[31m\x07\n{FORGED}\u009b2J\x1b]0;title\x07"
KLOG = re.compile(rb"^[IWE]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [\w.-]+:\d+\] ")


def log_lines(srv):
    raw = read(srv.stderr_path)
    assert raw.endswith(b"\n"), raw[-200:]
    return raw, raw[:-1].split(b"\n")


def assert_clean(raw, lines):
    for i, byte in enumerate(raw):
        assert byte >= 0x20 or byte == 0x0A, f"raw 0x{byte:02x} at {i}: {raw[max(0, i - 80):i + 20]!r}"
        assert byte != 0x7F, f"raw DEL at {i}"
    text = raw.decode("utf-8")                 # strict: no invalid UTF-8 left
    assert not re.search("[\u0080-\u009f]", text), "a raw C1 control"
    for line in lines:                          # one record per line
        assert KLOG.match(line), f"not a record of its own: {line!r}"
    assert not any(b"forged.go" in l and l.startswith(b"E1124") for l in lines)


def test_image_name_is_escaped_in_the_log(start_server):
    srv = start_server(["cat"], options=["--verbosity", "3"])
    assert srv.evaluate(simple_rl(), image=IMAGE).resource_list == simple_rl()
    assert srv.stop() == 0
    raw, lines = log_lines(srv)
    assert_clean(raw, lines)
    escaped = (b"ghcr.io/x/fn:v1\\r\\x1b[31m\\x07\\n" + FORGED.encode()
               + b"\\u009b2J\\x1b]0;title\\x07")
    evaluated = [l for l in lines if b"] Evaluated \"" in l]
    assert len(evaluated) == 1 and escaped in evaluated[0], lines


def test_function_stderr_in_a_failure_stays_one_readable_record(start_server):
    script = ("cat >/dev/null; printf 'first line\\n\\033[2Jsecond\\rthird\\a\\377\\n"
              + FORGED + "\\n' >&2; exit 1")
    srv = start_server(["sh", "-c", script])
    err = srv.evaluate_error(simple_rl(), image=IMAGE)
    assert err.code() == grpc.StatusCode.INTERNAL
    assert srv.stop() == 0
    raw, lines = log_lines(srv)
    assert_clean(raw, lines)
    failed = [l for l in lines if b"] Evaluating \"" in l and b"failed:" in l]
    assert len(failed) == 1, lines
    assert (b"first line\\n\\x1b[2Jsecond\\rthird\\x07\\xff\\n" + FORGED.encode() + b"\\n")\
        in failed[0], failed[0]
