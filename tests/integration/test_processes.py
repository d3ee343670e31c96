"""Function process handling (porch-compat.md §6): stdin is written while
stdout/stderr are drained, so big outputs produced before the input is read
do not deadlock; a background grandchild holding the output pipes does not
stall the call, and does not outlive it."""

import time

from krmtest import resource_list, simple_rl, wait_pidfile, wait_processes_gone


def big_rl(nbytes, tag):
    docs, total, i = [], 0, 0
    while total < nbytes:
        d = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {tag}-{i:06d}\ndata:\n  v: {'y' * 200}\n"
        docs.append(d)
        total += len(d) + 4
        i += 1
    return resource_list(*docs)


def test_output_before_reading_input_does_not_deadlock(start_server, tmp_path):
    answer = big_rl(1 << 20, "answer")
    path = tmp_path / "answer.yaml"
    path.write_bytes(answer)
    srv = start_server(["sh", "-c", 'cat "$1"; cat >/dev/null', "fn", str(path)])
    resp = srv.evaluate(big_rl(2 << 20, "input"), image="img", timeout=20)
    assert resp.resource_list == answer


def test_stderr_before_reading_input_does_not_deadlock(start_server, tmp_path):
    noise = b"".join(b"diagnostic %06d\n" % i for i in range(40000))  # ~680 KiB
    path = tmp_path / "noise.txt"
    path.write_bytes(noise)
    srv = start_server(["sh", "-c", 'cat "$1" >&2; cat', "fn", str(path)])
    rl = big_rl(2 << 20, "input")
    resp = srv.evaluate(rl, image="img", timeout=20)
    assert resp.resource_list == rl
    assert resp.log == noise


def test_grandchild_holding_pipes_does_not_stall_the_call(start_server, tmp_path):
    pidfile = tmp_path / "pid"
    srv = start_server(["sh", "-c", 'cat; sleep 30 & echo $! > "$1"', "fn", str(pidfile)])
    rl = simple_rl("bg")
    t0 = time.monotonic()
    resp = srv.evaluate(rl, image="img", timeout=20)
    elapsed = time.monotonic() - t0
    assert resp.resource_list == rl
    assert elapsed < 5, f"call waited {elapsed:.1f}s for a background process"
    (pid,) = wait_pidfile(str(pidfile), count=1)
    survivors = wait_processes_gone([pid], srv.pid, timeout=3.0)
    assert not survivors, f"background process outlived the call: {survivors}"
    # and the server goes on
    assert srv.evaluate(simple_rl("next"), image="img", timeout=20).resource_list == simple_rl("next")
