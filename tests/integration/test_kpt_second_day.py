"""What a kpt user meets on a second day (issue 27): mistakes that kpt
refuses are refused here too, with kpt's defaults, flag forms and words.

Kptfiles are decoded strictly as kpt decodes them (yaml.v3's KnownFields):
a misspelt field is an error naming the field, its line and the type, where
it used to drop a step or a config and pass. Functions run on a wrapper
server with tests/fixtures/functions/multi-fn.py, which does what its
functionConfig's `op` says."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import yaml

from krmtest import (CLIENT_BIN, ROOT, SERVER_BIN, SERVER_WRAPPER, SLOW, PeakUsage, explain, fn,
                     ipv6_loopback_available, pkg, run_cli, runner_client as client, serving,
                     tcp_state)


@pytest.fixture(scope="module")
def multi(module_launcher):
    return serving(module_launcher, fn("multi-fn.py"))


def kptfile(dir, body):
    path = dir / "Kptfile"
    path.write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n" + body)
    return path


# ------------------------------------------------------------------ strict Kptfiles

@pytest.mark.parametrize("body, message", [
    # a misspelt list: the step was dropped and the run passed
    ("pipeline:\n  mutator:\n  - image: a\n",
     "line 6: field mutator not found in type v1.Pipeline (it has: mutators, validators)"),
    # a misspelt configMap: the step ran without its config
    ("pipeline:\n  mutators:\n  - image: a\n    configmap: {op: fail}\n",
     "line 8: field configmap not found in type v1.Function (it has: image, tag, exec, "
     "configPath, configMap, name, selectors, exclude)"),
    ("pipelines:\n  mutators:\n  - image: a\n",
     "line 5: field pipelines not found in type v1.KptFile"),
    ("metadata2: {}\npipeline:\n  mutators:\n  - image: a\n",
     "line 5: field metadata2 not found in type v1.KptFile"),
    ("upstream:\n  git:\n    repo: r\n    branch: main\npipeline:\n  mutators:\n  - image: a\n",
     "line 8: field branch not found in type v1.Git"),
    ("info:\n  descripton: x\npipeline:\n  mutators:\n  - image: a\n",
     "line 6: field descripton not found in type v1.PackageInfo"),
    ("pipeline:\n  validators:\n  - image: a\n    selectors:\n    - kinds: [Deployment]\n",
     "line 9: field kinds not found in type v1.Selector"),
])
def test_unknown_kptfile_field_is_refused(multi, tmp_path, body, message):
    path = kptfile(tmp_path, body)
    res = client("eval", "--addr", multi.addr, "--pipeline", str(path), "-o", "stdout",
                 pkg("app"))
    assert res.returncode == 2, explain(res)
    assert res.err.startswith(f"runner-client eval: {path}: {message}"), res.err
    assert res.err.count("\n") == 1, res.err
    assert res.stdout == b""


def test_unknown_metadata_field_is_refused(multi, tmp_path):
    path = tmp_path / "Kptfile"
    path.write_text("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"
                    "  lables: {a: b}\npipeline:\n  mutators:\n  - image: a\n")
    res = client("eval", "--addr", multi.addr, "--pipeline", str(path), pkg("app"))
    assert res.returncode == 2, explain(res)
    assert "line 5: field lables not found in type yaml.ObjectMeta" in res.err, res.err


def test_every_kpt_field_is_accepted(multi, tmp_path):
    """Every field kpt's Kptfile v1 knows passes the check (status is
    kpt's own and is taken as it is)."""
    (tmp_path / "fn-config.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        "data:\n  op: set-label\n  key: team\n  value: shop\n")
    path = tmp_path / "Kptfile"
    path.write_text("""apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
  namespace: ns
  labels: {a: b}
  annotations: {config.kubernetes.io/local-config: "true"}
upstream:
  type: git
  git: {repo: https://example.com/r.git, directory: /app, ref: main}
  updateStrategy: resource-merge
upstreamLock:
  type: git
  git: {repo: https://example.com/r.git, directory: /app, ref: main, commit: abc}
info:
  site: https://example.com
  emails: [a@example.com]
  license: Apache-2.0
  licenseFile: LICENSE
  description: d
  keywords: [k]
  man: README.md
inventory:
  namespace: ns
  name: inv
  inventoryID: id
  labels: {a: b}
  annotations: {a: b}
status:
  conditions:
  - type: Rendered
    status: "True"
    anything: goes
pipeline:
  mutators:
  - image: example.com/set-label:v1
    name: label
    configPath: fn-config.yaml
  validators:
  - image: example.com/validate:v1
    configMap: {op: validate, key: team}
""")
    res = client("eval", "--addr", multi.addr, "--pipeline", str(path), "-o", "stdout",
                 pkg("app"))
    assert res.returncode == 0, explain(res)
    items = yaml.safe_load(res.stdout)["items"]
    assert all(i["metadata"]["labels"] == {"team": "shop"} for i in items)


def test_function_config_file_fields_are_the_functions(multi, tmp_path):
    """A configPath file is any KRM object, checked by the function it is
    given to (as kpt and Porch pass it): a field we do not know is kept."""
    (tmp_path / "fn-config.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        "data:\n  op: set-label\n  key: team\n  value: shop\nextra: kept\n")
    path = kptfile(tmp_path, "pipeline:\n  mutators:\n  - image: a\n    configPath: fn-config.yaml\n")
    res = client("eval", "--addr", multi.addr, "--pipeline", str(path), "-o", "stdout",
                 pkg("app"))
    assert res.returncode == 0, explain(res)


# ------------------------------------------------------------------ eval's default input

def copy_app(tmp_path):
    d = tmp_path / "pkg"
    shutil.copytree(pkg("app"), d)
    return d


def test_eval_without_a_directory_evaluates_the_current_one(multi, tmp_path):
    """kpt's default: the current directory, updated in place (it used to
    read stdin, waiting at a terminal, and pass on an empty one)."""
    d = copy_app(tmp_path)
    res = run_cli([CLIENT_BIN, "eval", "--addr", multi.addr,
                   "--fn", "example.com/set-label:v1=op=set-label,key=team,value=shop"],
                  cwd=d, input=b"")
    assert res.returncode == 0, res.stderr
    for f in ("resources.yaml", "configmap.yaml"):
        assert "team: shop" in (d / f).read_text(), f


def test_eval_in_an_empty_directory_fails(multi, tmp_path):
    """Empty stdin used to run the function on nothing and exit 0; now the
    current directory is read, and holding nothing is kpt's error."""
    res = run_cli([CLIENT_BIN, "eval", "--addr", multi.addr, "--image", "example.com/fn:v1"],
                  cwd=tmp_path, input=b"")
    assert res.returncode == 2, res.stderr
    assert res.stderr == (b"runner-client eval: .: no resources found (no KRM object in a "
                          b"Kptfile, *.yaml, *.yml or *.json file beneath it)\n")
    assert res.stdout == b""


def test_eval_dash_reads_stdin(multi, tmp_path):
    res = client("eval", "--addr", multi.addr, "--fn", "example.com/fn:v1=op=none", "-",
                 input=open(pkg("app", "configmap.yaml"), "rb").read())
    assert res.returncode == 0, explain(res)
    assert yaml.safe_load(res.stdout)["items"][0]["metadata"]["name"] == "web-config"


# ------------------------------------------------------------------ render

RENDER_KPTFILE = """pipeline:
  mutators:
  - image: example.com/set-label:v1
    configMap: {op: set-label, key: team, value: shop}
  validators:
  - image: example.com/validate:v1
    configMap: {op: validate, key: team}
"""


def test_render_applies_the_kptfile_pipeline_in_place(multi, tmp_path):
    d = copy_app(tmp_path)
    kptfile(d, RENDER_KPTFILE)
    res = client("render", "--addr", multi.addr, str(d))
    assert res.returncode == 0, explain(res)
    assert res.stdout == b""
    assert '[PASS] "example.com/set-label:v1"' in res.err and \
        '[PASS] "example.com/validate:v1"' in res.err, res.err
    for f in ("resources.yaml", "configmap.yaml"):
        docs = list(yaml.safe_load_all((d / f).read_text()))
        assert all(doc["metadata"]["labels"] == {"team": "shop"} for doc in docs), f


def test_render_defaults_to_the_current_directory(multi, tmp_path):
    d = copy_app(tmp_path)
    kptfile(d, RENDER_KPTFILE)
    res = run_cli([CLIENT_BIN, "render", "--addr", multi.addr], cwd=d)
    assert res.returncode == 0, res.stderr
    assert "team: shop" in (d / "configmap.yaml").read_text()


def test_render_failing_validator_leaves_the_package(multi, tmp_path):
    d = copy_app(tmp_path)
    kptfile(d, RENDER_KPTFILE.replace("key: team}", "key: owner}"))
    before = {f: (d / f).read_bytes() for f in ("resources.yaml", "configmap.yaml")}
    res = client("render", "--addr", multi.addr, "--results-dir", str(tmp_path / "results"),
                 str(d))
    assert res.returncode == 1, explain(res)
    assert '[FAIL] "example.com/validate:v1"' in res.err, res.err
    assert {f: (d / f).read_bytes() for f in before} == before
    assert "label owner is missing" in (tmp_path / "results" / "results.yaml").read_text()


def test_render_refuses_a_kptfile_kpt_refuses(multi, tmp_path):
    d = copy_app(tmp_path)
    path = kptfile(d, "pipeline:\n  mutator:\n  - image: a\n")
    res = client("render", "--addr", multi.addr, str(d))
    assert res.returncode == 2, explain(res)
    assert res.err.startswith(f"runner-client render: {path}: line 6: field mutator not found "
                              "in type v1.Pipeline"), res.err


@pytest.mark.parametrize("args, message", [
    (["--fn", "example.com/a:v1", "PKG"], "--fn is eval's: render runs the functions of DIR's Kptfile"),
    (["--image", "example.com/a:v1", "PKG"], "--image is eval's"),
    (["--pipeline", "PKG", "PKG"], "--pipeline is eval's"),
    (["--stop-on-error=false", "PKG"], "--stop-on-error is eval's"),
    (["--exec", "cat", "PKG"], "--exec is eval's"),
    (["PKG", "--", "k=v"], "-- KEY=VALUE is eval's"),
    (["-"], "- is not a directory: render updates a package"),
    (["PKG/configmap.yaml"], "PKG/configmap.yaml is not a directory"),
])
def test_render_usage_errors(multi, tmp_path, args, message):
    d = copy_app(tmp_path)
    res = client("render", "--addr", multi.addr, *[a.replace("PKG", str(d)) for a in args])
    assert res.returncode == 2, explain(res)
    assert res.err.startswith("runner-client render: " + message.replace("PKG", str(d))), res.err
    assert res.stdout == b""


def test_render_is_listed_in_help(binaries):
    res = client("--help")
    assert "  render   apply a package's Kptfile pipeline in place" in res.out
    res = client("render", "--help")
    assert res.returncode == 0
    assert res.out.startswith("Usage: runner-client render --addr HOST:PORT [flags] [DIR]\n")


# ------------------------------------------------------------------ kpt's flag forms

def labels_of(res):
    return [i["metadata"].get("labels") for i in yaml.safe_load(res.stdout)["items"]]


def test_short_image_flag_and_function_arguments(multi):
    """kpt fn eval -i IMG -- KEY=VALUE: the arguments become a ConfigMap
    functionConfig; a value keeps its '=' and ','."""
    res = client("eval", "--addr", multi.addr, "-i", "example.com/fn:v1", "-o", "stdout",
                 pkg("app"), "--", "op=set-label", "key=team", "value=a=b,c")
    assert res.returncode == 0, explain(res)
    assert labels_of(res) == [{"team": "a=b,c"}] * 3
    assert '[PASS] "example.com/fn:v1"' in res.err


def test_fn_config_file(multi, tmp_path):
    config = tmp_path / "fn-config.yaml"
    config.write_text("apiVersion: fn.example.com/v1\nkind: SetLabel\nmetadata:\n  name: s\n"
                      "spec:\n  op: set-label\n  key: tier\n  value: web\n")
    res = client("eval", "--addr", multi.addr, "--image", "example.com/fn:v1", "--fn-config",
                 str(config), "-o", "stdout", pkg("app"))
    assert res.returncode == 0, explain(res)
    assert labels_of(res) == [{"tier": "web"}] * 3


@pytest.mark.parametrize("args, message", [
    (["--addr", "ADDR", "-i", "a", "--fn-config", "CONFIG", "--", "k=v"],
     "either with --fn-config or as KEY=VALUE"),
    (["--addr", "ADDR", "-i", "a", "--", "novalue"],
     '"novalue" is not KEY=VALUE (the function\'s arguments after -- are KEY=VALUE)'),
    (["--addr", "ADDR", "-i", "a", "--", "=v"], '"=v" is not KEY=VALUE'),
    (["--addr", "ADDR", "--fn", "a", "--fn-config", "CONFIG"],
     "--fn-config is the functionConfig of one call"),
    (["--addr", "ADDR", "--fn", "a", "--", "k=v"], "-- KEY=VALUE is the functionConfig of one call"),
    (["--addr", "ADDR", "-i", "a", "--fn-config", "/does/not/exist"], "--fn-config /does/not/exist: "),
    (["--exec", "cat", "--addr", "ADDR"], "--exec runs the function here; --addr calls a server"),
    (["--exec", "cat", "-i", "a"], "--exec is the function of one call"),
    (["--exec", " "], "--exec needs a command"),
    (["-i", "a"], "--addr HOST:PORT is required (or --exec CMD to run a local function)"),
])
def test_flag_form_errors_exit_2(multi, tmp_path, args, message):
    config = tmp_path / "c.yaml"
    config.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n")
    args = [str(config) if a == "CONFIG" else multi.addr if a == "ADDR" else a for a in args]
    dash = args.index("--") if "--" in args else len(args)
    res = client("eval", *args[:dash], pkg("app"), *args[dash:])
    assert res.returncode == 2, explain(res)
    assert res.err.startswith("runner-client eval: ") and message in res.err, res.err
    assert res.stdout == b""


def test_exec_runs_a_local_function_in_place(tmp_path):
    d = copy_app(tmp_path)
    res = client("eval", "--exec", fn("multi-fn.py"), "--results-dir", str(tmp_path / "r"),
                 str(d), "--", "op=set-label", "key=team", "value=shop")
    assert res.returncode == 0, explain(res)
    assert f'[RUNNING] "{fn("multi-fn.py")}"\n[PASS] "{fn("multi-fn.py")}" in ' in res.err
    assert "    \"op set-label: 3 items\"\n" in res.err
    docs = list(yaml.safe_load_all((d / "resources.yaml").read_text()))
    assert all(doc["metadata"]["labels"] == {"team": "shop"} for doc in docs)
    assert "kind: FunctionResultList" in (tmp_path / "r" / "results.yaml").read_text()


def test_exec_failure_is_judged_as_the_wrapper_server_judges_it(multi):
    """The same function, failing, through --exec and through a wrapper
    server: the same error, but for the function's name (the command here,
    the image there)."""
    def error_lines(res, name):
        return [l.replace(name, "NAME") for l in res.err.splitlines() if l.startswith("  ")]
    local = client("eval", "--exec", fn("multi-fn.py"), "-o", "stdout", pkg("app"), "--", "op=fail")
    served = client("eval", "--addr", multi.addr, "-i", "example.com/multi:v1", "-o", "stdout",
                    pkg("app"), "--", "op=fail")
    assert local.returncode == served.returncode == 1, explain(local)
    mine = error_lines(local, fn("multi-fn.py"))
    assert mine and mine == error_lines(served, "example.com/multi:v1"), (local.err, served.err)
    assert mine[0] == ('  Error: INTERNAL: failed to evaluate function "NAME" with structured '
                       'results: [error]: fail was asked for and stderr: op fail: 3 items'), mine


def test_exec_timeout_kills_the_function(tmp_path):
    pidfile = tmp_path / "pid"
    script = tmp_path / "slow.sh"
    script.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 30\n")
    script.chmod(0o755)
    t0 = time.monotonic()
    res = client("eval", "--exec", str(script), "--timeout", "500ms", pkg("app"))
    assert time.monotonic() - t0 < 10
    assert res.returncode == 1, explain(res)
    assert "  Error: DEADLINE_EXCEEDED: the function did not answer within --timeout\n" in res.err
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_exec_interrupted_kills_the_function(tmp_path):
    """Ctrl-C reaches our process group only; the function runs in its own,
    and is killed with the run rather than left behind."""
    pidfile = tmp_path / "pid"
    script = tmp_path / "slow.sh"
    script.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 30\n")
    script.chmod(0o755)
    proc = subprocess.Popen([CLIENT_BIN, "eval", "--exec", str(script), pkg("app")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 5
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 1, err
    assert b"  Error: CANCELLED: interrupted (SIGINT)\n" in err
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


# ------------------------------------------------------------------ errors that name the mistake

@pytest.mark.parametrize("cmd", [["eval", "-i", "a", pkg("app")], ["health"]], ids=["eval", "health"])
@pytest.mark.parametrize("addr", ["9446", "localhost", "localhost:", "localhost:99999", ":9446"])
def test_addr_without_host_or_port_is_a_usage_error(binaries, cmd, addr):
    """It was UNAVAILABLE, exit 1, as if a server were down."""
    res = client(cmd[0], "--addr", addr, *cmd[1:])
    assert res.returncode == 2, explain(res)
    assert res.err == (f'runner-client {cmd[0]}: invalid address "{addr}": want HOST:PORT, '
                       "e.g. localhost:9446\n"), res.err


def server_cli(*args):
    res = run_cli([SERVER_BIN, *args], timeout=10)
    return res.returncode, res.stderr.decode()


@pytest.mark.parametrize("args, message", [
    # one dash: named as the flag it looks like, not blamed on the command
    (["-port", "9446", "--", "cat"], "wrapper-server: unknown flag -port: flags take two dashes (--port)\n"),
    (["-verbosity=3", "--", "cat"],
     "wrapper-server: unknown flag -verbosity: flags take two dashes (--verbosity)\n"),
    (["-x", "--", "cat"], "wrapper-server: unknown flag -x (see --help)\n"),
    (["--nope", "1", "--", "cat"], "wrapper-server: unknown flag --nope (see --help)\n"),
    # a word before --: that is the function's command
    (["cat"], 'wrapper-server: unexpected argument "cat": the function\'s command goes after "--"\n'),
    (["--address", "localhost", "--", "cat"],
     'wrapper-server: invalid --address "localhost": want an IP address such as 127.0.0.1 or ::1 '
     "(default: all addresses)\n"),
])
def test_wrapper_server_flag_errors(binaries, args, message):
    rc, err = server_cli(*args)
    assert (rc, err) == (2, message)


def test_port_in_use_names_the_program_and_the_address(start_server):
    srv = start_server(["cat"])
    rc, err = server_cli("--port", str(srv.port), "--", "cat")
    assert rc == 1
    assert err.endswith(f"wrapper-server: cannot listen on :{srv.port}: Address already in use\n"), err
    rc, err = server_cli("--address", "127.0.0.1", "--port", str(srv.port), "--", "cat")
    assert err.endswith(f"wrapper-server: cannot listen on 127.0.0.1:{srv.port}: "
                        "Address already in use\n"), err
    res = run_cli([CLIENT_BIN, "serve", "--port", str(srv.port), "--disable-runtimes", "pod"])
    assert res.returncode == 1
    assert res.stderr.decode().endswith(
        f"runner-client serve: cannot listen on :{srv.port}: Address already in use\n"), res.stderr


@pytest.mark.parametrize("program", ["wrapper-server", "serve"])
def test_address_binds_one_address(start_server, program):
    """--address 127.0.0.1: served there, refused on the rest of loopback
    (127.0.0.2, ::1); --verbosity and --log-level are the same setting."""
    if program == "wrapper-server":
        srv = start_server(["cat"], options=["--address", "127.0.0.1", "--log-level", "3"])
    else:
        srv = start_server([], binary=CLIENT_BIN, argv=[
            "serve", "--port", "{port}", "--address", "127.0.0.1", "--verbosity", "3",
            "--disable-runtimes", "pod"])
    assert tcp_state(srv.port, "127.0.0.1") == "open"
    assert tcp_state(srv.port, "127.0.0.2") == "refused"
    if ipv6_loopback_available():
        assert tcp_state(srv.port, "::1") == "refused"
    assert f"Listening on 127.0.0.1:{srv.port}" in srv.stderr()


@pytest.mark.parametrize("flag", ["--wrapper-server-image", "--wrapper-image"])
def test_pod_render_takes_wrapper_server_image(binaries, flag):
    res = client("pod", "render", "--image", "example.com/fn:v1", flag, "example.com/ws:v1",
                 "--digest", "sha256:" + "0" * 64, "--", "fn")
    assert res.returncode == 0, explain(res)
    assert "image: example.com/ws:v1" in res.out


def test_pod_render_usage_shows_the_wrapper_image_as_required(binaries):
    res = client("pod", "--help")
    assert res.out.startswith("Usage: runner-client pod render --image IMG --wrapper-server-image W "
                              "ENTRYPOINT [flags]\n"), res.out


def test_embed_refuses_a_dynamically_linked_server(tmp_path):
    """The function image has its own libraries, or none: a dynamic server
    would not start in it. Refused before anything is read."""
    res = run_cli([sys.executable, os.path.join(ROOT, "images", "embed"), "--wrapper", SERVER_BIN,
                   str(tmp_path / "no-source"), str(tmp_path / "out")])
    assert res.returncode == 1
    err = res.stderr.decode()
    assert err.startswith(f"embed: {SERVER_BIN}: dynamically linked (it needs /"), err
    assert err.endswith("embed the static server: make static, then --wrapper "
                        "build/static/wrapper-server\n"), err
    assert not (tmp_path / "out").exists()


def test_embed_takes_a_static_server(tmp_path):
    """A static ELF (here a tiny one) passes the check: the next error is
    about the source."""
    src = tmp_path / "tiny.c"
    src.write_text("void _start(void) { for (;;); }\n")
    tiny = tmp_path / "tiny"
    subprocess.run(["cc", "-static", "-nostdlib", "-o", str(tiny), str(src)], check=True)
    res = run_cli([sys.executable, os.path.join(ROOT, "images", "embed"), "--wrapper", str(tiny),
                   str(tmp_path / "no-source"), str(tmp_path / "out")])
    assert res.returncode == 1
    assert "not an OCI image layout" in res.stderr.decode(), res.stderr


# ------------------------------------------------------------------ help, man pages, completion

COMMANDS = ["eval", "render", "health", "image", "pod", "serve"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help_command_is_the_commands_help(binaries, cmd):
    via_help = client("help", cmd)
    direct = client(cmd, "--help")
    assert via_help.returncode == direct.returncode == 0, explain(via_help)
    assert via_help.stdout == direct.stdout and via_help.stdout.startswith(b"Usage: runner-client ")


def test_help_of_an_unknown_command(binaries):
    res = client("help", "nope")
    assert res.returncode == 2
    assert res.err == 'runner-client: unknown command "nope" (see --help)\n'


@pytest.fixture(scope="module")
def cli_docs(binaries, tmp_path_factory):
    if not shutil.which("help2man"):
        pytest.skip("help2man is not installed (make deps-build installs it)")
    out = tmp_path_factory.mktemp("cli-docs")
    subprocess.run([os.path.join(ROOT, "scripts", "cli-docs.sh"), os.path.dirname(os.path.dirname(CLIENT_BIN)),
                    str(out)], check=True, timeout=120)
    return out


def test_man_pages_come_from_help(cli_docs):
    pages = sorted(os.listdir(cli_docs / "man1"))
    assert pages == sorted(["wrapper-server.1", "runner-client.1"] +
                           [f"runner-client-{c}.1" for c in COMMANDS])
    render = (cli_docs / "man1" / "runner-client-render.1").read_text()
    assert ".SH NAME\nrunner-client-render \\- apply a package's Kptfile pipeline in place, " \
        "as kpt fn render\n" in render, render[:600]
    assert "\\fB\\-\\-results\\-dir\\fR DIR" in render
    eval_page = (cli_docs / "man1" / "runner-client-eval.1").read_text()
    # every usage line is a line of the synopsis
    assert eval_page.count("\n.br\n.B runner-client\n") >= 3, eval_page[:1500]
    ws = (cli_docs / "man1" / "wrapper-server.1").read_text()
    assert "\\fB\\-\\-address\\fR IP" in ws


def complete(cli_docs, program, *words):
    """What bash completes for `program words...` (the last word is the one
    being completed), with the generated completion loaded."""
    script = (f'source {cli_docs}/bash-completion/{program}; '
              f'COMP_WORDS=({program} {" ".join(words)}); COMP_CWORD={len(words)}; '
              f'_{program.replace("-", "_")}; printf "%s\\n" "${{COMPREPLY[@]}}"')
    res = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, check=True, timeout=10)
    return res.stdout.decode().split()


def test_bash_completion_comes_from_help(cli_docs):
    assert complete(cli_docs, "runner-client", "re") == ["render"]
    assert complete(cli_docs, "runner-client", "help", "ev") == ["eval"]
    assert complete(cli_docs, "runner-client", "render", "--ad") == ["--addr"]
    assert complete(cli_docs, "runner-client", "eval", "--fn") == ["--fn", "--fn-config"]
    assert complete(cli_docs, "runner-client", "pod", "--wrapper") == ["--wrapper-server-image"]
    assert complete(cli_docs, "wrapper-server", "--addr") == ["--address"]
    assert complete(cli_docs, "wrapper-server", "--", "--addr") == []   # the function's words


def test_aliases_do_not_multiply_the_kptfile_check(multi, tmp_path):
    """20,000 steps that are one aliased step whose selectors are 20,000
    aliases: 400 million (step, selector) pairs if each alias were walked
    again; each node is checked once, and the selectors are then refused."""
    n = 20000
    selectors = "[&s {kind: Deployment}" + ", *s" * (n - 1) + "]"
    path = kptfile(tmp_path, f"pipeline:\n  mutators: [&f {{image: a, selectors: {selectors}}}"
                             + ", *f" * (n - 1) + "]\n")
    res, cpu = client_with_cpu(tmp_path, "eval", "--addr", multi.addr, "--pipeline", str(path),
                               pkg("app"))
    assert res.returncode == 2, explain(res)
    # the YAML reader's alias bound (lib/krm/yaml_limits) may refuse it first
    assert ("pipeline.mutators[0]: selectors and exclude are not supported" in res.err
            or "aliases expand to more than the document's own size" in res.err), res.err
    assert cpu < 3 * SLOW, f"{cpu:.2f} s of CPU"


NO_SERVER = "127.0.0.1:1"   # loopback, nothing listens: the call fails at once


def client_with_cpu(tmp_path, *args):
    """runner_client's result and the CPU seconds the client used: what a
    cost test bounds (wall-clock time also counts whatever else the cores
    run, a parallel test worker's included)."""
    usage = PeakUsage(tmp_path / "usage")
    res = run_cli(usage.argv([CLIENT_BIN, *args]), timeout=30)
    res.out = res.stdout.decode("utf-8", "replace")
    res.err = res.stderr.decode("utf-8", "replace")
    return res, usage.read()[0]


def test_a_large_config_map_costs_linear_time(binaries, tmp_path):
    """A 1 MB Kptfile whose configMap has 100,000 entries: each entry was
    looked up among the others (66 s); now the step is ready at once and
    only the call fails."""
    entries = ", ".join(f"k{i}: v" for i in range(100000))
    path = kptfile(tmp_path, f"pipeline:\n  mutators: [{{image: a, configMap: {{{entries}}}}}]\n")
    res, cpu = client_with_cpu(tmp_path, "eval", "--addr", NO_SERVER, "--pipeline", str(path),
                               pkg("app"))
    assert cpu < 5 * SLOW, f"{cpu:.2f} s of CPU (66 s before)"
    assert res.returncode == 1 and "UNAVAILABLE" in res.err, explain(res)


def test_aliased_steps_are_excessive_aliasing(binaries, tmp_path):
    """3,000 steps that are one aliased step with a 3,000-entry configMap:
    41 KB of Kptfile that held 9 million entries (2.9 GB); refused while
    the Kptfile is read by the YAML reader's alias bound (lib/krm/
    yaml_limits, every YAML input's), naming the file and line, before any
    call. It is the one bound: the pipeline no longer counts entries."""
    n = 3000
    entries = ", ".join(f"k{i}: v" for i in range(n))
    path = kptfile(tmp_path, f"pipeline:\n  mutators: [&f {{image: a, configMap: {{{entries}}}}}"
                             + ", *f" * (n - 1) + "]\n")
    usage = PeakUsage(tmp_path / "usage")
    res = run_cli(usage.argv([CLIENT_BIN, "eval", "--addr", NO_SERVER, "--pipeline", str(path),
                              pkg("app")]))
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert err == (f"runner-client eval: --pipeline {path}: line 6: aliases expand to more than "
                   "the document's own size (or 1 MiB for a smaller one)\n"), err
    cpu, rss = usage.read()
    assert cpu < 5 * SLOW, f"{cpu:.2f} s of CPU"
    if not SERVER_WRAPPER:
        assert rss < 64, f"peak RSS {rss:.0f} MiB"


def aliased_steps(n_entries, n_aliases):
    keys = [f"k{i}" for i in range(n_entries)]
    return ("pipeline:\n  mutators: [&f {image: a, configMap: {" + ", ".join(f"{k}: v" for k in keys)
            + "}}" + ", *f" * n_aliases + "]\n")


def test_aliased_steps_within_the_alias_bound_cost_what_its_text_allows(binaries, tmp_path):
    """Aliases within the YAML reader's bound (their copies weigh no more
    than 1 MiB for a small Kptfile) make steps whatever they number: 150
    aliases of a 1,000-entry step (150,000 entries, which the pipeline's
    own count used to refuse) run, in the memory a 1 MiB Kptfile without
    aliases would take; 300 are refused as the bomb above."""
    path = kptfile(tmp_path, aliased_steps(1000, 150))
    usage = PeakUsage(tmp_path / "usage")
    res = run_cli(usage.argv([CLIENT_BIN, "eval", "--addr", NO_SERVER, "--pipeline", str(path),
                              pkg("app")]))
    err = res.stderr.decode()
    assert res.returncode == 1 and "UNAVAILABLE" in err, err   # the first call was made
    cpu, rss = usage.read()
    if not SERVER_WRAPPER:
        assert rss < 150, f"peak RSS {rss:.0f} MiB"
    path = kptfile(tmp_path, aliased_steps(1000, 300))
    res = client("eval", "--addr", NO_SERVER, "--pipeline", str(path), pkg("app"))
    assert res.returncode == 2, explain(res)
    assert res.err.endswith("line 6: aliases expand to more than the document's own size "
                            "(or 1 MiB for a smaller one)\n"), res.err


def test_config_path_files_together_are_bounded(binaries, tmp_path):
    """One configPath named by many steps is read for each: together they
    count against --max-message, as a package's files do."""
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  pad: " + "x" * 900 + "\n"
    (tmp_path / "c.yaml").write_text(config)
    steps = "".join("  - image: a\n    configPath: c.yaml\n" for _ in range(10))
    path = kptfile(tmp_path, "pipeline:\n  mutators:\n" + steps)
    res = client("eval", "--addr", NO_SERVER, "--max-message", "5000", "--pipeline", str(path),
                 pkg("app"))
    assert res.returncode == 2, explain(res)
    assert f"pipeline.mutators[{5000 // len(config)}]: configPath {tmp_path}/c.yaml: " in res.err
    assert res.err.endswith(": the pipeline's configPath files together are more than a request "
                            "may carry (--max-message; a file named by N steps counts N times)\n"), \
        res.err


@pytest.mark.parametrize("args, message", [
    (["eval", "--kube", "-i", "example.com/fn:v1", "--fn-config", "c.yaml", pkg("app"), "--", "k=v"],
     "runner-client eval: give the functionConfig either with --fn-config or as KEY=VALUE"),
    (["eval", "--kube", "-i", "example.com/fn:v1", pkg("app"), "--", "novalue"],
     'runner-client eval: "novalue" is not KEY=VALUE (the function\'s arguments after -- are '
     "KEY=VALUE)\n"),
    (["pod", "create", "--image", "example.com/fn:v1", "--", "k=v"],
     "runner-client pod create: -o, --results-dir, --fn-config and -- KEY=VALUE are for eval\n"),
])
def test_eval_kube_takes_the_same_function_config(binaries, tmp_path, args, message):
    """eval --kube's functionConfig comes as eval's; these mistakes are
    refused before any cluster is asked (none is configured here)."""
    env = dict(os.environ, KUBECONFIG=str(tmp_path / "none"), WRAPPER_SERVER_IMAGE="example.com/ws:v1")
    res = subprocess.run([CLIENT_BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, timeout=10)
    assert res.returncode == 2, res.stderr
    assert res.stderr.decode().startswith(message), res.stderr
