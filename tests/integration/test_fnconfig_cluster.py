"""FunctionConfigs from the cluster (issue 23), the fault cases, against a
small fake API server standing in for a hostile or failing one (the real
behaviour is tests/e2e/test_serve_fnconfigs.py, on the lab):

- a watch answered 410 Gone lists again, and the new list replaces the
  whole set: an object deleted while serve was not watching loses its
  route (its call answers NOT_FOUND);
- a watch that breaks mid-line is opened again (with backoff) and the
  events after it apply;
- an object larger than serve reads, and one with a spec the strict
  reader refuses, get status.error saying why, while the others serve;
- a status write the server refuses (403) is not repeated: no write loop
  with the watch, however many events follow.
"""

import copy
import json
import threading
import time

import grpc
import pytest

from krmtest import CLIENT_BIN, SLOW
from test_hostile_kube import NS, FakeAPI, kubeconfig

BASE = f"/apis/config.porch.kpt.dev/v1alpha1/namespaces/{NS}/functionconfigs"


def fc(name, path="a", rv="1", generation=1, **spec_extra):
    return {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "FunctionConfig",
            "metadata": {"name": name, "namespace": NS, "resourceVersion": rv, "generation": generation},
            "spec": {"image": name, "prefixes": ["example.com"],
                     "binaryExecutor": {"tags": ["v1"], "path": path}, **spec_extra}}


class Cluster:
    """The fake's FunctionConfigs: lists answered from `objects`, watches from
    `watches` (a list of callables, one per watch opened; the last repeats),
    PATCHes merged into the object and answered with it."""

    def __init__(self, fake):
        self.fake = fake
        self.objects = {}
        self.rv = 10
        self.lock = threading.Lock()
        self.watches = [lambda h: hold(h, 30)]
        self.opened = 0
        self.refuse_status = False
        fake.route("GET", BASE, self.get)
        fake.route("PATCH", BASE + "/", self.patch)

    def get(self, fake, h, path, query):
        if "watch=" in query:
            with self.lock:
                fn = self.watches[min(self.opened, len(self.watches) - 1)]
                self.opened += 1
            return fn(h)
        with self.lock:
            items = [copy.deepcopy(o) for o in self.objects.values()]
        fake.send(h, 200, {"kind": "FunctionConfigList", "apiVersion": "config.porch.kpt.dev/v1alpha1",
                           "metadata": {"resourceVersion": str(self.rv)}, "items": items})

    def patch(self, fake, h, path, query):
        name, _, sub = path[len(BASE) + 1:].partition("/")
        if sub == "status" and self.refuse_status:
            return fake.send(h, 403, {"kind": "Status", "code": 403, "reason": "Forbidden",
                                      "message": "functionconfigs/status is forbidden"})
        patch = json.loads(h.body)
        with self.lock:
            obj = self.objects.get(name)
            if obj is None:
                return fake.send(h, 404, {"kind": "Status", "code": 404, "reason": "NotFound"})
            if sub == "status":
                st = obj.setdefault("status", {})
                for k, v in patch["status"].items():
                    if v is None:
                        st.pop(k, None)
                    else:
                        st[k] = v
            else:
                obj["metadata"]["finalizers"] = patch["metadata"]["finalizers"]
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            answer = copy.deepcopy(obj)
        fake.send(h, 200, answer)

    def patches(self, contains=""):
        return self.fake.requests("PATCH", contains)


