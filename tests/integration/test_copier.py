"""copier: the init-container tool that copies the wrapper server into the
shared emptyDir volume (`copier [--verify] SRC... DESTDIR`), and its `cp`
form (argv[0] "cp"), a drop-in for Porch's `cp -a SRC/. DESTDIR`.

Everything here runs the real binary on real files: tmpfs mounts for a full
and a read-only destination, setpriv for unprivileged uids, SIGKILL in the
middle of a copy, and GNU cp (/bin/cp) as the reference for `cp -a`.
Most tests need root (mount, setpriv, chown)."""

import fcntl
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import types

import pytest

import krmtest
from krmtest import run_cli

COPIER_BIN = os.path.join(krmtest.BUILD_DIR, "bin", "copier")
GNU_CP = "/bin/cp"
TMP_PREFIX = ".copier-tmp-"
NOBODY = 65534
PORCH_UID = 10001

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount, setpriv, chown)")


# ------------------------------------------------------------------ helpers

@pytest.fixture(scope="module")
def copier():
    if not os.access(COPIER_BIN, os.X_OK):
        pytest.fail(f"copier not built: {COPIER_BIN} (BUILD={krmtest.BUILD})", pytrace=False)
    return COPIER_BIN


@pytest.fixture
def base():
    """A scratch directory every uid can traverse (pytest's tmp_path is 0700,
    which an unprivileged copier could not enter). Mounts made below it are
    unmounted at teardown."""
    path = tempfile.mkdtemp(prefix="copier-test-")
    os.chmod(path, 0o755)
    mounts = []
    yield types.SimpleNamespace(path=path, mounts=mounts)
    for m in reversed(mounts):
        subprocess.run(["umount", "-l", m], check=False)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cp_bin(copier, base):
    """The copier under the name `cp` (a symlink, as in the image's /bin/cp)."""
    bindir = os.path.join(base.path, "bin")
    os.mkdir(bindir)
    os.chmod(bindir, 0o755)
    link = os.path.join(bindir, "cp")
    os.symlink(copier, link)
    return link


def mount_tmpfs(base, name, size="1m"):
    path = os.path.join(base.path, name)
    os.mkdir(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", path], check=True)
    base.mounts.append(path)
    return path


def remount_ro(path):
    subprocess.run(["mount", "-o", "remount,ro", path], check=True)


def as_user(uid):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


def run(args, user=None, timeout=60, cwd=None):
    res = run_cli((as_user(user) if user is not None else []) + list(args), timeout=timeout, cwd=cwd)
    res.out = res.stdout.decode("utf-8", "replace")
    res.err = res.stderr.decode("utf-8", "replace")
    return res


def assert_rc(res, rc):
    assert res.returncode == rc, f"exit {res.returncode}, wanted {rc}\nstdout: {res.out[:2000]}\nstderr: {res.err[:3000]}"


def write(path, data, mode=None):
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)
    return path


def temps(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith(TMP_PREFIX))


def big_data(mb):
    """mb MiB without holes or repeats at block granularity."""
    chunk = os.urandom(1 << 20)
    return b"".join(i.to_bytes(8, "little") + chunk[8:] for i in range(mb))


def snapshot(root, skip=()):
    """Everything `cp -a` should reproduce, per relative path: type, mode,
    owner, mtime, and the bytes of files or the target of symlinks."""
    out = {}

    def walk(rel):
        path = os.path.join(root, rel) if rel else root
        st = os.lstat(path)
        e = {"type": stat.S_IFMT(st.st_mode), "uid": st.st_uid, "gid": st.st_gid,
             "mtime": st.st_mtime_ns}
        if stat.S_ISLNK(st.st_mode):
            e["link"] = os.readlink(path)
        else:
            e["mode"] = oct(stat.S_IMODE(st.st_mode))
        if stat.S_ISREG(st.st_mode):
            e["data"] = krmtest.read(path)
        key = rel or "."
        for k in skip:
            if k[0] == key:
                e.pop(k[1], None)
        out[key] = e
        if stat.S_ISDIR(st.st_mode):
            for name in sorted(os.listdir(path)):
                walk(os.path.join(rel, name))

    walk("")
    return out


