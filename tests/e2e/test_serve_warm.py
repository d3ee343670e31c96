"""Warm pods (issue 22, porch#956) on the cluster: a FunctionConfig's
`fn.kpt.dev/min-ready-pods: "2"` gives its image two Ready pods before any
call, kept through a pod's deletion (a new one replaces it) and through
the idle time to live (a call through them is on /metrics: its duration,
its wait for a pod, its results' worst severity); after a SIGHUP that
lowers it to 1, the TTL takes the extra pod."""

import signal
import time
import urllib.request

from k8s import SLOW, is_ready
from test_serve_pods import Runner, check_answer, function_pods, pb  # noqa: F401  (pb: Runner's fixture)


def config(path, images, namespace, min_ready):
    repo, tag = images.fn.rsplit(":", 1)
    prefix, short = repo.rsplit("/", 1)
    path.write_text(f"apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                    f"metadata:\n  name: {short}\n  namespace: {namespace}\n"
                    f"  annotations:\n    fn.kpt.dev/min-ready-pods: \"{min_ready}\"\n"
                    f"spec:\n  image: {short}\n  prefixes: [\"{prefix}/\"]\n"
                    f"  podExecutor:\n    tags: [\"{tag}\"]\n")


def ready_pods(api, ns):
    return {p["metadata"]["uid"] for p in function_pods(api, ns) if is_ready(p)}


def wait_ready(api, ns, n, what, timeout=90):
    deadline = time.monotonic() + timeout * SLOW
    while time.monotonic() < deadline:
        pods = ready_pods(api, ns)
        if len(pods) == n and len(function_pods(api, ns, live_only=False)) == n:
            return pods
        time.sleep(0.3)
    raise AssertionError(f"{what}: {[p['metadata']['name'] for p in function_pods(api, ns, live_only=False)]}")


def test_min_ready_pods_kept_through_deletion_and_ttl(pb, k8s, api, images, namespace, tmp_path):
    cfg = tmp_path / "fc.yaml"
    config(cfg, images, namespace, 2)
    r = Runner(pb, k8s, namespace, tmp_path, "--function-config", str(cfg), "--pod-ttl", "3s",
               "--scan-interval", "1s")
    try:
        first = wait_ready(api, namespace, 2, "two Ready pods before any call")
        assert "warm pods: " in r.log.read_text(errors="replace"), r.stderr()
        # one deleted: replaced, the other kept
        victim = next(p for p in function_pods(api, namespace) if p["metadata"]["uid"] in first)
        api.delete("pods", namespace, victim["metadata"]["name"], grace=0)
        after = wait_ready(api, namespace, 2, "a replacement for the deleted pod")
        assert len(after & first) == 1 and victim["metadata"]["uid"] not in after, (first, after)
        # idle for twice the TTL and a few scans: both kept
        time.sleep(7)
        assert ready_pods(api, namespace) == after
        assert len(function_pods(api, namespace, live_only=False)) == 2
        check_answer(r.evaluate(images.fn))
        # the call's figures on /metrics: its duration, its (warm: short) wait for a pod, its
        # results read from the pod's answer; this replica's Lease held
        with urllib.request.urlopen(f"http://127.0.0.1:{r.port}/metrics", timeout=5 * SLOW) as m:
            text = m.read().decode().splitlines()
        label = f'image="{images.fn}"'
        for line in (f"krm_pod_runtime_call_duration_seconds_count{{{label}}} 1",
                     f"krm_pod_runtime_queue_wait_seconds_count{{{label}}} 1",
                     f'krm_pod_runtime_queue_wait_seconds_bucket{{{label},le="0.1"}} 1',
                     "krm_pod_runtime_lease_held 1"):
            assert line in text, (line, [x for x in text if "pod_runtime" in x])
        sev = [x for x in text if x.startswith(f"krm_pod_runtime_calls_by_severity_total{{{label}")]
        assert len(sev) == 1 and sev[0].endswith(" 1") and 'severity="unknown"' not in sev[0], sev
        time.sleep(5)
        assert ready_pods(api, namespace) == after
        # SIGHUP with 1: the TTL takes the extra one
        config(cfg, images, namespace, 1)
        r.proc.send_signal(signal.SIGHUP)
        left = wait_ready(api, namespace, 1, "one pod left after the reload lowered the minimum", 30)
        assert left < after, (left, after)
        time.sleep(5)
        assert ready_pods(api, namespace) == left
    finally:
        r.stop()
