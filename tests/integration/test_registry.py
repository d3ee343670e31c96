"""runner-client image: an image's digest and entrypoint read from a registry
over the v2 API, as Porch's function runner does before creating a pod.

Most tests run against a REAL registry: Debian's docker-registry on a
loopback port (anonymous, and a second one with htpasswd Basic auth), with
images built by images/oci.py and pushed with skopeo (OCI, Docker schema 2
via --format v2s2, and a multi-arch index via --all). Token (Bearer) auth,
redirects of blob downloads to another host and corrupted content are
exercised against a small fake registry written here, because
docker-registry's token auth needs a JWT-signing certificate setup and it
never redirects or corrupts on demand."""

import base64
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

import krmtest
from krmtest import CLIENT_BIN, ROOT, free_port

sys.path.insert(0, os.path.join(ROOT, "images"))
import oci  # noqa: E402

TOOLS = ["skopeo", "docker-registry", "htpasswd"]
USER, PASSWORD = "alice", "s3cret-pw"


@pytest.fixture(scope="module", autouse=True)
def prerequisites(binaries):
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.fail(f"missing: {', '.join(missing)}; scripts/deps.sh installs the packages", pytrace=False)


def run(args, ok=True, env=None, timeout=60):
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    if ok:
        assert r.returncode == 0, f"{args!r} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def lookup(*args, docker_config=None, env=None):
    """runner-client image ARGS; returns the CompletedProcess. Uses an empty
    HOME so the developer's own ~/.docker never leaks into a test."""
    env = dict(env or os.environ)
    env.pop("DOCKER_CONFIG", None)
    env["HOME"] = env.get("TEST_HOME", "/nonexistent")
    cmd = [CLIENT_BIN, "image"]
    if docker_config:
        cmd += ["--docker-config", str(docker_config)]
    r = run(cmd + list(args), ok=False, env=env)
    assert not krmtest.sanitizer_reports(r.stderr), r.stderr
    return r


def lookup_json(*args, **kw):
    r = lookup("--output", "json", *args, **kw)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def stop(proc):
    proc.terminate()
    proc.wait(timeout=10)


def small_layer():
    return oci.tar_layer([oci.Entry("hello.txt", "file", 0o644, data=b"hello\n")], 0)


def write_single(out, tag, entrypoint=None, cmd=None, arch="amd64"):
    """A one-image OCI layout; returns its manifest digest."""
    inner = {"Env": ["PATH=/bin"]}
    if entrypoint is not None:
        inner["Entrypoint"] = entrypoint
    if cmd is not None:
        inner["Cmd"] = cmd
    config = {"architecture": arch, "os": "linux", "config": inner}
    return oci.write_image(str(out), [small_layer()], config, tag, {"architecture": arch, "os": "linux"})


def image_blobs(w, arch, entrypoint):
    """Adds a layer, config and manifest for linux/<arch> to LayoutWriter w;
    returns the manifest's descriptor (with platform)."""
    tar = small_layer()
    gz = oci.gzip_layer(tar)
    w.add_blob(gz)
    config = oci.to_json({"architecture": arch, "os": "linux", "config": {"Entrypoint": entrypoint},
                          "rootfs": {"type": "layers", "diff_ids": [oci.sha256(tar)]}})
    w.add_blob(config)
    manifest = oci.to_json({"schemaVersion": 2, "mediaType": oci.MT_MANIFEST,
                            "config": oci.descriptor(oci.MT_CONFIG, config),
                            "layers": [oci.descriptor(oci.MT_LAYER_GZIP, gz)]})
    w.add_blob(manifest)
    return oci.descriptor(oci.MT_MANIFEST, manifest, platform={"architecture": arch, "os": "linux"})


def write_multiarch(out, tag):
    """An OCI layout whose tag is an index of linux/amd64 and linux/arm64
    images (Entrypoint ["/fn-amd64"] and ["/fn-arm64"]). Returns
    (index digest, {arch: manifest digest})."""
    w = oci.LayoutWriter(str(out))
    children = [image_blobs(w, arch, [f"/fn-{arch}"]) for arch in ("arm64", "amd64")]
    index = oci.to_json({"schemaVersion": 2, "mediaType": oci.MT_INDEX, "manifests": children})
    w.add_blob(index)
    w.commit([oci.descriptor(oci.MT_INDEX, index, annotations={oci.REF_NAME: tag})])
    return oci.sha256(index), {c["platform"]["architecture"]: c["digest"] for c in children}