def assert_same_tree(got, want):
    assert sorted(got) == sorted(want), f"entries differ:\n ours {sorted(got)}\n want {sorted(want)}"
    diffs = [f"{k!r}: ours {got[k]!r:.300} want {want[k]!r:.300}" for k in sorted(got) if got[k] != want[k]]
    assert not diffs, "\n".join(diffs)


def make_tree(root, private_uid=0):
    """Nested dirs, dotfiles, symlinks (relative, absolute, dangling), a FIFO,
    modes 0555/0644/0700/04755 and odd names, with fixed distinct mtimes.
    Entries of mode 0700 belong to private_uid so that uid can read them."""
    os.makedirs(os.path.join(root, "a", "b"))
    os.mkdir(os.path.join(root, ".hidden-dir"))
    os.mkdir(os.path.join(root, "private"))
    files = {
        "wrapper-server": (b"\x7fELF" + os.urandom(70000), 0o555),
        "plain.yaml": (b"kind: ConfigMap\n", 0o644),
        ".dotfile": (b"dot\n", 0o644),
        "secret": (b"only the owner\n", 0o700),
        "setuid": (b"#!/bin/true\n", 0o4755),
        "with space": (b"space\n", 0o644),
        "new\nline": (b"newline\n", 0o644),
        "empty": (b"", 0o644),
        "a/inner.txt": (b"inner\n", 0o444),
        "a/b/deep": (os.urandom(300000), 0o555),
        ".hidden-dir/.x": (b"x", 0o600),
        "private/p": (b"p", 0o600),
    }
    for i, (rel, (data, mode)) in enumerate(sorted(files.items())):
        p = write(os.path.join(root, rel), data, mode)
        if mode & 0o077 == 0:
            os.chown(p, private_uid, private_uid)
        os.utime(p, ns=(1_600_000_000_000_000_000 + i * 1_000_000_007, 1_500_000_000_123_456_789 + i * 1_000_000_007))
    links = {"rel-link": "wrapper-server", "abs-link": "/etc/hostname", "dangling": "no/such/file",
             "a/up": "../plain.yaml", ".dotlink": ".dotfile", "dirlink": "a"}
    for i, (rel, target) in enumerate(sorted(links.items())):
        p = os.path.join(root, rel)
        os.symlink(target, p)
        os.utime(p, ns=(1_400_000_000_000_000_000, 1_400_000_000_000_000_000 + i * 7), follow_symlinks=False)
    os.mkfifo(os.path.join(root, "fifo"), 0o640)
    dirs = {"a/b": 0o555, "a": 0o755, ".hidden-dir": 0o700, "private": 0o700, "": 0o755}
    for i, (rel, mode) in enumerate(dirs.items()):   # deepest first: mtimes stick
        p = os.path.join(root, rel) if rel else root
        if mode & 0o077 == 0:
            os.chown(p, private_uid, private_uid)
        os.chmod(p, mode)
        os.utime(p, ns=(1_300_000_000_000_000_000, 1_300_000_000_000_000_000 + i * 11))
    return root


# ------------------------------------------------------------------ copier form

def test_copies_with_mode_0555_and_probe_symlink(copier, base):
    src = os.path.join(base.path, "src")
    dest = os.path.join(base.path, "dest")
    os.mkdir(src)
    os.mkdir(dest)
    server = write(os.path.join(src, "wrapper-server"), os.urandom(300000), 0o644)
    other = write(os.path.join(src, "other-tool"), b"tool\n", 0o600)
    res = run([copier, server, other, dest])
    assert_rc(res, 0)
    assert res.err == "" and res.out == ""
    assert sorted(os.listdir(dest)) == ["grpc-health-probe", "other-tool", "wrapper-server"]
    for name, source in (("wrapper-server", server), ("other-tool", other)):
        st = os.lstat(os.path.join(dest, name))
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o555, name
        assert krmtest.read(os.path.join(dest, name)) == krmtest.read(source)
    probe = os.path.join(dest, "grpc-health-probe")
    assert os.path.islink(probe) and os.readlink(probe) == "wrapper-server"


