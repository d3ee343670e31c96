"""`runner-client serve` replicas sharing one pod namespace (nephio#1069),
against a scripted API server: the replica's Lease (created, then renewed
by patches), and what its scan does with the namespace's function pods
given the replicas' Leases: its own idle pods deleted (a Service another
pod still selects kept), a pod of a replica whose Lease expired claimed
(conditional on its resourceVersion), the Lease of an expired replica
owning no pod deleted, a live replica's pods and unowned
pods never touched; with its own Lease not current, nothing deleted.
tests/e2e/test_serve_replicas.py runs two replicas on the lab."""

import json
import time
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest

from krmtest import CLIENT_BIN
from test_hostile_kube import NS, FakeAPI, kubeconfig, pod_list  # noqa: F401

LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
PODS = f"/api/v1/namespaces/{NS}/pods"
SERVICES = f"/api/v1/namespaces/{NS}/services"


def stamp(ago_s, micro=False):
    t = datetime.now(timezone.utc) - timedelta(seconds=ago_s)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def fn_pod(name, pod_id, owner=None, rv="1", last_call=None, age_s=3600):
    ann = {"fn.kpt.dev/template-version": "inline-v1"}
    if owner:
        ann["fn.kpt.dev/owner"] = owner
    if last_call:
        ann["fn.kpt.dev/last-call"] = last_call
    return {"metadata": {"name": name, "namespace": NS, "resourceVersion": rv,
                         "creationTimestamp": stamp(age_s), "labels": {"fn.kpt.dev/image": pod_id},
                         "annotations": ann},
            "spec": {"containers": [{"name": "function", "image": "example.com/fn:v1"}]},
            "status": {"phase": "Running"}}


def lease(holder, renewed_ago_s, duration=15):
    return {"metadata": {"name": f"fn-runner-{holder}", "labels": {"fn.kpt.dev/runner-lease": "true"}},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                     "renewTime": stamp(renewed_ago_s, micro=True)}}


def the_pods():
    """The namespace's pods, their times taken now: the module is imported
    minutes before a full run reaches these tests."""
    return [
        fn_pod("mine-old", "id-mine", owner="me", last_call=stamp(600)),    # idle 10 min: collected
        fn_pod("mine-shared", "id-shared", owner="me"),                      # idle; its Service stays
        fn_pod("live-2", "id-shared", owner="runner-live"),
        fn_pod("mine-fresh", "id-fresh", owner="me", last_call=stamp(1)),   # used a second ago: kept
        fn_pod("live-1", "id-live", owner="runner-live"),
        fn_pod("dead-1", "id-dead", owner="runner-dead", rv="77"),
        fn_pod("none-1", "id-none"),
        fn_pod("evil", "id-evil", owner="x\x1b[2Jy", age_s=-3600),   # a live owner (no Lease, young): left alone
    ]


@pytest.fixture
def cluster():
    fake = FakeAPI()
    fake.lease_status = 201
    fake.bodies = []

    def keep(h):
        with fake.lock:
            fake.bodies.append((h.command, h.path, h.body.decode()))

    def lease_create(f, h, path, query):
        keep(h)
        if f.lease_status != 201:
            return f.send(h, f.lease_status, {"kind": "Status", "code": f.lease_status,
                                              "reason": "Forbidden", "message": "leases is forbidden"})
        f.send(h, 201, json.loads(h.body))

    def lease_patch(f, h, path, query):
        keep(h)
        f.send(h, 200, lease("me", 0))

    def lease_list(f, h, path, query):
        f.send(h, 200, {"kind": "LeaseList", "metadata": {"resourceVersion": "1"},
                        "items": [lease("runner-live", 2), lease("runner-dead", 600),
                                  lease("runner-over", 600)]})

    def pods(f, h, path, query):
        f.send(h, 200, pod_list(the_pods()))

    def answer(f, h, path, query):
        keep(h)
        f.send(h, 200, {"kind": "Status", "status": "Success"} if h.command == "DELETE"
               else fn_pod(path.rsplit("/", 1)[1], "x", owner="me"))

    fake.route("POST", LEASES, lease_create)
    fake.route("PATCH", LEASES + "/", lease_patch)
    fake.route("GET", LEASES, lease_list)
    fake.route("GET", PODS, pods)
    fake.route("DELETE", PODS + "/", answer)
    fake.route("PATCH", PODS + "/", answer)
    fake.route("DELETE", SERVICES + "/", answer)
    fake.route("DELETE", LEASES + "/", answer)
    yield fake
    fake.close()


def serve(start_server, tmp_path, cluster, *extra):
    kc = kubeconfig(tmp_path, cluster.port, "    token: t\n")
    return start_server([], binary=CLIENT_BIN, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                        argv=["serve", "--port", "{port}", "--kubeconfig", str(kc),
                              "--wrapper-server-image", "127.0.0.1:1/wrapper-server:v1",
                              "--replica-name", "me", "--scan-interval", "1s", "--pod-ttl", "1m",
                              "--lease-duration", "3s", *extra])


