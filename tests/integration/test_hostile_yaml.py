"""Hostile YAML against runner-client (issue 21, classes 5 and 6): depth and
alias limits checked while parsing, and results kept compactly and bounded.

Before: a Kptfile nested 2,000,000 deep took 650-800 MiB and seconds
before it was refused (or was not refused at all: the depth was checked on
a finished tree, and only where a copy recursed); an object 500,000 deep in
a package, or a billion-laughs alias bomb, was sent to the function; one
pipeline step answering 5 MiB of results took 340-690 MiB, because every
step's results were kept as libyaml nodes. Now every YAML runner-client
reads is loaded through lib/krm/yaml_load (limits of lib/krm/yaml_limits.h,
event by event), and results are kept as text, at most 8 x --max-message
per report (lib/pkg/results_text.h).

The functions are small shell and Python scripts; one that must not run
writes a marker file when it does.
"""

import os
import selectors
import subprocess
import time

import pytest
import yaml

import tempfile

from krmtest import CLIENT_BIN, SERVER_WRAPPER, PeakUsage, sanitizer_reports, serving, wrapped

DEPTH_PROBLEM = "collections nested more than 1000 deep"
ALIAS_PROBLEM = "aliases expand to more than the document's own size (or 1 MiB for a smaller one)"
MIB = 1024 * 1024

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  k: v\n"
KPTFILE_HEAD = ("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n"
                "pipeline:\n  mutators:\n  - image: example.com/fn:v1\n")

# Answers its input's items with `bytes` (from its functionConfig's data)
# of info results.
RESULTS_FN = r'''#!/usr/bin/env python3
import re, sys
data = sys.stdin.read()
m = re.search(r"bytes: \"?(\d+)", data)
want = int(m.group(1)) if m else 0
out = ["apiVersion: config.kubernetes.io/v1", "kind: ResourceList", "items: []", "results:"]
i = size = 0
while size < want:
    line = (f"- message: result {i} of a function that has a lot to say\n"
            f"  severity: info\n  resourceRef: {{apiVersion: v1, kind: ConfigMap, name: cm{i}}}")
    out.append(line)
    size += len(line) + 1
    i += 1
sys.stdout.write("\n".join(out) + "\n")
'''