def push(policy, layout, tag, dest, *extra):
    run(["skopeo", "--policy", policy, "copy", "--quiet", "--dest-tls-verify=false", *extra,
         f"oci:{layout}:{tag}", f"docker://{dest}"])


def pushed_digest(policy, ref, *extra):
    raw = run(["skopeo", "--policy", policy, "inspect", "--raw", "--tls-verify=false", *extra,
               f"docker://{ref}"]).stdout.encode()
    return oci.sha256(raw)


@pytest.fixture(scope="module")
def images(tmp_path_factory, policy):
    """The anonymous registry, holding:
    fn/both:v1 (Entrypoint + Cmd), fn/cmd-only:v1, fn/none:v1, fn/multi:v1
    (index amd64 + arm64), fn/docker:v1 (Docker schema 2 media types)."""
    work = tmp_path_factory.mktemp("registry")
    addr, proc = krmtest.start_registry(work)
    d = {"addr": addr}
    d["both"] = write_single(work / "both", "v1", ["/usr/bin/fn", "--serve"], ["--flag"])
    push(policy, work / "both", "v1", f"{addr}/fn/both:v1")
    d["cmd"] = write_single(work / "cmd", "v1", None, ["/bin/sh", "-c", "fn"])
    push(policy, work / "cmd", "v1", f"{addr}/fn/cmd-only:v1")
    d["none"] = write_single(work / "none", "v1")
    push(policy, work / "none", "v1", f"{addr}/fn/none:v1")
    d["index"], d["arch"] = write_multiarch(work / "multi", "v1")
    push(policy, work / "multi", "v1", f"{addr}/fn/multi:v1", "--all")
    push(policy, work / "both", "v1", f"{addr}/fn/docker:v1", "--format", "v2s2")
    d["docker"] = pushed_digest(policy, f"{addr}/fn/docker:v1")
    yield d
    stop(proc)


# ------------------------------------------------------------ single images

def test_entrypoint_wins_over_cmd(images):
    out = lookup_json(f"{images['addr']}/fn/both:v1")
    assert out["digest"] == images["both"]
    assert out["entrypoint"] == ["/usr/bin/fn", "--serve"]          # Porch drops Cmd
    assert out["configEntrypoint"] == ["/usr/bin/fn", "--serve"]
    assert out["configCmd"] == ["--flag"]
    assert out["fromIndex"] is False and "indexDigest" not in out
    assert out["mediaType"] == oci.MT_MANIFEST


def test_text_output(images):
    r = lookup(f"{images['addr']}/fn/both:v1")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"image: {images['addr']}/fn/both:v1\ndigest: {images['both']}\n"
                        'entrypoint: ["/usr/bin/fn","--serve"]\n')


def test_cmd_only(images):
    out = lookup_json(f"{images['addr']}/fn/cmd-only:v1")
    assert out["digest"] == images["cmd"]
    assert out["entrypoint"] == ["/bin/sh", "-c", "fn"]
    assert out["configEntrypoint"] == []


def test_neither_entrypoint_nor_cmd(images):
    r = lookup(f"{images['addr']}/fn/none:v1")
    assert r.returncode == 1
    assert f'image "{images["addr"]}/fn/none:v1" has neither Entrypoint nor Cmd in its config' in r.stderr


def test_docker_schema2(images):
    out = lookup_json(f"{images['addr']}/fn/docker:v1")
    assert out["mediaType"] == oci.MT_DOCKER_MANIFEST
    assert out["digest"] == images["docker"] != images["both"]
    assert out["entrypoint"] == ["/usr/bin/fn", "--serve"]


def test_digest_references(images):
    a = images["addr"]
    assert lookup_json(f"{a}/fn/both@{images['both']}")["digest"] == images["both"]
    # tag and digest: the digest is what is fetched
    assert lookup_json(f"{a}/fn/both:whatever@{images['both']}")["digest"] == images["both"]
    r = lookup(f"{a}/fn/both@sha256:" + "0" * 64)
    assert r.returncode == 1 and "not found in registry" in r.stderr


