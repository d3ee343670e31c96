"""`runner-client eval` (local --exec and --kube) and `pod create` take
serve's --verbosity N (or --log-level N): the same levels 0-10, default 2,
the same wording for a bad value and exit 2. What each level adds is
checked on the real binary: for --exec, 3 the function's run time and 4
its start; for --kube and pod create, 3 each API request and the pod's
states, 4 the watch's steps. The API server is test_hostile_kube's scripted
one (plain HTTP on 127.0.0.1), whose pod cannot pull its image, so the
commands end within a second."""

import os
import re

import pytest

import krmtest
from krmtest import CLIENT_BIN
from test_hostile_kube import FakeAPI, kubeconfig, pod_flow, rc

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
LINE = r"^I\d{4} [\d:.]+ +\d+ "   # a log line's klog header


@pytest.fixture
def api():
    fake = FakeAPI()
    yield fake
    fake.close()


def log_lines(err, source):
    """The log lines of `source` (a file name) in stderr."""
    return [l for l in err.splitlines() if re.match(LINE + re.escape(source) + r":\d+\] ", l)]


def eval_exec(tmp_path, *flags):
    (tmp_path / "cm.yaml").write_text(CM)
    res = krmtest.run_cli([CLIENT_BIN, "eval", "--exec", "cat", *flags, str(tmp_path / "cm.yaml")])
    res.out, res.err = res.stdout.decode(), res.stderr.decode()
    return res


@pytest.mark.parametrize("flag", ["--verbosity", "--log-level"])
def test_eval_exec_levels(tmp_path, flag):
    quiet = eval_exec(tmp_path)
    assert quiet.returncode == 0, krmtest.explain(quiet)
    assert not log_lines(quiet.err, "ev_exec.c") and not log_lines(quiet.err, "fn_job.c"), quiet.err
    for level in ("0", "2"):
        same = eval_exec(tmp_path, flag, level)
        assert same.returncode == 0 and same.out == quiet.out, krmtest.explain(same)
        assert not [l for l in same.err.splitlines() if re.match(r"^[IWE]\d{4} ", l)], same.err

    details = eval_exec(tmp_path, flag, "3")
    assert details.returncode == 0 and details.out == quiet.out, krmtest.explain(details)
    ran = log_lines(details.err, "ev_exec.c")
    assert len(ran) == 1 and re.search(r'function \d+ for "cat" finished in [\d.]+ ms$', ran[0]), \
        details.err
    assert not log_lines(details.err, "fn_job.c"), details.err

    debug = eval_exec(tmp_path, f"{flag}=4")
    assert debug.returncode == 0 and debug.out == quiet.out, krmtest.explain(debug)
    started = log_lines(debug.err, "fn_job.c")
    assert len(started) == 1 and re.search(r"function \d+ started: \S*cat$", started[0]), debug.err
    assert len(log_lines(debug.err, "ev_exec.c")) == 1, debug.err


@pytest.mark.parametrize("value", ["loud", "11", "-1", "", "3x"])
@pytest.mark.parametrize("flag", ["--verbosity", "--log-level"])
@pytest.mark.parametrize("command", [["eval", "--exec", "cat"], ["eval", "--addr", "127.0.0.1:1"]])
def test_eval_bad_verbosity_is_a_usage_error(tmp_path, command, flag, value):
    (tmp_path / "cm.yaml").write_text(CM)
    res = krmtest.run_cli([CLIENT_BIN, *command, flag, value, str(tmp_path / "cm.yaml")])
    assert res.returncode == 2 and res.stdout == b"", res
    assert res.stderr.decode() == (f'runner-client eval: invalid value "{value}" for {flag}: '
                                   "want a whole number 0-10\n")


def test_eval_both_spellings_is_a_usage_error(tmp_path):
    (tmp_path / "cm.yaml").write_text(CM)
    res = krmtest.run_cli([CLIENT_BIN, "eval", "--exec", "cat", "--verbosity", "3", "--log-level", "3",
                           str(tmp_path / "cm.yaml")])
    assert res.returncode == 2 and res.stdout == b"", res
    assert res.stderr.decode() == ("runner-client eval: --verbosity and --log-level are one setting: "
                                   "give one\n")


@pytest.mark.parametrize("flags, message", [
    (["--verbosity", "loud"], 'invalid value "loud" for --verbosity: want a whole number 0-10'),
    (["--log-level", "11"], 'invalid value "11" for --log-level: want a whole number 0-10'),
    (["--verbosity", "3", "--log-level", "3"], "--verbosity and --log-level are one setting: give one"),
])
def test_serve_reads_the_flag_with_the_same_parser(flags, message):
    """serve names the spelling given (it said --log-level for both) and
    refuses both at once, as eval does."""
    res = krmtest.run_cli([CLIENT_BIN, "serve", "--port", "0", *flags])
    assert res.returncode == 2 and res.stdout == b"", res
    assert res.stderr.decode() == f"runner-client serve: {message}\n"


FAILING = {"phase": "Pending", "containerStatuses": [
    {"name": "function", "state": {"waiting": {"reason": "ErrImagePull", "message": "no such image"}}}]}


def kube(api, tmp_path, command, *flags):
    """`pod create` or `eval --kube` of the scripted API server's image,
    whose pod cannot pull it."""
    image = api.add_image()
    pod_flow(api, FAILING)
    kc = kubeconfig(tmp_path, api.port, "    token: t\n")
    (tmp_path / "cm.yaml").write_text(CM)
    args = ["pod", "create"] if command == "pod create" else ["eval", "--kube", str(tmp_path / "cm.yaml")]
    return rc(tmp_path, *args, "--image", image, "--kubeconfig", str(kc),
              "--wrapper-server-image", f"127.0.0.1:{api.port}/wrapper:v1", *flags)


@pytest.mark.parametrize("command", ["pod create", "eval --kube"])
@pytest.mark.parametrize("level, api_lines, states, steps", [
    (None, False, False, False), ("0", False, False, False), ("2", False, False, False),
    ("3", True, True, False), ("4", True, True, True)])
def test_kube_levels(api, tmp_path, command, level, api_lines, states, steps):
    r = kube(api, tmp_path, command, *(["--verbosity", level] if level else []))
    assert r.returncode == 1 and "ErrImagePull" in r.err, krmtest.explain(r)
    requests = log_lines(r.err, "kube_http.c")
    created = [l for l in requests if re.search(r"\] API POST /api/v1/namespaces/porch-fn-system/pods "
                                                r"-> 201 in [\d.]+ ms$", l)]
    assert bool(created) == api_lines and bool(requests) == api_lines, r.err
    moves = [l for l in log_lines(r.err, "kube_pod_life.c") if "--created--> waiting-ready" in l]
    assert bool(moves) == states, r.err
    watch = [l for l in log_lines(r.err, "state_step.c") if "watch pods: LISTING -> STREAMING" in l]
    assert bool(watch) == steps, r.err
    # the error itself is said at every level, 0 included, beside the log
    said = [l for l in r.err.splitlines() if not re.match(r"^[IWE]\d{4} ", l) and "will not serve" in l]
    assert said, r.err


@pytest.mark.parametrize("command", ["pod create", "eval --kube"])
def test_kube_bad_verbosity_is_a_usage_error_before_any_request(api, tmp_path, command):
    r = kube(api, tmp_path, command, "--log-level", "loud")
    assert r.returncode == 2 and r.out == "", krmtest.explain(r)
    name = "pod create" if command == "pod create" else "eval"
    assert r.err == f'runner-client {name}: invalid value "loud" for --log-level: want a whole number 0-10\n', \
        r.err
    assert api.seen == []