def run_measured(args, timeout=60):
    """Runs a binary to completion; returns (CompletedProcess with .out and
    .err text, its own CPU seconds, its peak RSS in MiB), from GNU time."""
    # Under ASan, freed memory waits in a 256 MiB quarantine: without it the
    # peak is the program's own, plus shadow and redzones.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "quarantine_size_mb=0"]))
    usage_file = tempfile.NamedTemporaryFile(prefix="krm-usage-", delete=False)
    usage_file.close()
    usage = PeakUsage(usage_file.name)
    proc = subprocess.Popen(usage.argv(wrapped(args)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    out_chunks, err_chunks = [], []
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out_chunks)
    sel.register(proc.stderr, selectors.EVENT_READ, err_chunks)
    deadline = time.monotonic() + timeout
    open_pipes = 2
    while open_pipes:
        left = deadline - time.monotonic()
        assert left > 0, f"{args!r} did not finish in {timeout} s"
        for key, _ in sel.select(left):
            chunk = os.read(key.fileobj.fileno(), 65536)
            if chunk:
                key.data.append(chunk)
            else:
                sel.unregister(key.fileobj)
                open_pipes -= 1
    proc.wait()
    cpu, rss = usage.read()
    os.unlink(usage_file.name)
    out, err = b"".join(out_chunks), b"".join(err_chunks)
    res = subprocess.CompletedProcess(args, proc.returncode, out, err)
    res.out, res.err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    assert not sanitizer_reports(err), res.err[-4000:]
    return res, cpu, rss


def result_entries(text):
    """The "- message: ..." entries in YAML text as runner-client writes
    it, each as its own text."""
    for piece in text.split("\n- message: ")[1:]:
        lines = piece.split("\n")
        end = next((n for n, l in enumerate(lines[1:], 1) if not l.startswith("  ")), len(lines))
        yield "- message: " + "\n".join(lines[:end])


def warnings(text):
    """The results of severity warning, each loaded on its own: loading
    megabytes of results whole takes PyYAML seconds per MiB."""
    return [yaml.safe_load(e)[0] for e in result_entries(text) if "severity: warning" in e]


def dedent(text):
    """results.yaml's results, which sit 2 deeper (under items), at indent 0."""
    return "\n".join(l[2:] if l.startswith("  ") else l for l in text.split("\n"))


def explain(res):
    return f"exit {res.returncode}\nstderr: {res.err[-3000:]}"


def assert_cost(cpu, rss, max_cpu=None, max_rss=None):
    """Bounds on the process's own CPU seconds and peak RSS (MiB); not
    under KRM_SERVER_WRAPPER (valgrind), which measures itself."""
    if SERVER_WRAPPER:
        return
    if max_rss is not None:
        assert rss < max_rss, f"peak RSS {rss:.0f} MiB"
    if max_cpu is not None:
        assert cpu < max_cpu, f"{cpu:.2f} s of CPU"


@pytest.fixture(scope="module")
def marker_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("markers")


@pytest.fixture(scope="module")
def marking(module_launcher, marker_dir):
    """A function that echoes its input and leaves a marker file once it
    has read it: it ran (a pre-started process waits on stdin until then)."""
    marker = marker_dir / "ran"
    srv = serving(module_launcher, "/bin/sh", "-c",
                  f'f=$(mktemp); cat > "$f"; touch "{marker}"; cat "$f"; rm -f "$f"')
    srv.marker = marker
    return srv


@pytest.fixture(scope="module")
def results_server(module_launcher, tmp_path_factory):
    script = tmp_path_factory.mktemp("fn") / "results-fn.py"
    script.write_text(RESULTS_FN)
    script.chmod(0o755)
    return serving(module_launcher, str(script))


def package(tmp_path, files):
    d = tmp_path / "pkg"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return d


def deep_block(indent, depth):
    """A block value nested `depth` sequences deep, on one line."""
    return " " * indent + "- " * depth + "x\n"


def assert_not_run(srv):
    assert not srv.marker.exists(), "the function ran"


@pytest.fixture(autouse=True)
def no_marker(request):
    if "marking" in request.fixturenames:
        marker = request.getfixturevalue("marking").marker
        if marker.exists():
            marker.unlink()


# ------------------------------------------------------------------ depth

def test_a_kptfile_2000000_deep_is_refused_quickly(marking, tmp_path):
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP,
                             "Kptfile": KPTFILE_HEAD + "    x:\n" + deep_block(4, 2_000_000)})
    res, cpu, rss = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr,
                                  "--pipeline", str(pkg), "-o", "stdout", str(pkg)])
    assert res.returncode == 2, explain(res)
    assert f"{pkg}/Kptfile: line 9: {DEPTH_PROBLEM}" in res.err, explain(res)
    assert_not_run(marking)
    # before: 650 MiB and 1.2 s of CPU, and the pipeline ran
    assert_cost(cpu, rss, max_cpu=1, max_rss=100)