# ------------------------------------------------------------ indexes

def test_index_resolves_to_amd64(images):
    out = lookup_json(f"{images['addr']}/fn/multi:v1")
    assert out["digest"] == images["arch"]["amd64"]
    assert out["entrypoint"] == ["/fn-amd64"]
    assert out["fromIndex"] is True and out["indexDigest"] == images["index"]
    r = lookup(f"{images['addr']}/fn/multi:v1")
    assert f"index: {images['index']}" in r.stdout


def test_index_by_digest_and_other_platform(images):
    out = lookup_json("--platform", "linux/arm64", f"{images['addr']}/fn/multi@{images['index']}")
    assert out["digest"] == images["arch"]["arm64"]
    assert out["entrypoint"] == ["/fn-arm64"]


def test_index_without_the_platform(images):
    r = lookup("--platform", "linux/s390x", f"{images['addr']}/fn/multi:v1")
    assert r.returncode == 1
    assert "no linux/s390x entry in the index (platforms: linux/arm64, linux/amd64)" in r.stderr


# ------------------------------------------------------------ errors

def test_tag_not_found(images):
    r = lookup(f"{images['addr']}/fn/both:nope")
    assert r.returncode == 1
    assert r.stderr == (f'runner-client image: image "{images["addr"]}/fn/both:nope" not found in registry '
                        f'{images["addr"]} (manifest unknown)\n')


def test_repository_not_found(images):
    r = lookup(f"{images['addr']}/fn/missing:v1")
    assert r.returncode == 1
    assert f'image "{images["addr"]}/fn/missing:v1" not found in registry {images["addr"]} (' in r.stderr
    assert "unknown)" in r.stderr


def test_unreachable_registry():
    port = free_port()
    r = lookup(f"127.0.0.1:{port}/fn/x:v1")
    assert r.returncode == 1
    assert f"cannot reach registry 127.0.0.1:{port}: Failed to connect to 127.0.0.1 port {port}" in r.stderr


@pytest.mark.parametrize("ref, reason", [
    ("Fn/Upper", "must be lowercase"),
    ("fn/bad--", "invalid component"),
    ("fn:-tag", "invalid tag"),
    ("fn@sha256:abc", "invalid digest"),
    ("fn@md5:" + "0" * 32, "unsupported digest algorithm"),
])
def test_invalid_references_are_usage_errors(ref, reason):
    r = lookup(ref)
    assert r.returncode == 2
    assert f'invalid image reference "{ref}"' in r.stderr and reason in r.stderr


def test_usage_errors():
    assert lookup().returncode == 2
    assert lookup("--output", "yaml", "fn").returncode == 2
    assert lookup("--platform", "linux", "fn").returncode == 2
    assert lookup("--bogus", "fn").returncode == 2


def test_cache_second_lookup_makes_no_requests(images):
    ref = f"{images['addr']}/fn/multi:v1"
    once = lookup("--debug", ref)
    twice = lookup("--debug", ref, ref)
    assert once.returncode == twice.returncode == 0
    n_once = int(once.stderr.split(" HTTP requests")[0].rsplit(" ", 1)[1])
    assert n_once == 3     # index, amd64 manifest, config
    assert f"{n_once} HTTP requests, 1 cache hits" in twice.stderr
    assert twice.stdout == once.stdout * 2


# ------------------------------------------------------------ Basic auth (htpasswd)

@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory, policy):
    work = tmp_path_factory.mktemp("authreg")
    htpasswd = work / "htpasswd"
    htpasswd.write_text(run(["htpasswd", "-Bbn", USER, PASSWORD]).stdout)
    addr, proc = krmtest.start_registry(work, f"auth:\n  htpasswd:\n    realm: test\n    path: {htpasswd}\n")
    layout = work / "img"
    digest = write_single(layout, "v1", ["/fn"])
    push(policy, layout, "v1", f"{addr}/private/fn:v1", "--dest-creds", f"{USER}:{PASSWORD}")
    yield addr, digest
    stop(proc)


def docker_config(path, host, user, password, style="auth"):
    entry = ({"auth": base64.b64encode(f"{user}:{password}".encode()).decode()} if style == "auth"
             else {"username": user, "password": password})
    path.write_text(json.dumps({"auths": {host: entry}}))
    return path