def hold(h, seconds, lines=()):
    """A watch answer: these lines, then nothing until it ends."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for line in lines:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        h.wfile.flush()
    time.sleep(seconds)
    try:
        h.wfile.write(b"0\r\n\r\n")
    except OSError:
        pass


def event(kind, obj):
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


@pytest.fixture
def fake():
    f = FakeAPI()
    yield f
    f.close()


def serve(start_server, tmp_path, fake):
    fns = tmp_path / "functions"
    fns.mkdir()
    for word in ("a", "b"):
        (fns / word).write_text("#!/bin/sh\ncat >/dev/null\nprintf 'apiVersion: config.kubernetes.io/v1\\n"
                                f"kind: ResourceList\\nitems: []\\nresults:\\n- message: from-{word}\\n'\n")
        (fns / word).chmod(0o755)
    kc = kubeconfig(tmp_path, fake.port, "    token: t\n")
    return start_server([], binary=CLIENT_BIN, argv=[
        "serve", "--port", "{port}", "--kubeconfig", str(kc), "--pod-namespace", NS,
        "--disable-runtimes=pod", "--function-config-source", "cluster", "--functions", str(fns),
        "--log-level", "3"])


def answer(srv, name):
    try:
        return srv.evaluate(b"", image=f"example.com/{name}:v1").resource_list.decode()
    except grpc.RpcError as e:
        return e.code()


def wait_for(what, get, ok, timeout=10):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        got = get()
        if ok(got):
            return got
        assert time.monotonic() < deadline, f"{what}: last seen {got!r}"
        time.sleep(0.05)


def test_gone_relists_and_the_list_replaces_the_set(start_server, tmp_path, fake):
    cl = Cluster(fake)
    cl.objects = {"one": fc("one", "a"), "two": fc("two", "b")}
    gone = event("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})

    def first(h):
        time.sleep(1.0)   # the calls below see both objects first
        with cl.lock:     # deleted while serve does not watch: only the list says so
            del cl.objects["two"]
        hold(h, 0, [gone])

    cl.watches = [first, lambda h: hold(h, 30)]
    srv = serve(start_server, tmp_path, fake)
    assert "from-b" in str(wait_for("two routed", lambda: answer(srv, "two"), lambda a: "from-b" in str(a)))
    wait_for("two's route gone after the relist", lambda: answer(srv, "two"),
             lambda a: a == grpc.StatusCode.NOT_FOUND)
    assert "from-a" in answer(srv, "one")
    assert "listed again" in srv.stderr()
    lists = [r for r in fake.requests("GET", "/functionconfigs") if "watch=" not in r[1]]
    assert len(lists) >= 2, lists   # the list, and the relist


def test_broken_watch_reopened_and_later_events_apply(start_server, tmp_path, fake):
    cl = Cluster(fake)
    cl.objects = {"one": fc("one", "a")}
    changed = fc("one", "b", rv="20", generation=2)

    def broken(h):
        hold(h, 0, [b'{"type": "MODIFIED", "object": {"kind": "Functi'])   # ends mid-line

    def then_changed(h):
        with cl.lock:
            cl.objects["one"] = copy.deepcopy(changed)
        hold(h, 30, [event("MODIFIED", changed)])

    cl.watches = [broken, then_changed]
    srv = serve(start_server, tmp_path, fake)
    wait_for("the change after the reconnect", lambda: answer(srv, "one"), lambda a: "from-b" in str(a))
    assert cl.opened >= 2
    wait_for("generation 2 written", lambda: cl.objects["one"].get("status", {}),
             lambda s: s.get("functionRunnerObservedGeneration") == 2)


def test_oversized_and_bad_objects_get_their_error(start_server, tmp_path, fake):
    cl = Cluster(fake)
    big = fc("big", "a")
    big["metadata"]["annotations"] = {"padding": "x" * (100 << 10)}
    bad = fc("bad", "a", colour="blue")      # no such field in Porch's schema
    cl.objects = {"good": fc("good", "a"), "big": big, "bad": bad}
    srv = serve(start_server, tmp_path, fake)
    wait_for("good routed", lambda: answer(srv, "good"), lambda a: "from-a" in str(a))
    st = wait_for("errors written", lambda: {n: o.get("status", {}) for n, o in cl.objects.items()},
                  lambda s: s["big"].get("error") and s["bad"].get("error")
                  and s["good"].get("functionRunnerObservedGeneration"))   # each written in turn
    assert "more than 65536 bytes as JSON, the most serve reads" in st["big"]["error"], st
    assert "spec.colour" in st["bad"]["error"] and "unknown field" in st["bad"]["error"], st
    assert "functionRunnerObservedGeneration" not in st["big"] and st["good"] == {
        "functionRunnerObservedGeneration": 1}, st
    for name in ("big", "bad"):
        assert answer(srv, name) == grpc.StatusCode.NOT_FOUND
    # each object's finalizer added, once
    for name in ("good", "big", "bad"):
        assert cl.objects[name]["metadata"]["finalizers"] == [
            "config.porch.kpt.dev/functionconfig-function-runner"]
        assert len(cl.patches(f"functionconfigs/{name}")) == 2, cl.patches(name)   # finalizer, status


def test_a_refused_status_write_is_not_repeated(start_server, tmp_path, fake):
    cl = Cluster(fake)
    cl.refuse_status = True
    cl.objects = {"one": fc("one", "a")}
    others = [event("MODIFIED", fc("other", "b", rv=str(30 + i), generation=i + 1)) for i in range(20)]
    cl.watches = [lambda h: (time.sleep(0.5), hold(h, 30, others))]
    srv = serve(start_server, tmp_path, fake)
    wait_for("other routed", lambda: answer(srv, "other"), lambda a: "from-b" in str(a))
    time.sleep(1.0)
    writes = cl.patches("one/status")
    assert len(writes) == 1, writes
    assert "cannot write its status" in srv.stderr() and "forbidden" in srv.stderr()


@pytest.mark.parametrize("args, want", [
    (["--function-config-source", "etcd"],
     'invalid value "etcd" for --function-config-source: want file or cluster'),
    (["--function-config-source", "cluster", "--function-config", "fc.yaml"],
     "--function-config fc.yaml and --function-config-source cluster: give one source of FunctionConfigs"),
])
def test_the_source_flag_refused_clearly(tmp_path, args, want):
    from test_hostile_kube import rc
    r = rc(tmp_path, "serve", "--disable-runtimes=pod", *args)
    assert r.returncode == 2 and want in r.err, (r.returncode, r.err)


def test_without_a_cluster_the_cluster_source_says_so(tmp_path):
    """Exec-only with the cluster source and no kubeconfig anywhere: exit 2
    naming what is missing, not a runner that serves nothing."""
    from test_hostile_kube import rc
    r = rc(tmp_path, "serve", "--disable-runtimes=pod", "--function-config-source", "cluster",
           "--port", "0", timeout=20)
    assert r.returncode == 2, (r.returncode, r.err)
    assert "FunctionConfigs from the cluster need a Kubernetes cluster" in r.err, r.err


def test_objects_past_the_total_are_refused_by_name(start_server, tmp_path, fake):
    """70 objects of 60 KiB: the first 4 MiB (by name) apply, the rest get
    status.error saying the namespace's FunctionConfigs pass the total."""
    cl = Cluster(fake)
    for i in range(70):
        o = fc(f"fn{i:02d}", "a")
        o["metadata"]["annotations"] = {"padding": "x" * (60 << 10)}
        cl.objects[o["metadata"]["name"]] = o
    srv = serve(start_server, tmp_path, fake)
    st = wait_for("every status written", lambda: {n: o.get("status", {}) for n, o in cl.objects.items()},
                  lambda s: all(s.values()), timeout=30)
    applied = sorted(n for n, s in st.items() if s.get("functionRunnerObservedGeneration") == 1)
    refused = sorted(n for n, s in st.items() if "pass 4194304 bytes as JSON" in s.get("error", ""))
    assert applied == [f"fn{i:02d}" for i in range(len(applied))] and 60 <= len(applied) < 70, applied
    assert refused == [f"fn{i:02d}" for i in range(len(applied), 70)], refused
    assert "from-a" in str(answer(srv, applied[-1]))
    assert answer(srv, refused[0]) == grpc.StatusCode.NOT_FOUND


