"""The README's quick start, with the files of examples/: the wrapper
server running search-replace.sh with arguments, and the function runner
(serve, examples/function-configs) rendering a copy of examples/package in
place through its Kptfile pipeline (search-replace from its functionConfig,
then the deny-latest validator, which fails the render on a :latest image).

test_readme_quick_start runs the README's Quick start `console` blocks as
written (each `$ ` line, in order) and checks that every line they print is
the one the README shows, so the guide and the programs cannot drift apart;
the other tests check the same steps' effects on the files."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest
import yaml

from krmtest import BUILD_DIR, CLIENT_BIN, ROOT, explain, free_port, runner_client as client, serving

EXAMPLES = os.path.join(ROOT, "examples")
PACKAGE = os.path.join(EXAMPLES, "package")


def objects(text):
    return [d for d in yaml.safe_load_all(text) if d]


def test_wrapper_server_with_the_example_function(module_launcher):
    srv = serving(module_launcher, os.path.join(EXAMPLES, "functions", "search-replace.sh"),
                  "staging", "production")
    res = client("eval", "--addr", srv.addr, "--image", "example/search-replace:v1", "-o", "unwrap", PACKAGE)
    assert res.returncode == 0, explain(res)
    docs = {d["kind"]: d for d in objects(res.out)}
    assert docs["ConfigMap"]["metadata"]["namespace"] == "production"
    assert docs["ConfigMap"]["data"]["environment"] == "production"
    assert docs["Deployment"]["metadata"]["namespace"] == "production"
    # the Kptfile is the package's own configuration: left as it was
    assert docs["Kptfile"]["pipeline"]["mutators"][0]["configMap"]["search"] == "staging"


@pytest.fixture
def runner(start_server):
    srv = start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--disable-runtimes=pod",
        "--function-config", os.path.join(EXAMPLES, "function-configs"),
        "--functions", os.path.join(EXAMPLES, "functions")])
    srv.addr = f"localhost:{srv.port}"
    return srv


def test_kptfile_pipeline_renders_the_package_in_place(runner, tmp_path):
    pkg = tmp_path / "nginx"
    shutil.copytree(PACKAGE, pkg)
    res = client("eval", "--addr", runner.addr, "--pipeline", str(pkg), str(pkg))
    assert res.returncode == 0, explain(res)
    assert '[PASS] "example/search-replace:v1"' in res.err and '[PASS] "example/deny-latest:v1"' in res.err
    cm = objects((pkg / "configmap.yaml").read_text())[0]
    deploy = objects((pkg / "deployment.yaml").read_text())[0]
    assert (cm["metadata"]["namespace"], cm["data"]["environment"]) == ("production", "production")
    assert deploy["metadata"]["namespace"] == "production"
    assert (pkg / "Kptfile").read_bytes() == open(os.path.join(PACKAGE, "Kptfile"), "rb").read()
    assert sorted(os.listdir(pkg)) == sorted(os.listdir(PACKAGE))


def test_the_validator_fails_a_latest_image(runner, tmp_path):
    pkg = tmp_path / "nginx"
    shutil.copytree(PACKAGE, pkg)
    deploy = pkg / "deployment.yaml"
    deploy.write_text(deploy.read_text().replace("nginx:1.25", "nginx:latest"))
    before = {f: (pkg / f).read_bytes() for f in os.listdir(pkg)}
    res = client("eval", "--addr", runner.addr, "--pipeline", str(pkg), str(pkg))
    assert res.returncode == 1, explain(res)
    assert '[FAIL] "example/deny-latest:v1"' in res.err, explain(res)
    assert "image nginx:latest is not pinned" in res.err
    assert "apps/v1/Deployment/production/nginx" in res.err
    # a failed render writes nothing, as kpt
    assert {f: (pkg / f).read_bytes() for f in os.listdir(pkg)} == before


# ---- the README's Quick start, run as written ----

def quick_start_blocks():
    """The ```console blocks of the README's "## Quick start" section, each a
    list of (command, expected output lines)."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = re.search(r"^## Quick start\n(.*?)^## ", text, re.M | re.S)
    assert section, "README.md has no '## Quick start' section"
    blocks = []
    for body in re.findall(r"^```console\n(.*?)^```", section.group(1), re.M | re.S):
        steps = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"output before any command in a Quick start block: {line!r}"
                steps[-1][1].append(line)
        blocks.append(steps)
    return blocks


def wait_listening(proc, port, what):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{what} exited {proc.returncode} before listening"
        try:
            socket.create_connection(("localhost", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{what} did not listen on {port} within 10s")


# A step's time is the call's, cut to 100ms: "in 0s" on a quiet machine.
def steady(lines):
    return [re.sub(r'^(\[(?:PASS|FAIL)\] ".*") in \S+$', r"\1 in T", line) for line in lines]


BLOCKS = quick_start_blocks()


def test_readme_quick_start_has_its_two_blocks():
    assert len(BLOCKS) == 2, BLOCKS
    assert all(any(out for _, out in block) for block in BLOCKS), "a block shows no expected output"


@pytest.mark.parametrize("block", range(len(BLOCKS)), ids=["wrapper-server", "serve-render"][:len(BLOCKS)])
def test_readme_quick_start(block, tmp_path):
    steps = BLOCKS[block]
    # The README's names, made this test's own: its binaries, a fresh port
    # for each server, files in tmp_path instead of /tmp.
    subst = [("build/bin/", os.path.join(BUILD_DIR, "bin") + "/")]
    for port in sorted({p for cmd, _ in steps for p in re.findall(r"--port (\d+)", cmd)}):
        subst.append((port, str(free_port())))
    for name in sorted({n for cmd, out in steps for n in re.findall(r"/tmp/[\w.-]+", cmd + "\n".join(out))}):
        subst.append((name, str(tmp_path / name[len("/tmp/"):])))

    def local(text):
        for a, b in subst:
            text = text.replace(a, b)
        return text

    package_before = {f: open(os.path.join(PACKAGE, f), "rb").read() for f in os.listdir(PACKAGE)}
    background = None
    try:
        for cmd, expected in steps:
            if cmd == "kill %1":
                assert background, "kill %1 with nothing in the background"
                background.send_signal(signal.SIGTERM)
                assert background.wait(timeout=20) == 0, "the server did not drain to exit 0 on SIGTERM"
                background = None
                continue
            if cmd.endswith(" &"):
                background = subprocess.Popen(["bash", "-c", "exec " + local(cmd[:-2])], cwd=ROOT)
                wait_listening(background, int(re.search(r"--port (\d+)", local(cmd)).group(1)), cmd)
                continue
            res = subprocess.run(["bash", "-c", local(cmd)], cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=60)
            got = res.stdout.decode("utf-8", "replace").splitlines()
            assert steady(got) == steady([local(x) for x in expected]), \
                f"README step: $ {cmd}\nprinted:\n" + "\n".join(got)
    finally:
        if background:
            background.kill()
            background.wait()
    # the Quick start works on a copy: the repository's example is as it was
    assert {f: open(os.path.join(PACKAGE, f), "rb").read() for f in os.listdir(PACKAGE)} == package_before


def test_serve_flags_reference_is_the_help():
    """docs/serve.md's "## Flags" block is `runner-client help serve`, word for
    word: a flag added or changed shows in the reference or fails here."""
    text = open(os.path.join(ROOT, "docs", "serve.md"), encoding="utf-8").read()
    block = re.search(r"^## Flags\n.*?^```\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/serve.md has no '## Flags' block"
    res = client("help", "serve")
    assert res.returncode == 0, explain(res)
    assert block.group(1) == res.out, explain(res)


