"""The servers against grpc-go, the gRPC implementation Porch's function
runner and engine call them with (python3-grpcio is gRPC C core, and
runner-client is ours): calls small and large, limits on both sides,
deadlines, cancellation, concurrency over one connection, status messages
with any text, health Check and Watch through a drain, keepalive pings on an
idle connection, reflection, and `runner-client serve` with the example
FunctionConfigs. The client, tests/goclient, is built with Debian's Go and
grpc-go 1.33 (tests/goclient/build.sh); each test reads its JSON answer."""

import hashlib
import json
import os
import signal
import subprocess
import time

import pytest

from krmtest import CLIENT_BIN, FUNCTIONS, ROOT, BUILD_DIR, resource_list, serve_example_fn, simple_rl, SLOW

EXAMPLES = os.path.join(ROOT, "examples")


@pytest.fixture(scope="module")
def goclient():
    out = subprocess.run([os.path.join(ROOT, "tests", "goclient", "build.sh"),
                          os.path.join(BUILD_DIR, "goclient")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"building the grpc-go client failed:\n{out.stderr}"
    binary = out.stdout.strip()

    def run(*args, timeout=60):
        done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout * SLOW)
        assert done.returncode == 0, f"goclient {args}: exit {done.returncode}\n{done.stderr}"
        return json.loads(done.stdout)
    run.binary = binary
    return run


def write_rl(tmp_path, data, name="rl.yaml"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def big_rl(size):
    """A ResourceList of ConfigMaps about `size` bytes long."""
    one = "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-{}\n  data:\n    v: " + "x" * 200 + "\n"
    items, n = [], 0
    while n < size:
        items.append(one.format(len(items)))
        n += len(items[-1])
    return ("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + "".join(items)).encode()


def test_small_call_answers_the_functions_stdout_and_log(start_server, goclient, tmp_path):
    srv = start_server([os.path.join(FUNCTIONS, "search-replace.sh"), "example", "changed"])
    rl = simple_rl()
    r = goclient("eval", "-addr", f"127.0.0.1:{srv.port}", "-in", write_rl(tmp_path, rl),
                 "-out", str(tmp_path / "out"))
    assert r["code"] == "OK", r
    assert (tmp_path / "out").read_bytes() == rl.replace(b"example", b"changed")


def test_five_mib_both_ways(cat_server, goclient, tmp_path):
    rl = big_rl(5 << 20)
    r = goclient("eval", "-addr", f"127.0.0.1:{cat_server.port}", "-in", write_rl(tmp_path, rl))
    assert (r["code"], r["len"], r["sha256"]) == ("OK", len(rl), sha(rl))


def test_request_over_the_servers_limit(cat_server, goclient, tmp_path):
    rl = big_rl(7 << 20)
    r = goclient("eval", "-addr", f"127.0.0.1:{cat_server.port}", "-in", write_rl(tmp_path, rl))
    assert r["code"] == "ResourceExhausted", r
    assert "grpc: received message larger than max" in r["message"]
    assert goclient("health", "-addr", f"127.0.0.1:{cat_server.port}")["status"] == "SERVING"


def test_answer_over_the_clients_limit(cat_server, goclient, tmp_path):
    """grpc-go refuses the answer; the server, whose DATA the client reset,
    serves the next call on a fresh connection."""
    rl = big_rl(64 << 10)
    r = goclient("eval", "-addr", f"127.0.0.1:{cat_server.port}", "-in", write_rl(tmp_path, rl),
                 "-max-recv", "4096")
    assert r["code"] == "ResourceExhausted", r
    assert "larger than max" in r["message"]
    r = goclient("eval", "-addr", f"127.0.0.1:{cat_server.port}", "-in", write_rl(tmp_path, rl))
    assert (r["code"], r["sha256"]) == ("OK", sha(rl))


@pytest.mark.parametrize("how", ["deadline", "cancel"])
def test_deadline_and_cancel_end_the_function(start_server, goclient, tmp_path, how):
    started = tmp_path / "started"
    srv = start_server([os.path.join(FUNCTIONS, "slow-cat.sh"), "30", str(started)])
    rl = write_rl(tmp_path, simple_rl())
    addr = f"127.0.0.1:{srv.port}"
    if how == "deadline":
        r = goclient("eval", "-addr", addr, "-in", rl, "-timeout", "700ms")
        assert r["code"] == "DeadlineExceeded", r
    else:
        r = goclient("cancel", "-addr", addr, "-in", rl, "-after", "700ms")
        assert r["code"] == "Canceled", r
    assert r["elapsed_ms"] < 5000 * SLOW
    pid = int(started.read_text())
    deadline = time.monotonic() + 5 * SLOW
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}"), "the function outlived its call"
    assert goclient("health", "-addr", addr)["status"] == "SERVING"


def test_many_calls_over_one_connection(cat_server, goclient, tmp_path):
    rl = simple_rl()
    r = goclient("load", "-addr", f"127.0.0.1:{cat_server.port}", "-in", write_rl(tmp_path, rl),
                 "-streams", "16", "-calls", "400", timeout=120)
    assert r["codes"] == {"OK": 400}, r
    assert r["distinct_answers"] == 1


def test_status_message_with_any_text(start_server, goclient, tmp_path):
    """The grpc-message trailer is percent-encoded; grpc-go must read back
    exactly what the function wrote on stderr: UTF-8, '%', controls."""
    fn = tmp_path / "fail.sh"
    text = "naïve 100% ✓ tab\there %41 done"
    fn.write_text(f"#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{text}' >&2\nexit 3\n")
    fn.chmod(0o755)
    srv = start_server([str(fn)])
    r = goclient("eval", "-addr", f"127.0.0.1:{srv.port}", "-in", write_rl(tmp_path, simple_rl()))
    assert r["code"] == "Internal", r
    assert text in r["message"], r["message"]


def test_status_message_of_a_huge_stderr_is_accepted(start_server, goclient, tmp_path):
    fn = tmp_path / "noisy.sh"
    fn.write_text("#!/bin/sh\ncat >/dev/null\nhead -c 300000 /dev/zero | tr '\\0' 'e' >&2\nexit 1\n")
    fn.chmod(0o755)
    srv = start_server([str(fn)])
    r = goclient("eval", "-addr", f"127.0.0.1:{srv.port}", "-in", write_rl(tmp_path, simple_rl()))
    assert r["code"] == "Internal", r
    assert 1000 < len(r["message"].encode()) <= 8192


def test_health_watch_sees_the_drain(start_server, goclient):
    srv = start_server(["cat"])
    proc = subprocess.Popen([goclient.binary, "watch", "-addr", f"127.0.0.1:{srv.port}", "-for", "20s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr.readline().strip() == "ready"
    srv.terminate()
    out, err = proc.communicate(timeout=20 * SLOW)
    r = json.loads(out)
    assert r["statuses"] == ["SERVING", "NOT_SERVING"], r
    assert r["code"] == "Unavailable", r
    assert srv.wait(15) == 0


def test_keepalive_pings_on_an_idle_connection(cat_server, goclient, tmp_path):
    """grpc-go pings every 10 s (its smallest interval) while idle; the
    server answers and does not send GOAWAY, and the connection carries the
    next call."""
    r = goclient("idle", "-addr", f"127.0.0.1:{cat_server.port}", "-in", write_rl(tmp_path, simple_rl()),
                 "-idle", "12s")
    assert r["first"]["code"] == "OK" and r["second"]["code"] == "OK", r
    assert r["state"] == "READY", r


def test_reflection_v1alpha(cat_server, goclient):
    r = goclient("reflect", "-addr", f"127.0.0.1:{cat_server.port}")
    assert r["services"] == ["evaluator.FunctionEvaluator", "grpc.health.v1.Health",
                             "grpc.reflection.v1.ServerReflection",
                             "grpc.reflection.v1alpha.ServerReflection"], r
    assert r["evaluator_files"] >= 1 and r["missing_code"] == "NotFound", r


def test_function_runner_with_the_example_configs(start_server, goclient, tmp_path):
    """runner-client serve, as Porch's engine calls its function runner,
    with examples/function-configs: the example images run, others are
    NOT_FOUND naming what is configured."""
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=pod",
        "--function-config", os.path.join(EXAMPLES, "function-configs"),
        "--functions", os.path.join(EXAMPLES, "functions")])
    addr = f"127.0.0.1:{srv.port}"
    rl = resource_list("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: staging\n",
                       function_config="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fc\n"
                                       "data:\n  search: staging\n  replace: production\n")
    r = goclient("eval", "-addr", addr, "-image", "example/search-replace:v1", "-in", write_rl(tmp_path, rl),
                 "-out", str(tmp_path / "out"))
    assert r["code"] == "OK", r
    assert b"namespace: production" in (tmp_path / "out").read_bytes()
    assert 'replacing "staging" with "production"' in r["log"]
    r = goclient("eval", "-addr", addr, "-image", "example/unknown:v1", "-in", write_rl(tmp_path, rl))
    assert r["code"] == "NotFound", r
    assert "example/search-replace:v1" in r["message"]


def test_tag_from_grpc_go_picks_the_function(start_server, goclient, tmp_path):
    """Porch's Go stubs carry Tag (field 3) as serve reads it."""
    srv = serve_example_fn(start_server, tmp_path, ["v1.0.0", "v1.3.0", "v2.0.0"])
    rl = write_rl(tmp_path, simple_rl())
    r = goclient("eval", "-addr", f"127.0.0.1:{srv.port}", "-in", rl, "-image", "example.com/fn",
                 "-tag", "~1.3")
    assert r["code"] == "OK", r
    assert 'Tag "~1.3" picks example.com/fn:v1.3.0' in srv.stderr(), srv.describe()
    r = goclient("eval", "-addr", f"127.0.0.1:{srv.port}", "-in", rl, "-image", "example.com/fn",
                 "-tag", "^3")
    assert (r["code"], r["message"].split(";")[1].strip()) == \
        ("NotFound", 'no binaryExecutor tag of example.com/fn satisfies Tag "^3"'), r
