#!/usr/bin/env python3
"""Builds the init-container image: our drop-in for Porch's wrapper-server image.

Porch's function pods start with an init container that runs
`cp -a /home/nonroot/wrapper-server/. /wrapper-server-tools` in the wrapper
image, then run `/wrapper-server-tools/wrapper-server` in the function's
container and probe it with `/wrapper-server-tools/grpc-health-probe`. So the
image holds exactly those two names (the probe is a symlink: it is the same
multi-call binary), our copier as `/bin/cp` to serve the init command, and
nothing else: no shell, no libc, no /etc.

    init_image.py --wrapper build/static/wrapper-server --copier build/static/copier
                  --out build/images/wrapper-server [--tag latest]

Prints the manifest digest. Deterministic: see oci.py.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oci  # noqa: E402

HOME = "home/nonroot/wrapper-server"
USER = "65532:65532"        # distroless "nonroot"; numeric, so no /etc/passwd is needed


def init_layer(wrapper, copier, mtime):
    return oci.tar_layer([
        oci.Entry("bin/cp", "file", 0o555, data=copier),
        oci.Entry(f"{HOME}/wrapper-server", "file", 0o555, data=wrapper),
        oci.Entry(f"{HOME}/grpc-health-probe", "symlink", 0o777, target="wrapper-server"),
        # Older Porch docs copy from /wrapper-server/.; keep that working too.
        oci.Entry("wrapper-server", "symlink", 0o777, target=HOME),
    ], mtime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wrapper", required=True, help="static wrapper-server binary")
    ap.add_argument("--copier", required=True, help="static copier binary")
    ap.add_argument("--out", required=True, help="OCI layout directory to write")
    ap.add_argument("--tag", default="latest")
    a = ap.parse_args()
    try:
        arch = oci.elf_arch(a.wrapper)
        if oci.elf_arch(a.copier) != arch:
            raise oci.ImageError(f"{a.copier} and {a.wrapper} are built for different architectures")
        epoch = oci.source_epoch()
        layer = init_layer(oci.read_file(a.wrapper, "run `make static` first"),
                           oci.read_file(a.copier, "run `make static` first"), epoch)
        digest = oci.write_one_layer_image(
            a.out, layer, arch, epoch, {"User": USER, "Env": ["PATH=/bin"], "WorkingDir": "/home/nonroot"},
            "images/init_image.py", a.tag)
    except oci.ImageError as e:
        print(f"init_image: {e}", file=sys.stderr)
        return 1
    print(digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
