"""serve's sandbox (--sandbox auto|strict|off) against hostile functions.

Each attack runs under auto, strict and off: off shows that the attack works
here (so each test can fail), auto and strict that the sandbox stops it. The
function reports on stderr (the call's log) whether its attack worked, then
answers its input, so every call succeeds and only what it could do differs.
The runner's secrets are fakes placed in the test's directory, which a
sandboxed function cannot see any more than /var/run/secrets: Landlock's
view is a list of allowed roots, and the test's directory is not one."""
import os
import signal
import socket
import subprocess
import time

import pytest

from krmtest import CLIENT_BIN, simple_rl

MODES = ["auto", "strict", "off"]
# The attacks run on a fresh sandbox per call (--sandbox-keep=false) and on a
# sandbox kept per function (the default): "auto+keep" is --sandbox auto
# --sandbox-keep.
HOSTILE = MODES + ["auto+keep", "strict+keep"]
PY = "/usr/bin/python3"   # not a pyenv shim under /root, which functions cannot read

# The function: the attack in a subshell, its output on stderr, then its
# verdict, then the input answered unchanged. `exec cat`, not `cat`: the shell
# is PID 1 of its namespace, so an attack's orphans become its zombies and may
# still count against --sandbox-processes when it would fork (CI saw "Cannot
# fork" after the fork bomb once, under load).
FUNCTION = """#!/bin/sh
if ( {attack} ) >&2; then echo ATTACK-WORKED >&2; else echo ATTACK-FAILED >&2; fi
exec cat
"""


def function_config(tmp_path, annotations=None):
    """fc.yaml: FunctionConfig fn running functions/fn, with annotations."""
    cfg = tmp_path / "fc.yaml"
    notes = "".join(f"    {k}: {v}\n" for k, v in (annotations or {}).items())
    cfg.write_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                   "metadata:\n  name: fn\n" + ("  annotations:\n" + notes if notes else "") +
                   "spec:\n  image: fn\n  binaryExecutor:\n    path: fn\n    tags: [v1]\n")
    return cfg


def serve(start_server, tmp_path, mode, attack, *flags, env=None, annotations=None, wrapper=None):
    mode, _, keep = mode.partition("+")
    flags = (*flags, "--sandbox-keep" if keep else "--sandbox-keep=false")
    functions = tmp_path / "functions"
    functions.mkdir(exist_ok=True)
    fn = functions / "fn"
    fn.write_text(FUNCTION.format(attack=attack))
    fn.chmod(0o755)
    cfg = function_config(tmp_path, annotations)
    return start_server([], binary=CLIENT_BIN, env=env, wrapper=wrapper, argv=[
        "serve", "--port", "{port}", "--function-config", str(cfg), "--functions", str(functions),
        "--disable-runtimes=pod", "--sandbox", mode, *flags])


def attack(start_server, tmp_path, mode, script, *flags, env=None, calls=1, annotations=None):
    """Runs script as the function's attack; returns (worked, log) of the
    last call. With --prespawn 0 unless flags say otherwise: a process
    started for the next call would attack again meanwhile."""
    if "--prespawn" not in flags:
        flags = (*flags, "--prespawn", "0")
    srv = serve(start_server, tmp_path, mode, script, *flags, env=env, annotations=annotations)
    rl = simple_rl("victim")
    for _ in range(calls):
        resp = srv.evaluate(rl, image="fn:v1")
        assert resp.resource_list == rl
    log = resp.log.decode()
    assert ("ATTACK-WORKED" in log) != ("ATTACK-FAILED" in log), log
    return "ATTACK-WORKED" in log, log


def expect(mode, worked, log):
    if mode == "off":
        assert worked, f"the attack should work without the sandbox: {log}"
    else:
        assert not worked, f"the sandbox ({mode}) let the attack through: {log}"


