"""runner-client eval writing back a package a function answered with hostile
paths: a NUL byte in a path, a path through a regular file or a linked
directory, a name or a path too long, a file that is also a directory, a
write that fails part-way (a file size limit), a link planted at
results.yaml. After each, the package is byte for byte as it was (names,
types, modes, contents, link targets: tree()), the exit is non-zero and
the message names the path. A write-back interrupted by a crash leaves
recognisable entries that the next run reports.

The function (tests/fixtures/functions/answer-file.py) answers with a
ResourceList the test wrote, so every output path is the test's choice."""

import hashlib
import os
import re
import resource
import signal
import stat
import subprocess

import pytest
import yaml

from krmtest import CLIENT_BIN, explain, fn, runner_client as client, serving, wrapped

HEAD = b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"


def config_map(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


# The package: path -> objects (the Kptfile first); plus files no function sees.
OBJECTS = {
    "Kptfile": [{"apiVersion": "kpt.dev/v1", "kind": "Kptfile", "metadata": {"name": "shop"}}],
    "a.yaml": [config_map("a", size="small")],
    "b.yaml": [config_map("b", color="red")],
    "sub/c.yaml": [config_map("c", shape="round")],
}
OTHER = {"README.md": b"# not KRM\n", "zz": b"a plain file\n"}


def dump(objs):
    return yaml.safe_dump_all(objs, sort_keys=False).encode()


@pytest.fixture(scope="module")
def answering(module_launcher):
    return serving(module_launcher, fn("answer-file.py"))


@pytest.fixture
def package(tmp_path):
    d = tmp_path / "pkg"
    (d / "sub").mkdir(parents=True)
    for path, objs in OBJECTS.items():
        (d / path).write_bytes(dump(objs))
    for path, data in OTHER.items():
        (d / path).write_bytes(data)
    os.chmod(d / "a.yaml", 0o640)
    return d


def tree(d):
    """Every entry under d: its mode and its content (a file's digest, a
    link's target, a directory's listing)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                what = sorted(os.listdir(p))
            else:
                what = hashlib.sha256(open(p, "rb").read()).hexdigest()
            out[os.path.relpath(p, d)] = (st.st_mode, what)
    return out


def item(obj, path, index=0):
    """obj with kpt's path and index annotations (both spellings)."""
    obj = yaml.safe_load(yaml.safe_dump(obj))
    obj["metadata"]["annotations"] = {
        "config.kubernetes.io/path": path, "config.kubernetes.io/index": str(index),
        "internal.config.kubernetes.io/path": path, "internal.config.kubernetes.io/index": str(index)}
    return obj


def answer(*extra, change_a=True, keep_b=True):
    """The package as the function saw it, a.yaml changed (written first:
    the paths go in name order), then the extra items (dicts or raw YAML
    text of one list entry)."""
    items = []
    for path, objs in OBJECTS.items():
        if path == "b.yaml" and not keep_b:
            continue
        for i, o in enumerate(objs):
            if path == "a.yaml" and change_a:
                o = config_map("a", size="large")
            items.append(item(o, path, i))
    items += [e for e in extra if isinstance(e, dict)]
    text = HEAD + yaml.safe_dump(items, sort_keys=False).encode()
    return text + b"".join(e for e in extra if isinstance(e, bytes))


def run(srv, package, tmp_path, text, *flags, limit=None):
    """runner-client eval on the package, the function answering text;
    limit: a file size limit (RLIMIT_FSIZE) for runner-client's writes."""
    ans = tmp_path / "answer.yaml"
    ans.write_bytes(text)
    args = [CLIENT_BIN, "eval", "--addr", srv.addr, "--fn",
            f"example.com/fn:v1=answer={ans}", *flags, str(package)]
    if limit is None:
        return client(*args[1:])

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    res = subprocess.run(wrapped(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=30, preexec_fn=limited)
    res.out, res.err = res.stdout.decode(), res.stderr.decode()
    return res


def refused(res, before, package, *words):
    assert res.returncode != 0, explain(res)
    for w in words:
        assert w in res.err, explain(res)
    assert tree(package) == before
    assert ".krm-" not in str(tree(package))


# ------------------------------------------------------------------ NUL bytes

RAW_ITEM = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: {name}
    annotations:
{annotations}
"""


@pytest.mark.parametrize("key", ["internal.config.kubernetes.io/path", "config.kubernetes.io/path"])
def test_a_nul_byte_in_a_path_is_refused(answering, package, tmp_path, key):
    raw = RAW_ITEM.format(name="evil", annotations=f'      {key}: "x.yaml\\0/../.."')
    before = tree(package)
    res = run(answering, package, tmp_path, answer(raw.encode()))
    refused(res, before, package, f'{key} "x.yaml\\x00/../.." holds a NUL byte (\\x00) at offset 6')


def test_a_nul_byte_in_a_name_that_makes_the_path_is_refused(answering, package, tmp_path):
    raw = RAW_ITEM.format(name='"x\\0y"', annotations="      keep: me")
    before = tree(package)
    res = run(answering, package, tmp_path, answer(raw.encode()))
    refused(res, before, package, 'metadata.name "x\\x00y" holds a NUL byte')


def kptfile_refuses(srv, package, tmp_path, step, message):
    """eval --pipeline with a Kptfile whose one mutator is `step` (YAML lines
    after "- "): exit 2 with message, the package as it was."""
    (tmp_path / "answer.yaml").write_bytes(answer())
    kptfile = tmp_path / "Kptfile"
    kptfile.write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n"
                       "pipeline:\n  mutators:\n  - " + step.replace("\n", "\n    ") + "\n")
    before = tree(package)
    res = client("eval", "--addr", srv.addr, "--pipeline", str(kptfile), str(package))
    assert res.returncode == 2, explain(res)
    assert f"{kptfile}: pipeline.mutators[0]: {message}" in res.err, explain(res)
    assert tree(package) == before


@pytest.mark.parametrize("field, value, shown", [
    ("configPath", '"cfg.yaml\\0/../../escape.yaml"', '"cfg.yaml\\x00/../../escape.yaml"'),
    ("image", '"example.com/fn:v1\\0evil"', '"example.com/fn:v1\\x00evil"'),
])
def test_a_nul_byte_in_a_kptfile_step_is_refused(answering, package, tmp_path, field, value, shown):
    """Cut at the NUL, the step would read cfg.yaml or run example.com/fn:v1."""
    (tmp_path / "cfg.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n"
        f"  answer: {tmp_path}/answer.yaml\n")
    step = {"image": '"example.com/fn:v1"', "configPath": "cfg.yaml", field: value}
    kptfile_refuses(answering, package, tmp_path,
                    f"image: {step['image']}\nconfigPath: {step['configPath']}",
                    f"{field} {shown} holds a NUL byte (\\x00) at offset")


def test_a_nul_byte_in_a_kptfile_config_map_is_refused(answering, package, tmp_path):
    """Cut at the NUL, the function would get answer=<the answer file>."""
    kptfile_refuses(answering, package, tmp_path,
                    f'image: example.com/fn:v1\nconfigMap:\n  answer: "{tmp_path}/answer.yaml\\0.x"',
                    f'configMap.answer "{tmp_path}/answer.yaml\\x00.x" holds a NUL byte')


# ------------------------------------------------------------------ paths checked first

def test_a_path_through_a_regular_file_changes_nothing(answering, package, tmp_path):
    before = tree(package)
    res = run(answering, package, tmp_path, answer(item(config_map("x"), "zz/x.yaml")))
    refused(res, before, package, f"{package}/zz/x.yaml: zz is not a directory")


def test_a_linked_directory_changes_nothing(answering, package, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, package / "zlink")
    before = tree(package)
    res = run(answering, package, tmp_path, answer(item(config_map("x"), "zlink/x.yaml")))
    refused(res, before, package, "zlink is a symbolic link: files are written only beneath")
    assert os.listdir(outside) == []


def test_a_name_too_long_changes_nothing(answering, package, tmp_path):
    long = "n" * 300 + ".yaml"
    before = tree(package)
    res = run(answering, package, tmp_path, answer(item(config_map("x"), f"new/{long}")))
    refused(res, before, package, f'the name "{long}" is 305 bytes, longer than NAME_MAX')


def test_a_path_too_long_changes_nothing(answering, package, tmp_path):
    deep = ("d" * 200 + "/") * 21 + "x.yaml"  # 4227 bytes, names within NAME_MAX
    before = tree(package)
    res = run(answering, package, tmp_path, answer(item(config_map("x"), deep)))
    refused(res, before, package, "longer than PATH_MAX")


# ------------------------------------------------------------------ failures while writing

def test_a_file_that_is_also_a_directory_changes_nothing(answering, package, tmp_path):
    """new/x is a file and new/x/y.yaml needs it as a directory: found only
    while writing, after a.yaml and new/x were staged; all of it goes."""
    before = tree(package)
    res = run(answering, package, tmp_path,
              answer(item(config_map("x"), "new/x"), item(config_map("y"), "new/x/y.yaml"),
                     keep_b=False))
    refused(res, before, package, f"{package}/new/x/y.yaml: new/x is not a directory",
            "nothing was changed")


def test_a_write_that_fails_part_way_changes_nothing(answering, package, tmp_path):
    """A file size limit: a.yaml and a new directory are staged, then the
    large file fails (EFBIG); b.yaml (removed by the function) stays."""
    big = config_map("big", blob="x" * 262144)
    before = tree(package)
    res = run(answering, package, tmp_path,
              answer(item(big, "zbig/big.yaml"), item(config_map("n"), "new/n.yaml"), keep_b=False),
              limit=65536)  # room for a valgrind log under `make valgrind`
    refused(res, before, package, f"{package}/zbig/big.yaml: File too large")


def test_output_dir_is_not_left_half_made(answering, package, tmp_path):
    out = tmp_path / "made" / "out"
    res = run(answering, package, tmp_path,
              answer(item(config_map("x"), "new/x"), item(config_map("y"), "new/x/y.yaml")),
              "-o", str(out))
    assert res.returncode != 0, explain(res)
    assert "new/x is not a directory" in res.err, explain(res)
    assert os.listdir(tmp_path / "made") == []


# ------------------------------------------------------------------ results.yaml

def test_a_link_at_results_yaml_is_refused(answering, package, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    os.symlink(victim, results / "results.yaml")
    before = tree(package)
    res = run(answering, package, tmp_path, answer(), "--results-dir", str(results))
    refused(res, before, package,
            f"{results}/results.yaml is a symbolic link: results are written only as a file")
    assert victim.read_text() == "keep me\n"
    assert os.path.islink(results / "results.yaml")


def test_results_yaml_is_replaced_whole(answering, package, tmp_path):
    """An existing results.yaml (a hard link to another file here) is
    replaced by a new file, not rewritten in place: the other name keeps
    its bytes."""
    results = tmp_path / "results"
    results.mkdir()
    other = tmp_path / "other"
    other.write_text("keep me\n")
    os.link(other, results / "results.yaml")
    res = run(answering, package, tmp_path, answer(), "--results-dir", str(results))
    assert res.returncode == 0, explain(res)
    assert other.read_text() == "keep me\n"
    assert yaml.safe_load((results / "results.yaml").read_text())["kind"] == "FunctionResultList"


# ------------------------------------------------------------------ what succeeds

def test_a_long_name_is_written_and_nothing_is_left_behind(answering, package, tmp_path):
    """A 250-byte name fits NAME_MAX; its temporary name must too. New
    directories, a changed file (mode kept) and a removal, and no staged
    or backup entry afterwards."""
    long = "l" * 245 + ".yaml"
    res = run(answering, package, tmp_path,
              answer(item(config_map("l"), long), item(config_map("n"), "new/deep/n.yaml"),
                     keep_b=False))
    assert res.returncode == 0, explain(res)
    after = tree(package)
    assert not [p for p in after if ".krm-" in p], after
    assert yaml.safe_load((package / long).read_text())["metadata"]["name"] == "l"
    assert yaml.safe_load((package / "new/deep/n.yaml").read_text())["metadata"]["name"] == "n"
    assert yaml.safe_load((package / "a.yaml").read_text())["data"] == {"size": "large"}
    assert stat.S_IMODE(os.stat(package / "a.yaml").st_mode) == 0o640
    assert not (package / "b.yaml").exists()


def test_leftovers_of_an_interrupted_write_back_are_reported(answering, package, tmp_path):
    (package / ".krm-staged-1-0").write_text("new\n")
    (package / "sub" / ".krm-backup-1-1").write_text("old\n")
    res = run(answering, package, tmp_path, answer())
    assert res.returncode == 0, explain(res)
    assert (f"{package}/.krm-staged-1-0 is left from an interrupted write-back: new content "
            "never put in place") in res.err, explain(res)
    assert (f"{package}/sub/.krm-backup-1-1 is left from an interrupted write-back: the original"
            in res.err), explain(res)
    assert (package / "sub" / ".krm-backup-1-1").read_text() == "old\n"


# ------------------------------------------------------------------ a rename failing in the commit

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>

/* renameat, failing (EIO) at the calls KRM_FAIL_RENAME names ("2" or
 * "2,4", 1-based), or killing the process there (SIGKILL) with
 * KRM_RENAME_KILL set */
static int listed(const char *list, int call)
{
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (atoi(p) == call)
            return 1;
    return 0;
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    static int calls;
    static int (*real)(int, const char *, int, const char *);
    if (!real)
        real = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
    const char *fail = getenv("KRM_FAIL_RENAME");
    if (fail && listed(fail, ++calls)) {
        if (getenv("KRM_RENAME_KILL"))
            raise(SIGKILL);
        errno = EIO;
        return -1;
    }
    return real(olddirfd, oldpath, newdirfd, newpath);
}
"""


@pytest.fixture(scope="module")
def rename_shim(tmp_path_factory):
    if os.environ.get("KRM_SERVER_WRAPPER"):
        pytest.skip("the shim is preloaded into runner-client itself")
    interp = subprocess.run(["readelf", "-l", CLIENT_BIN], stdout=subprocess.PIPE, text=True)
    if "interpreter" not in interp.stdout:
        pytest.skip("a static runner-client cannot preload the shim")
    d = tmp_path_factory.mktemp("shim")
    (d / "shim.c").write_text(SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "shim.so"), str(d / "shim.c"), "-ldl"],
                   check=True)
    return str(d / "shim.so")


