"""The static musl build (make static): fully static binaries, within the
size budget, that run in an empty root holding nothing but themselves and a
static function."""

import os
import shutil
import subprocess

import pytest

from krmtest import ROOT, run_cli, simple_rl

STATIC = os.path.join(ROOT, "build", "static")
SERVER = os.path.join(STATIC, "wrapper-server")

pytestmark = pytest.mark.skipif(not os.path.exists(SERVER),
                                reason="build/static/ is absent: run `make static` first")

CAT_C = r"""
#include <unistd.h>
int main(void) {
    char b[65536];
    ssize_t n;
    while ((n = read(0, b, sizeof b)) > 0)
        if (write(1, b, (size_t)n) != n)
            return 1;
    return n < 0;
}
"""


@pytest.fixture(scope="module")
def empty_root(tmp_path_factory):
    """A directory holding only /wrapper-server and /fn (a static cat)."""
    work = tmp_path_factory.mktemp("static")
    src = work / "cat.c"
    src.write_text(CAT_C)
    root = work / "root"
    root.mkdir()
    subprocess.run(["musl-gcc", "-static", "-Os", "-o", str(root / "fn"), str(src)], check=True)
    shutil.copy2(SERVER, root / "wrapper-server")
    return str(root)


@pytest.mark.parametrize("name", sorted(os.listdir(STATIC)) if os.path.isdir(STATIC) else [])
def test_statically_linked(name):
    out = subprocess.run(["file", os.path.join(STATIC, name)], capture_output=True, text=True, check=True)
    assert "statically linked" in out.stdout, out.stdout


def test_sizes_within_budget():
    sizes = {n: os.path.getsize(os.path.join(STATIC, n)) for n in os.listdir(STATIC)}
    assert sizes["wrapper-server"] <= 512 * 1024, sizes
    assert sizes["wrapper-server"] + sizes["copier"] <= 1024 * 1024, sizes   # the init image's
    # libcurl and OpenSSL are most of it (docs/images.md)
    assert sizes["runner-client"] <= 4 * 1024 * 1024, sizes


def test_runs_and_serves_in_an_empty_root(empty_root, start_server):
    assert sorted(os.listdir(empty_root)) == ["fn", "wrapper-server"]
    srv = start_server(["/fn"], wrapper=["chroot", empty_root], binary="/wrapper-server")
    rl = simple_rl()
    assert srv.evaluate(rl, image="static-cat").resource_list == rl
    # the built-in probe, in the same empty root: no /etc/hosts, localhost still works
    res = run_cli(["chroot", empty_root, "/wrapper-server", "probe", "-addr", f"localhost:{srv.port}"])
    assert res.returncode == 0, res.stderr
    assert res.stderr == b"status: SERVING\n"


def test_version_in_an_empty_root(empty_root):
    res = run_cli(["chroot", empty_root, "/wrapper-server", "--version"])
    assert res.returncode == 0 and res.stdout.startswith(b"wrapper-server ")