@pytest.fixture
def victim():
    """A process of ours, outside any sandbox, with a secret in its environment."""
    proc = subprocess.Popen(["sleep", "60"], env={"VICTIM_SECRET": "s3cr3t-environ"})
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("mode", HOSTILE)
def test_reads_the_service_account_token(start_server, tmp_path, mode):
    sa = tmp_path / "var" / "run" / "secrets" / "kubernetes.io" / "serviceaccount"
    sa.mkdir(parents=True)
    (sa / "token").write_text("FAKE-SA-TOKEN")
    worked, log = attack(start_server, tmp_path, mode, f"cat {sa}/token")
    expect(mode, worked, log)
    assert ("FAKE-SA-TOKEN" in log) == (mode == "off")


@pytest.mark.parametrize("mode", HOSTILE)
def test_a_prestarted_function_is_sandboxed_too(start_server, tmp_path, mode):
    """The second call is served by a process started before it (--prespawn)."""
    (tmp_path / "token").write_text("FAKE-SA-TOKEN")
    worked, log = attack(start_server, tmp_path, mode, f"cat {tmp_path}/token", "--prespawn", "1",
                         calls=2)
    expect(mode, worked, log)


@pytest.mark.parametrize("mode", HOSTILE)
def test_reads_the_runners_docker_config(start_server, tmp_path, mode):
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "config.json").write_text('{"auths": {"r.example": {"auth": "FAKE-REGISTRY-AUTH"}}}')
    worked, log = attack(start_server, tmp_path, mode, f"cat {docker}/config.json",
                         "--docker-config", str(docker / "config.json"))
    expect(mode, worked, log)
    assert ("FAKE-REGISTRY-AUTH" in log) == (mode == "off")