def commit_answer(tmp_path):
    """a.yaml and sub/c.yaml changed, new/n.yaml added, b.yaml removed: the
    commit's renames are a.yaml's (1st), then sub/c.yaml's (2nd); new/ is
    put in place by renameat2 between them."""
    changed_c = item(config_map("c", shape="square"), "sub/c.yaml")
    text = answer(item(config_map("n"), "new/n.yaml"), keep_b=False)
    return text.replace(yaml.safe_dump([item(config_map("c", shape="round"), "sub/c.yaml")],
                                       sort_keys=False).encode(),
                        yaml.safe_dump([changed_c], sort_keys=False).encode())


def run_shimmed(srv, package, tmp_path, text, shim, **env):
    ans = tmp_path / "answer.yaml"
    ans.write_bytes(text)
    env = dict(os.environ, LD_PRELOAD=shim, **env,
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
    res = subprocess.run([CLIENT_BIN, "eval", "--addr", srv.addr, "--fn",
                          f"example.com/fn:v1=answer={ans}", str(package)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, env=env)
    res.out, res.err = res.stdout.decode(), res.stderr.decode()
    return res


def test_a_rename_failing_in_the_commit_puts_every_original_back(answering, package, tmp_path,
                                                                  rename_shim):
    """sub/c.yaml's rename fails (EIO): a.yaml's original is renamed back, the
    new directory and the staged files go, b.yaml (removed last) stays."""
    before = tree(package)
    res = run_shimmed(answering, package, tmp_path, commit_answer(tmp_path), rename_shim,
                      KRM_FAIL_RENAME="2")
    refused(res, before, package, f"{package}/sub/c.yaml: Input/output error", "nothing was changed")


def test_an_original_that_cannot_be_put_back_is_named(answering, package, tmp_path,
                                                      rename_shim):
    """sub/c.yaml's rename fails, then so does putting a.yaml's original back
    (the 4th rename; new/ went back with the 3rd): the message says where the
    original is, and it is there, whole."""
    a_before = (package / "a.yaml").read_bytes()
    res = run_shimmed(answering, package, tmp_path, commit_answer(tmp_path), rename_shim,
                      KRM_FAIL_RENAME="2,4")
    assert res.returncode == 1, explain(res)
    m = re.search(r"could not put back (\S+)/a\.yaml \(Input/output error\): its original is "
                  r"(\S+/\.krm-backup-\d+-\d+\.a\.yaml)$", res.err.strip())
    assert m and m.group(1) == str(package), explain(res)
    assert open(m.group(2), "rb").read() == a_before
    assert not (package / "new").exists()
    assert (package / "sub/c.yaml").read_bytes() == dump(OBJECTS["sub/c.yaml"])


def test_a_crash_in_the_commit_leaves_what_the_readme_says(answering, package, tmp_path,
                                                          rename_shim):
    """Killed at sub/c.yaml's rename: a.yaml and new/ are in place, sub/c.yaml
    is as it was with its new content staged beside it, the originals of
    a.yaml, sub/c.yaml and b.yaml are .krm-backup-* hard links; the next run
    names every leftover."""
    a_before = (package / "a.yaml").read_bytes()
    res = run_shimmed(answering, package, tmp_path, commit_answer(tmp_path), rename_shim,
                      KRM_FAIL_RENAME="2", KRM_RENAME_KILL="1")
    assert res.returncode == -signal.SIGKILL, explain(res)
    after = tree(package)
    left = sorted(p for p in after if ".krm-" in p)
    assert all(os.path.basename(p).startswith((".krm-staged-", ".krm-backup-")) for p in left), left
    def what(p):  # "sub/.krm-backup-PID-N.c.yaml": ("backup", "sub/c.yaml")
        base = os.path.basename(p)
        return base.split("-")[1], os.path.join(os.path.dirname(p), base.split(".", 2)[2])
    assert sorted(map(what, left)) == [("backup", "a.yaml"), ("backup", "b.yaml"),
                                       ("backup", "sub/c.yaml"), ("staged", "sub/c.yaml")], left
    backups = {open(package / p, "rb").read() for p in left if ".krm-backup-" in p}
    assert a_before in backups and dump(OBJECTS["b.yaml"]) in backups
    assert dump(OBJECTS["sub/c.yaml"]) in backups
    assert (package / "sub/c.yaml").read_bytes() == dump(OBJECTS["sub/c.yaml"])
    assert (package / "new/n.yaml").exists()
    res = run(answering, package, tmp_path, answer())
    for p in left:
        assert f"{package}/{p} is left from an interrupted write-back" in res.err, explain(res)