def test_a_conflict_is_tried_again_on_the_newer_version(start_server, tmp_path, fake):
    """The finalizer's write meets a 409 (someone changed the object since
    serve read it): the change comes as a watch event, before or after the
    409's answer, and serve writes again against the new version."""
    cl = Cluster(fake)
    cl.objects = {"one": fc("one", "a")}
    conflicted = threading.Event()
    merge = cl.patch

    def patch(f, h, path, query):
        if conflicted.is_set():
            return merge(f, h, path, query)
        with cl.lock:
            cl.rv += 1
            cl.objects["one"]["metadata"]["resourceVersion"] = str(cl.rv)
            cl.objects["one"]["metadata"]["labels"] = {"changed": "by-someone"}
        conflicted.set()
        time.sleep(0.2)   # the event first
        f.send(h, 409, {"kind": "Status", "code": 409, "reason": "Conflict",
                        "message": "the object has been modified"})

    fake.routes = [r for r in fake.routes if r[0] != "PATCH"]
    fake.route("PATCH", BASE + "/", patch)

    def watch(h):
        conflicted.wait(10)
        with cl.lock:
            obj = copy.deepcopy(cl.objects["one"])
        hold(h, 30, [event("MODIFIED", obj)])

    cl.watches = [watch]
    serve(start_server, tmp_path, fake)
    wait_for("the finalizer and status written after the conflict", lambda: cl.objects["one"],
             lambda o: o["metadata"].get("finalizers") and
             o.get("status", {}).get("functionRunnerObservedGeneration") == 1)
    assert len(cl.patches("functionconfigs/one")) == 3   # refused, then finalizer and status
