"""`runner-client serve --enable-private-registries`, as Porch's flag: the
mounted dockerconfigjson (--registry-auth-secret-path) becomes Secret
--registry-auth-secret-name (type kubernetes.io/dockerconfigjson) in the
pod namespace, created when missing, patched only when its bytes differ,
and is named in every function pod's imagePullSecrets; a missing or bad
file is refused at start naming it. Against the scripted API server of
test_base_templates; tests/e2e/test_private_registry.py pulls through a
registry that requires the login."""

import base64
import http.server
import json
import ssl
import subprocess
import threading

import pytest

from krmtest import CLIENT_BIN, run_cli
from test_hostile_kube import FakeAPI
from test_base_templates import (NS, Cluster, custom_pod_template, custom_service_template,  # noqa: F401
                                 make_cluster, pod_posted, serve)

SECRETS = f"/api/v1/namespaces/{NS}/secrets"
AUTH = {"auths": {"registry.example:5000": {"auth": base64.b64encode(b"alice:pw").decode()}}}


def with_secret(cluster, existing=None):
    """Secrets on the scripted server: `existing` answered to the GET (None:
    404); every write kept in cluster.secret_writes."""
    cluster.secret_writes = []

    def get(f, h, path, query):
        if existing is None:
            return f.send(h, 404, {"kind": "Status", "code": 404, "reason": "NotFound",
                                   "details": {"name": path.rsplit("/", 1)[1], "kind": "secrets"}})
        f.send(h, 200, existing)

    def write(f, h, path, query):
        with cluster.lock:
            cluster.secret_writes.append((h.command, path, h.headers.get("Content-Type"),
                                          json.loads(h.body)))
        f.send(h, 201 if h.command == "POST" else 200, json.loads(h.body))

    cluster.fake.route("GET", SECRETS, get)
    cluster.fake.route("POST", SECRETS, write)
    cluster.fake.route("PATCH", SECRETS, write)
    return cluster


def auth_file(tmp_path, obj=AUTH):
    p = tmp_path / ".dockerconfigjson"
    p.write_text(json.dumps(obj))
    return p


def test_secret_created_and_named_in_pods(start_server, tmp_path, make_cluster):  # noqa: F811
    cluster = with_secret(make_cluster(pod_template=custom_pod_template(),
                                       service_template=custom_service_template()))
    f = auth_file(tmp_path)
    srv = serve(start_server, tmp_path, cluster, "--enable-private-registries",
                f"--registry-auth-secret-path={f}", "--registry-auth-secret-name", "my-pull")
    pod, _ = pod_posted(srv, cluster)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "my-pull"}]
    [(method, path, ctype, body)] = cluster.secret_writes
    assert method == "POST" and path == SECRETS and ctype == "application/json"
    assert body["metadata"] == {"name": "my-pull"} and body["type"] == "kubernetes.io/dockerconfigjson"
    assert base64.b64decode(body["data"][".dockerconfigjson"]) == f.read_bytes()
    assert "pull secret porch-fn-system/my-pull for private registries created" in srv.stderr()


def test_secret_patched_only_when_its_bytes_differ(start_server, tmp_path, make_cluster):  # noqa: F811
    f = auth_file(tmp_path)
    same = {"metadata": {"name": "auth-secret"}, "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(f.read_bytes()).decode()}}
    cluster = with_secret(make_cluster(pod_template=custom_pod_template(),
                                       service_template=custom_service_template()), same)
    srv = serve(start_server, tmp_path, cluster, "--enable-private-registries=true",
                f"--registry-auth-secret-path={f}")
    pod, _ = pod_posted(srv, cluster)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "auth-secret"}]   # Porch's default name
    assert cluster.secret_writes == []
    srv.stop()

    other = dict(same, data={".dockerconfigjson": base64.b64encode(b'{"auths":{}}').decode(),
                             "other-key": "a2VwdA=="})
    cluster2 = with_secret(make_cluster(pod_template=custom_pod_template(),
                                        service_template=custom_service_template()), other)
    srv2 = serve(start_server, tmp_path, cluster2, "--enable-private-registries",
                 f"--registry-auth-secret-path={f}")
    pod_posted(srv2, cluster2)
    [(method, path, ctype, body)] = cluster2.secret_writes
    assert method == "PATCH" and path == SECRETS + "/auth-secret"
    assert body == {"data": {".dockerconfigjson": base64.b64encode(f.read_bytes()).decode()}}