def test_basic_auth_with_credentials(auth_registry, tmp_path):
    addr, digest = auth_registry
    for style in ("auth", "username"):
        cfg = docker_config(tmp_path / f"{style}.json", addr, USER, PASSWORD, style)
        out = lookup_json(f"{addr}/private/fn:v1", docker_config=cfg)
        assert out["digest"] == digest and out["entrypoint"] == ["/fn"]


def test_basic_auth_from_default_docker_config(auth_registry, tmp_path):
    addr, digest = auth_registry
    (tmp_path / ".docker").mkdir()
    docker_config(tmp_path / ".docker" / "config.json", f"https://{addr}/v1/", USER, PASSWORD)
    out = lookup_json(f"{addr}/private/fn:v1", env=dict(os.environ, TEST_HOME=str(tmp_path)))
    assert out["digest"] == digest


def test_basic_auth_wrong_password(auth_registry, tmp_path):
    addr, _ = auth_registry
    cfg = docker_config(tmp_path / "config.json", addr, USER, "wrong")
    r = lookup(f"{addr}/private/fn:v1", docker_config=cfg)
    assert r.returncode == 1
    assert r.stderr == (f'runner-client image: access to image "{addr}/private/fn:v1" denied by registry {addr} '
                        f'(HTTP 401 Unauthorized); tried with the credentials of user "{USER}" from {cfg}\n')


def test_basic_auth_without_credentials(auth_registry, tmp_path):
    addr, _ = auth_registry
    cfg = docker_config(tmp_path / "config.json", "other.example", USER, PASSWORD)
    r = lookup(f"{addr}/private/fn:v1", docker_config=cfg)
    assert r.returncode == 1
    assert "requires credentials (Basic authentication)" in r.stderr
    assert f'tried anonymously (no credentials for "{addr}" in {cfg})' in r.stderr


def test_bad_docker_config(auth_registry, tmp_path):
    addr, _ = auth_registry
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = lookup(f"{addr}/private/fn:v1", docker_config=bad)
    assert r.returncode == 1 and f"Docker config {bad} is not valid JSON" in r.stderr
    r = lookup(f"{addr}/private/fn:v1", docker_config=tmp_path / "missing.json")
    assert r.returncode == 1 and "cannot read Docker config" in r.stderr


# ------------------------------------------------------------ token auth, redirects, corruption (fake registry)

