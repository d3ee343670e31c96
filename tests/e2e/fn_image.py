#!/usr/bin/env python3
"""Writes the end-to-end tests' function image as an OCI layout: static
busybox (Debian's busybox-static) and nothing else, with an entrypoint that
reports the process it runs under on stderr and then edits the ResourceList
with sed (replicas: 1 -> replicas: 3):

    /bin/sh -c 'echo "fn parent: $(cat /proc/$PPID/comm)" >&2; exec sed -e "s/replicas: 1/replicas: 3/"'

A plain image, as function images are: it knows nothing of the wrapper
server, which the pod's init container copies in (runner-client pod render)
or images/embed bakes in. The `$` in the entrypoint also checks, on a real
cluster, that pod render escapes it so Kubernetes passes it unchanged.

    fn_image.py [--busybox /bin/busybox] [--tag TAG] OUT
"""

import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "images"))
import oci  # noqa: E402

SCRIPT = 'echo "fn parent: $(cat /proc/$PPID/comm)" >&2; exec sed -e "s/replicas: 1/replicas: 3/"'
ENTRYPOINT = ["/bin/sh", "-c", SCRIPT]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--busybox", default="/bin/busybox")
    ap.add_argument("--tag", default="latest")
    ap.add_argument("out")
    a = ap.parse_args()
    with open(a.busybox, "rb") as f:
        busybox = f.read()
    layer = oci.tar_layer([
        oci.Entry("bin/busybox", "file", 0o755, data=busybox),
        oci.Entry("bin/sh", "symlink", 0o777, target="busybox"),
        oci.Entry("bin/sed", "symlink", 0o777, target="busybox"),
        oci.Entry("bin/cat", "symlink", 0o777, target="busybox"),
        oci.Entry("proc", "dir", 0o555),
        oci.Entry("tmp", "dir", 0o1777),
    ], 0)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Env": ["PATH=/bin"], "WorkingDir": "/", "Entrypoint": ENTRYPOINT},
              "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "tests/e2e/fn_image.py"}]}
    print(oci.write_image(a.out, [layer], config, a.tag, {"architecture": "amd64", "os": "linux"}))


if __name__ == "__main__":
    main()
