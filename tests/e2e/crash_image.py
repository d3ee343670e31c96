#!/usr/bin/env python3
"""Writes a wrapper image (the init container's) whose wrapper server
crashes: `/home/nonroot/wrapper-server/wrapper-server` is a shell script
that writes a few lines on stderr and exits 3. The init container copies it
as it copies the real one (our copier is its /bin/cp), and the function
container then runs it under the function image's /bin/sh, so the container
exits at every start: Error, then CrashLoopBackOff, as a function pod whose
server cannot start shows it. For the fail-fast tests of the pod runtime.

    crash_image.py --copier build/static/copier [--tag TAG] OUT
"""

import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "images"))
import init_image  # noqa: E402
import oci  # noqa: E402

EXIT_CODE = 3
SCRIPT = f"""#!/bin/sh
echo "crash-wrapper: started as: $0 $*" >&2
echo "crash-wrapper: cannot serve: simulated start-up failure" >&2
exit {EXIT_CODE}
""".encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copier", default=os.path.join(ROOT, "build", "static", "copier"))
    ap.add_argument("--tag", default="latest")
    ap.add_argument("out")
    a = ap.parse_args()
    layer = init_image.init_layer(SCRIPT, oci.read_file(a.copier, "run `make static` first"), 0)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"User": init_image.USER, "Env": ["PATH=/bin"], "WorkingDir": "/home/nonroot"},
              "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "tests/e2e/crash_image.py"}]}
    print(oci.write_image(a.out, [layer], config, a.tag, {"architecture": "amd64", "os": "linux"}))


if __name__ == "__main__":
    main()
