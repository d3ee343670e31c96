"""Fixtures for the wrapper-server / runner-client integration tests.

Run with:  BUILD=build /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration
"""

import importlib
import os
import subprocess
import sys
import types

import pytest

import krmtest
from krmtest import SERVER_BIN, CLIENT_BIN, ROOT, Server, free_port


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "serial: asserts a wall-clock latency that another test's load on the same cores would "
        "make noisy; `make integration` runs these alone, after the parallel pass")


@pytest.fixture(scope="session")
def pb(tmp_path_factory):
    """Python modules generated from proto/evaluator.proto and proto/health.proto."""
    out = tmp_path_factory.mktemp("pb")
    subprocess.run(
        ["protoc", "--proto_path=proto", f"--python_out={out}", "proto/evaluator.proto", "proto/health.proto"],
        cwd=ROOT, check=True,
    )
    sys.path.insert(0, str(out))
    try:
        evaluator = importlib.import_module("evaluator_pb2")
        health = importlib.import_module("health_pb2")
    finally:
        sys.path.remove(str(out))
    return types.SimpleNamespace(evaluator=evaluator, health=health)


@pytest.fixture(scope="session")
def policy(tmp_path_factory):
    """A skopeo signature policy of our own, so the host's /etc/containers does not matter."""
    path = tmp_path_factory.mktemp("policy") / "policy.json"
    path.write_text('{"default":[{"type":"insecureAcceptAnything"}]}')
    return str(path)


@pytest.fixture(scope="session")
def binaries():
    missing = [b for b in (SERVER_BIN, CLIENT_BIN) if not os.access(b, os.X_OK)]
    if missing:
        pytest.fail(f"binaries not built: {missing} (BUILD={krmtest.BUILD})", pytrace=False)
    return types.SimpleNamespace(server=SERVER_BIN, client=CLIENT_BIN)


# serve sandboxes its exec functions (--sandbox auto): the fixtures' functions
# run scripts of tests/fixtures and write their records in the tests'
# temporary directories, which an operator would grant them so. The grant is
# this session's own directory (a parallel worker's: popen-gwN), not all of
# pytest's: the sandbox cannot bind a directory with a mount beneath it
# (EINVAL), and another session's test may have one there for a while
# (test_sandbox's mount attempts).
def sandbox_for_fixtures(session_tmp):
    return [f"--sandbox-read={krmtest.FIXTURES}", f"--sandbox-write={session_tmp}"]


class Launcher:
    """Starts wrapper-servers and, at teardown, stops each with SIGTERM and
    checks it exited 0 (sanitizer reports in the ASan build make it non-zero)."""

    def __init__(self, pb, tmpdir, session_tmp):
        self.pb = pb
        self.tmpdir = tmpdir
        self.session_tmp = session_tmp
        self.servers = []

    def start(self, entrypoint, options=(), env=None, wrapper=None, ready=True, argv=None, cwd=None,
              binary=None):
        """entrypoint: argv after "--" (may be empty).
        options: extra server flags placed before "--".
        wrapper: argv prefix (e.g. unshare ...).
        argv: full server argv after the binary, "{port}" replaced by the port
        (overrides the --port/options/entrypoint layout).
        binary: the server binary (default: $BUILD/bin/wrapper-server)."""
        port = free_port()
        # KRM_TEST_PRESPAWN=N runs every wrapper-server and runner-client
        # serve test with --prespawn N (unless the test sets it), e.g. 0 to
        # check that everything behaves as before without pre-started
        # functions.
        prespawn = os.environ.get("KRM_TEST_PRESPAWN")
        if argv is not None:
            args = [a.replace("{port}", str(port)) for a in argv]
            if prespawn and args[:1] == ["serve"] and "--prespawn" not in args:
                args = ["serve", "--prespawn", prespawn, *args[1:]]
            if args[:1] == ["serve"] and not any(a.startswith("--sandbox") for a in args):
                args = ["serve", *sandbox_for_fixtures(self.session_tmp), *args[1:]]
        else:
            if prespawn and binary is None and "--prespawn" not in options:
                options = ["--prespawn", prespawn, *options]
            args = ["--port", str(port), *options, "--", *entrypoint]
        full = list(wrapper or []) + [binary or SERVER_BIN] + args
        n = len(self.servers)
        srv = Server(
            self.pb, full, port,
            stderr_path=os.path.join(self.tmpdir, f"server{n}.stderr"),
            stdout_path=os.path.join(self.tmpdir, f"server{n}.stdout"),
            env=env, cwd=cwd,
        )
        self.servers.append(srv)
        if ready:
            srv.wait_ready()
        return srv

    def close(self):
        problems = []
        for srv in self.servers:
            if srv.proc.poll() is None:
                rc = srv.stop(timeout=10)
            else:
                rc = srv.proc.returncode
                srv.stop(timeout=0)
            if rc != 0:
                problems.append(f"exit code {rc} (None = did not exit within 10 s after SIGTERM); {srv.describe()}")
            elif krmtest.sanitizer_reports(srv.stderr()):
                problems.append(f"sanitizer report; {srv.describe()}")
        self.servers.clear()
        assert not problems, "\n\n".join(problems)


@pytest.fixture
def start_server(pb, binaries, tmp_path, tmp_path_factory):
    """Factory: start_server(entrypoint, options=(), env=None, wrapper=None, ready=True, argv=None, cwd=None)."""
    launcher = Launcher(pb, str(tmp_path), str(tmp_path_factory.getbasetemp()))
    yield launcher.start
    launcher.close()


@pytest.fixture(scope="module")
def module_launcher(pb, binaries, tmp_path_factory):
    launcher = Launcher(pb, str(tmp_path_factory.mktemp("servers")),
                        str(tmp_path_factory.getbasetemp()))
    yield launcher
    launcher.close()


@pytest.fixture(scope="module")
def cat_server(module_launcher):
    """A server whose function is `cat` (found through PATH)."""
    return module_launcher.start(["cat"])