def test_a_template_naming_the_secret_has_it_once(start_server, tmp_path, make_cluster):  # noqa: F811
    tmpl = custom_pod_template()
    tmpl["template"]["spec"]["imagePullSecrets"] = [{"name": "other"}, {"name": "auth-secret"}]
    cluster = with_secret(make_cluster(pod_template=tmpl, service_template=custom_service_template()))
    srv = serve(start_server, tmp_path, cluster, "--enable-private-registries",
                f"--registry-auth-secret-path={auth_file(tmp_path)}")
    pod, _ = pod_posted(srv, cluster)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "other"}, {"name": "auth-secret"}]


@pytest.mark.parametrize("content, message", [
    (None, "No such file or directory"),
    ("{not json", "not a dockerconfigjson (a JSON object with \"auths\"): offset 1"),
    ('{"credHelpers": {}}', 'not a dockerconfigjson (a JSON object with "auths"): no "auths" object'),
    ("x" * (1 << 20) + "x", "is larger than 1048576 bytes"),
], ids=["missing", "not-json", "no-auths", "too-large"])
def test_bad_auth_file_refused_at_start(tmp_path, content, message):
    f = tmp_path / "auth.json"
    if content is not None:
        f.write_text(content)
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--kubeconfig", str(kc), "--wrapper-server-image",
                 "example.com/w:1", "--enable-private-registries", f"--registry-auth-secret-path={f}"])
    assert r.returncode == 2, r.stderr
    err = r.stderr.decode()
    assert f"--registry-auth-secret-path {f} (--enable-private-registries): " in err, err
    assert message in err, err


@pytest.mark.parametrize("args, message", [
    (["--registry-auth-secret-name=Bad_Name"], 'invalid value "Bad_Name" for --registry-auth-secret-name'),
    (["--docker-config=/x/config.json"], "--docker-config and --enable-private-registries both give"),
])
def test_bad_private_registry_flags_refused(args, message):
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--enable-private-registries", *args])
    assert r.returncode == 2, r.stderr
    assert message in r.stderr.decode(), r.stderr


