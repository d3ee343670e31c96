"""runner-client against registries that attack it: each server here is a
small hostile HTTP server on a loopback address standing for an attacker
(two addresses, 127.0.0.1 and 127.0.0.2, are two hosts), recording the
Authorization header of every request it gets.

What is proved: credentials follow the host that asks, as the Docker client
does (a registry's Basic credentials go to it and to the token realm its own
challenge names, a redirect never carries them or its token to another host,
and a host a redirect led to that challenges us gets its own credentials
from config.json, never the registry's); no secret goes over plain HTTP to a
host not named insecure; redirects are bounded and stay on http(s); every
answer is bounded in size with a message; what a registry says is printed as
JSON through the JSON writer."""

import base64
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

import krmtest
from krmtest import CLIENT_BIN, ROOT

sys.path.insert(0, os.path.join(ROOT, "images"))
import oci  # noqa: E402

A_USER, A_PASS = "alice", "a-secret-of-registry-a"
B_USER, B_PASS = "bob", "b-secret-of-host-b"
REPO = "fn/x"


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Host:
    """An HTTP/1.1 server on ip (any free port): handle(host, request) ->
    (status, headers, body), or None when it wrote the answer itself. Records (path, Authorization) of each request."""

    def __init__(self, ip, handle):
        host = self
        self.seen = []
        self.handle = handle

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                host.seen.append((self.path, self.headers.get("Authorization")))
                answer = host.handle(host, self)
                if answer is None:   # the handler wrote its own answer
                    return
                status, headers, body = answer
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer((ip, 0), H)
        self.addr = f"{ip}:{self.srv.server_address[1]}"
        self.url = f"http://{self.addr}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def auth_seen(self):
        return [a for _, a in self.seen]

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def hosts():
    made = []

    def make(ip, handle):
        h = Host(ip, handle)
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()


def image(media_type=oci.MT_MANIFEST, entrypoint=("/fn",)):
    """(manifest bytes, config bytes) of a small image."""
    config = oci.to_json({"architecture": "amd64", "os": "linux", "config": {"Entrypoint": list(entrypoint)},
                          "rootfs": {"type": "layers", "diff_ids": []}})
    manifest = oci.to_json({"schemaVersion": 2, "mediaType": media_type,
                            "config": oci.descriptor(oci.MT_CONFIG, config), "layers": []})
    return manifest, config


def docker_config(path, **entries):
    """config.json with auths {host: (user, password)}."""
    auths = {h: {"auth": base64.b64encode(f"{u}:{p}".encode()).decode()} for h, (u, p) in entries.items()}
    path.write_text(json.dumps({"auths": auths}))
    return str(path)


def lookup(*args, docker_config=None):
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_CONFIG"}
    env["HOME"] = "/nonexistent"
    cmd = [CLIENT_BIN, "image", "--output", "json", "--timeout", "10s"]
    if docker_config:
        cmd += ["--docker-config", docker_config]
    r = subprocess.run(cmd + list(args), capture_output=True, text=True, env=env, timeout=60)
    assert not krmtest.sanitizer_reports(r.stderr), r.stderr
    return r


def token_service(user, password, token):
    """A handler part: /token answers token to (user, password), 401 to others."""
    def serve(h):
        if h.headers.get("Authorization") != basic(user, password):
            return 401, [("Content-Type", "application/json")], b'{"details":"bad credentials"}'
        return 200, [("Content-Type", "application/json")], json.dumps({"token": token}).encode()
    return serve


def challenge(realm, service):
    return 401, [("WWW-Authenticate", f'Bearer realm="{realm}",service="{service}"'),
                 ("Content-Type", "application/json")], b'{"errors":[{"code":"UNAUTHORIZED"}]}'


def image_server(manifest, config, token=None, realm=None):
    """A handler serving one image, asking for "Bearer <token>" (from realm)
    when token is given."""
    def handle(s, h):
        if token and h.headers.get("Authorization") != f"Bearer {token}":
            return challenge(realm, "registry a")
        if "/blobs/" in h.path:
            return 200, [("Content-Type", "application/octet-stream")], config
        return 200, [("Content-Type", oci.MT_MANIFEST)], manifest
    return handle


# ------------------------------------------------------------------ credentials follow the host that asks

