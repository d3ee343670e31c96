"""runner-client against hostile packages and files: nothing outside the
package is read, and no file hangs it or eats its memory.

A package comes from someone else: its Kptfile's configPath may climb out
(`../x`), be absolute, or pass through a link; a file in it may be a link to
one of the user's files, a FIFO (a read waits forever) or a link to
/dev/zero (a read never ends); a file may be huge. Every case here runs the
real runner-client on real files; the cases that must end do so within a
timeout (the old client hung on each FIFO), with the message named, and the
memory cases check the process's peak RSS (GNU time)."""

import os
import resource
import subprocess
import time

import pytest
import yaml

from krmtest import CLIENT_BIN, DEFAULT_MAX, SERVER_WRAPPER, PeakUsage, explain, runner_client as client, wrapped

NO_SERVER = "localhost:1"   # never dialled: every refusal comes before a call
QUICK = 10                  # seconds a refusal may take, far above what it needs

FIFO_WHY = ("is a FIFO (named pipe), not a regular file: only regular files are read "
            "(a read could wait forever or never end)")
SECRET = "apiVersion: v1\nkind: Secret\nmetadata: {name: users-secret}\ndata: {token: aHVudGVyMg==}\n"
CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fn-config}\ndata: {a: b}\n"


def kptfile(config_path):
    return ("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\npipeline:\n"
            f"  mutators:\n  - image: example.com/fn:v1\n    configPath: {config_path}\n")


@pytest.fixture
def layout(tmp_path):
    """tmp/outside/secret.yaml (the user's file) and tmp/pkg, a package
    with one resource."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text(SECRET)
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
    return package, outside


def eval_pipeline(package, timeout=QUICK):
    return client("eval", "--addr", NO_SERVER, "--pipeline", str(package), str(package),
                  timeout=timeout)


def refused(res, text):
    assert res.returncode == 2, explain(res)
    assert text in res.err, explain(res)


# ------------------------------------------------------------- configPath

@pytest.mark.parametrize("config_path, reason", [
    ("../outside/secret.yaml", "path must not be outside the package"),
    ("sub/../../outside/secret.yaml", "path must not be outside the package"),
    ("..", "path must not be outside the package"),
    ("ABS", "path must be relative"),
])
def test_config_path_out_of_the_package_is_refused_in_kpts_words(layout, config_path, reason):
    package, outside = layout
    if config_path == "ABS":
        config_path = str(outside / "secret.yaml")
    (package / "Kptfile").write_text(kptfile(config_path))
    res = eval_pipeline(package)
    refused(res, f'{package}/Kptfile: pipeline.mutators[0]: configPath "{config_path}": {reason}')


def test_config_path_through_a_linked_directory_is_refused(layout):
    package, outside = layout
    os.symlink(outside, package / "configs")
    (package / "Kptfile").write_text(kptfile("configs/secret.yaml"))
    res = eval_pipeline(package)
    refused(res, f"configPath {package}/configs/secret.yaml: is or passes through a symbolic "
                 "link, not followed inside a package")
    assert "users-secret" not in res.err


@pytest.mark.parametrize("target", ["outside", "inside"])
def test_config_path_that_is_a_link_is_refused(layout, target):
    """A link to the user's file, and even one to a file of the package:
    no link is followed on configPath's way (kpt would follow both)."""
    package, outside = layout
    (package / "real.yaml").write_text(CONFIG)
    os.symlink(outside / "secret.yaml" if target == "outside" else "real.yaml",
               package / "fn-config.yaml")
    (package / "Kptfile").write_text(kptfile("fn-config.yaml"))
    res = eval_pipeline(package)
    refused(res, f"configPath {package}/fn-config.yaml: is or passes through a symbolic link")


def test_a_config_path_inside_the_package_still_works(layout, cat_server):
    package, _ = layout
    (package / "fns").mkdir()
    (package / "fns" / "config.yaml").write_text(CONFIG)
    (package / "Kptfile").write_text(kptfile("./fns/x/../config.yaml"))
    res = client("eval", "--addr", f"localhost:{cat_server.port}", "--pipeline", str(package),
                 "-o", "stdout", str(package))
    assert res.returncode == 0, explain(res)


# ------------------------------------------------------------- links in a package