def test_a_package_object_500000_deep_never_reaches_the_function(marking, tmp_path):
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP,
                             "deep.yaml": CONFIG_MAP.replace("plain", "deep") + "  x:\n" +
                             deep_block(2, 500_000)})
    res, cpu, rss = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr, "--image",
                                  "example.com/fn:v1", "-o", "stdout", str(pkg)])
    assert res.returncode == 2, explain(res)
    # the 1001st collection: the root mapping, data's, then the 999th sequence
    assert f"{pkg}/deep.yaml: YAML error at line 8, column 1999: {DEPTH_PROBLEM}" in res.err, \
        explain(res)
    assert_not_run(marking)
    assert_cost(0, rss, max_rss=100)
    # 999 levels would be 1001 in the ResourceList (its root and items),
    # which the server refuses in the answer after the function ran: refused
    # here; 998 run
    (pkg / "deep.yaml").write_text(CONFIG_MAP.replace("plain", "deep") + "  x:\n" +
                                   deep_block(2, 997))
    res, _, _ = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr, "--image",
                              "example.com/fn:v1", "-o", "stdout", str(pkg)])
    assert res.returncode == 2, explain(res)
    assert (f"{pkg}/deep.yaml: YAML error at line 8, column 1995: {DEPTH_PROBLEM} once the "
            "object is in a ResourceList's items (998 levels are left to an object)") in res.err, \
        explain(res)
    assert_not_run(marking)
    (pkg / "deep.yaml").write_text(CONFIG_MAP.replace("plain", "deep") + "  x:\n" +
                                   deep_block(2, 996))
    res, _, _ = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr, "--image",
                              "example.com/fn:v1", "-o", "stdout", str(pkg)])
    assert res.returncode == 0, explain(res)
    assert marking.marker.exists()


def test_a_deep_function_config_is_refused_while_read(marking, tmp_path):
    config = CONFIG_MAP.replace("plain", "config") + "  x:\n" + deep_block(2, 2_000_000)
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP, "config.yaml": config,
                             "Kptfile": KPTFILE_HEAD + "    configPath: config.yaml\n"})
    res, cpu, rss = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr,
                                  "--pipeline", str(pkg / "Kptfile"), "-o", "stdout",
                                  str(pkg / "cm.yaml")])
    assert res.returncode == 2, explain(res)
    assert f"{pkg}/config.yaml: line 8: {DEPTH_PROBLEM}" in res.err, explain(res)
    assert_not_run(marking)
    assert_cost(cpu, rss, max_cpu=1, max_rss=100)   # before: 650 MiB and a late refusal


def test_serve_refuses_a_deep_function_config_file(tmp_path):
    config = tmp_path / "fc.yaml"
    config.write_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                      "metadata:\n  name: x\nspec:\n  x:\n" + deep_block(2, 2_000_000))
    res, cpu, rss = run_measured([CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod",
                                  "--function-config", str(config)])
    assert res.returncode == 2, explain(res)
    assert f"{config}: document 1: line 7, column 1999: {DEPTH_PROBLEM}" in res.err, explain(res)
    assert_cost(cpu, rss, max_cpu=1, max_rss=100)


# ---------------------------------------------------------------- aliases

def laughs(levels=9):
    """The billion laughs: 9 aliases of 9 aliases ... of "lol"."""
    text = 'l0: &l0 "lol"\n'
    for i in range(1, levels + 1):
        text += f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n"
    return text


def test_an_alias_bomb_in_a_package_never_reaches_the_function(marking, tmp_path):
    bomb = CONFIG_MAP.replace("plain", "bomb") + "".join(
        "  " + line + "\n" for line in laughs().splitlines())
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP, "bomb.yaml": bomb})
    res, cpu, rss = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr, "--image",
                                  "example.com/fn:v1", "-o", "stdout", str(pkg)])
    assert res.returncode == 2, explain(res)
    assert f"{pkg}/bomb.yaml: YAML error at line " in res.err and ALIAS_PROBLEM in res.err, \
        explain(res)
    assert_not_run(marking)


def test_an_alias_bomb_in_a_kptfile_is_refused(marking, tmp_path):
    kptfile = KPTFILE_HEAD + "    configMap:\n      k: v\n" + "info:\n" + "".join(
        "  " + line + "\n" for line in laughs().splitlines())
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP, "Kptfile": kptfile})
    res, cpu, rss = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr,
                                  "--pipeline", str(pkg / "Kptfile"), "-o", "stdout",
                                  str(pkg / "cm.yaml")])
    assert res.returncode == 2, explain(res)
    assert f"{pkg}/Kptfile: line " in res.err and ALIAS_PROBLEM in res.err, explain(res)
    assert_not_run(marking)