@pytest.mark.parametrize("a_auth", ["token", "anonymous"])
@pytest.mark.parametrize("b_has_credentials", [True, False])
def test_redirect_never_carries_registry_credentials_to_another_host(hosts, tmp_path, b_has_credentials, a_auth):
    """Registry A (token auth, or open to anyone; config.json has A's
    credentials either way) redirects the config blob to host B, which
    answers 401 with its own token realm. B gets A's secrets neither on the
    redirect nor at its token endpoint: its realm gets B's credentials from
    config.json (the lookup then succeeds with B's token), or none when
    config.json has none for B (the lookup fails, naming B)."""
    manifest, config = image()
    blob = f"/v2/{REPO}/blobs/{oci.sha256(config)}"

    def b_handle(b, h):
        if h.path.startswith("/token?"):
            return token_service(B_USER, B_PASS, "tok-B")(h)
        if h.headers.get("Authorization") != "Bearer tok-B":
            return challenge(f"{b.url}/token", "host b")
        return 200, [("Content-Type", "application/octet-stream")], config

    b = hosts("127.0.0.2", b_handle)

    def a_handle(a, h):
        if h.path.startswith("/token?"):
            return token_service(A_USER, A_PASS, "tok-A")(h)
        if a_auth == "token" and h.headers.get("Authorization") != "Bearer tok-A":
            return challenge(f"{a.url}/token", "registry a")
        if h.path == blob:
            return 307, [("Location", f"{b.url}/storage/{oci.sha256(config)}?sig=1")], b""
        return 200, [("Content-Type", oci.MT_MANIFEST), ("Docker-Content-Digest", oci.sha256(manifest))], manifest

    a = hosts("127.0.0.1", a_handle)
    creds = {a.addr: (A_USER, A_PASS)}
    if b_has_credentials:
        creds[b.addr] = (B_USER, B_PASS)
    cfg = docker_config(tmp_path / "config.json", **creds)
    r = lookup("--insecure-registry", "127.0.0.2", f"{a.addr}/{REPO}:v1", docker_config=cfg)

    a_secrets = {basic(A_USER, A_PASS), "Bearer tok-A"}
    assert not a_secrets & set(b.auth_seen()), b.seen
    assert not {basic(B_USER, B_PASS), "Bearer tok-B"} & set(a.auth_seen()), a.seen
    assert (blob, "Bearer tok-A" if a_auth == "token" else None) in a.seen   # the redirect came from A
    if b_has_credentials:
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["entrypoint"] == ["/fn"]
        token_reqs = [s for s in b.seen if s[0].startswith("/token?")]
        assert [t[1] for t in token_reqs] == [basic(B_USER, B_PASS)]
        assert "service=host%20b" in token_reqs[0][0]
        assert b.seen[-1] == (f"/storage/{oci.sha256(config)}?sig=1", "Bearer tok-B")
    else:
        assert r.returncode == 1
        assert f"host {b.addr} (where registry {a.addr} redirected the request): the token service " \
               f"{b.url}/token answered HTTP 401" in r.stderr, r.stderr
        assert f'anonymously (no credentials for "{b.addr}" in {cfg})' in r.stderr, r.stderr


def test_token_realm_on_another_host_gets_the_registry_credentials(hosts, tmp_path):
    """The realm A's own challenge names may be on another host (Docker Hub's
    auth.docker.io): A's credentials go there, the token to A only."""
    manifest, config = image()
    realm = hosts("127.0.0.2", lambda _, h: token_service(A_USER, A_PASS, "tok-A")(h))
    a = hosts("127.0.0.1", image_server(manifest, config, "tok-A", f"{realm.url}/token"))
    cfg = docker_config(tmp_path / "config.json", **{a.addr: (A_USER, A_PASS)})
    r = lookup("--insecure-registry", "127.0.0.2", f"{a.addr}/{REPO}:v1", docker_config=cfg)
    assert r.returncode == 0, r.stderr
    assert realm.auth_seen() == [basic(A_USER, A_PASS)]
    assert set(a.auth_seen()) == {None, "Bearer tok-A"}


def test_no_secret_over_plain_http_to_a_host_not_named_insecure(hosts, tmp_path):
    """A realm on http:// at a host that is neither loopback-by-name nor
    named with --insecure-registry would get the credentials in clear text:
    they are not sent, and the message says how to allow it. Without
    credentials the same realm is asked anonymously."""
    manifest, config = image()
    realm = hosts("127.0.0.3", lambda _, h: (200, [("Content-Type", "application/json")], b'{"token":"anon"}'))
    a = hosts("127.0.0.1", image_server(manifest, config, "anon", f"{realm.url}/token"))
    cfg = docker_config(tmp_path / "config.json", **{a.addr: (A_USER, A_PASS)})
    r = lookup(f"{a.addr}/{REPO}:v1", docker_config=cfg)
    assert r.returncode == 1
    assert realm.seen == []
    assert (f"registry {a.addr}: refusing to send the credentials for {a.addr} over plain HTTP to "
            f"{realm.url}/token?") in r.stderr, r.stderr
    assert "--insecure-registry" in r.stderr
    r = lookup(f"{a.addr}/{REPO}:v1", docker_config=docker_config(tmp_path / "other.json",
                                                                   **{"other.example": ("u", "p")}))
    assert r.returncode == 0, r.stderr
    assert realm.auth_seen() == [None]


