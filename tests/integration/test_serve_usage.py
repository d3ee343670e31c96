"""`runner-client serve` checks every flag before it does anything else:
a bad value is the one line it prints, exit 2, before any FunctionConfig
is read, the sandbox detected or a cluster looked for (the usage error used
to follow their log lines, or a server started on a flag it never checked)."""

import os

import pytest

from krmtest import CLIENT_BIN, ROOT, run_cli

FUNCTIONS = os.path.join(ROOT, "examples", "functions")
# what serve would otherwise read and log first: no --function-config (a
# warning), the functions' directory, and a cluster for the pod runtime
BEFORE = ["--port", "0", "--functions", FUNCTIONS]


@pytest.mark.parametrize("args, message", [
    (["--sandbox", "bogus"], 'invalid value "bogus" for --sandbox: want auto, strict or off'),
    (["--disable-runtimes=pod", "--sandbox", "bogus"],
     'invalid value "bogus" for --sandbox: want auto, strict or off'),
    # the exec runtime off: its sandbox flags are still flags, never taken silently
    (["--disable-runtimes=exec,pod", "--sandbox", "bogus"],
     'invalid value "bogus" for --sandbox: want auto, strict or off'),
    (["--disable-runtimes=pod", "--sandbox-memory", "0"],
     'invalid value "0" for --sandbox-memory: want a whole number 1-1073741824'),
    (["--disable-runtimes=pod", "--sandbox-read", "relative/dir"],
     "--sandbox-read: not an absolute path: relative/dir"),
    (["--disable-runtimes=exec,pod", "--sandbox-write", "/tmp," * 33],
     "--sandbox-write: more than 32 paths"),
    # the pod runtime's replica name, checked before the cluster is looked for
    (["--disable-runtimes=exec", "--replica-name", "Bad_Name"],
     'invalid replica name "Bad_Name": want a DNS-1123 subdomain'),
    # what the pod runtime requires, missing, before the sandbox is probed
    ([], "environment variable WRAPPER_SERVER_IMAGE must be set to use pod function evaluator "
         "runtime"),
])
def test_a_bad_flag_is_the_only_output(binaries, args, message):
    env = dict(os.environ, KUBECONFIG="/nonexistent", HOME="/nonexistent")
    env.pop("WRAPPER_SERVER_IMAGE", None)
    res = run_cli([CLIENT_BIN, "serve", *BEFORE, *args], env=env)
    out, err = res.stdout.decode(), res.stderr.decode()
    assert res.returncode == 2, f"exit {res.returncode}\n{err}"
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("runner-client serve: " + message), err
