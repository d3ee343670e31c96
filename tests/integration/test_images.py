"""Images built without Docker (make images, images/embed): deterministic OCI
layouts that validate, survive a round trip through a real registry (Debian's
docker-registry, pushed and pulled with skopeo), and work when unpacked
(umoci) and run under bubblewrap: the init image's `cp` installs the wrapper
server the way Porch's init container does, the function-runner image serves
from its own files alone (no host library) as Porch's Deployment runs it, and
an embedded function image serves EvaluateFunction from its own entrypoint."""

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time

import pytest

import krmtest
from krmtest import ROOT, Server, children_of, free_port, resource_list

sys.path.insert(0, os.path.join(ROOT, "images"))
import oci  # noqa: E402

STATIC = os.path.join(ROOT, "build", "static")
WRAPPER = os.path.join(STATIC, "wrapper-server")
COPIER = os.path.join(STATIC, "copier")
RUNNER = os.path.join(STATIC, "runner-client")
INIT_IMAGE = os.path.join(ROOT, "images", "init_image.py")
RUNNER_IMAGE = os.path.join(ROOT, "images", "runner_image.py")
EMBED = os.path.join(ROOT, "images", "embed")
BUSYBOX = "/bin/busybox"
TOOLS = ["skopeo", "docker-registry", "umoci", "bwrap", "oci-image-tool"]


@pytest.fixture(scope="module", autouse=True)
def prerequisites():
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if not os.path.exists(BUSYBOX):
        missing.append(BUSYBOX + " (busybox-static)")
    for path in (WRAPPER, COPIER, RUNNER):
        if not os.path.exists(path):
            missing.append(path + " (make static)")
    if missing:
        pytest.fail(f"missing: {', '.join(missing)}; scripts/deps.sh installs the packages", pytrace=False)


def run(args, ok=True, env=None, **kw):
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, **kw)
    if ok:
        assert r.returncode == 0, f"{args!r} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def build_init(out, tag="latest", env=None):
    r = run([sys.executable, INIT_IMAGE, "--wrapper", WRAPPER, "--copier", COPIER,
             "--out", str(out), "--tag", tag], env=env)
    return r.stdout.strip()


def tree_bytes(path):
    """{relative path: bytes} of every file under path."""
    out = {}
    for base, _, files in os.walk(path):
        for name in files:
            full = os.path.join(base, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, path)] = f.read()
    return out


def manifest_of(layout, tag):
    lay = oci.Layout(str(layout))
    desc = lay.select(tag, "amd64")
    manifest = lay.json_blob(desc)
    return desc, manifest, lay.json_blob(manifest["config"])


@pytest.fixture(scope="module")
def init_image(tmp_path_factory):
    out = tmp_path_factory.mktemp("init") / "wrapper-server"
    digest = build_init(out)
    return out, digest


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """Debian's docker-registry on a loopback port, storing in a temp dir."""
    addr, proc = krmtest.start_registry(tmp_path_factory.mktemp("registry"))
    yield addr
    proc.terminate()
    proc.wait(timeout=10)


def skopeo(policy, *args):
    return run(["skopeo", "--policy", policy, *args])


def push_and_pull(policy, registry, layout, tag, name, pulled, local_tag=None):
    """Pushes layout:local_tag to the registry as name:tag, pulls it back into
    pulled:tag; returns the manifest digest the registry reports."""
    ref = f"docker://{registry}/{name}:{tag}"
    skopeo(policy, "copy", "--quiet", "--dest-tls-verify=false", f"oci:{layout}:{local_tag or tag}", ref)
    raw = skopeo(policy, "inspect", "--raw", "--tls-verify=false", ref).stdout.encode()
    skopeo(policy, "copy", "--quiet", "--src-tls-verify=false", ref, f"oci:{pulled}:{tag}")
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def unpack(layout, tag, bundle, mount_points=()):
    """Unpacks an image with umoci; creates the mount points a container
    runtime would (bubblewrap mounts onto a read-only root cannot)."""
    run(["umoci", "unpack", "--rootless", "--image", f"{layout}:{tag}", str(bundle)])
    rootfs = bundle / "rootfs"
    for d in mount_points:
        (rootfs / d).mkdir(exist_ok=True)
    return rootfs


