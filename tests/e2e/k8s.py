"""Helpers of the end-to-end tests: a small Kubernetes API client over
urllib (configured from a kubeconfig or the lab's K8S_LAB_* variables), pod
predicates, and runner-client. conftest.py makes fixtures of them; tests
import what they need from here (`from k8s import Api, is_ready`).
"""

import base64
import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
BUILD_DIR = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
CLIENT_BIN = os.path.join(BUILD_DIR, "bin", "runner-client")

# Every wait has a deadline far above what the lab needs (a pod is Ready in
# about 5 s): the tests run on loaded 2-core machines. E2E_SLOW multiplies them.
SLOW = float(os.environ.get("E2E_SLOW") or 1)
POD_READY_TIMEOUT = 120 * SLOW


# ---- configuration ----------------------------------------------------------------------


class ApiConfig:
    """Where the API server is and how to authenticate: server, an SSL
    context (CA, client certificate), headers (bearer token)."""

    def __init__(self, server, ctx, token=None, source=""):
        self.server = server.rstrip("/")
        self.ctx = ctx
        self.token = token
        self.source = source


def _data_file(tmpdir, name, b64):
    path = os.path.join(tmpdir, name)
    with open(path, "wb") as f:
        f.write(base64.b64decode(b64))
    return path


def _exec_token(spec):
    """A client.authentication.k8s.io exec plugin's token (what managed clusters use)."""
    env = dict(os.environ)
    for e in spec.get("env") or []:
        env[e["name"]] = e["value"]
    r = subprocess.run([spec["command"], *(spec.get("args") or [])], env=env, capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"kubeconfig exec plugin {spec['command']} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)["status"]["token"]


def load_kubeconfig(path, tmpdir):
    """The current context of a kubeconfig: server, CA (data or file),
    insecure-skip-tls-verify, token or tokenFile, client certificate and key
    (data or file), exec plugin."""
    with open(path) as f:
        cfg = yaml.safe_load(f)
    base = os.path.dirname(os.path.abspath(path))

    def named(section, name):
        for item in cfg.get(section) or []:
            if item.get("name") == name:
                return item
        raise RuntimeError(f"{path}: no {section[:-1]} named {name!r}")

    ctx_name = cfg.get("current-context") or (cfg.get("contexts") or [{}])[0].get("name")
    context = named("contexts", ctx_name)["context"]
    cluster = named("clusters", context["cluster"])["cluster"]
    user = named("users", context["user"])["user"] if context.get("user") else {}

    def rel(p):
        return p if os.path.isabs(p) else os.path.join(base, p)

    ssl_ctx = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        ssl_ctx.check_hostname = False
        ssl_ctx.verify_mode = ssl.CERT_NONE
    elif cluster.get("certificate-authority-data"):
        ssl_ctx.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    elif cluster.get("certificate-authority"):
        ssl_ctx.load_verify_locations(cafile=rel(cluster["certificate-authority"]))
    cert = user.get("client-certificate") and rel(user["client-certificate"])
    key = user.get("client-key") and rel(user["client-key"])
    if user.get("client-certificate-data"):
        cert = _data_file(tmpdir, "client.crt", user["client-certificate-data"])
    if user.get("client-key-data"):
        key = _data_file(tmpdir, "client.key", user["client-key-data"])
    if cert:
        ssl_ctx.load_cert_chain(cert, key)
    token = user.get("token")
    if not token and user.get("tokenFile"):
        with open(rel(user["tokenFile"])) as f:
            token = f.read().strip()
    if not token and user.get("exec"):
        token = _exec_token(user["exec"])
    return ApiConfig(cluster["server"], ssl_ctx, token, source=f"kubeconfig {path} context {ctx_name}")


def lab_config():
    """The lab's own variables, when there is no KUBECONFIG."""
    ssl_ctx = ssl.create_default_context(cafile=os.environ["K8S_LAB_CA"])
    return ApiConfig(os.environ["K8S_LAB_APISERVER"], ssl_ctx, os.environ["K8S_LAB_TOKEN"], source="K8S_LAB_*")


# ---- the API client -----------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, method, path, status, body):
        self.status = status
        self.body = body
        try:
            self.reason = json.loads(body).get("reason", "")
            msg = json.loads(body).get("message", body)
        except ValueError:
            self.reason, msg = "", body
        super().__init__(f"{method} {path}: HTTP {status}: {msg}")


class Api:
    """Just enough of the Kubernetes API for the tests, over urllib. Paths
    are API paths ("/api/v1/namespaces/NS/pods"); objects are dicts."""

    def __init__(self, config):
        self.config = config

    def request(self, method, path, body=None, query=None, raw=False, timeout=30):
        url = self.config.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json"}
        if self.config.token:
            headers["Authorization"] = "Bearer " + self.config.token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self.config.ctx, timeout=timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            raise ApiError(method, path, e.code, e.read().decode(errors="replace")) from None
        if raw:
            return payload.decode(errors="replace")
        return json.loads(payload) if payload else None

    # Paths of the core objects the tests use.
    @staticmethod
    def path(kind, ns=None, name=None):
        groups = {"endpointslices": "/apis/discovery.k8s.io/v1beta1", "deployments": "/apis/apps/v1",
                  "leases": "/apis/coordination.k8s.io/v1"}
        p = groups.get(kind, "/api/v1")
        if ns:
            p += f"/namespaces/{ns}"
        p += f"/{kind}"
        return p + (f"/{name}" if name else "")

    @staticmethod
    def kind_path(obj, ns=None):
        """Collection path of a manifest ({"kind": "Pod", ...})."""
        kind = obj["kind"].lower()
        kind = {"endpointslice": "endpointslices"}.get(kind, kind + "s")
        return Api.path(kind, ns or obj.get("metadata", {}).get("namespace"))

    def create(self, obj, ns=None, timeout=30):
        """POSTs the object; returns what the server made of it. Kubernetes
        < 1.24 refuses pods (HTTP 500) until the token controller has given
        the namespace's service account its token secret, a moment after
        the account itself: that answer is retried until timeout."""
        deadline = time.monotonic() + timeout * SLOW
        while True:
            try:
                return self.request("POST", self.kind_path(obj, ns), obj)
            except ApiError as e:
                if e.status != 500 or "No API token found for service account" not in e.body \
                        or time.monotonic() >= deadline:
                    raise
            time.sleep(0.2)

    def get(self, kind, ns, name):
        return self.request("GET", self.path(kind, ns, name))

    def get_or_none(self, kind, ns, name):
        try:
            return self.get(kind, ns, name)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def list(self, kind, ns=None, **query):
        return self.request("GET", self.path(kind, ns), query=query or None)["items"]

    def delete(self, kind, ns, name, grace=None, missing_ok=True):
        query = {"gracePeriodSeconds": grace} if grace is not None else None
        try:
            return self.request("DELETE", self.path(kind, ns, name), query=query)
        except ApiError as e:
            if e.status == 404 and missing_ok:
                return None
            raise

    def logs(self, ns, pod, container=None, previous=False, tail=None):
        query = {}
        if container:
            query["container"] = container
        if previous:
            query["previous"] = "true"
        if tail:
            query["tailLines"] = tail
        return self.request("GET", self.path("pods", ns, pod) + "/log", query=query, raw=True)

    def events(self, ns, name=None):
        query = {"fieldSelector": f"involvedObject.name={name}"} if name else {}
        return self.list("events", ns, **query)

    def describe_pod(self, ns, name):
        """Phase, conditions, container states and events: for failure messages."""
        pod = self.get_or_none("pods", ns, name)
        if pod is None:
            return f"pod {ns}/{name}: gone"
        st = pod.get("status", {})
        lines = [f"pod {ns}/{name}: phase {st.get('phase')} podIP {st.get('podIP')}"]
        for c in st.get("conditions") or []:
            lines.append(f"  condition {c['type']}={c['status']} {c.get('reason', '')}")
        for c in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
            lines.append(f"  container {c['name']}: ready={c.get('ready')} restarts={c.get('restartCount')} "
                         f"state={json.dumps(c.get('state'))} last={json.dumps(c.get('lastState'))}")
        try:
            for e in self.events(ns, name):
                lines.append(f"  event {e.get('type')} {e.get('reason')}: {e.get('message')}")
        except ApiError as e:
            lines.append(f"  (events: {e})")
        return "\n".join(lines)

    def wait_pod(self, ns, name, predicate, timeout, what="the condition", interval=0.1):
        """Polls the pod until predicate(pod) is true; returns (pod, seconds
        waited). Fails the test with the pod's description at the deadline."""
        start = time.monotonic()
        deadline = start + timeout
        while True:
            pod = self.get_or_none("pods", ns, name)
            if pod is not None and predicate(pod):
                return pod, time.monotonic() - start
            if time.monotonic() >= deadline:
                pytest.fail(f"pod {ns}/{name}: no {what} within {timeout:.0f} s\n{self.describe_pod(ns, name)}",
                            pytrace=False)
            time.sleep(interval)

    def wait_gone(self, kind, ns, name, timeout):
        deadline = time.monotonic() + timeout
        while self.get_or_none(kind, ns, name) is not None:
            if time.monotonic() >= deadline:
                pytest.fail(f"{kind} {ns}/{name} still there {timeout:.0f} s after its deletion", pytrace=False)
            time.sleep(0.2)

    def create_namespace(self, name, timeout=60):
        """Creates the namespace and waits for its default service account
        (pods are refused until it exists) and, before Kubernetes 1.24, for
        the account's token secret (refused until then too)."""
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
                     "labels": {"krm-fn-runtime/e2e": "true"}}})
        deadline = time.monotonic() + timeout * SLOW
        while True:
            sa = self.get_or_none("serviceaccounts", name, "default")
            if sa is not None and (sa.get("secrets") or not self.token_secrets()):
                return
            if time.monotonic() >= deadline:
                pytest.fail(f"namespace {name}: default service account {'without token ' if sa else ''}"
                            f"after {timeout} s", pytrace=False)
            time.sleep(0.1)

    def token_secrets(self):
        """Whether the cluster gives service accounts token secrets (< 1.24)."""
        if not hasattr(self, "_token_secrets"):
            v = self.request("GET", "/version")
            minor = int("".join(ch for ch in v.get("minor", "0") if ch.isdigit()) or 0)
            self._token_secrets = v.get("major") == "1" and minor < 24
        return self._token_secrets


# Pod predicates.

def condition(pod, kind):
    for c in pod.get("status", {}).get("conditions") or []:
        if c["type"] == kind:
            return c["status"] == "True"
    return False


def is_ready(pod):
    return condition(pod, "Ready")


def container_status(pod, name, init=False):
    key = "initContainerStatuses" if init else "containerStatuses"
    for c in pod.get("status", {}).get(key) or []:
        if c["name"] == name:
            return c
    return None


def run_client(args, timeout=60, input=None, check=False):
    """Runs $BUILD/bin/runner-client; returns the CompletedProcess (text)."""
    r = subprocess.run([CLIENT_BIN, *args], capture_output=True, text=True, timeout=timeout * SLOW, input=input)
    if check:
        assert r.returncode == 0, f"runner-client {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r