def test_a_linked_file_in_the_package_never_reaches_the_function(layout, cat_server):
    """x.yaml -> the user's secret: skipped with a warning (kpt ignores links
    inside a package), so the function (cat) never sees the secret."""
    package, outside = layout
    os.symlink(outside / "secret.yaml", package / "x.yaml")
    os.symlink(outside, package / "more")
    res = client("eval", "--addr", f"localhost:{cat_server.port}", "-o", "stdout", str(package))
    assert res.returncode == 0, explain(res)
    assert "users-secret" not in res.out and "aHVudGVyMg" not in res.out, res.out
    names = [i["metadata"]["name"] for i in yaml.safe_load(res.out)["items"]]
    assert names == ["cm"]
    assert f"warning: {package}/x.yaml: skipped: a symbolic link (links inside a package are " \
           "not followed, as kpt ignores them)" in res.err, explain(res)
    assert f"warning: {package}/more: skipped: a symbolic link to a directory" in res.err


# ------------------------------------------------------------- FIFOs

def test_a_fifo_in_the_package_is_refused_at_once(layout):
    package, _ = layout
    (package / "sub").mkdir()
    os.mkfifo(package / "sub" / "deploy.yaml")
    t0 = time.monotonic()
    res = client("eval", "--addr", NO_SERVER, str(package), timeout=QUICK)
    refused(res, f"{package}/sub/deploy.yaml: {FIFO_WHY}")
    assert time.monotonic() - t0 < QUICK


def test_a_fifo_kptfile_is_refused_as_package_file_and_as_pipeline(layout):
    package, _ = layout
    os.mkfifo(package / "Kptfile")
    res = client("eval", "--addr", NO_SERVER, str(package), timeout=QUICK)
    refused(res, f"{package}/Kptfile: {FIFO_WHY}")
    res = eval_pipeline(package)
    refused(res, f"--pipeline {package}/Kptfile: {FIFO_WHY}")


def test_a_fifo_config_path_is_refused(layout):
    package, _ = layout
    os.mkfifo(package / "fn-config.yaml")
    (package / "Kptfile").write_text(kptfile("fn-config.yaml"))
    res = eval_pipeline(package)
    refused(res, f"configPath {package}/fn-config.yaml: {FIFO_WHY}")


def test_a_fifo_function_config_stops_serve_at_start(tmp_path):
    """serve --function-config (the FunctionConfig file, reloaded on
    SIGHUP) given a FIFO ends with the reason instead of waiting."""
    fifo = tmp_path / "functions.yaml"
    os.mkfifo(fifo)
    res = client("serve", "--port", "0", "--disable-runtimes=pod", "--function-config", str(fifo),
                 timeout=QUICK)
    assert res.returncode != 0, explain(res)
    assert f"{fifo}: {FIFO_WHY}" in res.err, explain(res)


def test_fifo_kubeconfig_token_file_and_docker_config_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    res = client("pod", "list", "--kubeconfig", str(fifo), timeout=QUICK)
    assert res.returncode != 0 and f"{fifo}: {FIFO_WHY}" in res.err, explain(res)

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"tokenFile": str(fifo)}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}))
    res = client("pod", "list", "--kubeconfig", str(kubeconfig), timeout=QUICK)
    assert res.returncode != 0 and f"{fifo}: {FIFO_WHY}" in res.err, explain(res)

    res = client("image", "--docker-config", str(fifo), "127.0.0.1:1/fn:v1", timeout=QUICK)
    assert res.returncode != 0, explain(res)
    assert f"cannot read Docker config {fifo}: {FIFO_WHY}" in res.err, explain(res)


# ------------------------------------------------------------- endless and huge files

def uses_asan():
    with open(CLIENT_BIN, "rb") as f:
        return b"libasan" in f.read()


ASAN = uses_asan()


def run_measured(args, tmp_path, stdin=subprocess.DEVNULL, timeout=QUICK):
    """runner-client run to completion under a 2 GiB address-space limit
    (without ASan, which needs more): (exit status, stderr, peak RSS in MiB).
    The limit only keeps an unbounded read from taking the machine down."""
    def limit():
        os.setpgrp()   # time and its child in one group, for the kill below
        if not ASAN and not SERVER_WRAPPER:
            resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        usage = PeakUsage(tmp_path / "usage")
        p = subprocess.Popen(usage.argv(wrapped([CLIENT_BIN, *args])), stdin=stdin, stdout=out,
                             stderr=err, preexec_fn=limit)
    deadline = time.monotonic() + timeout
    while True:
        if p.poll() is not None:
            break
        if time.monotonic() > deadline:
            os.killpg(p.pid, 9)
            p.wait()
            pytest.fail(f"{args} still running after {timeout}s")
        time.sleep(0.02)
    _, rss = usage.read()
    return p.returncode, (tmp_path / "err").read_text(), rss