def make_ca_and_cert(d):
    """A CA and a server certificate for IP 127.0.0.2 it signed (openssl)."""
    def ssl_cmd(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ssl_cmd("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=test-ca")
    ssl_cmd("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.2")
    (d / "ext").write_text("subjectAltName=IP:127.0.0.2\n")
    ssl_cmd("x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "srv.crt", "-days", "1", "-extfile", "ext")


@pytest.fixture
def tls_registry(tmp_path):
    """The scripted registry (FakeAPI's image) over HTTPS on 127.0.0.2, its
    certificate signed by a CA of the test's: (image, the CA's directory)."""
    d = tmp_path / "tls"
    d.mkdir()
    make_ca_and_cert(d)
    fake = FakeAPI()
    fake.add_image()
    handler = fake.srv.RequestHandlerClass
    fake.close()
    srv = http.server.ThreadingHTTPServer(("127.0.0.2", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "srv.crt", d / "srv.key")
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    (d / "ca.key").unlink()   # the secret directory holds the CA's certificate only
    yield f"127.0.0.2:{srv.server_address[1]}/fn:v1", d
    srv.shutdown()
    srv.server_close()


def test_tls_ca_trusted_for_the_lookup(start_server, tmp_path, make_cluster, tls_registry):  # noqa: F811
    image, ca_dir = tls_registry
    cluster = with_secret(make_cluster(pod_template=custom_pod_template(),
                                       service_template=custom_service_template()))
    cluster.image = image
    f = auth_file(tmp_path, {"auths": {}})
    plain = serve(start_server, tmp_path, cluster, "--enable-private-registries",
                  f"--registry-auth-secret-path={f}")
    err = plain.evaluate_error(image=image, timeout=10)
    assert "certificate" in err.details().lower(), err.details()
    assert not cluster.posted(f"/api/v1/namespaces/{NS}/pods")
    plain.stop()
    srv = serve(start_server, tmp_path, cluster, "--enable-private-registries",
                f"--registry-auth-secret-path={f}", "--enable-private-registries-tls",
                f"--tls-secret-path={ca_dir}")
    pod, _ = pod_posted(srv, cluster)
    assert pod["spec"]["containers"][1]["image"] == image   # the function container


@pytest.mark.parametrize("files, message", [
    ({}, "ca.crt not found: No such file or directory, and ca.pem also not found: No such file or "
         "directory"),
    ({"ca.pem": "not a certificate"}, "ca.pem holds no PEM certificate"),
], ids=["none", "not-pem"])
def test_bad_tls_secret_refused_at_start(tmp_path, files, message):
    d = tmp_path / "tls"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--kubeconfig", str(kc), "--wrapper-server-image",
                 "example.com/w:1", "--enable-private-registries",
                 f"--registry-auth-secret-path={auth_file(tmp_path)}",
                 "--enable-private-registries-tls", f"--tls-secret-path={d}"])
    assert r.returncode == 2, r.stderr
    err = r.stderr.decode()
    assert f"--tls-secret-path {d} (--enable-private-registries-tls): " + message in err, err


def test_tls_without_private_registries_refused():
    r = run_cli([CLIENT_BIN, "serve", "--port", "0", "--enable-private-registries-tls"])
    assert r.returncode == 2, r.stderr
    assert "--enable-private-registries-tls needs --enable-private-registries" in r.stderr.decode()


def kubelet_mount(d, content, generation):
    """The mounted Secret as the kubelet writes it: the file is a link into
    `..data`, which is a link to a timestamped directory; an update writes a
    new directory and renames a new `..data` link over the old one (the
    file's path never changes, its directory's entries do)."""
    import os
    new = d / f"..2026_11_26_{generation}"
    new.mkdir()
    (new / ".dockerconfigjson").write_bytes(content)
    tmp = d / "..data_tmp"
    os.symlink(new.name, tmp)
    os.replace(tmp, d / "..data")
    link = d / ".dockerconfigjson"
    if not link.is_symlink():
        os.symlink("..data/.dockerconfigjson", link)
    return link


def test_secret_follows_the_mounted_file_as_the_kubelet_updates_it(start_server, tmp_path,
                                                                   make_cluster):  # noqa: F811
    import time
    cluster = with_secret(make_cluster(pod_template=custom_pod_template(),
                                       service_template=custom_service_template()))
    mount = tmp_path / "registry-auth"
    mount.mkdir()
    first = json.dumps(AUTH).encode()
    f = kubelet_mount(mount, first, 1)
    srv = serve(start_server, tmp_path, cluster, "--enable-private-registries",
                f"--registry-auth-secret-path={f}")

    def writes(n):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with cluster.lock:
                if len(cluster.secret_writes) >= n:
                    return list(cluster.secret_writes)
            time.sleep(0.02)
        raise AssertionError(f"{len(cluster.secret_writes)} writes, not {n}:\n{srv.stderr()}")

    [(method, _, _, body)] = writes(1)   # made at start (the GET says 404)
    assert method == "POST" and base64.b64decode(body["data"][".dockerconfigjson"]) == first

    second = json.dumps({"auths": {"registry.example:5000": {
        "auth": base64.b64encode(b"alice:rotated").decode()}}}).encode()
    kubelet_mount(mount, second, 2)
    _, (method, _, _, body) = writes(2)
    assert base64.b64decode(body["data"][".dockerconfigjson"]) == second
    assert f"{f} changed: the pull Secret is updated" in srv.stderr()

    kubelet_mount(mount, b"{not json", 3)   # a bad update: the last good bytes stay
    time.sleep(0.5)
    assert len(cluster.secret_writes) == 2
    assert "not a dockerconfigjson" in srv.stderr() and "keeps the last good one" in srv.stderr()

    third = json.dumps({"auths": {}}).encode()
    kubelet_mount(mount, third, 4)
    _, _, (method, _, _, body) = writes(3)
    assert base64.b64decode(body["data"][".dockerconfigjson"]) == third
    pod, _ = pod_posted(srv, cluster)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "auth-secret"}]
