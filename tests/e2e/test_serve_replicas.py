"""Two `runner-client serve` replicas on one pod namespace (issue 22,
nephio#1069), on the cluster: under load for a minute, with a scan every
2 s and a 4 s time to live (so that both reclaim while the other is
calling), neither deletes a pod of the other; SIGKILL one: once its Lease
has expired the other adopts its pods (owner annotation rewritten) and
deletes them idle, then its Lease; at the end no pod and no Service is
left. Who owned each pod is read from the API (its fn.kpt.dev/owner
annotation, sampled throughout), who deleted it from each replica's log."""

import re
import threading
import time

from k8s import SLOW
from test_serve_pods import Runner, check_answer, function_pods, pb  # noqa: F401  (pb: Runner's fixture)

OWNER = "fn.kpt.dev/owner"
FLAGS = ("--scan-interval", "2s", "--pod-ttl", "4s", "--lease-duration", "4s",
         "--max-parallel-pods-per-function", "2", "--max-waitlist-length", "1")
LOAD_S = 60


def deleted_by(log):
    """Pods a replica's log says it deleted (reclaimed, failed, or collected)."""
    return set(re.findall(r"pod (\S+) deleted$", log, re.M)) | \
        set(re.findall(r"pod (\S+) for \S+: this replica's, not in use", log))


class Owners:
    """Every function pod's owner annotations as the API showed them, sampled."""

    def __init__(self, api, ns):
        self.api, self.ns = api, ns
        self.owners = {}          # pod name -> owners seen, in order
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def sample(self):
        for p in function_pods(self.api, self.ns, live_only=False):
            seen = self.owners.setdefault(p["metadata"]["name"], [])
            o = p["metadata"].get("annotations", {}).get(OWNER)
            if not seen or seen[-1] != o:
                seen.append(o)

    def run(self):
        while not self.stop.is_set():
            try:
                self.sample()
            except Exception:  # a slow API answer: the next sample
                pass
            time.sleep(0.3)

    def close(self):
        self.stop.set()
        self.t.join()


def replica(pb, k8s, ns, tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    return Runner(pb, k8s, ns, d, "--replica-name", name, *FLAGS)


def test_two_replicas_share_a_namespace(pb, k8s, api, images, namespace, tmp_path, figures):
    a = replica(pb, k8s, namespace, tmp_path, "replica-a")
    b = replica(pb, k8s, namespace, tmp_path, "replica-b")
    owners = Owners(api, namespace)
    try:
        errors, calls = [], {"replica-a": 0, "replica-b": 0}
        stop = threading.Event()
        t0 = time.monotonic()

        def paused(r, t):
            # each replica lets its pods idle past their TTL while the other calls its own
            return 15 <= t < 27 if r is b else 35 <= t < 47

        def load(r, name):
            while not stop.is_set():
                if paused(r, time.monotonic() - t0):
                    time.sleep(0.05)
                    continue
                try:
                    check_answer(r.evaluate(images.fn, timeout=90))
                    calls[name] += 1
                except Exception as e:  # every call must answer: collect, fail below
                    errors.append(f"{name}: {e!r}")
                    return

        threads = [threading.Thread(target=load, args=(r, n)) for r, n in
                   ((a, "replica-a"), (b, "replica-b")) for _ in range(3)]
        for t in threads:
            t.start()
        while time.monotonic() - t0 < LOAD_S and not errors:
            time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=120 * SLOW)
        assert not errors, errors[:3]
        owners.sample()

        # no pod deleted by a replica that did not own it, and each replica reclaimed some
        logs = {n: r.log.read_text(errors="replace") for n, r in (("replica-a", a), ("replica-b", b))}
        for name, log in logs.items():
            mine = deleted_by(log)
            assert mine, f"{name} reclaimed nothing: the test did not exercise reclaim\n{log[-3000:]}"
            for pod in mine:
                assert owners.owners.get(pod, [name]) == [name], (name, pod, owners.owners.get(pod))
        for pod, seen in owners.owners.items():
            assert len(seen) == 1 and seen[0] in logs, (pod, seen)   # annotated; never changed hands

        # SIGKILL b: its pods are adopted by a (owner rewritten) or deleted, then its Lease goes
        b_pods = {p["metadata"]["name"] for p in function_pods(api, namespace)
                  if p["metadata"].get("annotations", {}).get(OWNER) == "replica-b"}
        assert b_pods, "b held no pod when killed: nothing to adopt"
        b.proc.kill()
        b.proc.wait()
        b.channel.close()
        killed = time.monotonic()
        deadline = killed + 60 * SLOW
        while time.monotonic() < deadline:
            left = [p["metadata"]["name"] for p in function_pods(api, namespace)
                    if p["metadata"].get("annotations", {}).get(OWNER) == "replica-b"]
            if not left:
                break
            time.sleep(0.5)
        assert not left, (left, a.stderr())
        taken = time.monotonic() - killed
        # not before b's Lease expired: renewed at most a third of 4 s before the kill, then
        # 4 s and the 5 s margin; and within a few scans of that
        assert 7.0 <= taken <= 25 * SLOW, (taken, a.stderr())
        # a, idle, deletes everything after its TTL: nothing leaks
        deadline = time.monotonic() + 60 * SLOW
        while time.monotonic() < deadline:
            pods = function_pods(api, namespace, live_only=False)
            services = api.list("services", namespace)
            lease_b = api.get_or_none("leases", namespace, "fn-runner-replica-b")
            if not pods and not services and lease_b is None:
                break
            time.sleep(0.5)
        assert not pods and not services and lease_b is None, (
            [p["metadata"]["name"] for p in pods], [s["metadata"]["name"] for s in services],
            lease_b, a.stderr())
        alog = a.log.read_text(errors="replace")
        adopted = [p for p in b_pods if f"pod {p}: claimed" in alog]
        for p in b_pods:   # every pod of b's was a's to delete only after a claimed it
            assert p not in deleted_by(alog) or p in adopted, (p, alog[-3000:])
        assert api.get_or_none("leases", namespace, "fn-runner-replica-a") is not None
        figures.append(f"serve, two replicas on one namespace for {LOAD_S} s: {calls['replica-a']} + "
                       f"{calls['replica-b']} calls, none failed; {len(owners.owners)} pods, "
                       f"{len(deleted_by(logs['replica-a']))} + {len(deleted_by(logs['replica-b']))} "
                       f"reclaimed by their owner, none by the other; after SIGKILL of one, its "
                       f"{len(b_pods)} pods adopted ({len(adopted)}) or gone after {taken:.1f} s "
                       f"(Lease 4 s + 5 s margin + 2 s scans)")
    finally:
        owners.close()
        a.stop()
        if b.proc.poll() is None:
            b.stop()
