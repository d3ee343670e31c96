"""The static runner-client (make static: libcurl and OpenSSL built from
Debian's sources with musl) speaks TLS as the function-runner image needs
it in a cluster: to an API server reached by IP address (as in-cluster
config does, KUBERNETES_SERVICE_HOST), its certificate checked against the
kubeconfig's CA, the client authenticated by the kubeconfig's certificate
and key (RSA in the traditional PEM form kind and kubeadm write, and EC in
PKCS#8). The server here is a small HTTPS one written for the test, on
127.0.0.2, which requires a client certificate signed by the same CA.

The image's own run (serve, the exec runtime's sandbox and seccomp, the
probe, a registry lookup) is test_images.py's."""

import base64
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading

import pytest

import krmtest
from krmtest import ROOT

sys.path.insert(0, os.path.join(ROOT, "images"))
import oci  # noqa: E402

STATIC_CLIENT = os.path.join(ROOT, "build", "static", "runner-client")
NS = "porch-fn-system"


@pytest.fixture(scope="module", autouse=True)
def static_client():
    if not os.path.exists(STATIC_CLIENT):
        pytest.fail(f"{STATIC_CLIENT} is missing: run `make static`", pytrace=False)
    assert oci.elf_interpreter(STATIC_CLIENT) is None, "runner-client in build/static is not static"


def openssl(d, *args):
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)


def make_ca(d, name):
    openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "1", "-subj", f"/CN={name}")


def make_cert(d, name, ca, subject, ext, rsa=False):
    """name.crt and name.key signed by ca; rsa: a traditional RSA key
    (BEGIN RSA PRIVATE KEY), else EC in PKCS#8 (BEGIN PRIVATE KEY)."""
    if rsa:
        openssl(d, "genrsa", "-traditional", "-out", f"{name}.key", "2048")
    else:
        openssl(d, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-out", f"{name}.key")
    openssl(d, "req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
    (d / f"{name}.ext").write_text(ext)
    openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "1", "-extfile", f"{name}.ext")


class TLSAPI:
    """An API server on 127.0.0.2 over HTTPS (certificate for that IP
    only), requiring a client certificate signed by ca; records (client CN,
    path) of each request and answers every GET with an empty PodList."""

    def __init__(self, d, ca):
        self.seen = []
        api = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                subject = dict(x[0] for x in self.connection.getpeercert()["subject"])
                api.seen.append((subject.get("commonName"), self.path))
                body = json.dumps({"kind": "PodList", "apiVersion": "v1",
                                   "metadata": {"resourceVersion": "1"}, "items": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(d / "srv.crt", d / "srv.key")
        ctx.load_verify_locations(d / f"{ca}.crt")
        ctx.verify_mode = ssl.CERT_REQUIRED
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.2", 0), H)
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def tls_api(tmp_path):
    d = tmp_path / "pki"
    d.mkdir()
    make_ca(d, "ca")
    make_cert(d, "srv", "ca", "/CN=kube-apiserver", "subjectAltName=IP:127.0.0.2\n")
    api = TLSAPI(d, "ca")
    yield api, d
    api.close()


def data(path):
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig(tmp_path, port, ca_crt, cert, key):
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.2:{port}\n"
        f"    certificate-authority-data: {data(ca_crt)}\n"
        "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
        f"users:\n- name: u\n  user:\n    client-certificate-data: {data(cert)}\n"
        f"    client-key-data: {data(key)}\n")
    return kc


def pod_list(tmp_path, kc):
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "DOCKER_CONFIG")}
    env["HOME"] = str(tmp_path)
    r = krmtest.run_cli([STATIC_CLIENT, "pod", "list", "--kubeconfig", str(kc)], env=env, timeout=60)
    r.out = r.stdout.decode("utf-8", "replace")
    r.err = r.stderr.decode("utf-8", "replace")
    return r


@pytest.mark.parametrize("rsa", [True, False], ids=["rsa-traditional", "ec-pkcs8"])
def test_api_server_by_ip_with_ca_and_client_certificate(tls_api, tmp_path, rsa):
    api, d = tls_api
    make_cert(d, "client", "ca", "/CN=porch-fn-runner", "extendedKeyUsage=clientAuth\n", rsa=rsa)
    r = pod_list(tmp_path, kubeconfig(tmp_path, api.port, d / "ca.crt", d / "client.crt", d / "client.key"))
    assert r.returncode == 0, krmtest.explain(r)
    assert api.seen and all(cn == "porch-fn-runner" for cn, _ in api.seen), api.seen
    assert api.seen[0][1].startswith(f"/api/v1/namespaces/{NS}/pods"), api.seen


def test_api_server_signed_by_another_ca_refused(tls_api, tmp_path):
    """The control: verification is on; a server whose certificate the
    kubeconfig's CA did not sign is not spoken to."""
    api, d = tls_api
    make_ca(d, "other")
    make_cert(d, "client", "ca", "/CN=porch-fn-runner", "extendedKeyUsage=clientAuth\n")
    r = pod_list(tmp_path, kubeconfig(tmp_path, api.port, d / "other.crt", d / "client.crt", d / "client.key"))
    assert r.returncode == 1, krmtest.explain(r)
    assert "certificate" in r.err.lower(), r.err
    assert api.seen == []