# ---- every relative link of the guide and the docs/ pages resolves ----

def github_anchor(heading):
    """The anchor GitHub gives a Markdown heading: lower case, punctuation
    dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    found, seen = set(), {}
    text = re.sub(r"^```.*?^```", "", open(path, encoding="utf-8").read(), flags=re.M | re.S)
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = github_anchor(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def relative_links(path):
    """(line number, target) of each Markdown link that is not a URL, outside code blocks."""
    links, in_code = [], False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):
                links.append((number, target))
    return links


GUIDE_PAGES = [os.path.join(ROOT, "README.md")] + sorted(
    os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_resolve(page):
    """A page's links lead somewhere: each file exists and each #anchor is one
    of its headings; and no code block is left open (it hides the headings
    after it, as a merge once left docs/pods.md)."""
    fences = [n for n, line in enumerate(open(page, encoding="utf-8"), 1) if line.startswith("```")]
    assert len(fences) % 2 == 0, f"{os.path.relpath(page, ROOT)}: a code block left open (``` at lines {fences})"
    broken = []
    for number, target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part else page
        where = f"{os.path.relpath(page, ROOT)}:{number}: {target}"
        if not os.path.exists(dest):
            broken.append(f"{where}: no file {os.path.relpath(dest, ROOT)}")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            broken.append(f"{where}: no heading with anchor #{anchor} in {os.path.relpath(dest, ROOT)}")
    assert not broken, "\n".join(broken)