class FakeRegistry:
    """A registry that demands a Bearer token from its own /token endpoint
    (which checks Basic credentials), redirects blob downloads to a second
    server on another host name (localhost vs 127.0.0.1), and can serve
    corrupted bytes. Records what it received."""

    def __init__(self, host="127.0.0.1"):
        self.host = host
        self.docs = {}            # path -> (content type, bytes)
        self.corrupt = set()      # paths whose bytes are altered when served
        self.seen = []            # (server, path, Authorization header)
        self.token_key = "access_token"
        self.blob_port = free_port()
        self.port = free_port()
        self.servers = [self._server(host, self.port, self._registry),
                        self._server("127.0.0.1", self.blob_port, self._blobs)]

    def _server(self, host, port, handle):
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                fake.seen.append((handle.__name__, self.path, self.headers.get("Authorization")))
                handle(self)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer((host, port), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()

    @property
    def addr(self):
        return f"{self.host}:{self.port}"

    def add_image(self, repo, tag, entrypoint):
        config = oci.to_json({"architecture": "amd64", "os": "linux", "config": {"Entrypoint": entrypoint},
                              "rootfs": {"type": "layers", "diff_ids": []}})
        manifest = oci.to_json({"schemaVersion": 2, "mediaType": oci.MT_MANIFEST,
                                "config": oci.descriptor(oci.MT_CONFIG, config), "layers": []})
        self.docs[f"/v2/{repo}/blobs/{oci.sha256(config)}"] = ("application/octet-stream", config)
        self.docs[f"/v2/{repo}/manifests/{tag}"] = (oci.MT_MANIFEST, manifest)
        self.docs[f"/v2/{repo}/manifests/{oci.sha256(manifest)}"] = (oci.MT_MANIFEST, manifest)
        return oci.sha256(manifest), oci.sha256(config)

    @staticmethod
    def _send(h, status, body=b"", ctype="application/json", headers=()):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def _registry(self, h):
        if h.path.startswith("/token?"):
            want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            if h.headers.get("Authorization") != want:
                return self._send(h, 401, b'{"details":"bad credentials"}')
            return self._send(h, 200, json.dumps({self.token_key: "tok-123", "expires_in": 300}).encode())
        if h.headers.get("Authorization") != "Bearer tok-123":
            challenge = (f'Bearer realm="http://{self.addr}/token",service="fake registry",'
                         'scope="repository:fn/x:pull"')
            return self._send(h, 401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                              headers=[("WWW-Authenticate", challenge)])
        if "/blobs/" in h.path:
            return self._send(h, 307, headers=[("Location", f"http://localhost:{self.blob_port}{h.path}")])
        if h.path not in self.docs:
            return self._send(h, 404, b'{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}')
        ctype, body = self.docs[h.path]
        digest = oci.sha256(body)
        if h.path in self.corrupt:
            body += b"\n"   # still JSON, other bytes
        self._send(h, 200, body, ctype, headers=[("Docker-Content-Digest", digest)])

    def _blobs(self, h):
        if h.path not in self.docs:
            return self._send(h, 404)
        body = self.docs[h.path][1]
        if h.path in self.corrupt:
            body += b"\n"   # still JSON, other bytes
        self._send(h, 200, body, "application/octet-stream")


@pytest.fixture
def fake():
    f = FakeRegistry()
    yield f
    f.close()


def test_bearer_token_and_redirect_keeps_credentials_home(fake, tmp_path):
    digest, config_digest = fake.add_image("fn/x", "v1", ["/fn"])
    cfg = docker_config(tmp_path / "config.json", fake.addr, USER, PASSWORD)
    out = lookup_json(f"{fake.addr}/fn/x:v1", docker_config=cfg)
    assert out["digest"] == digest and out["configDigest"] == config_digest
    assert out["entrypoint"] == ["/fn"]
    token_reqs = [s for s in fake.seen if s[1].startswith("/token?")]
    assert len(token_reqs) == 1
    assert "service=fake%20registry" in token_reqs[0][1] and "scope=repository%3Afn%2Fx%3Apull" in token_reqs[0][1]
    assert token_reqs[0][2].startswith("Basic ")
    blob = [s for s in fake.seen if s[0] == "_blobs"]
    assert len(blob) == 1 and blob[0][2] is None      # the token never left for the other host
    assert ("_registry", f"/v2/fn/x/blobs/{config_digest}", "Bearer tok-123") in fake.seen


def test_bearer_token_field_name_token(fake):
    fake.token_key = "token"
    fake.add_image("fn/x", "v1", ["/fn"])
    # anonymous: the token endpoint refuses, and the message says what was tried
    r = lookup(f"{fake.addr}/fn/x:v1")
    assert r.returncode == 1
    assert f"the token service http://{fake.addr}/token answered HTTP 401" in r.stderr
    assert "anonymously (no Docker config file" in r.stderr


def test_manifest_digest_mismatch(fake, tmp_path):
    digest, _ = fake.add_image("fn/x", "v1", ["/fn"])
    fake.corrupt.add("/v2/fn/x/manifests/v1")
    cfg = docker_config(tmp_path / "config.json", fake.addr, USER, PASSWORD)
    r = lookup(f"{fake.addr}/fn/x:v1", docker_config=cfg)
    assert r.returncode == 1
    assert f"digest mismatch for the manifest (Docker-Content-Digest) of image \"{fake.addr}/fn/x:v1\"" in r.stderr
    assert f"expected {digest}" in r.stderr


def test_config_digest_mismatch(fake, tmp_path):
    _, config_digest = fake.add_image("fn/x", "v1", ["/fn"])
    fake.corrupt.add(f"/v2/fn/x/blobs/{config_digest}")
    cfg = docker_config(tmp_path / "config.json", fake.addr, USER, PASSWORD)
    r = lookup(f"{fake.addr}/fn/x:v1", docker_config=cfg)
    assert r.returncode == 1
    assert f"digest mismatch for the config of image \"{fake.addr}/fn/x:v1\"" in r.stderr
    assert f"expected {config_digest}" in r.stderr


def test_insecure_registry_flag(tmp_path):
    """127.0.0.2 is loopback but not on the built-in plain-HTTP list: https
    is tried (and fails against a plain-HTTP server) until the host is named
    with --insecure-registry, as HOST:PORT or HOST, alone or in a list."""
    f = FakeRegistry(host="127.0.0.2")
    try:
        f.add_image("fn/x", "v1", ["/fn"])
        cfg = docker_config(tmp_path / "config.json", f.addr, USER, PASSWORD)
        r = lookup(f"{f.addr}/fn/x:v1", docker_config=cfg)
        assert r.returncode == 1 and f"cannot reach registry {f.addr}: " in r.stderr
        assert f.seen == []
        for flag in (f.addr, "a.example,127.0.0.2"):
            out = lookup_json("--insecure-registry", flag, f"{f.addr}/fn/x:v1", docker_config=cfg)
            assert out["entrypoint"] == ["/fn"]
    finally:
        f.close()


# ------------------------------------------------------------ serve's pod runtime

DEAD_KUBECONFIG = ("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
                   "    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: k\n"
                   "    user: u\nusers:\n- name: u\n  user:\n    token: t\n")


def serve_with_docker_config(start_server, tmp_path, addr, with_creds):
    """serve with a cluster that cannot be reached and a config.json that
    has the registry's credentials, or only another host's."""
    kc = tmp_path / "kubeconfig"
    kc.write_text(DEAD_KUBECONFIG)
    cfg = docker_config(tmp_path / "config.json", addr if with_creds else "other.example", USER, PASSWORD)
    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_CONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    return start_server([], binary=CLIENT_BIN, env=env, argv=[
        "serve", "--port", "{port}", "--kubeconfig", str(kc), "--docker-config", str(cfg),
        "--wrapper-server-image", f"{addr}/wrapper-server:v1"])


@pytest.mark.parametrize("with_creds", [True, False])
def test_serve_looks_images_up_with_its_registry_flags(start_server, auth_registry, tmp_path, with_creds):
    """`serve --docker-config` reaches the pod runtime's registry lookup: with
    the credentials the private image is found and the call goes on to the
    cluster (here an API server that cannot be reached); without them the
    registry's 401 is the answer."""
    addr, _ = auth_registry
    srv = serve_with_docker_config(start_server, tmp_path, addr, with_creds)
    err = srv.evaluate_error(krmtest.simple_rl(), image=f"{addr}/private/fn:v1", timeout=30)
    if with_creds:
        assert "requires credentials" not in err.details(), err.details()
        assert "127.0.0.1:1" in err.details(), err.details()
    else:
        assert "requires credentials (Basic authentication)" in err.details(), err.details()


@pytest.mark.parametrize("with_creds", [True, False])
def test_serve_lists_tags_with_its_registry_flags(start_server, auth_registry, policy, tmp_path, with_creds):
    """A request's Tag constraint lists the repository's tags with the same
    credentials as the lookup: with them the highest match is run (then the
    unreachable cluster is the answer); without them the registry's 401."""
    addr, _ = auth_registry
    layout = tmp_path / "img"
    write_single(layout, "v1.2.0", ["/fn"])
    for tag in ("v1.2.0", "v2.0.0"):
        push(policy, layout, "v1.2.0", f"{addr}/private/tagged:{tag}", "--dest-creds", f"{USER}:{PASSWORD}")
    srv = serve_with_docker_config(start_server, tmp_path, addr, with_creds)
    err = srv.evaluate_error(krmtest.simple_rl(), image=f"{addr}/private/tagged", tag="^1", timeout=30)
    if with_creds:
        assert f"runs {addr}/private/tagged:v1.2.0 (the highest of 2 tags)" in srv.stderr(), srv.describe()
        assert "127.0.0.1:1" in err.details(), err.details()
    else:
        assert err.details().startswith(f'failed to resolve tag for image "{addr}/private/tagged" with '
                                        "constraint \"^1\": listing the repository's tags failed: registry "
                                        f"{addr} requires credentials (Basic authentication)"), err.details()
