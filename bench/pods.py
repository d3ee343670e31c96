#!/usr/bin/env python3
"""bench/pods.py: the figures of `make bench-pods`, function pods on a real
cluster (issue 15). Run by scripts/e2e.sh (E2E_RUN=bench), which starts the
lab (or takes KUBECONFIG and REGISTRY), pushes the images and exports what
this reads: KUBECONFIG, REGISTRY, E2E_FN_IMAGE, WRAPPER_SERVER_IMAGE, BUILD,
K8S_LAB_DIR (set on the lab).

Every figure comes with the one it is compared with, measured in the same
run (a shared 2-core VM moves absolute numbers; same-run ratios hold):

1. cold: `runner-client eval --kube --dial pod` with no pod yet, BENCH_PODS_RUNS
   times (default 5; the pod deleted between runs; the images already on the
   node, pulled by an untimed first run): the whole process, start
   -> answer (registry lookup, create, the wrapper's health, the call), and
   start -> the pod Ready (what Porch waits for), polled through the API;
2. the readiness probe's timing, the same pod created through the API with
   Porch's template (period 10 s), a 1 s period, and a 1 s startupProbe:
   create -> the wrapper answers health, create -> Ready;
3. warm: bench-loadgen's EvaluateFunction to a `cat` function in its pod
   against the same calls to a local wrapper server running the same `cat`
   (static busybox, as in the image)
   (BENCH_PODS_CALLS sequential calls of 2 KiB, default 200, three rounds
   interleaved, median of the round medians); and through
   `runner-client serve` (its kept connection to the pod) against the pod
   directly, both from the python gRPC client;
4. `eval --kube` on a warm pod against `eval --addr` to the same pod, whole
   processes, p50 of 10 interleaved;
5. concurrent calls (issue 22): three `cat` functions (three images of the
   same static busybox cat), warm, through `runner-client serve --dial pod`
   against the same calls sent straight to their pods' wrapper servers, at
   1, 8 and 32 concurrent callers spread over the three (BENCH_PODS_CONC_CALLS
   calls per round, default 600, ROUNDS rounds interleaved serve, direct,
   serve, ...): calls/s, p50 and p99 (medians of the rounds), from
   bench-loadgen (the calls' images in turn; one HTTP/2 connection to serve,
   or one to each pod), and serve's CPU per call (from /proc);
7. the runner at scale (issue 22), through one `runner-client serve --dial pod`
   given a FunctionConfig for a `cat` image with `fn.kpt.dev/min-ready-pods`:
   cold start to first answer for images with no pod (three, median) against
   the first call for the warm image (its pod Ready before the call); then
   the minimum raised to 30 (SIGHUP) and serve's memory (VmRSS, VmHWM from
   /proc) holding 30 pods against the same before;
6. with BENCH_PODS_CPU=1, on the lab only: the node's CPU (every process in
   its PID namespace: kubelet, containerd, shims, containers, the exec'd
   probes, children counted once reaped) while 5 idle pods sit with their
   probes every 10 s (Porch's template) and every 1 s, BENCH_PODS_CPU_SECONDS
   (default 60) each: the cost of a shorter probe period.

BENCH_PODS_SECTIONS (e.g. "5,7"; default all but 6) runs only those.
BENCH_PODS_SERVE (a runner-client binary; default $BUILD/bin/runner-client)
is the one `serve` runs, to compare two builds with the same load generator.

Output: a table on stdout, also in $BUILD/bench/pods.txt.
"""

import copy
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from busybox_image import push_busybox_image, registry_tls_verify  # noqa: E402
from k8s import Api, is_ready, load_kubeconfig, run_client  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
BIN = os.path.join(ROOT, BUILD, "bin") if not os.path.isabs(BUILD) else os.path.join(BUILD, "bin")
SERVE = os.environ.get("BENCH_PODS_SERVE") or os.path.join(BIN, "runner-client")
RUNS = int(os.environ.get("BENCH_PODS_RUNS", "5"))
CALLS = int(os.environ.get("BENCH_PODS_CALLS", "200"))
ROUNDS = 3
PORT = 9446
DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
RL = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"
      b"- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: web\n  spec:\n    replicas: 1\n")
LINES = []


def out(line=""):
    print(line, flush=True)
    LINES.append(line)