@pytest.mark.parametrize("mode", HOSTILE)
def test_connects_to_a_loopback_port(start_server, tmp_path, mode):
    """The API server's address or any other service on loopback."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        script = f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
        worked, log = attack(start_server, tmp_path, mode, script)
    expect(mode, worked, log)


@pytest.mark.parametrize("mode", HOSTILE)
def test_writes_outside_its_temporary_directory(start_server, tmp_path, mode):
    target = tmp_path / "outside.txt"
    worked, log = attack(start_server, tmp_path, mode, f"echo pwned > {target}")
    # Under the sandbox the path may exist in the function's private /tmp
    # (the directories bound back into it are made there), so the write can
    # succeed: what must not happen is the file on the host.
    if mode == "off":
        assert worked, log
    assert target.exists() == (mode == "off"), log


@pytest.mark.parametrize("mode", HOSTILE)
def test_a_granted_directory_with_a_mount_beneath_it(start_server, tmp_path, mode):
    """A directory granted with --sandbox-read that has a mount beneath it
    (a volume in a pod, a test's tmpfs): in the function's user namespace
    that mount is locked to it, so binding the directory alone failed
    (EINVAL) and the namespaces layer was lost (strict would not start).
    Now it is bound with what is beneath it, all read-only: the function
    reads the mounted file and cannot write there. serve runs in its own
    mount namespace, where the tmpfs is mounted, so the host sees none."""
    from test_observability import curl
    shared = tmp_path / "shared"
    sub = shared / "sub"
    sub.mkdir(parents=True)
    mount_first = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                   'mount -t tmpfs none "$0" && echo mounted-file > "$0/file" && exec "$@"', str(sub)]
    script = f"grep -q mounted-file {sub}/file && echo READ-OK; touch {sub}/written"
    srv = serve(start_server, tmp_path, mode, script, "--sandbox-read", str(shared),
                "--prespawn", "0", wrapper=mount_first)
    resp = srv.evaluate(simple_rl("victim"), image="fn:v1")
    log = resp.log.decode()
    assert "READ-OK" in log, log
    expect(mode, "ATTACK-WORKED" in log, log)
    code, text = curl(srv.port, "/metrics")
    assert f'krm_sandbox_layer{{layer="namespaces"}} {0 if mode == "off" else 1}\n' in text, text


@pytest.mark.parametrize("mode", HOSTILE)
def test_escapes_the_call_with_setsid_and_a_double_fork(start_server, tmp_path, mode):
    """A process that left the function's group and parent outlives the call
    without the sandbox (re-parented to the system's init, out of serve's
    reach); under it, it dies with the function, PID 1 of its namespace."""
    shared = tmp_path / "shared"
    shared.mkdir()
    marker = shared / "marker"
    script = f"(setsid sh -c 'sleep 1; echo escaped > {marker}' &) ; true"
    worked, log = attack(start_server, tmp_path, mode, script, "--sandbox-write", str(shared))
    assert worked, log   # starting it is allowed; outliving the call is the attack
    time.sleep(2)
    assert marker.exists() == (mode == "off"), "off: the escape should work; else: it should not"


@pytest.mark.parametrize("mode", HOSTILE)
def test_fork_bomb_is_bounded(start_server, tmp_path, mode):
    """10,000 children (exiting at once, never reaped: each holds a PID);
    under the sandbox --sandbox-processes 300 stops them."""
    script = (f"{PY} -c \"import os, sys\nn = 0\nfor i in range(10000):\n"
              "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
              "    if pid == 0:\n        os._exit(0)\n    n += 1\n"
              "print('forked', n)\nsys.exit(n < 10000)\"")
    worked, log = attack(start_server, tmp_path, mode, script, "--sandbox-processes", "300")
    expect(mode, worked, log)
    if mode != "off":
        forked = int(log.split("forked ")[1].split()[0])
        assert 200 < forked < 300, log


@pytest.mark.parametrize("mode", HOSTILE)
def test_allocates_4_gib(start_server, tmp_path, mode):
    """Private memory (malloc, a Go heap): RLIMIT_DATA does not count shared
    mappings (docs/sandbox.md says so)."""
    script = f"{PY} -c \"import mmap; mmap.mmap(-1, 4 << 30, flags=mmap.MAP_PRIVATE)\""
    worked, log = attack(start_server, tmp_path, mode, script, "--sandbox-memory", "512")
    expect(mode, worked, log)


@pytest.mark.parametrize("mode", HOSTILE)
def test_ptraces_a_process_outside(start_server, tmp_path, mode, victim):
    script = (f"{PY} -c \"import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              f"ok = libc.ptrace(16, {victim}, 0, 0) == 0\n"
              f"ok and libc.ptrace(17, {victim}, 0, 0)\nsys.exit(not ok)\"")
    worked, log = attack(start_server, tmp_path, mode, script)
    expect(mode, worked, log)


@pytest.mark.parametrize("mode", HOSTILE)
def test_reads_another_process_environ(start_server, tmp_path, mode, victim):
    """Another process's /proc/PID/environ; and /proc/1 is the function itself."""
    worked, log = attack(start_server, tmp_path, mode,
                         f"cat /proc/{victim}/environ && echo && cat /proc/1/comm")
    expect(mode, worked, log)
    assert ("s3cr3t-environ" in log) == (mode == "off")


@pytest.mark.parametrize("mode", HOSTILE)
def test_mounts(start_server, tmp_path, mode):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        worked, log = attack(start_server, tmp_path, mode, f"mount -t tmpfs none {mnt}")
    finally:
        while subprocess.run(["umount", str(mnt)], stderr=subprocess.DEVNULL).returncode == 0:
            pass
    expect(mode, worked, log)


@pytest.mark.parametrize("mode", HOSTILE)
def test_creates_a_user_namespace(start_server, tmp_path, mode):
    worked, log = attack(start_server, tmp_path, mode, "unshare -U true")
    expect(mode, worked, log)


@pytest.mark.parametrize("mode", HOSTILE)
def test_a_function_doing_its_job_is_answered(start_server, tmp_path, mode):
    """Reads the system, writes its temporary directory, answers."""
    script = 'ls /usr/bin >/dev/null && echo scratch > "${TMPDIR:-/tmp}/x" && cat "${TMPDIR:-/tmp}/x"'
    worked, log = attack(start_server, tmp_path, mode, script)
    assert worked and "scratch" in log, log


def test_strict_refuses_without_user_namespaces_and_auto_uses_the_rest(start_server, tmp_path):
    """In a user namespace allowing no nested one: strict names the missing
    layer and what would allow it; auto logs it and still hides the secrets."""
    jail = ["unshare", "-U", "-r", "sh", "-c",
            'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "jail"]
    probe = subprocess.run([*jail, "unshare", "-U", "true"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("cannot turn user namespaces off here")
    serve(start_server, tmp_path, "strict", "true")   # writes the config
    out = subprocess.run([*jail, CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod",
                          "--function-config", str(tmp_path / "fc.yaml"),
                          "--functions", str(tmp_path / "functions"), "--sandbox", "strict"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 2, out.stderr
    assert "--sandbox strict: unavailable here: namespaces, which needs unprivileged user " \
           "namespaces" in out.stderr
    sa = tmp_path / "token"
    sa.write_text("FAKE-SA-TOKEN")
    functions = tmp_path / "functions"
    (functions / "fn").write_text(FUNCTION.format(attack=f"cat {sa}"))
    srv = start_server([], binary=CLIENT_BIN, wrapper=jail, argv=[
        "serve", "--port", "{port}", "--function-config", str(tmp_path / "fc.yaml"),
        "--functions", str(functions), "--disable-runtimes=pod", "--sandbox", "auto"])
    resp = srv.evaluate(simple_rl("x"), image="fn:v1")
    assert "ATTACK-FAILED" in resp.log.decode() and "FAKE-SA-TOKEN" not in resp.log.decode()
    assert "functions run with rlimits, no_new_privs, landlock, seccomp; unavailable: " \
           "namespaces (make the shared network namespace: " in srv.stderr()


# ---- a function ended by a limit is told so --------------------------------

LIMITS = [
    ("cpu", "while :; do :; done", ["--sandbox-cpu", "1"],
     "function exceeded its CPU limit of 1 s (--sandbox-cpu)"),
    ("memory", f"exec {PY} -c 'import mmap; mmap.mmap(-1, 4 << 30, flags=mmap.MAP_PRIVATE)'",
     ["--sandbox-memory", "512"], "function exceeded its memory limit of 512 MiB (--sandbox-memory)"),
    ("file-size", 'exec head -c 3000000 /dev/zero > "$TMPDIR/big"', ["--sandbox-file-size", "1"],
     "function exceeded its file size limit of 1 MiB (--sandbox-file-size)"),
    ("open-files", f"exec {PY} -c 'import os; [os.open(\"/dev/null\", 0) for _ in range(100)]'",
     ["--sandbox-open-files", "20"], "function exceeded its open files limit of 20 (--sandbox-open-files)"),
    ("processes", "i=0; while [ $i -lt 400 ]; do sleep 30 & i=$((i+1)); done; exit 3",
     ["--sandbox-processes", "300"], "function exceeded its processes limit of 300 (--sandbox-processes)"),
]


@pytest.mark.parametrize("mode", HOSTILE)
@pytest.mark.parametrize("name,script,flags,words", LIMITS, ids=[x[0] for x in LIMITS])
def test_a_function_ended_by_a_limit_is_told_which(start_server, tmp_path, mode, name, script,
                                                    flags, words):
    fn = f"#!/bin/sh\ncat >/dev/null\n{script}\n"
    srv = serve(start_server, tmp_path, mode, "true", *flags, "--prespawn", "0")
    (tmp_path / "functions" / "fn").write_text(fn)
    if mode == "off" and name in ("cpu", "memory"):
        return   # it would run until the deadline, or take the memory
    err = srv.evaluate_error(simple_rl("x"), image="fn:v1", timeout=30)
    assert err.code().name == "INTERNAL"
    assert (words in err.details()) == (mode != "off"), err.details()
    assert err.details().startswith("failed to parse the output of function "), err.details()


@pytest.mark.parametrize("mode", HOSTILE)
def test_a_refused_call_keeps_the_functions_stderr(start_server, tmp_path, mode):
    (tmp_path / "token").write_text("FAKE-SA-TOKEN")
    srv = serve(start_server, tmp_path, mode, "true", "--prespawn", "0")
    (tmp_path / "functions" / "fn").write_text(
        f"#!/bin/sh\ncat >/dev/null\nmount -t tmpfs none /mnt || exit 1\numount /mnt\nexit 1\n")
    err = srv.evaluate_error(simple_rl("x"), image="fn:v1")
    if mode == "off":
        assert "mount:" not in err.details(), err.details()
    else:
        assert "mount: /mnt: permission denied" in err.details(), err.details()


@pytest.fixture
def world_readable_dir():
    """A directory another user can use (pytest's are root's, mode 0700)."""
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="krm-sandbox-test-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("mode", MODES)
def test_an_unprivileged_runner_sandboxes_too(start_server, world_readable_dir, mode):
    """serve as nobody: every layer works without privilege here (strict
    starts), and the token it can read is hidden from its functions."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    from pathlib import Path
    d = Path(world_readable_dir)
    (d / "token").write_text("FAKE-SA-TOKEN")
    functions = d / "functions"
    functions.mkdir(mode=0o755)
    fn = functions / "fn"
    fn.write_text(FUNCTION.format(attack=f"cat {d}/token"))
    fn.chmod(0o755)
    (d / "fc.yaml").write_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                               "metadata:\n  name: fn\nspec:\n  image: fn\n"
                               "  binaryExecutor:\n    path: fn\n    tags: [v1]\n")
    for p in d.iterdir():
        os.chmod(p, os.stat(p).st_mode | 0o044)
    nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    srv = start_server([], binary=CLIENT_BIN, wrapper=nobody, argv=["serve", "--port", "{port}", "--function-config", str(d / "fc.yaml"),
                             "--functions", str(functions), "--disable-runtimes=pod",
                             "--sandbox", mode, "--prespawn", "0"])
    log = srv.evaluate(simple_rl("x"), image="fn:v1").log.decode()
    expect(mode, "ATTACK-WORKED" in log, log)
    if mode != "off":
        assert "functions run with namespaces, proc, rlimits, no_new_privs, landlock, seccomp" \
            in srv.stderr()


@pytest.mark.parametrize("mode", MODES)
def test_metrics_tell_the_layers_in_use(start_server, tmp_path, mode):
    from test_observability import curl
    srv = serve(start_server, tmp_path, mode, "true")
    code, text = curl(srv.port, "/metrics")
    assert code == 200
    layers = "none" if mode == "off" else "namespaces, proc, rlimits, no_new_privs, landlock, seccomp"
    assert f'krm_sandbox_info{{mode="{mode}",layers="{layers}"}} 1\n' in text, text
    for layer in ["namespaces", "proc", "rlimits", "no_new_privs", "landlock", "seccomp"]:
        value = 0 if mode == "off" else 1
        assert f'krm_sandbox_layer{{layer="{layer}"}} {value}\n' in text, text


@pytest.mark.parametrize("mode", MODES)
def test_debug_sandbox_shows_the_layers_and_limits(start_server, tmp_path, mode):
    import json
    from test_observability import curl
    srv = serve(start_server, tmp_path, mode, "true", "--sandbox-cpu", "77",
                annotations={"fn.kpt.dev/sandbox-network": '"true"'})
    srv.evaluate(simple_rl("x"), image="fn:v1")   # its own settings: a variant
    code, text = curl(srv.port, "/debug/sandbox")
    assert code == 200, text
    view = json.loads(text)
    on = mode != "off"
    assert view["mode"] == mode
    assert view["layers"] == {name: on for name in ["namespaces", "proc", "rlimits",
                                                    "no_new_privs", "landlock", "seccomp"]}
    assert "unavailable" not in view   # every layer works here
    assert view["network"] == ("shared" if on else "the runner's")
    assert view["limits"] == {"memory_mib": 1024, "cpu_seconds": 77, "processes": 1024,
                              "file_size_mib": 1024, "open_files": 1024}
    assert view["distinct_own_settings"] == (1 if on else 0)
    code, text = curl(srv.port, "/debug/sandbox?format=yaml")
    assert code == 400 and "/debug/sandbox takes ?format=json" in text, text


def run_serve(tmp_path, *flags):
    """serve that is expected to refuse its flags: (exit status, stderr)."""
    serve_dir = tmp_path / "functions"
    serve_dir.mkdir(exist_ok=True)
    out = subprocess.run([CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod",
                          "--functions", str(serve_dir), *flags],
                         capture_output=True, text=True, timeout=20)
    return out.returncode, out.stderr


@pytest.mark.parametrize("flags,words", [
    (["--sandbox", "bogus"], 'invalid value "bogus" for --sandbox: want auto, strict or off'),
    (["--sandbox-processes", "10"], 'invalid value "10" for --sandbox-processes: want a whole number 300-'),
    (["--sandbox-memory", "0"], 'invalid value "0" for --sandbox-memory'),
    (["--sandbox-read", "relative/dir"], "--sandbox-read: not an absolute path: relative/dir"),
    (["--sandbox-read", "/nonexistent/x"], "--sandbox-read: /nonexistent/x: No such file or directory"),
    (["--sandbox-write", "/etc/hostname"], "--sandbox-write: /etc/hostname: Not a directory"),
])
def test_bad_sandbox_flags_are_refused_naming_them(tmp_path, flags, words):
    rc, err = run_serve(tmp_path, *flags)
    assert rc == 2 and words in err, err


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_a_secret_the_functions_could_read_is_named(tmp_path, mode):
    """The runner's configuration beneath a root functions may read: a
    warning in auto, a refusal in strict."""
    shared = tmp_path / "shared"
    shared.mkdir()
    docker = shared / "config.json"
    docker.write_text("{}")
    argv = [CLIENT_BIN, "serve", "--port", "0", "--disable-runtimes=pod", "--sandbox", mode,
            "--sandbox-read", str(shared), "--docker-config", str(docker)]
    if mode == "strict":
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        rc, err = out.returncode, out.stderr
    else:
        proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        err = ""
        while "Listening" not in err and proc.poll() is None:
            err += proc.stderr.readline()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        rc = proc.returncode
    words = (f"sandbox: the registry credentials {docker} can be read by functions: it is "
             f"beneath {shared}")
    assert words in err, err
    assert (rc == 2) == (mode == "strict"), err


@pytest.mark.parametrize("mode", HOSTILE)
def test_reads_the_runners_environment(start_server, tmp_path, mode):
    """The runner's environment may hold credentials: a sandboxed function
    gets PATH, the locale, TMPDIR and HOME, and what --sandbox-env names."""
    env = {**os.environ, "RUNNER_SECRET": "FAKE-ENV-TOKEN", "PASSED_ON": "asked-for",
           "LC_ALL": "C"}
    worked, log = attack(start_server, tmp_path, mode, "env >&2; env | grep -q FAKE-ENV-TOKEN",
                         "--sandbox-env", "PASSED_ON", env=env)
    expect(mode, worked, log)
    assert "PASSED_ON=asked-for" in log and "LC_ALL=C" in log and "PATH=" in log, log
    if mode != "off":
        assert {"HOME=/tmp", "TMPDIR=/tmp"} <= set(log.splitlines()), log


# ---- a function's own settings: its FunctionConfig's annotations -----------

@pytest.mark.parametrize("prespawn", ["0", "1"])
@pytest.mark.parametrize("mode", HOSTILE)
def test_a_function_allowed_the_network_by_its_annotation_connects(start_server, tmp_path, mode,
                                                                    prespawn):
    """fn.kpt.dev/sandbox-network: "true" lets this function reach loopback
    (the same attack as test_connects_to_a_loopback_port, which it loses
    without the annotation); with --prespawn 1 the second call is served by
    a process pre-started with the function's own settings."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        script = f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\""
        worked, log = attack(start_server, tmp_path, mode, script, "--prespawn", prespawn,
                             calls=2, annotations={"fn.kpt.dev/sandbox-network": '"true"'})
    assert worked, log


ALLOCATE_800_MIB = (f"{PY} -c 'import mmap; m = mmap.mmap(-1, 800 << 20, "
                    "flags=mmap.MAP_PRIVATE); print(\"allocated\")'")


@pytest.mark.parametrize("annotated", [True, False])
@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_a_functions_memory_annotation_is_its_limit(start_server, tmp_path, mode, annotated):
    """fn.kpt.dev/sandbox-memory: 600Mi under the default --sandbox-memory
    1024: 800 MiB fails, and the answer names the annotation."""
    notes = {"fn.kpt.dev/sandbox-memory": "600Mi"} if annotated else None
    srv = serve(start_server, tmp_path, mode, "true", "--prespawn", "0", annotations=notes)
    (tmp_path / "functions" / "fn").write_text(f"#!/bin/sh\ncat\n{ALLOCATE_800_MIB} >&2\n")
    if not annotated:
        resp = srv.evaluate(simple_rl("x"), image="fn:v1", timeout=30)
        assert "allocated" in resp.log.decode()
        return
    err = srv.evaluate_error(simple_rl("x"), image="fn:v1", timeout=30)
    assert "function exceeded its memory limit of 600 MiB (fn.kpt.dev/sandbox-memory)" \
        in err.details(), err.details()


@pytest.mark.parametrize("annotation,value,words", [
    ("fn.kpt.dev/sandbox-network", '"yes"', 'want "true" or "false", not "yes"'),
    ("fn.kpt.dev/sandbox-memory", '"512"', 'want a size in whole MiB, 1Mi-1024Ti (e.g. "512Mi", '
     '"2Gi"), not "512"'),
    ("fn.kpt.dev/sandbox-memory", '"0Gi"', 'not "0Gi"'),
    ("fn.kpt.dev/sandbox-file-size", '"1.5Gi"', 'not "1.5Gi"'),
    ("fn.kpt.dev/sandbox-cpu", '"-1"', 'want a whole number of seconds 1-1099511627776 in a '
     'string, not "-1"'),
    ("fn.kpt.dev/sandbox-processes", '"10"', "want a whole number 300-4194303"),
    ("fn.kpt.dev/sandbox-open-files", '"99999999999"', "want a whole number 16-1048576"),
    ("fn.kpt.dev/sandbox-open-files", "64", "must be a string (annotations are strings"),
    ("fn.kpt.dev/sandbox-memroy", '"1Gi"', "not a sandbox setting"),
])
def test_a_bad_sandbox_annotation_refuses_the_function_config(tmp_path, annotation, value,
                                                               words):
    cfg = function_config(tmp_path, {annotation: value})
    rc, err = run_serve(tmp_path, "--function-config", str(cfg))
    assert rc == 2, err
    assert f"fc.yaml: document 1 (FunctionConfig \"fn\"): metadata.annotations.{annotation}: " \
        in err and words in err, err


# ---- eval --exec: the local function in the same sandbox ---------------------

def eval_exec(tmp_path, script, *flags):
    """runner-client eval --exec with FUNCTION's attack (or a whole script
    when it starts with #!), on a small list: the CompletedProcess."""
    (tmp_path / "fn").mkdir(exist_ok=True)   # its directory is readable to it
    fn = tmp_path / "fn" / "local-fn"
    fn.write_text(script if script.startswith("#!") else FUNCTION.format(attack=script))
    fn.chmod(0o755)
    rl = tmp_path / "rl.yaml"
    rl.write_bytes(simple_rl("x"))
    return subprocess.run([CLIENT_BIN, "eval", "--exec", str(fn), "--truncate-output=false",
                           *flags, str(rl)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mode", [*MODES, None])
def test_eval_exec_runs_in_the_sandbox_it_is_given(tmp_path, mode):
    """--sandbox MODE as serve's; without any --sandbox flag the function is
    a plain child, as kpt's --exec."""
    (tmp_path / "token").write_text("FAKE-SA-TOKEN")
    out = eval_exec(tmp_path, f"cat {tmp_path}/token", *(["--sandbox", mode] if mode else []))
    assert out.returncode == 0, out.stderr
    assert ("ATTACK-WORKED" in out.stderr) != ("ATTACK-FAILED" in out.stderr), out.stderr
    expect(mode or "off", "ATTACK-WORKED" in out.stderr, out.stderr)


def test_eval_exec_limit_is_named(tmp_path):
    """A limit flag alone means --sandbox auto; the one reached is named."""
    out = eval_exec(tmp_path, f"#!/bin/sh\ncat\n{ALLOCATE_800_MIB} >&2\n", "--sandbox-memory", "600")
    assert out.returncode == 1, out.stderr
    assert "function exceeded its memory limit of 600 MiB (--sandbox-memory)" in out.stderr, \
        out.stderr


@pytest.mark.parametrize("flags,words", [
    (["--sandbox", "sometimes"], 'runner-client eval: invalid value "sometimes" for --sandbox'),
    (["--sandbox-open-files", "1"], 'runner-client eval: invalid value "1" for '
     '--sandbox-open-files: want a whole number 16-'),
])
def test_eval_exec_bad_sandbox_flags_are_refused(tmp_path, flags, words):
    out = eval_exec(tmp_path, "true", *flags)
    assert out.returncode == 2 and words in out.stderr, out.stderr


def test_eval_sandbox_flags_without_exec_are_refused(tmp_path):
    rl = tmp_path / "rl.yaml"
    rl.write_bytes(simple_rl("x"))
    out = subprocess.run([CLIENT_BIN, "eval", "--addr", "127.0.0.1:1", "-i", "fn:v1", "--sandbox",
                          "auto", str(rl)], capture_output=True, text=True, timeout=20)
    assert out.returncode == 2 and "the --sandbox flags are --exec's" in out.stderr, out.stderr


ABSTRACT_MEET = """import errno, socket, sys
name = "\\0krm-sandbox-meet-" + sys.argv[1]
s = socket.socket(socket.AF_UNIX)
try:
    s.bind(name)
except OSError as e:
    if e.errno != errno.EADDRINUSE:
        raise
    socket.socket(socket.AF_UNIX).connect(name)   # the other call's: reached it
    print("connected to the other call's socket")
    sys.exit(0)
s.listen(1)
s.settimeout(4)
s.accept()
print("the other call connected")
"""


@pytest.mark.parametrize("mode", MODES)
def test_two_calls_cannot_meet_on_an_abstract_socket(start_server, tmp_path, mode):
    """Abstract sockets belong to the network namespace, which calls share:
    two calls at once, one listening, the other connecting to its name, must
    not meet (Landlock keeps each function's abstract sockets its own)."""
    import threading
    import uuid
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "meet.py").write_text(ABSTRACT_MEET)
    script = f"{PY} {tmp_path / 'functions' / 'meet.py'} {uuid.uuid4().hex}"
    srv = serve(start_server, tmp_path, mode, script, "--prespawn", "0")
    logs = []

    def call():
        logs.append(srv.evaluate(simple_rl("x"), image="fn:v1", timeout=30).log.decode())

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.5)   # the first one listens by then
    for t in threads:
        t.join()
    assert len(logs) == 2, logs
    met = sum("ATTACK-WORKED" in log for log in logs)
    assert met == (2 if mode == "off" else 0), logs


def test_a_reload_changes_a_functions_own_settings(start_server, tmp_path):
    """SIGHUP with the annotation gone: the next call has the flag's memory
    again, also the process pre-started before (it had the old settings:
    it is not given the call)."""
    srv = serve(start_server, tmp_path, "auto", "true", "--prespawn", "1",
                annotations={"fn.kpt.dev/sandbox-memory": "600Mi"})
    (tmp_path / "functions" / "fn").write_text(f"#!/bin/sh\ncat\n{ALLOCATE_800_MIB} >&2\n")
    err = srv.evaluate_error(simple_rl("x"), image="fn:v1", timeout=30)
    assert "memory limit of 600 MiB (fn.kpt.dev/sandbox-memory)" in err.details(), err.details()
    function_config(tmp_path)   # no annotation
    os.kill(srv.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "SIGHUP: loaded 1 FunctionConfigs" not in srv.stderr():
        assert time.monotonic() < deadline, srv.stderr()
        time.sleep(0.05)
    resp = srv.evaluate(simple_rl("x"), image="fn:v1", timeout=30)
    assert "allocated" in resp.log.decode(), resp.log.decode()