def test_an_alias_inside_its_own_anchor_is_refused(marking, tmp_path):
    kptfile = KPTFILE_HEAD + "    configMap: &loop\n      k: v\n      self: *loop\n"
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP, "Kptfile": kptfile})
    res, _, _ = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr,
                              "--pipeline", str(pkg / "Kptfile"), "-o", "stdout",
                              str(pkg / "cm.yaml")])
    assert res.returncode == 2, explain(res)
    assert f"{pkg}/Kptfile: line 10: alias inside the node its anchor names" in res.err, \
        explain(res)
    assert_not_run(marking)


# ---------------------------------------------------------------- results

def steps(n, size):
    return [a for i in range(n) for a in ("--fn", f"example.com/talk{i}:v1=bytes={size}")]


def test_a_step_answering_5_mib_of_results_costs_little(results_server, tmp_path):
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP})
    res, _, rss = run_measured([CLIENT_BIN, "eval", "--addr", results_server.addr,
                                *steps(1, 5 * MIB), "-o", "stdout",
                                "--results-dir", str(tmp_path), str(pkg)])
    assert res.returncode == 0, explain(res)
    assert res.out.count("\n- message: result ") > 30000
    last = yaml.safe_load(list(result_entries(res.out))[-1])[0]
    assert last["tags"]["fn.kpt.dev/step"] == "1", last
    assert "dropped" not in res.err, explain(res)
    # before: 340 MiB here (690 MiB in the case); now about 40
    assert_cost(0, rss, max_rss=150)


def test_a_pipeline_passes_a_large_package_on_as_text(marking, tmp_path):
    objects = "---\n".join(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\n"
        f"  labels: {{app: x, tier: y}}\ndata:\n  a: \"value {i} with text\"\n  b: other\n"
        for i in range(15000))
    pkg = package(tmp_path, {"all.yaml": objects})
    res, _, rss = run_measured([CLIENT_BIN, "eval", "--addr", marking.addr,
                                "--max-message", str(64 * MIB), *steps(3, 0), "-o", "stdout",
                                str(pkg)], timeout=120)
    assert res.returncode == 0, explain(res)
    assert res.out.count("\n  kind: ConfigMap\n") == 15000
    assert res.out.count("internal.config.kubernetes.io/path: 'all.yaml'") == 15000
    # 2 MiB of objects: each step's list was a libyaml tree, 353 MiB in
    # all; passed on as text, 63 MiB (84 under ASan): the input's reading
    assert_cost(0, rss, max_rss=150)


def test_results_past_the_bound_are_dropped_with_a_warning(results_server, tmp_path):
    # 8 x 256 KiB = 2 MiB kept at most; 12 steps of 200 KiB answer 2.4 MB
    pkg = package(tmp_path, {"cm.yaml": CONFIG_MAP})
    res, _, _ = run_measured([CLIENT_BIN, "eval", "--addr", results_server.addr,
                              "--max-message", str(256 * 1024), *steps(12, 200 * 1024),
                              "-o", "stdout", "--results-dir", str(tmp_path), str(pkg)])
    assert res.returncode == 0, explain(res)   # dropping results fails nothing
    cut = warnings(res.out)
    assert cut, "no warning result"
    first = cut[0]["message"]
    assert first.startswith("runner-client dropped "), first
    assert "reached their limit of 2097152 bytes (8 x --max-message)" in first, first
    step = cut[0]["tags"]["fn.kpt.dev/step"]
    assert f'step {step} "example.com/talk{int(step) - 1}:v1": the ResourceList keeps ' in res.err, \
        explain(res)
    # every later step says so too, with all of its results dropped
    assert [w["tags"]["fn.kpt.dev/step"] for w in cut] == \
        [str(s) for s in range(int(step), 13)]
    assert len(res.out) < 2 * 1024 * 1024 + 64 * 1024
    # results.yaml keeps its own text, under the same bound, and says so
    report = (tmp_path / "results.yaml").read_text()
    assert report.count("\n- image: ") == 12
    cut = warnings(dedent(report))
    assert cut and all(c["message"].startswith("runner-client dropped ") for c in cut), cut[:1]
    assert "results.yaml keeps " in res.err, explain(res)