def p50(values):
    return statistics.median(values)


def spread(values, unit="s", scale=1.0):
    v = [x * scale for x in values]
    return f"p50 {p50(v):.2f} {unit} (min {min(v):.2f}, max {max(v):.2f}, n={len(v)})"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc, log, port, what):
    deadline = time.monotonic() + 10
    while f"Listening on :{port}" not in open(log, errors="replace").read():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"bench-pods: {what} did not start:\n{open(log, errors='replace').read()[-3000:]}")
        time.sleep(0.02)


def wait_port(port, proc, what="bench-tcpproxy"):
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"bench-pods: {what} is not listening on {port}")
            time.sleep(0.02)


class Bench:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-pods-")
        self.api = Api(load_kubeconfig(os.environ["KUBECONFIG"], tempfile.mkdtemp(dir=self.tmp)))
        self.ns = f"bench-pods-{os.getpid()}"
        self.api.create_namespace(self.ns)
        self.fn = os.environ["E2E_FN_IMAGE"]
        self.wrapper = os.environ["WRAPPER_SERVER_IMAGE"]
        self.src = os.path.join(self.tmp, "deploy.yaml")
        with open(self.src, "w") as f:
            f.write(DEPLOYMENT)

    def close(self):
        for pod in self.api.list("pods", self.ns):
            self.api.delete("pods", self.ns, pod["metadata"]["name"], grace=0)
        self.api.delete("namespaces", None, self.ns)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def fn_pods(self, image_label=None):
        return [p for p in self.api.list("pods", self.ns)
                if "fn.kpt.dev/image" in p["metadata"].get("labels", {})
                and not p["metadata"].get("deletionTimestamp")
                and (image_label is None or p["metadata"]["labels"]["fn.kpt.dev/image"] == image_label)]

    def delete_fn_pods(self):
        for p in self.fn_pods():
            self.api.delete("pods", self.ns, p["metadata"]["name"], grace=0)
            self.api.wait_gone("pods", self.ns, p["metadata"]["name"], timeout=60)

    def eval_kube(self, image):
        return [os.path.join(BIN, "runner-client"), "eval", "--kube", "--dial", "pod", "--namespace",
                self.ns, "--image", image, "--timeout", "60s", self.src]

    # ---- 1. cold eval --kube ------------------------------------------------------------------

    def cold(self):
        # once untimed: the images onto the node (pulls are not the figure)
        if subprocess.run(self.eval_kube(self.fn), capture_output=True, timeout=120).returncode != 0:
            sys.exit("bench-pods: the first eval --kube failed")
        answered, ready = [], []
        for _ in range(RUNS):
            self.delete_fn_pods()
            t0 = time.monotonic()
            proc = subprocess.Popen(self.eval_kube(self.fn), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            t_answer = t_ready = None
            while t_ready is None:
                if t_answer is None and proc.poll() is not None:
                    t_answer = time.monotonic() - t0
                    o, e = proc.communicate()
                    if proc.returncode != 0 or "replicas: 3" not in o:
                        sys.exit(f"bench-pods: cold eval --kube failed:\n{e[-3000:]}")
                pods = self.fn_pods()
                if pods and is_ready(pods[0]):
                    t_ready = time.monotonic() - t0
                if time.monotonic() - t0 > 120:
                    sys.exit("bench-pods: the pod was not Ready within 120 s")
                time.sleep(0.05)
            if t_answer is None:
                proc.wait(60)
                t_answer = time.monotonic() - t0   # Ready came first (a lucky probe)
            answered.append(t_answer)
            ready.append(t_ready)
        out(f"cold eval --kube --dial pod, start -> answered      {spread(answered)}")
        out(f"cold, start -> pod Ready (what Porch waits for)    {spread(ready)}")
        out(f"  answered before Ready by                          p50 {p50(ready) - p50(answered):.2f} s")

    # ---- 2. the probe's timing ----------------------------------------------------------------

    def template_pod(self):
        """The function's Pod as `pod render` prints it, labelled so that no
        runner adopts it."""
        info = json.loads(run_client(["image", "--output", "json", self.fn], check=True).stdout)
        r = run_client(["pod", "render", "--image", self.fn, "--digest", info["digest"],
                        "--wrapper-image", self.wrapper, "--namespace", self.ns,
                        "--entrypoint-json", json.dumps(info["entrypoint"])], check=True)
        pod = next(d for d in yaml.safe_load_all(r.stdout) if d and d["kind"] == "Pod")
        pod["metadata"]["labels"] = {"bench": "probe"}
        return pod

    def probe_variants(self):
        base = self.template_pod()
        variants = [("readinessProbe every 10 s (Porch's template)", None),
                    ("readinessProbe every 1 s", "period1"),
                    ("startupProbe every 1 s, readiness every 10 s", "startup1")]
        self.delete_fn_pods()
        for label, kind in variants:
            pod = copy.deepcopy(base)
            c = pod["spec"]["containers"][0]
            if kind == "period1":
                c["readinessProbe"]["periodSeconds"] = 1
            elif kind == "startup1":
                c["startupProbe"] = dict(c["readinessProbe"], periodSeconds=1, failureThreshold=60)
            health, ready = [], []
            for _ in range(RUNS):
                h, rd = self.cold_template_pod(pod)
                health.append(h)
                ready.append(rd)
            out(f"{label}:")
            out(f"  create -> wrapper answers health               {spread(health)}")
            out(f"  create -> pod Ready                            {spread(ready)}")

    def cold_template_pod(self, pod):
        t0 = time.monotonic()
        name = self.api.create(pod)["metadata"]["name"]
        t_health = None
        while True:
            p = self.api.get("pods", self.ns, name)
            now = time.monotonic() - t0
            if is_ready(p):
                break
            ip = p.get("status", {}).get("podIP")
            if ip and t_health is None and run_client(["health", "--addr", f"{ip}:{PORT}", "--timeout",
                                                       "1s"], timeout=10).returncode == 0:
                t_health = time.monotonic() - t0
            if now > 120:
                sys.exit(f"bench-pods: pod {name} not Ready within 120 s")
            time.sleep(0.05)
        self.api.delete("pods", self.ns, name, grace=0)
        self.api.wait_gone("pods", self.ns, name, timeout=60)
        return (t_health if t_health is not None else now), now

    # ---- 3. warm calls --------------------------------------------------------------------------

    def loadgen(self, addr):
        r = subprocess.run([os.path.join(BIN, "bench-loadgen"), "--addr", addr, "--calls", str(CALLS),
                            "--warmup", "20", "--size", "2048", "--concurrency", "1"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            sys.exit(f"bench-pods: bench-loadgen {addr}: {r.stderr}")
        return float(re.search(r"median_us=([0-9.]+)", r.stdout).group(1))

    def warm(self):
        cat = push_busybox_image(os.environ["REGISTRY"], "krm-bench-cat", ["/bin/cat"], self.tmp,
                                 registry_tls_verify(bool(os.environ.get("K8S_LAB_DIR"))))
        r = run_client(["pod", "create", "--dial", "pod", "--namespace", self.ns, "--image", cat],
                       timeout=120)
        if r.returncode != 0:
            sys.exit(f"bench-pods: pod create: {r.stderr}")
        pod_addr = dict(line.split(" ", 1) for line in r.stdout.splitlines())["address"]
        port = free_port()
        log = os.path.join(self.tmp, "local.log")
        # the pod's `cat` is static busybox's: the same binary here, so that
        # only the path differs (a dynamically linked cat execs slower)
        local = subprocess.Popen([os.path.join(BIN, "wrapper-server"), "--port", str(port), "--",
                                  "/bin/busybox", "cat"], stdout=subprocess.DEVNULL,
                                 stderr=open(log, "w"))
        try:
            wait_listening(local, log, port, "the local wrapper server")
            pod_us, local_us = [], []
            for _ in range(ROUNDS):
                pod_us.append(self.loadgen(pod_addr))
                local_us.append(self.loadgen(f"127.0.0.1:{port}"))
        finally:
            local.send_signal(signal.SIGTERM)
            local.wait(15)
        pod_ms, local_ms = p50(pod_us) / 1000, p50(local_us) / 1000
        out(f"warm EvaluateFunction (cat, 2 KiB), bench-loadgen, {CALLS} calls x {ROUNDS} rounds:")
        out(f"  to the pod ({pod_addr})             median {pod_ms:.2f} ms  "
            f"(rounds {', '.join(f'{u / 1000:.2f}' for u in pod_us)})")
        out(f"  to a local wrapper server            median {local_ms:.2f} ms  "
            f"(rounds {', '.join(f'{u / 1000:.2f}' for u in local_us)})")
        out(f"  pod / local                          {pod_ms / local_ms:.2f}x (+{pod_ms - local_ms:.2f} ms)")
        self.through_serve(cat, pod_addr)

    def evaluator_pb2(self):
        """The evaluator's messages for the python gRPC client, generated once."""
        pbdir = os.path.join(self.tmp, "pb")
        if not os.path.isdir(pbdir):
            os.makedirs(pbdir)
            subprocess.run(["protoc", "--proto_path=proto", f"--python_out={pbdir}", "proto/evaluator.proto"],
                           cwd=ROOT, check=True)
            sys.path.insert(0, pbdir)
        import evaluator_pb2
        return evaluator_pb2

    def through_serve(self, image, pod_addr):
        import grpc
        evaluator_pb2 = self.evaluator_pb2()
        port = free_port()
        log = os.path.join(self.tmp, "serve.log")
        serve = subprocess.Popen([SERVE, "serve", "--port", str(port),
                                  "--kubeconfig", os.environ["KUBECONFIG"], "--namespace", self.ns,
                                  "--dial", "pod"], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        try:
            wait_listening(serve, log, port, "runner-client serve")
            req = evaluator_pb2.EvaluateFunctionRequest(resource_list=RL, image=image).SerializeToString()

            def timed(addr):
                with grpc.insecure_channel(addr) as ch:
                    call = ch.unary_unary("/evaluator.FunctionEvaluator/EvaluateFunction")
                    for _ in range(20):
                        call(req, timeout=60)
                    t = []
                    for _ in range(CALLS):
                        t0 = time.perf_counter()
                        call(req, timeout=60)
                        t.append(time.perf_counter() - t0)
                return p50(t) * 1000

            via_serve, direct = [], []
            for _ in range(ROUNDS):
                via_serve.append(timed(f"127.0.0.1:{port}"))
                direct.append(timed(pod_addr))
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(15)
        opened = len(re.findall(r": connected to ", open(log, errors="replace").read()))
        out(f"warm, python gRPC client, {CALLS} calls x {ROUNDS} rounds (median of round medians):")
        out(f"  through runner-client serve -> pod   {p50(via_serve):.2f} ms  "
            f"({opened} connection(s) to the pod opened by serve for {ROUNDS * (CALLS + 20)} calls)")
        out(f"  to the pod directly                  {p50(direct):.2f} ms")
        out(f"  serve / direct                       {p50(via_serve) / p50(direct):.2f}x")

    # ---- 5. concurrent calls over three functions -----------------------------------------------

    def loadgen_stats(self, addrs, images, callers, calls):
        """bench-loadgen's figures for `calls` 2 KiB calls spread over `images` in
        turn, `callers` in flight, to one runner address or one address per image."""
        cmd = [os.path.join(BIN, "bench-loadgen"), "--calls", str(calls), "--warmup", "30",
               "--size", "2048", "--concurrency", str(callers)]
        for a in addrs:
            cmd += ["--addr", a]
        for i in images:
            cmd += ["--image", i]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            sys.exit(f"bench-pods: bench-loadgen {' '.join(addrs)}: {r.stderr}")
        return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", r.stdout)}

    def concurrent(self):
        import grpc
        evaluator_pb2 = self.evaluator_pb2()
        tls = registry_tls_verify(bool(os.environ.get("K8S_LAB_DIR")))
        images = [push_busybox_image(os.environ["REGISTRY"], f"krm-bench-cat-{x}", ["/bin/cat"],
                                     self.tmp, tls) for x in "abc"]
        calls = int(os.environ.get("BENCH_PODS_CONC_CALLS", "600"))
        port = free_port()
        log = os.path.join(self.tmp, "serve-concurrent.log")
        serve = subprocess.Popen([SERVE, "serve", "--port", str(port),
                                  "--kubeconfig", os.environ["KUBECONFIG"], "--namespace", self.ns,
                                  "--dial", "pod", "--replica-name", "bench"],
                                 stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        reqs = {i: evaluator_pb2.EvaluateFunctionRequest(resource_list=RL, image=i).SerializeToString()
                for i in images}

        def serve_cpu_ns():
            # each thread's time on a CPU in ns (schedstat), not /proc/PID/stat's
            # clock ticks: at 10 ms a tick, a round of 630 calls read in steps of 16 us a call
            total = 0
            for t in os.listdir(f"/proc/{serve.pid}/task"):
                try:
                    with open(f"/proc/{serve.pid}/task/{t}/schedstat") as f:
                        total += int(f.read().split()[0])
                except OSError:
                    pass   # a thread that ended (a SIGHUP's parse) took its time with it
            return total

        try:
            wait_listening(serve, log, port, "runner-client serve")
            via = f"127.0.0.1:{port}"
            for i in images:   # each function's pod, started by serve
                with grpc.insecure_channel(via) as ch:
                    ch.unary_unary("/evaluator.FunctionEvaluator/EvaluateFunction")(reqs[i], timeout=120)
            direct = {}
            for p in self.api.list("pods", self.ns):
                owner = p["metadata"].get("annotations", {}).get("fn.kpt.dev/owner")
                image = next((c["image"] for c in p["spec"]["containers"] if c["name"] == "function"), None)
                if owner == "bench" and image in reqs and p["status"].get("podIP"):
                    direct[image] = f"{p['status']['podIP']}:{PORT}"
            if sorted(direct) != sorted(images):
                sys.exit(f"bench-pods: the three functions' pods not found: {direct}")
            # the floor of any proxy: the same hop with no work (bench/tcpproxy.c)
            hops = [free_port() for _ in images]
            proxy_cmd = [os.path.join(BIN, "bench-tcpproxy")]
            for port_i, image in zip(hops, images):
                proxy_cmd += ["--listen", str(port_i), "--to", direct[image]]
            proxy = subprocess.Popen(proxy_cmd)
            for port_i in hops:
                wait_port(port_i, proxy)
            paths = {"serve": [via], "direct": [direct[i] for i in images],
                     "proxy": [f"127.0.0.1:{h}" for h in hops]}
            out(f"concurrent calls over 3 cat functions (warm, 2 KiB, bench-loadgen: one connection to "
                f"serve, or one to each pod, directly or through bench-tcpproxy; {calls} calls per "
                f"round, {ROUNDS} rounds interleaved, medians of the rounds):")
            out("  callers  path     calls/s  p50 ms  p99 ms  p50 / direct  p50 added  serve CPU/call")
            through = 3 + 30 * ROUNDS * 3
            for n in (1, 8, 32):
                rounds = {path: [] for path in paths}
                cpu = []
                for _ in range(ROUNDS):
                    for path, addrs in paths.items():
                        c0 = serve_cpu_ns()
                        rounds[path].append(self.loadgen_stats(addrs, images, n, calls))
                        if path == "serve":
                            cpu.append((serve_cpu_ns() - c0) / (calls + 30))
                through += ROUNDS * calls
                fig = {path: {k: p50([r[k] for r in rs]) for k in ("calls_per_s", "median_us", "p99_us")}
                       for path, rs in rounds.items()}
                for path, f in fig.items():
                    each = ", ".join(f"{r['median_us'] / 1000:.2f}" for r in rounds[path])
                    cpu_text = f"{p50(cpu) / 1000:.1f} us" if path == "serve" else ""
                    # what the path adds, each round against the same round's direct
                    # run (next to it in time: the machine's load moves both alike)
                    added = p50([r["median_us"] - d["median_us"]
                                 for r, d in zip(rounds[path], rounds["direct"])])
                    added_text = f"{added:+.0f} us" if path != "direct" else ""
                    out(f"  {n:>7}  {path:<6} {f['calls_per_s']:>8.0f}  {f['median_us'] / 1000:>6.2f}  "
                        f"{f['p99_us'] / 1000:>6.2f}  {f['median_us'] / fig['direct']['median_us']:>11.2f}x  "
                        f"{added_text:>9}  {cpu_text:>14}   (rounds {each})")
            proxy.terminate()
            proxy.wait(15)
            created = len(re.findall(r"pod \S+ created for ", open(log, errors="replace").read()))
            out(f"  pods created by serve: {created} for {through} calls through it "
                f"({created * 1000 / through:.1f} per 1,000 calls; defaults: 1 pod per function)")
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(15)

    # ---- 7. the runner at scale: warm pods, cold starts, 30 pods --------------------------------

    def function_config(self, path, image, min_ready):
        repo, tag = image.rsplit(":", 1)
        prefix, short = repo.rsplit("/", 1)
        with open(path, "w") as f:
            f.write(f"apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                    f"metadata:\n  name: {short}\n  namespace: {self.ns}\n"
                    f"  annotations:\n    fn.kpt.dev/min-ready-pods: \"{min_ready}\"\n"
                    f"spec:\n  image: {short}\n  prefixes: [\"{prefix}/\"]\n"
                    f"  podExecutor:\n    tags: [\"{tag}\"]\n")

    def ready_of(self, image):
        return [p for p in self.fn_pods() if is_ready(p) and any(
            c["name"] == "function" and c["image"] == image for c in p["spec"]["containers"])]

    def owned_by(self, replica):
        """The function pods a serve replica holds (the other sections' are not its)."""
        return [p for p in self.fn_pods()
                if p["metadata"].get("annotations", {}).get("fn.kpt.dev/owner") == replica]

    def wait_ready_pods(self, image, n, timeout):
        t0 = time.monotonic()
        while len(self.ready_of(image)) < n:
            if time.monotonic() - t0 > timeout:
                sys.exit(f"bench-pods: {len(self.ready_of(image))} of {n} pods of {image} Ready "
                         f"after {timeout} s")
            time.sleep(0.5)
        return time.monotonic() - t0

    def scale(self):
        import grpc
        evaluator_pb2 = self.evaluator_pb2()
        tls = registry_tls_verify(bool(os.environ.get("K8S_LAB_DIR")))
        warm = push_busybox_image(os.environ["REGISTRY"], "krm-bench-cat-warm", ["/bin/cat"], self.tmp, tls)
        cold = [push_busybox_image(os.environ["REGISTRY"], f"krm-bench-cat-cold-{x}", ["/bin/cat"],
                                   self.tmp, tls) for x in "abc"]
        cfg = os.path.join(self.tmp, "fc-warm.yaml")
        self.function_config(cfg, warm, 1)
        port = free_port()
        log = os.path.join(self.tmp, "serve-scale.log")
        serve = subprocess.Popen([SERVE, "serve", "--port", str(port),
                                  "--kubeconfig", os.environ["KUBECONFIG"], "--namespace", self.ns,
                                  "--dial", "pod", "--replica-name", "bench-scale",
                                  "--function-config", cfg],
                                 stdout=subprocess.DEVNULL, stderr=open(log, "w"))

        def first_answer(image):
            req = evaluator_pb2.EvaluateFunctionRequest(resource_list=RL, image=image).SerializeToString()
            with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
                t0 = time.perf_counter()
                ch.unary_unary("/evaluator.FunctionEvaluator/EvaluateFunction")(req, timeout=120)
                return time.perf_counter() - t0

        def memory():
            with open(f"/proc/{serve.pid}/status") as f:
                st = dict(line.split(":", 1) for line in f)
            return int(st["VmRSS"].split()[0]), int(st["VmHWM"].split()[0])   # KiB

        try:
            wait_listening(serve, log, port, "runner-client serve")
            self.wait_ready_pods(warm, 1, 120)
            warm_s = first_answer(warm)
            cold_s = [first_answer(image) for image in cold]
            rss0, hwm0 = memory()
            held0 = len(self.owned_by("bench-scale"))
            self.function_config(cfg, warm, 30)
            serve.send_signal(signal.SIGHUP)
            t30 = self.wait_ready_pods(warm, 30, 600)
            time.sleep(2)   # a scan or two over the 30
            rss, hwm = memory()
            held = len(self.owned_by("bench-scale"))
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(15)
        out("the runner at scale (issue 22), one runner-client serve --dial pod:")
        out(f"  cold start -> first answer, no pod (3 images)    {spread(cold_s)}")
        out(f"  first answer with a warm pod (min-ready-pods 1)  {warm_s * 1000:.1f} ms")
        out(f"  serve's memory holding {held0} pods                  VmRSS {rss0 / 1024:.1f} MiB, "
            f"VmHWM {hwm0 / 1024:.1f} MiB")
        out(f"  serve's memory holding {held} pods (30 warm)        VmRSS {rss / 1024:.1f} MiB, "
            f"VmHWM {hwm / 1024:.1f} MiB  (+{(rss - rss0) / max(1, held - held0):.0f} KiB per pod; "
            f"30 Ready {t30:.0f} s after the SIGHUP)")

    # ---- 4. eval --kube warm vs eval --addr -----------------------------------------------------

    def eval_warm(self):
        r = subprocess.run(self.eval_kube(self.fn), capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            sys.exit(f"bench-pods: eval --kube: {r.stderr[-3000:]}")
        addr = re.search(r" at (\S+): pod ", r.stderr).group(1)
        addr_cmd = [os.path.join(BIN, "runner-client"), "eval", "--addr", addr, "--image", self.fn,
                    self.src]
        kube, direct = [], []
        for _ in range(10):
            for cmd, into in ((self.eval_kube(self.fn), kube), (addr_cmd, direct)):
                t0 = time.monotonic()
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                into.append(time.monotonic() - t0)
                if r.returncode != 0 or "replicas: 3" not in r.stdout:
                    sys.exit(f"bench-pods: {' '.join(cmd)}: {r.stderr[-3000:]}")
        out("warm pod, whole runner-client processes, 10 each interleaved:")
        out(f"  eval --kube (registry lookup, 1 API list, call)  {spread(kube, 'ms', 1000)}")
        out(f"  eval --addr to the same pod                     {spread(direct, 'ms', 1000)}")
        out(f"  --kube - --addr                                 {(p50(kube) - p50(direct)) * 1000:.1f} ms")


# ---- 5. the probes' CPU ---------------------------------------------------------------------

def node_cpu_seconds(pidns):
    """User + system time of the lab node's processes and their reaped children."""
    hz = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") != pidns:
                continue
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])   # utime stime cutime cstime
        except OSError:
            pass
    return total / hz


def probe_cpu(b):
    with open(os.path.join(os.environ["K8S_LAB_DIR"], "pids", "node.pidns")) as f:
        pidns = f.read().strip()
    secs = int(os.environ.get("BENCH_PODS_CPU_SECONDS", "60"))
    base = b.template_pod()
    b.delete_fn_pods()
    out(f"node CPU, 5 idle template pods, {secs} s each:")
    for period in (10, 1):
        pod = copy.deepcopy(base)
        for probe in ("readinessProbe", "livenessProbe"):
            pod["spec"]["containers"][0][probe]["periodSeconds"] = period
        names = [b.api.create(pod)["metadata"]["name"] for _ in range(5)]
        for n in names:
            b.api.wait_pod(b.ns, n, is_ready, 120)
        time.sleep(3)
        c0, t0 = node_cpu_seconds(pidns), time.monotonic()
        time.sleep(secs)
        c1, t1 = node_cpu_seconds(pidns), time.monotonic()
        out(f"  readiness and liveness every {period:2d} s         "
            f"{100 * (c1 - c0) / (t1 - t0):.1f}% of one core")
        for n in names:
            b.api.delete("pods", b.ns, n, grace=0)
            b.api.wait_gone("pods", b.ns, n, timeout=60)


def main():
    b = Bench()
    try:
        out(f"bench-pods: {time.strftime('%Y-%m-%d %H:%M')} on {os.uname().nodename}, "
            f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
            f"cluster {'lab' if os.environ.get('K8S_LAB_DIR') else os.environ['KUBECONFIG']}")
        want = set(os.environ.get("BENCH_PODS_SECTIONS", "1,2,3,4,5,7").split(","))
        if "1" in want:
            b.cold()
        if "2" in want:
            b.probe_variants()
        if "3" in want:
            b.warm()
        if "5" in want:
            b.concurrent()
        if "4" in want:
            b.eval_warm()
        if "7" in want:
            b.scale()
        if os.environ.get("BENCH_PODS_CPU") == "1" and os.environ.get("K8S_LAB_DIR"):
            probe_cpu(b)
    finally:
        b.close()
    path = os.path.join(ROOT, BUILD, "bench") if not os.path.isabs(BUILD) else os.path.join(BUILD, "bench")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "pods.txt"), "w") as f:
        f.write("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
