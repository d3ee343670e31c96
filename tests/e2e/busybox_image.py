"""Small busybox function images made on the spot and pushed to the
cluster's registry, for tests and bench/pods.py that need a function other
than fn_image.py's: `cat` (bench-loadgen checks its answers byte for byte),
a slow `cat` (a call still running when its pod goes), or an entrypoint that
does not exist (a wrapper server that answers
NOT_SERVING). Tags are the content's digest, as scripts/e2e.sh's.
"""

import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "images"))
import oci  # noqa: E402

PLATFORM = {"architecture": "amd64", "os": "linux"}


def push_busybox_image(registry, name, entrypoint, workdir, tls_verify):
    """Writes a busybox image whose Entrypoint is entrypoint into workdir,
    pushes it as registry/name:e2e-<digest prefix> and returns that name."""
    out = os.path.join(workdir, name)
    with open("/bin/busybox", "rb") as f:
        layer = oci.tar_layer([oci.Entry("bin/busybox", "file", 0o755, data=f.read()),
                               oci.Entry("bin/sh", "symlink", 0o777, target="busybox"),
                               oci.Entry("bin/cat", "symlink", 0o777, target="busybox"),
                               oci.Entry("bin/sleep", "symlink", 0o777, target="busybox")], 0)
    config = dict(PLATFORM, config={"Env": ["PATH=/bin"], "Entrypoint": entrypoint})
    oci.write_image(out, [layer], config, "e2e", PLATFORM)
    with open(os.path.join(out, "index.json")) as f:
        digest = json.load(f)["manifests"][0]["digest"]
    ref = f"{registry}/{name}:e2e-{digest.removeprefix('sha256:')[:12]}"
    subprocess.run(["skopeo", "copy", "--quiet", "--insecure-policy",
                    f"--dest-tls-verify={'true' if tls_verify else 'false'}",
                    f"oci:{out}:e2e", f"docker://{ref}"], check=True)
    return ref


def registry_tls_verify(is_lab):
    """The lab's registry is plain HTTP; another cluster's as scripts/e2e.sh says."""
    return not is_lab and os.environ.get("E2E_REGISTRY_TLS_VERIFY", "true") != "false"