def test_redirects_and_realms_are_bounded_and_stay_on_http(hosts):
    # relative Locations, resolved against the request's URL
    loops = hosts("127.0.0.1", lambda s, h: (302, [("Location", f"{h.path.rsplit('/', 1)[1]}x")], b""))
    r = lookup(f"{loops.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert f"registry {loops.addr}: GET {loops.url}/v2/{REPO}/manifests/v1xxxxx was redirected more than 5 " \
           "times; refused" in r.stderr, r.stderr
    assert len(loops.seen) == 6
    realm = hosts("127.0.0.1", lambda s, h: challenge("file:///etc/passwd", "r"))
    r = lookup(f"{realm.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert f'registry {realm.addr} names a token realm "file:///etc/passwd" that is not an http(s) URL' \
        in r.stderr, r.stderr
    other = hosts("127.0.0.1", lambda s, h: (307, [("Location", "file:///etc/passwd")], b""))
    r = lookup(f"{other.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert "was redirected to file:///etc/passwd, neither http nor https; refused" in r.stderr, r.stderr


def test_token_with_control_bytes_is_refused(hosts):
    """A token goes into the Authorization header: one with CR/LF would add
    headers to the registry request. It is refused, naming the realm."""
    manifest, config = image()
    realm = hosts("127.0.0.1", lambda _, h: (200, [("Content-Type", "application/json")],
                                              b'{"token":"t\\r\\nX-Injected: 1"}'))
    injected = []

    def handle(s, h):
        injected.append(h.headers.get("X-Injected"))
        return image_server(manifest, config, "t", f"{realm.url}/token")(s, h)

    reg = hosts("127.0.0.1", handle)
    r = lookup(f"{reg.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert f"the token service {realm.url}/token answered HTTP 200 without a usable token" in r.stderr, r.stderr
    assert injected == [None] and len(reg.seen) == 1


# ------------------------------------------------------------------ sizes

def test_every_answer_is_bounded(hosts, tmp_path):
    """A manifest past 4 MiB, a token answer past 1 MiB (sent without a
    Content-Length, so only counting stops it), a config of more than
    200,000 JSON values and headers past 64 KiB are refused with a message
    naming the limit."""
    big = b"{" + b" " * (5 << 20) + b"}"
    reg = hosts("127.0.0.1", lambda s, h: (200, [("Content-Type", oci.MT_MANIFEST)], big))
    r = lookup(f"{reg.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert f"/manifests/v1 is larger than {4 << 20} bytes (the limit for it); refused" in r.stderr, r.stderr

    def endless_token(s, h):
        if not h.path.startswith("/token?"):
            return challenge(f"{s.url}/token", "r")
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Connection", "close")
        h.end_headers()
        try:
            h.wfile.write(b'{"token":"' + b"t" * (2 << 20))
        except OSError:
            pass
        h.close_connection = True
        return None
    tok = hosts("127.0.0.1", endless_token)
    r = lookup(f"{tok.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert f"/token?service=r&scope=repository%3Afn%2Fx%3Apull is larger than {1 << 20} bytes" in r.stderr, r.stderr

    # within the 16 MiB of a config, values that would cost 80 bytes each in the tree
    manifest, config = image()
    config = config[:-1] + b',"x":[' + b",".join([b"1"] * 300000) + b"]}"
    manifest = oci.to_json({"schemaVersion": 2, "mediaType": oci.MT_MANIFEST,
                            "config": oci.descriptor(oci.MT_CONFIG, config), "layers": []})
    wide = hosts("127.0.0.1", image_server(manifest, config))
    r = lookup(f"{wide.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert "cannot be read as JSON: offset 400" in r.stderr and \
           "more than 200000 JSON values (the limit for this document)" in r.stderr, r.stderr

    many = [(f"X-Padding-{i}", "p" * 1000) for i in range(100)]
    hdr = hosts("127.0.0.1", lambda s, h: (200, [("Content-Type", oci.MT_MANIFEST)] + many, b"{}"))
    r = lookup(f"{hdr.addr}/{REPO}:v1")
    assert r.returncode == 1
    assert f"the headers of the answer to GET {hdr.url}/v2/{REPO}/manifests/v1 are longer than 65536 bytes" \
           in r.stderr, r.stderr


# ------------------------------------------------------------------ what the client prints

def test_json_output_carries_registry_strings_escaped(hosts):
    """The manifest's mediaType is the registry's text: quotes, newlines,
    ESC and a would-be extra key come out as one JSON string, exact."""
    hostile = 'x"\n\x1b[31m","injected":"1\\'
    manifest, config = image(media_type=hostile)
    reg = hosts("127.0.0.1", image_server(manifest, config))
    r = lookup(f"{reg.addr}/{REPO}:v1")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and r.stdout.count("\n") == 1
    out = json.loads(r.stdout)
    assert out["mediaType"] == hostile
    assert "injected" not in out
    assert out["digest"] == oci.sha256(manifest) and out["configDigest"] == oci.sha256(config)