def test_probe_symlink_only_for_wrapper_server(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    tool = write(os.path.join(base.path, "tool"), b"t", 0o755)
    assert_rc(run([copier, tool, dest]), 0)
    assert os.listdir(dest) == ["tool"]


def test_explicit_probe_source_wins_over_symlink(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    server = write(os.path.join(base.path, "wrapper-server"), b"server", 0o755)
    probe = write(os.path.join(base.path, "grpc-health-probe"), b"probe", 0o755)
    assert_rc(run([copier, "--verify", server, probe, dest]), 0)
    p = os.path.join(dest, "grpc-health-probe")
    assert not os.path.islink(p) and krmtest.read(p) == b"probe"


def test_second_run_rewrites_nothing(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    server = write(os.path.join(base.path, "wrapper-server"), os.urandom(200000), 0o755)
    assert_rc(run([copier, server, dest]), 0)
    names = ("wrapper-server", "grpc-health-probe")
    before = {n: os.lstat(os.path.join(dest, n)) for n in names}
    time.sleep(0.05)
    res = run([copier, "--verify", server, dest])
    assert_rc(res, 0)
    assert res.err == ""
    for n in names:
        st = os.lstat(os.path.join(dest, n))
        b = before[n]
        assert (st.st_ino, st.st_mtime_ns, st.st_ctime_ns) == (b.st_ino, b.st_mtime_ns, b.st_ctime_ns), n
    assert temps(dest) == []


def test_changed_source_or_mode_is_rewritten(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    server = write(os.path.join(base.path, "wrapper-server"), b"v1" * 5000, 0o755)
    assert_rc(run([copier, server, dest]), 0)
    target = os.path.join(dest, "wrapper-server")
    ino = os.stat(target).st_ino
    write(server, b"v2" * 5000)                    # same size, other bytes
    assert_rc(run([copier, "--verify", server, dest]), 0)
    assert krmtest.read(target) == b"v2" * 5000
    assert os.stat(target).st_ino != ino
    os.chmod(target, 0o755)                         # same bytes, wrong mode
    assert_rc(run([copier, server, dest]), 0)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o555
    os.unlink(os.path.join(dest, "grpc-health-probe"))
    os.symlink("elsewhere", os.path.join(dest, "grpc-health-probe"))
    assert_rc(run([copier, server, dest]), 0)
    assert os.readlink(os.path.join(dest, "grpc-health-probe")) == "wrapper-server"


def test_verify_passes_and_is_quiet(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    srcs = [write(os.path.join(base.path, f"f{i}"), os.urandom(1000 * i), 0o644) for i in range(1, 4)]
    res = run([copier, "--verify", *srcs, dest])
    assert_rc(res, 0)
    assert res.err == ""


def test_verify_detects_a_copy_that_differs(copier, base):
    """A source appended to while the copier runs: the copy holds what was
    read, --verify re-reads both and must notice the difference."""
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    src = write(os.path.join(base.path, "growing"), os.urandom(4 << 20), 0o644)
    stop = threading.Event()

    def grow():
        with open(src, "ab", buffering=0) as f:
            while not stop.is_set():
                f.write(b"g" * 4096)
                time.sleep(0.0005)

    seen = None
    for _ in range(20):
        write(src, os.urandom(4 << 20))
        stop.clear()
        t = threading.Thread(target=grow)
        t.start()
        try:
            res = run([copier, "--verify", src, dest])
        finally:
            stop.set()
            t.join()
        if res.returncode != 0:
            seen = res
            break
    assert seen is not None, "verify never saw the source change"
    assert_rc(seen, 1)
    assert "verify:" in seen.err and "differs from" in seen.err and src in seen.err
    assert temps(dest) == []


def test_missing_source_fails_before_writing(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    good = write(os.path.join(base.path, "wrapper-server"), b"ok", 0o755)
    missing = os.path.join(base.path, "missing")
    res = run([copier, good, missing, dest])
    assert_rc(res, 1)
    assert res.err == f"copier: cannot open source '{missing}': No such file or directory\n"
    assert os.listdir(dest) == []


def test_directory_source_fails(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    res = run([copier, base.path, dest])
    assert_rc(res, 1)
    assert f"source '{base.path}': Is a directory" in res.err
    assert os.listdir(dest) == []


def test_destination_not_a_directory_or_missing(copier, base):
    src = write(os.path.join(base.path, "f"), b"f", 0o644)
    res = run([copier, src, src])
    assert_rc(res, 1)
    assert f"destination '{src}': Not a directory" in res.err
    missing = os.path.join(base.path, "nodir")
    res = run([copier, src, missing])
    assert_rc(res, 1)
    assert f"'{missing}': No such file or directory" in res.err
    assert not os.path.exists(missing)


@needs_root
def test_read_only_filesystem(copier, base):
    dest = mount_tmpfs(base, "ro")
    server = write(os.path.join(base.path, "wrapper-server"), os.urandom(10000), 0o755)
    assert_rc(run([copier, server, dest]), 0)      # installed while writable
    remount_ro(dest)
    res = run([copier, "--verify", server, dest])   # identical: nothing to write
    assert_rc(res, 0)
    assert res.err == ""
    write(server, os.urandom(10000))
    res = run([copier, server, dest])
    assert_rc(res, 1)
    assert f"cannot create a temporary file in '{dest}': Read-only file system" in res.err
    assert sorted(os.listdir(dest)) == ["grpc-health-probe", "wrapper-server"]


@needs_root
def test_destination_without_write_permission(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest, 0o755)                           # root's; nobody may not write
    src = write(os.path.join(base.path, "wrapper-server"), b"x", 0o644)
    res = run([copier, src, dest], user=NOBODY)
    assert_rc(res, 1)
    assert f"cannot create a temporary file in '{dest}': Permission denied" in res.err
    assert os.listdir(dest) == []


@needs_root
def test_full_destination_leaves_old_target_and_no_temp(copier, base):
    dest = mount_tmpfs(base, "full", size="64k")
    src = write(os.path.join(base.path, "wrapper-server"), b"old\n", 0o755)
    assert_rc(run([copier, src, dest]), 0)
    write(src, os.urandom(200 * 1024))
    res = run([copier, src, dest])
    assert_rc(res, 1)
    assert f"cannot write '{dest}/wrapper-server': No space left on device" in res.err
    assert krmtest.read(os.path.join(dest, "wrapper-server")) == b"old\n"
    assert temps(dest) == []
    assert sorted(os.listdir(dest)) == ["grpc-health-probe", "wrapper-server"]


def test_usage_errors_exit_2(copier, base):
    src = write(os.path.join(base.path, "f"), b"f")
    for args, text in (([], "missing operands"), ([src], "missing destination directory after"),
                       (["--bogus", src, base.path], "unknown option '--bogus'"),
                       (["-v", src, base.path], "unknown option '-v'")):
        res = run([copier, *args])
        assert_rc(res, 2)
        assert text in res.err and res.err.startswith("copier: ")


def test_help_and_version(copier):
    res = run([copier, "--help"])
    assert_rc(res, 0)
    assert res.out.startswith("Usage: copier [--verify] SRC... DESTDIR")
    res = run([copier, "--version"])
    assert_rc(res, 0)
    assert res.out.startswith("copier ")


def test_double_dash_ends_options(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    write(os.path.join(base.path, "--verify"), b"odd name")
    assert_rc(run([copier, "--", "--verify", dest], cwd=base.path), 0)
    assert krmtest.read(os.path.join(dest, "--verify")) == b"odd name"


def kill_mid_copy(argv, target, expected, delay=0.02):
    """Starts a copy, SIGKILLs it after delay; returns what was at target."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay)
    proc.kill()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the copy finished before the kill: nothing tested"
    if not os.path.lexists(target):
        return None
    data = krmtest.read(target)
    assert data == expected, f"partial target after SIGKILL: {len(data)} of {len(expected)} bytes"
    return data


def test_sigkill_mid_copy_never_leaves_a_partial_target(copier, base):
    src_dir = os.path.join(base.path, "src")
    dest = os.path.join(base.path, "dest")
    os.mkdir(src_dir)
    os.mkdir(dest)
    data = big_data(200)
    src = write(os.path.join(src_dir, "wrapper-server"), data, 0o755)
    target = os.path.join(dest, "wrapper-server")
    kill_mid_copy([copier, src, dest], target, data)
    leftovers = [n for n in os.listdir(dest) if n not in ("wrapper-server", "grpc-health-probe")]
    assert all(n.startswith(TMP_PREFIX) for n in leftovers), leftovers
    res = run([copier, "--verify", src, dest], timeout=120)
    assert_rc(res, 0)
    assert temps(dest) == []
    assert krmtest.read(target) == data


def test_sigkill_while_replacing_keeps_the_old_target(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    src = write(os.path.join(base.path, "wrapper-server"), b"old version\n", 0o755)
    assert_rc(run([copier, src, dest]), 0)
    data = big_data(200)
    write(src, data)
    proc = subprocess.Popen([copier, src, dest], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.02)
    proc.kill()
    proc.wait()
    got = krmtest.read(os.path.join(dest, "wrapper-server"))
    assert got in (b"old version\n", data), f"partial target: {len(got)} bytes"
    assert_rc(run([copier, src, dest], timeout=120), 0)
    assert temps(dest) == []


def test_stale_temporaries_removed_but_not_live_ones(copier, base):
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    stale = write(os.path.join(dest, TMP_PREFIX + "1-0"), b"partial", 0o600)
    os.symlink("wrapper-server", os.path.join(dest, TMP_PREFIX + "1-1"))
    live = write(os.path.join(dest, TMP_PREFIX + "99999-0"), b"being written", 0o600)
    unrelated = write(os.path.join(dest, ".copier-other"), b"keep")
    src = write(os.path.join(base.path, "wrapper-server"), b"x", 0o755)
    with open(live, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)               # a copier still writing it
        assert_rc(run([copier, src, dest]), 0)
    assert not os.path.exists(stale) and not os.path.lexists(os.path.join(dest, TMP_PREFIX + "1-1"))
    assert os.path.exists(live) and os.path.exists(unrelated)
    assert_rc(run([copier, src, dest]), 0)          # now unlocked: stale
    assert temps(dest) == []


# ------------------------------------------------------------------ cp form

def cp_both(cp_bin, base, args, user=None, prepare=None):
    """Runs GNU cp and ours with the same arguments, where the string "{D}"
    in args stands for each one's destination. Returns (gnu, ours) results
    and destination paths."""
    out = {}
    for who, binary in (("gnu", GNU_CP), ("ours", cp_bin)):
        d = os.path.join(base.path, f"dest-{who}")
        if prepare:
            prepare(d)
        res = run([binary, *[a.replace("{D}", d) for a in args]], user=user)
        out[who] = (res, d)
    return out["gnu"], out["ours"]


def fresh_dir(d):
    shutil.rmtree(d, ignore_errors=True)
    os.mkdir(d)


def test_cp_a_contents_matches_gnu_as_root(cp_bin, base):
    src = make_tree(os.path.join(base.path, "src"), private_uid=4242)   # ownership to preserve

    def prepare(d):
        os.mkdir(d)
    (gres, gdest), (ores, odest) = cp_both(cp_bin, base, ["-a", src + "/.", "{D}"], prepare=prepare)
    assert_rc(gres, 0)
    assert_rc(ores, 0)
    assert ores.err == ""
    assert_same_tree(snapshot(odest), snapshot(gdest))
    assert_same_tree(snapshot(odest), snapshot(src))
    assert temps(odest) == []


@needs_root
def test_cp_a_contents_matches_gnu_unprivileged(cp_bin, base):
    """The uid of a Kubernetes init container: the emptyDir root belongs to
    root (0777), files cannot be given to root. GNU cp fails on the
    destination's times (exit 1); ours warns like busybox and exits 0."""
    src = make_tree(os.path.join(base.path, "src"), private_uid=NOBODY)

    def prepare(d):
        os.mkdir(d)
        os.chmod(d, 0o777)
    (gres, gdest), (ores, odest) = cp_both(cp_bin, base, ["-a", src + "/.", "{D}"], user=NOBODY, prepare=prepare)
    assert_rc(ores, 0)
    lines = ores.err.splitlines()
    assert lines, "expected warnings"
    assert all(l.startswith("cp: can't preserve ") and l.endswith(": Operation not permitted") for l in lines), ores.err
    assert f"cp: can't preserve ownership of '{odest}/wrapper-server': Operation not permitted" in lines
    assert f"cp: can't preserve ownership of '{odest}/new\\nline': Operation not permitted" in lines
    assert f"cp: can't preserve times of '{odest}': Operation not permitted" in lines
    assert "preserving times" in gres.err
    skip = [(".", "mtime")]
    assert_same_tree(snapshot(odest, skip), snapshot(gdest, skip))
    top = os.stat(odest)
    assert (top.st_uid, stat.S_IMODE(top.st_mode)) == (0, 0o777)
    assert os.stat(os.path.join(odest, "wrapper-server")).st_uid == NOBODY
    assert stat.S_IMODE(os.stat(os.path.join(odest, "setuid")).st_mode) == 0o755   # setuid dropped, as GNU
    # Rerun over its own result (a restarted init container): still exit 0.
    before = snapshot(odest, skip)
    assert_rc(run([cp_bin, "-a", src + "/.", odest], user=NOBODY), 0)
    assert_same_tree(snapshot(odest, skip), before)
    assert temps(odest) == []


@needs_root
def test_cp_porch_init_container(cp_bin, copier, base):
    """Porch's template: `cp -a /home/nonroot/wrapper-server/. /wrapper-server-tools`
    as uid 10001 with root-owned 0555 files; the copies must run for any uid."""
    image = os.path.join(base.path, "home", "nonroot", "wrapper-server")
    os.makedirs(image)
    shutil.copyfile(copier, os.path.join(image, "wrapper-server"))
    os.chmod(os.path.join(image, "wrapper-server"), 0o555)
    os.symlink("wrapper-server", os.path.join(image, "grpc-health-probe"))
    tools = os.path.join(base.path, "wrapper-server-tools")
    os.mkdir(tools)
    os.chmod(tools, 0o777)
    res = run([cp_bin, "-a", image + "/.", tools], user=PORCH_UID)
    assert_rc(res, 0)
    assert "can't preserve ownership of" in res.err
    ws = os.path.join(tools, "wrapper-server")
    assert stat.S_IMODE(os.stat(ws).st_mode) == 0o555
    assert os.readlink(os.path.join(tools, "grpc-health-probe")) == "wrapper-server"
    assert krmtest.read(ws) == krmtest.read(copier)
    res = run([os.path.join(tools, "grpc-health-probe"), "--version"], user=NOBODY)
    assert_rc(res, 0)
    res = run([cp_bin, "-a", image + "/.", tools], user=PORCH_UID)   # init container restart
    assert_rc(res, 0)


def test_cp_a_dir_into_existing_and_new_destination(cp_bin, base):
    src = make_tree(os.path.join(base.path, "src"))
    (gres, gdest), (ores, odest) = cp_both(cp_bin, base, ["-a", src, "{D}"], prepare=os.mkdir)
    assert_rc(gres, 0)
    assert_rc(ores, 0)
    assert os.listdir(odest) == ["src"]
    assert_same_tree(snapshot(os.path.join(odest, "src")), snapshot(os.path.join(gdest, "src")))
    (gres, gdest), (ores, odest) = cp_both(cp_bin, base, ["-a", src, "{D}/new"])
    assert_rc(gres, 0)
    assert_rc(ores, 0)
    assert_same_tree(snapshot(os.path.join(odest, "new")), snapshot(os.path.join(gdest, "new")))


def test_cp_a_merges_into_existing_tree(cp_bin, base):
    src = make_tree(os.path.join(base.path, "src"))

    def prepare(d):
        os.makedirs(os.path.join(d, "a", "b"))
        write(os.path.join(d, "keep-me"), b"keep")
        write(os.path.join(d, "plain.yaml"), b"to be replaced " * 100, 0o600)
        os.symlink("x", os.path.join(d, "rel-link"))
    (gres, gdest), (ores, odest) = cp_both(cp_bin, base, ["-a", src + "/.", "{D}"], prepare=prepare)
    assert_rc(gres, 0)
    assert_rc(ores, 0)
    skip = [("keep-me", "mtime")]                   # written by prepare, at different times
    assert_same_tree(snapshot(odest, skip), snapshot(gdest, skip))
    assert krmtest.read(os.path.join(odest, "keep-me")) == b"keep"


def test_cp_plain_file(cp_bin, base):
    """Without -p: the source's permission bits minus umask and set-id bits,
    a new mtime; into a directory or to a new name, as GNU cp."""
    src = write(os.path.join(base.path, "tool"), b"#!/bin/true\n", 0o4755)
    os.utime(src, ns=(1, 1_000_000_000))
    for args, name in ((["{D}/copy"], "copy"), (["{D}"], "tool")):
        (gres, gdest), (ores, odest) = cp_both(cp_bin, base, [src, *args], prepare=fresh_dir)
        assert_rc(gres, 0)
        assert_rc(ores, 0)
        g, o = os.stat(os.path.join(gdest, name)), os.stat(os.path.join(odest, name))
        assert stat.S_IMODE(o.st_mode) == stat.S_IMODE(g.st_mode) == 0o755
        assert o.st_mtime_ns != 1_000_000_000
        assert krmtest.read(os.path.join(odest, name)) == krmtest.read(src)


def test_cp_follows_symlinks_without_r(cp_bin, base):
    target = write(os.path.join(base.path, "real"), b"real", 0o644)
    link = os.path.join(base.path, "link")
    os.symlink(target, link)
    dest = os.path.join(base.path, "out")
    assert_rc(run([cp_bin, link, dest]), 0)
    assert not os.path.islink(dest) and krmtest.read(dest) == b"real"
    dest2 = os.path.join(base.path, "out2")
    assert_rc(run([cp_bin, "-P", link, dest2]), 0)
    assert os.readlink(dest2) == target


def test_cp_directory_without_r_fails(cp_bin, base):
    d = os.path.join(base.path, "d")
    os.mkdir(d)
    res = run([cp_bin, d, os.path.join(base.path, "e")])
    assert_rc(res, 1)
    assert res.err == f"cp: -r not specified; omitting directory '{d}'\n"


def test_cp_unsupported_options_and_usage(cp_bin, base):
    f = write(os.path.join(base.path, "f"), b"f")
    for args, text in ((["-v", f, "x"], "cp: unsupported option '-v'"),
                       (["-aL", f, "x"], "cp: unsupported option '-L'"),
                       (["--preserve=all", f, "x"], "cp: unsupported option '--preserve=all'"),
                       ([f], "cp: missing destination file operand after"),
                       ([], "cp: missing file operand"),
                       ([f, f, os.path.join(base.path, "nodir")], "target '" + os.path.join(base.path, "nodir") + "': No such file or directory"),
                       ([f, f, f], f"target '{f}' is not a directory")):
        res = run([cp_bin, *args], cwd=base.path)
        assert_rc(res, 1)
        assert text in res.err, res.err
    assert not os.path.exists(os.path.join(base.path, "x"))
    res = run([cp_bin, "--help"])
    assert_rc(res, 0)
    assert "-a, --archive" in res.out
    res = run([cp_bin, "--version"])
    assert_rc(res, 0)
    assert res.out.startswith("cp (krm-fn-runtime copier)")


def test_cp_option_forms(cp_bin, base):
    src = make_tree(os.path.join(base.path, "src"))
    ref = snapshot(src)
    for i, opts in enumerate((["-dR", "-p"], ["-R", "-p", "-d"], ["--archive"], ["-rpP"], ["-af"])):
        dest = os.path.join(base.path, f"d{i}")
        os.mkdir(dest)
        assert_rc(run([cp_bin, *opts, src + "/.", dest]), 0)
        assert_same_tree(snapshot(dest), ref)
    dest = os.path.join(base.path, "after")   # options after operands, as GNU allows
    os.mkdir(dest)
    assert_rc(run([cp_bin, src + "/.", dest, "-a"]), 0)
    assert_same_tree(snapshot(dest), ref)


def test_cp_refuses_to_copy_a_directory_into_itself(cp_bin, base):
    d = os.path.join(base.path, "d")
    os.makedirs(os.path.join(d, "sub"))
    write(os.path.join(d, "f"), b"f")
    res = run([cp_bin, "-a", d + "/.", os.path.join(d, "sub")], timeout=20)
    assert_rc(res, 1)
    assert "into itself" in res.err
    res = run([cp_bin, "-a", d + "/.", d], timeout=20)
    assert_rc(res, 1)
    assert "are the same file" in res.err


def test_cp_type_conflicts(cp_bin, base):
    src = os.path.join(base.path, "src")
    os.makedirs(os.path.join(src, "x"))
    write(os.path.join(src, "y"), b"y")
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    write(os.path.join(dest, "x"), b"file where a dir goes")
    os.makedirs(os.path.join(dest, "y"))
    res = run([cp_bin, "-a", src + "/.", dest])
    assert_rc(res, 1)
    assert f"cannot overwrite non-directory '{dest}/x' with directory '{src}/./x'" in res.err
    assert f"cannot overwrite directory '{dest}/y' with non-directory" in res.err


@needs_root
def test_cp_errors_full_and_read_only(cp_bin, base):
    src = os.path.join(base.path, "src")
    os.mkdir(src)
    write(os.path.join(src, "big"), os.urandom(200 * 1024), 0o555)
    full = mount_tmpfs(base, "full", size="64k")
    res = run([cp_bin, "-a", src + "/.", full])
    assert_rc(res, 1)
    assert f"cp: error writing '{full}/big': No space left on device" in res.err
    assert os.listdir(full) == []
    ro = mount_tmpfs(base, "ro")
    remount_ro(ro)
    res = run([cp_bin, "-a", src + "/.", ro])
    assert_rc(res, 1)
    assert f"cp: cannot create regular file '{ro}/big': Read-only file system" in res.err
    res = run([cp_bin, os.path.join(base.path, "missing"), ro])
    assert_rc(res, 1)
    assert f"cp: cannot stat '{base.path}/missing': No such file or directory" in res.err


def test_cp_sigkill_mid_copy(cp_bin, base):
    src = os.path.join(base.path, "src")
    os.mkdir(src)
    data = big_data(200)
    write(os.path.join(src, "wrapper-server"), data, 0o555)
    dest = os.path.join(base.path, "dest")
    os.mkdir(dest)
    kill_mid_copy([cp_bin, "-a", src + "/.", dest], os.path.join(dest, "wrapper-server"), data)
    assert all(n == "wrapper-server" or n.startswith(TMP_PREFIX) for n in os.listdir(dest))
    assert_rc(run([cp_bin, "-a", src + "/.", dest], timeout=120), 0)
    assert os.listdir(dest) == ["wrapper-server"]
    assert krmtest.read(os.path.join(dest, "wrapper-server")) == data