def function_image(tmp, entrypoint, cmd, tag="v1"):
    """A real function image: static busybox, with `sed` as the function."""
    with open(BUSYBOX, "rb") as f:
        busybox = f.read()
    layer = oci.tar_layer([
        oci.Entry("bin/busybox", "file", 0o755, data=busybox),
        oci.Entry("bin/sh", "symlink", 0o777, target="busybox"),
        oci.Entry("tmp", "dir", 0o1777),
    ], 0)
    inner = {"Env": ["PATH=/bin"], "WorkingDir": "/"}
    if entrypoint is not None:
        inner["Entrypoint"] = entrypoint
    if cmd is not None:
        inner["Cmd"] = cmd
    config = {"architecture": "amd64", "os": "linux", "config": inner,
              "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "test busybox"}]}
    out = tmp / "fn"
    oci.write_image(str(out), [layer], config, tag, {"architecture": "amd64", "os": "linux"})
    return out


SED_ENTRYPOINT = ["/bin/busybox"]
SED_CMD = ["sed", "-e", "s/replicas: 1/replicas: 3/"]


def deployment_rl():
    return resource_list(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
    )


def start_in_bwrap(pb, tmp, rootfs, argv, env, port):
    """Runs argv as PID 1 of a bubblewrap sandbox whose root is rootfs (the
    network is shared, so the test can connect); returns a krmtest.Server
    whose SIGTERM goes to the sandboxed process itself."""
    cmd = ["bwrap", "--unshare-pid", "--as-pid-1", "--die-with-parent",
           "--ro-bind", str(rootfs), "/", "--proc", "/proc", "--dev", "/dev",
           "--tmpfs", "/tmp", "--clearenv"]
    for kv in env:
        k, _, v = kv.partition("=")
        cmd += ["--setenv", k, v]
    srv = Server(pb, cmd + argv, port, str(tmp / "srv.stderr"), str(tmp / "srv.stdout"))
    deadline = time.monotonic() + 5
    while not children_of(srv.proc.pid):
        assert srv.proc.poll() is None and time.monotonic() < deadline, srv.describe()
        time.sleep(0.01)
    srv.server_pid = children_of(srv.proc.pid)[0]
    srv.wait_ready(timeout=10)
    return srv


# ---------------------------------------------------------------- init image

def test_init_image_is_deterministic(init_image, tmp_path):
    first, digest = init_image
    second = tmp_path / "again"
    assert build_init(second) == digest
    assert tree_bytes(first) == tree_bytes(second)
    # The build time really is SOURCE_DATE_EPOCH: a different epoch, a different digest.
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    assert build_init(tmp_path / "epoch", env=env) != digest


def test_init_image_layout_and_config(init_image):
    layout, digest = init_image
    desc, manifest, config = manifest_of(layout, "latest")
    assert desc["digest"] == digest
    assert config["config"]["User"] == "65532:65532"
    assert config["config"]["Env"] == ["PATH=/bin"]
    assert "Entrypoint" not in config["config"] and "Cmd" not in config["config"]
    assert (config["architecture"], config["os"]) == ("amd64", "linux")
    assert len(manifest["layers"]) == 1
    run(["oci-image-tool", "validate", "--type", "image", "--ref", "name=latest", str(layout)])
    stat_out = run(["umoci", "stat", "--json", "--image", f"{layout}:latest"]).stdout
    assert len(json.loads(stat_out)["history"]) == 1


def test_init_image_files(init_image, tmp_path):
    layout, _ = init_image
    rootfs = unpack(layout, "latest", tmp_path / "bundle")
    home = rootfs / "home" / "nonroot" / "wrapper-server"
    assert sorted(os.listdir(rootfs)) == ["bin", "home", "wrapper-server"]
    assert sorted(os.listdir(home)) == ["grpc-health-probe", "wrapper-server"]
    assert os.readlink(home / "grpc-health-probe") == "wrapper-server"
    for path, src in ((home / "wrapper-server", WRAPPER), (rootfs / "bin" / "cp", COPIER)):
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o555
        with open(path, "rb") as a, open(src, "rb") as b:
            assert a.read() == b.read()


def test_init_image_registry_round_trip_and_porch_init_command(init_image, registry, policy, pb, tmp_path):
    """Push, pull back, unpack, run Porch's init command in the image as user
    65532, then serve a real call with the installed wrapper server."""
    layout, digest = init_image
    pulled = tmp_path / "pulled"
    assert push_and_pull(policy, registry, layout, "v1", "krm/wrapper-server", pulled,
                         local_tag="latest") == digest
    assert manifest_of(pulled, "v1")[0]["digest"] == digest
    rootfs = unpack(pulled, "v1", tmp_path / "bundle", ("proc", "dev", "wrapper-server-tools"))
    tools = tmp_path / "tools"
    tools.mkdir()
    os.chmod(tools, 0o777)
    run(["bwrap", "--unshare-user", "--uid", "65532", "--gid", "65532", "--die-with-parent",
         "--ro-bind", str(rootfs), "/", "--bind", str(tools), "/wrapper-server-tools",
         "--proc", "/proc", "--dev", "/dev", "--clearenv", "--setenv", "PATH", "/bin",
         "cp", "-a", "/home/nonroot/wrapper-server/.", "/wrapper-server-tools"])
    assert sorted(os.listdir(tools)) == ["grpc-health-probe", "wrapper-server"]
    assert os.readlink(tools / "grpc-health-probe") == "wrapper-server"
    with open(tools / "wrapper-server", "rb") as a, open(WRAPPER, "rb") as b:
        assert a.read() == b.read()

    port = free_port()
    srv = Server(pb, [str(tools / "wrapper-server"), "--port", str(port), "--", "cat"], port,
                 str(tmp_path / "srv.stderr"), str(tmp_path / "srv.stdout"))
    try:
        srv.wait_ready()
        probe = run([str(tools / "grpc-health-probe"), "-addr", f"localhost:{port}"])
        assert "status: SERVING" in probe.stdout + probe.stderr
        rl = deployment_rl()
        assert srv.evaluate(rl).resource_list == rl
    finally:
        assert srv.stop() == 0, srv.describe()


# ---------------------------------------------------------------- function-runner image

def build_runner(out, env=None):
    return run([sys.executable, RUNNER_IMAGE, "--client", RUNNER, "--out", str(out)],
               env=env).stdout.strip()


@pytest.fixture(scope="module")
def runner_image(tmp_path_factory):
    out = tmp_path_factory.mktemp("runner") / "function-runner"
    return out, build_runner(out)


def test_runner_image_is_deterministic(runner_image, tmp_path):
    first, digest = runner_image
    assert build_runner(tmp_path / "again") == digest
    assert tree_bytes(first) == tree_bytes(tmp_path / "again")
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    assert build_runner(tmp_path / "epoch", env=env) != digest


def test_runner_image_layout_config_and_files(runner_image, tmp_path):
    """Exactly the static runner-client (stripped), Porch's two names for
    it, the functions directory and what it reads: no loader, no library."""
    layout, digest = runner_image
    desc, manifest, config = manifest_of(layout, "latest")
    assert desc["digest"] == digest and len(manifest["layers"]) == 1
    inner = config["config"]
    assert inner["User"] == "65532:65532" and inner["WorkingDir"] == "/home/nonroot"
    assert inner["Entrypoint"] == ["/home/nonroot/server"] and "Cmd" not in inner
    run(["oci-image-tool", "validate", "--type", "image", "--ref", "name=latest", str(layout)])

    rootfs = unpack(layout, "latest", tmp_path / "bundle")
    files = set()
    for base, dirs, names in os.walk(rootfs):
        for name in names:
            files.add(os.path.relpath(os.path.join(base, name), rootfs))
    assert files == {"home/nonroot/runner-client", "home/nonroot/server", "home/nonroot/grpc-health-probe",
                     "etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt"}
    home = rootfs / "home" / "nonroot"
    assert os.listdir(home / "functions") == []
    for name in ("server", "grpc-health-probe"):
        assert os.readlink(home / name) == "runner-client"
    assert stat.S_IMODE(os.lstat(home / "runner-client").st_mode) == 0o555
    sections = run(["readelf", "-lS", str(home / "runner-client")]).stdout
    assert ".debug_info" not in sections and "INTERP" not in sections
    with open(rootfs / "etc" / "passwd") as f:
        assert "nonroot:x:65532:65532:nonroot:/home/nonroot:" in f.read()
    with open(rootfs / "etc/ssl/certs/ca-certificates.crt", "rb") as a, \
            open("/etc/ssl/certs/ca-certificates.crt", "rb") as b:
        assert a.read() == b.read()


def test_runner_image_runs_from_its_own_files(runner_image, registry, policy, pb, tmp_path):
    """Pushed, pulled, unpacked and run under bubblewrap with nothing of the
    host's file system: the entrypoint serves a real call through the exec
    runtime (its sandbox, libseccomp) as user 65532, the image's own probe
    reports SERVING, and runner-client in it reads a manifest from a
    registry (libcurl)."""
    layout, digest = runner_image
    pulled = tmp_path / "pulled"
    assert push_and_pull(policy, registry, layout, "v1", "krm/function-runner", pulled,
                         local_tag="latest") == digest
    _, _, config = manifest_of(pulled, "v1")
    rootfs = unpack(pulled, "v1", tmp_path / "bundle", ("proc", "dev"))
    fns, cfg = tmp_path / "functions", tmp_path / "config"
    fns.mkdir()
    cfg.mkdir()
    shutil.copy(BUSYBOX, fns / "cat")      # busybox as cat: answers its input
    (cfg / "fc.yaml").write_text(
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\nmetadata: {name: cat}\n"
        "spec:\n  image: cat\n  prefixes: [example/]\n  binaryExecutor: {tags: [v1], path: cat}\n")
    port = free_port()
    as_nonroot = ["bwrap", "--unshare-user", "--uid", "65532", "--gid", "65532", "--die-with-parent",
                  "--ro-bind", str(rootfs), "/", "--proc", "/proc", "--dev", "/dev", "--clearenv"]
    argv = ["--unshare-user", "--uid", "65532", "--gid", "65532",
            "--ro-bind", str(fns), "/home/nonroot/functions", "--ro-bind", str(cfg), "/tmp",
            "--chdir", "/home/nonroot", *config["config"]["Entrypoint"],
            f"--port={port}", "--disable-runtimes=pod", "--function-config=/tmp/fc.yaml"]
    srv = start_in_bwrap(pb, tmp_path, rootfs, argv, config["config"]["Env"], port)
    try:
        rl = deployment_rl()
        assert srv.evaluate(rl, image="example/cat:v1").resource_list == rl
        probe = run([*as_nonroot, "/home/nonroot/grpc-health-probe", "-addr", f"localhost:{port}"])
        assert probe.stderr == "status: SERVING\n"
    finally:
        assert srv.stop() == 0, srv.describe()
    looked_up = run([*as_nonroot, "/home/nonroot/runner-client", "image", "--output", "json",
                     f"{registry}/krm/function-runner:v1"])
    answer = json.loads(looked_up.stdout)
    assert answer["digest"] == digest, looked_up.stdout
    assert answer["entrypoint"] == ["/home/nonroot/server"], looked_up.stdout


def test_runner_image_errors_are_clear_and_write_nothing(tmp_path):
    out = tmp_path / "out"
    for args, message in (
        (["--client", "/etc/hostname"], "/etc/hostname: not an ELF executable"),
        (["--client", RUNNER, "--ca-bundle", str(tmp_path / "none.crt")],
         "none.crt: No such file or directory; install ca-certificates"),
        (["--client", krmtest.CLIENT_BIN], f"{krmtest.CLIENT_BIN} is dynamically linked; the image "
         "holds no loader or libraries: give the static one (make static: build/static/runner-client)"),
    ):
        r = run([sys.executable, RUNNER_IMAGE, *args, "--out", str(out)], ok=False)
        assert r.returncode == 1 and message in r.stderr, r.stderr
        assert not out.exists() and os.listdir(tmp_path) == [], os.listdir(tmp_path)


# ---------------------------------------------------------------- embed

def embed(source, out, *extra, ok=True):
    return run([sys.executable, EMBED, "--wrapper", WRAPPER, *extra, str(source), str(out)], ok=ok)


def test_embed_rewrites_entrypoint_and_adds_one_layer(tmp_path):
    fn = function_image(tmp_path, SED_ENTRYPOINT, SED_CMD)
    out = tmp_path / "embedded"
    digest = embed(f"oci:{fn}:v1", out, "--tag", "v1").stdout.strip()
    desc, manifest, config = manifest_of(out, "v1")
    assert desc["digest"] == digest
    _, src_manifest, src_config = manifest_of(fn, "v1")
    assert manifest["layers"][:-1] == src_manifest["layers"]
    assert len(manifest["layers"]) == len(src_manifest["layers"]) + 1
    inner = config["config"]
    assert inner["Entrypoint"] == ["/wrapper-server-tools/wrapper-server", "--port", "9446", "--",
                                   *SED_ENTRYPOINT, *SED_CMD]
    assert "Cmd" not in inner
    assert inner["ExposedPorts"] == {"9446/tcp": {}}
    assert inner["Env"] == src_config["config"]["Env"]
    assert config["rootfs"]["diff_ids"][:-1] == src_config["rootfs"]["diff_ids"]
    assert len(config["history"]) == 2
    run(["oci-image-tool", "validate", "--type", "image", "--ref", "name=v1", str(out)])
    # Deterministic: the same inputs give the same bytes.
    again = tmp_path / "again"
    assert embed(fn, again, "--tag", "v1").stdout.strip() == digest
    assert tree_bytes(out) == tree_bytes(again)


def test_embedded_image_from_registry_serves_a_call(registry, policy, pb, tmp_path):
    """The full builder path: a function image in a registry, embedded from
    its registry reference, pushed back, pulled, unpacked and started from
    its own entrypoint as PID 1 of a sandbox; then a real gRPC call."""
    fn = function_image(tmp_path, SED_ENTRYPOINT, SED_CMD)
    push_and_pull(policy, registry, fn, "v1", "fn/sed", tmp_path / "fn-pulled")
    out = tmp_path / "embedded"
    r = embed(f"docker://{registry}/fn/sed:v1", out, "--src-tls-verify=false", "--tag", "v1")
    local = embed(fn, tmp_path / "local", "--tag", "v1").stdout.strip()
    assert r.stdout.strip() == local, "embedding from the registry and from the layout differ"

    pulled = tmp_path / "pulled"
    push_and_pull(policy, registry, out, "v1", "fn/sed-embedded", pulled)
    _, _, config = manifest_of(pulled, "v1")
    rootfs = unpack(pulled, "v1", tmp_path / "bundle", ("proc", "dev"))
    argv = list(config["config"]["Entrypoint"])
    port = free_port()
    argv[argv.index("--port") + 1] = str(port)   # the sandbox shares the host's network
    srv = start_in_bwrap(pb, tmp_path, rootfs, argv, config["config"]["Env"], port)
    try:
        out_rl = srv.evaluate(deployment_rl()).resource_list
        assert b"replicas: 3" in out_rl and b"replicas: 1" not in out_rl
        assert srv.check().status == pb.health.HealthCheckResponse.SERVING
        # The image's probe name works too.
        probe = run(["bwrap", "--ro-bind", str(rootfs), "/", "--proc", "/proc", "--dev", "/dev",
                     "/wrapper-server-tools/grpc-health-probe", "-addr", f"127.0.0.1:{port}"])
        assert "SERVING" in probe.stdout + probe.stderr
    finally:
        assert srv.stop() == 0, srv.describe()


@pytest.mark.parametrize("entrypoint,cmd,expected", [
    (None, ["/bin/busybox", "cat"], ["/bin/busybox", "cat"]),
    (["/bin/busybox", "cat"], None, ["/bin/busybox", "cat"]),
])
def test_embed_uses_cmd_or_entrypoint_alone(tmp_path, entrypoint, cmd, expected):
    fn = function_image(tmp_path, entrypoint, cmd)
    embed(fn, tmp_path / "out")
    _, _, config = manifest_of(tmp_path / "out", "latest")
    assert config["config"]["Entrypoint"][4:] == expected


def test_embed_errors_are_clear_and_write_nothing(tmp_path):
    fn = function_image(tmp_path, None, None)
    out = tmp_path / "out"
    r = embed(fn, out, ok=False)
    assert r.returncode == 1 and "neither Entrypoint nor Cmd" in r.stderr, r.stderr
    assert not out.exists()

    good = function_image(tmp_path, SED_ENTRYPOINT, SED_CMD, tag="v2")
    r = embed(f"{good}:nope", out, ok=False)
    assert r.returncode == 1 and "no image tagged 'nope' (tags: v2)" in r.stderr, r.stderr

    embed(good, out)
    r = embed(out, tmp_path / "twice", ok=False)
    assert r.returncode == 1 and "already runs /wrapper-server-tools/wrapper-server" in r.stderr, r.stderr

    r = embed(tmp_path / "missing", tmp_path / "x", ok=False)
    assert r.returncode == 1 and "not an OCI image layout" in r.stderr, r.stderr
    r = embed(good, tmp_path / "x", "--wrapper", "/etc/hostname", ok=False)
    assert r.returncode == 1 and "not an ELF executable" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_dockerfile_builds_the_same_file_tree():
    """The Dockerfile, for users with Docker, must place what init_image.py places."""
    with open(os.path.join(ROOT, "images", "Dockerfile")) as f:
        text = f.read()
    for needle in ("FROM scratch", "/bin/cp", "home/nonroot/wrapper-server/wrapper-server",
                   "ln -s wrapper-server", "grpc-health-probe", "USER 65532:65532", "ENV PATH=/bin",
                   "static-build.sh"):
        assert needle in text, needle