def writes(cluster):
    with cluster.lock:
        return list(cluster.bodies)


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode().splitlines()


def counter(lines, name):
    return int(next(x for x in lines if x.startswith(name + " ")).split()[1])


def wait_for(pred, what, timeout=15):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def test_scan_touches_only_own_and_expired_replicas_pods(start_server, tmp_path, cluster):
    srv = serve(start_server, tmp_path, cluster)
    wait_for(lambda: ("PATCH", f"{PODS}/dead-1") in [(m, p) for m, p, _ in writes(cluster)],
             "the expired replica's pod to be claimed")
    time.sleep(2.5)   # two more scans: nothing else may happen
    w = writes(cluster)
    touched = sorted({(m, p) for m, p, _ in w if not p.startswith(LEASES)})
    assert touched == sorted({("DELETE", f"{PODS}/mine-old?gracePeriodSeconds=0"),
                              ("DELETE", f"{SERVICES}/id-mine"),
                              ("DELETE", f"{PODS}/mine-shared?gracePeriodSeconds=0"),
                              ("PATCH", f"{PODS}/dead-1")}), touched
    claim = json.loads(next(b for m, p, b in w if p == f"{PODS}/dead-1"))
    assert claim["metadata"]["resourceVersion"] == "77", claim
    assert claim["metadata"]["annotations"]["fn.kpt.dev/owner"] == "me", claim
    # the Lease: created once with its holder, then renewed every third of 3 s
    made = [json.loads(b) for m, p, b in w if m == "POST" and p.startswith(LEASES)]
    assert len(made) == 1 and made[0]["metadata"]["name"] == "fn-runner-me", made
    assert made[0]["spec"]["holderIdentity"] == "me" and made[0]["spec"]["leaseDurationSeconds"] == 3
    assert made[0]["metadata"]["labels"] == {"fn.kpt.dev/runner-lease": "true"}
    renewals = [json.loads(b) for m, p, b in w if m == "PATCH" and p == f"{LEASES}/fn-runner-me"]
    assert len(renewals) >= 2 and all(r["spec"]["holderIdentity"] == "me" for r in renewals), renewals
    # a replica whose Lease expired and that owns no pod: its Lease goes, the others' stay
    assert {p for m, p, _ in w if m == "DELETE" and p.startswith(LEASES)} == {f"{LEASES}/fn-runner-runner-over"}
    m = metrics(srv.port)
    assert "krm_pod_runtime_lease_held 1" in m
    # the scripted API lists the same pods at every scan: each scan claims and deletes again
    assert counter(m, "krm_pod_runtime_pods_claimed_total") >= 1, m
    assert counter(m, "krm_pod_runtime_pods_collected_total") >= 2, m


def test_without_a_current_lease_nothing_is_deleted(start_server, tmp_path, cluster):
    cluster.lease_status = 403
    srv = serve(start_server, tmp_path, cluster)
    wait_for(lambda: len([1 for m, p, _ in writes(cluster) if m == "POST"]) >= 3,
             "the Lease's create to be retried")
    time.sleep(2)
    touched = [(m, p) for m, p, _ in writes(cluster) if not p.startswith(LEASES)]
    assert touched == [], touched
    assert "krm_pod_runtime_lease_held 0" in metrics(srv.port)
    assert "Lease fn-runner-me" in srv.stderr() and "nothing reclaimed or claimed" in srv.stderr()


@pytest.mark.parametrize("flag,value,message", [
    ("--replica-name", "Not_A_Name", 'invalid replica name "Not_A_Name": want a DNS-1123 subdomain'),
    ("--lease-duration", "1s", 'invalid value "1s" for --lease-duration: want a duration from 3s'),
])
def test_bad_replica_flags_refused(tmp_path, cluster, flag, value, message):
    import subprocess
    kc = kubeconfig(tmp_path, cluster.port, "    token: t\n")
    res = subprocess.run([CLIENT_BIN, "serve", "--port", "0", "--kubeconfig", str(kc),
                          "--wrapper-server-image", "127.0.0.1:1/w:v1", flag, value],
                         capture_output=True, timeout=30)
    assert res.returncode != 0
    assert message in res.stderr.decode(), res.stderr


def test_pod_list_shows_each_pods_owner(tmp_path, cluster):
    """`pod list` names the replica owning each pod (its fn.kpt.dev/owner),
    escaped as every cell is; `-` for a pod no replica claims."""
    from test_hostile_kube import rc
    kc = kubeconfig(tmp_path, cluster.port, "    token: t\n")
    r = rc(tmp_path, "pod", "list", "--kubeconfig", str(kc))
    assert r.returncode == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "AGE", "IDLE", "OWNER", "IMAGE"]
    owners = {line.split()[0]: line.split()[4] for line in lines[1:]}
    assert owners == {"mine-old": "me", "mine-shared": "me", "live-2": "runner-live", "mine-fresh": "me",
                      "live-1": "runner-live", "dead-1": "runner-dead", "none-1": "-",
                      "evil": "x\\x1b[2Jy"}, owners
