"""The pod watch (lib/kube/kube_watch.c) against the real API server: its
connection cut, and its resourceVersion too old (410 Gone) when it comes
back, while the runner waits for a pod. Lab only: it restarts the lab's
kube-apiserver (same command line, recorded where down.sh finds it) and
pauses the kubelet (SIGSTOP) so the pod cannot turn Ready before the
watch has been cut: the order of events is fixed, not raced.

A restarted API server starts its watch cache from the current etcd
revision; a watch resuming from an older one is answered 410 Gone ("too old
resource version"), so the runner must list again, then watch on, and still
see the pod to Ready.
"""

import os
import re
import signal
import subprocess
import time

import pytest

from k8s import CLIENT_BIN, SLOW, ApiError

DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"


def start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def lab_pid(lab_dir, name):
    """The lab's recorded process NAME (pids/NAME: "PID STARTTIME"), checked
    against its start time as the lab's own scripts check it."""
    pid, start = open(os.path.join(lab_dir, "pids", name)).read().split()
    assert start_time(pid) == start, f"the lab's {name} (pid {pid}) is not running"
    return int(pid)


def restart_apiserver(lab_dir, api):
    """Kills kube-apiserver, starts it again with the same command line, and
    records the new one where down.sh looks; returns once it is ready."""
    pid = lab_pid(lab_dir, "apiserver")
    argv = open(f"/proc/{pid}/cmdline", "rb").read().rstrip(b"\0").split(b"\0")
    cwd = os.readlink(f"/proc/{pid}/cwd")
    env = dict(e.split(b"=", 1) for e in open(f"/proc/{pid}/environ", "rb").read().split(b"\0") if b"=" in e)
    # SIGKILL: a crash (its graceful stop waits about 30 s on open watches);
    # the runner's connection is cut by the kernel either way
    os.kill(pid, signal.SIGKILL)
    while start_time(pid) is not None:
        time.sleep(0.05)
    deadline = time.monotonic() + 60 * SLOW

    def start():
        with open(os.path.join(lab_dir, "logs", "apiserver.log"), "ab") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=cwd,
                                    env=env, start_new_session=True)
        while start_time(proc.pid) is None and proc.poll() is None:
            time.sleep(0.01)
        with open(os.path.join(lab_dir, "pids", "apiserver"), "w") as f:
            f.write(f"{proc.pid} {start_time(proc.pid)}\n")
        return proc

    proc = start()
    while True:
        try:
            if api.request("GET", "/readyz", raw=True, timeout=2).strip() == "ok":
                proc.returncode = 0   # down.sh stops it; no wait from here
                return
        except (OSError, ApiError):
            pass
        if proc.poll() is not None:
            # the killed one's port not free yet ("bind: address already
            # in use", seen once): started again, as a supervisor would
            time.sleep(0.5)
            proc = start()
        assert time.monotonic() < deadline, "kube-apiserver not ready 60 s after its restart"
        time.sleep(0.2)


@pytest.fixture
def lab(k8s):
    if not k8s.is_lab:
        pytest.skip("restarts the lab's kube-apiserver: lab only")
    return k8s.lab_dir


def test_watch_survives_apiserver_restart_and_410(api, lab, images, namespace, tmp_path, figures):
    src = tmp_path / "deploy.yaml"
    src.write_text(DEPLOYMENT)
    log = tmp_path / "eval.log"
    kubelet = lab_pid(lab, "kubelet")
    os.kill(kubelet, signal.SIGSTOP)   # the pod stays Pending until SIGCONT
    try:
        proc = subprocess.Popen([CLIENT_BIN, "eval", "--kube", "--dial", "pod", "--namespace", namespace,
                                 "--image", images.fn, "--timeout", "60s", "--ready-timeout", "60s", str(src)],
                                stdout=subprocess.PIPE, stderr=open(log, "wb"), text=True)
        # the runner created the pod and its watch has listed it (the
        # stream opens right after the list, in the same turn of its loop)
        deadline = time.monotonic() + 30 * SLOW
        while not re.search(r"pod \S+: Pending", log.read_text()):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        time.sleep(0.5)
        # a write after the runner's list: the restarted server's watch
        # cache starts past the runner's resourceVersion
        api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bump"}}, namespace)
        t0 = time.monotonic()
        restart_apiserver(lab, api)
        figures.append(f"kube-apiserver restart (stop, start, ready): {time.monotonic() - t0:.1f} s")
    finally:
        os.kill(kubelet, signal.SIGCONT)
    out, _ = proc.communicate(timeout=90 * SLOW)
    text = log.read_text()
    assert proc.returncode == 0, text
    assert "replicas: 3" in out, out
    # the cut was seen, the resume was refused as too old, the list redone
    assert re.search(r"watching pod \S+: ", text), text
    assert re.search(r"watch pods: resourceVersion \d+ is too old \(410 Gone", text), text
    # the same pod served: no second one made
    pods = [p for p in api.list("pods", namespace) if "fn.kpt.dev/image" in p["metadata"].get("labels", {})]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    assert text.count(" created for ") == 1, text
