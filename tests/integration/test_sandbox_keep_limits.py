"""The spawner's open files limit and the kept sandboxes' hosts
(sandbox_hosts_make_room): each host holds about a dozen descriptors in the
spawner, so the usual soft limit of 1024 would hold fewer hosts than the
bound allows (--prespawn-total plus --max-concurrent-functions, twice the
CPUs by default) on a machine with many CPUs. The spawner raises its soft
limit toward the hard one, and says when the hard one holds fewer."""
import re

from krmtest import CLIENT_BIN, simple_rl

from test_sandbox_keep import SEES, config
from test_sandbox_spawner import the_spawner


def soft_open_files(pid):
    for line in open(f"/proc/{pid}/limits"):
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError(f"no open files limit for {pid}")


def serve_limited(start_server, tmp_path, nofile):
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "fn").write_text(SEES.format(extra=""))
    (functions / "fn").chmod(0o755)
    return start_server([], binary=CLIENT_BIN, wrapper=["prlimit", f"--nofile={nofile}", "--"], argv=[
        "serve", "--port", "{port}", "--function-config", str(config(tmp_path, ["fn"])),
        "--functions", str(functions), "--disable-runtimes=pod", "--sandbox", "auto",
        "--prespawn-total", "40", "--max-concurrent-functions", "8", "--prespawn", "0"])


def test_the_spawner_raises_its_soft_limit_to_hold_every_host(start_server, tmp_path):
    srv = serve_limited(start_server, tmp_path, "128:4096")
    spawner = the_spawner(srv)
    # 48 hosts allowed: room for each, beyond the spawner's own
    assert 48 * 12 < soft_open_files(spawner) <= 4096
    assert soft_open_files(srv.pid) == 128   # serve's own is as it was
    assert srv.evaluate(simple_rl("x"), image="fn:v1").resource_list == simple_rl("x")
    assert "holds about" not in srv.stderr()


def test_a_hard_limit_that_holds_fewer_hosts_is_said(start_server, tmp_path):
    srv = serve_limited(start_server, tmp_path, "128:200")
    spawner = the_spawner(srv)
    assert soft_open_files(spawner) == 200
    assert srv.evaluate(simple_rl("x"), image="fn:v1").resource_list == simple_rl("x")
    err = srv.stderr()
    assert re.search(r"an open files limit of 200 \(hard\) holds about 1[01] kept sandboxes of "
                     r"the 48 allowed; calls past them get a fresh sandbox", err), err