# Peak RSS allowed: the 6 MiB input, its copy as a ResourceList, the
# program; ASan's shadow and quarantine add more. Under KRM_SERVER_WRAPPER
# (valgrind) the figure is the wrapper's: not checked.
RSS_MIB = 160 if ASAN else 64


def assert_rss(rss):
    assert SERVER_WRAPPER or rss < RSS_MIB, f"peak RSS {rss:.0f} MiB, over {RSS_MIB} MiB"


def test_a_link_to_dev_zero_in_the_package_is_skipped(layout, tmp_path):
    package, _ = layout
    os.symlink("/dev/zero", package / "zero.yaml")
    os.mkfifo(package / "zz-stop.yml")   # stops the run before any call
    rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, str(package)], tmp_path)
    assert f"warning: {package}/zero.yaml: skipped: a symbolic link" in err, err
    assert rc == 2 and f"{package}/zz-stop.yml: {FIFO_WHY}" in err, err
    assert_rss(rss)


def test_dev_zero_as_input_file_config_path_and_stdin_is_bounded(layout, tmp_path):
    package, _ = layout
    rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, "/dev/zero"], tmp_path)
    assert rc == 2 and "/dev/zero: is a character device, not a regular file" in err, err
    assert_rss(rss)

    os.symlink("/dev/zero", package / "zero.yaml")
    (package / "Kptfile").write_text(kptfile("zero.yaml"))
    rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, "--pipeline", str(package),
                                 str(package)], tmp_path)
    assert rc == 2 and "zero.yaml: is or passes through a symbolic link" in err, err

    # stdin is the user's pipe: read, but no further than a request may carry
    with open("/dev/zero", "rb") as zero:
        rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, "-"], tmp_path, stdin=zero)
    assert rc == 2, err
    assert f"stdin: is larger than {DEFAULT_MAX} bytes: more than a request may carry " \
           "(--max-message)" in err, err
    assert_rss(rss)


def test_a_huge_file_is_refused_naming_the_limit_without_reading_it(layout, tmp_path):
    """A sparse 320 MiB file (cheap to make): refused by its size, in the
    package, as the file given, and as a configPath; --max-message raises
    the limit."""
    package, _ = layout
    huge = package / "huge.yaml"
    with open(huge, "wb") as f:
        f.truncate(320 << 20)
    rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, str(package)], tmp_path)
    assert rc == 2, err
    assert f"{huge}: is larger than {DEFAULT_MAX} bytes (it has {320 << 20}): more than a " \
           "request may carry (--max-message)" in err, err
    assert_rss(rss)

    rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, str(huge)], tmp_path)
    assert rc == 2 and f"is larger than {DEFAULT_MAX} bytes" in err, err
    assert_rss(rss)

    (package / "Kptfile").write_text(kptfile("huge.yaml"))
    rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, "--pipeline", str(package), "-"],
                                tmp_path)
    assert rc == 2 and f"configPath {huge}: is larger than {DEFAULT_MAX} bytes" in err, err
    assert_rss(rss)

    res = client("eval", "--addr", NO_SERVER, "--max-message", "20", str(package / "cm.yaml"))
    refused(res, f"{package}/cm.yaml: is larger than 20 bytes")


def test_many_files_together_over_the_limit_are_refused(layout, tmp_path):
    """Each file under the limit, all of them over it: refused after the
    limit, not after reading them all."""
    package, _ = layout
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: '" + "y" * (1 << 20) + "'}\n"
    for i in range(12):
        (package / f"f{i:02}.yaml").write_text(doc)
    rc, err, rss = run_measured(["eval", "--addr", NO_SERVER, str(package)], tmp_path)
    assert rc == 2, err
    assert f"{package}: its files are larger than {DEFAULT_MAX} bytes together" in err, err
