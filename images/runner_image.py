#!/usr/bin/env python3
"""Builds the function-runner image: our drop-in for Porch's porch-function-runner.

Porch's function-runner Deployment runs `/home/nonroot/server` with its flags
and probes it with `/home/nonroot/grpc-health-probe -addr localhost:9445`;
runner-client answers to both names (runner-client/main.c), so the image
holds runner-client once and those two names as links to it, beside an
empty `/home/nonroot/functions` (Porch's `--functions`, and serve's default
`./functions` from the working directory /home/nonroot).

runner-client is the static musl build (`make static`: libcurl, OpenSSL and
libseccomp compiled in, scripts/static-build.sh), so the image is FROM
scratch plus what it reads at run time:

* /etc/ssl/certs/ca-certificates.crt, the CA bundle its libcurl is built to
  trust (registries over HTTPS; the API server's CA comes from the service
  account instead);
* /etc/passwd and /etc/group naming the user 65532 "nonroot" with home
  /home/nonroot, as distroless images do.

A dynamically linked runner-client is refused: the image has no loader
and no libraries for it.

    runner_image.py --client build/static/runner-client --out build/images/function-runner
                    [--tag latest]

Prints the manifest digest. Deterministic for a given binary and CA bundle
(oci.py says how): two builds give the same digest.
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oci  # noqa: E402

HOME = "home/nonroot"
USER = "65532:65532"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"   # libcurl's --with-ca-bundle (static-build.sh)

PASSWD = ("root:x:0:0:root:/root:/sbin/nologin\n"
          "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
          "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
GROUP = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"


def run_tool(argv, package):
    try:
        return subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise oci.ImageError(f"cannot run {argv[0]}: {e.strerror} (Debian package {package})")


def require_static(binary):
    if oci.elf_interpreter(binary) is not None:
        raise oci.ImageError(f"{binary} is dynamically linked; the image holds no loader or "
                             "libraries: give the static one (make static: build/static/runner-client)")


def stripped(binary):
    """binary's bytes without its symbols and debug information."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stripped")
        r = run_tool(["strip", "--strip-all", "-o", out, binary], "binutils")
        if r.returncode != 0:
            raise oci.ImageError(f"strip {binary} failed: {r.stderr.strip()}")
        return oci.read_file(out)


def runner_layer(client, ca_bundle, mtime):
    entries = [
        oci.Entry(f"{HOME}/runner-client", "file", 0o555, data=client),
        oci.Entry(f"{HOME}/server", "symlink", 0o777, target="runner-client"),
        oci.Entry(f"{HOME}/grpc-health-probe", "symlink", 0o777, target="runner-client"),
        oci.Entry(f"{HOME}/functions", "dir", 0o755),
        oci.Entry("etc/passwd", "file", 0o644, data=PASSWD.encode()),
        oci.Entry("etc/group", "file", 0o644, data=GROUP.encode()),
        oci.Entry(CA_BUNDLE, "file", 0o644, data=ca_bundle),
        oci.Entry("tmp", "dir", 0o1777),
    ]
    return oci.tar_layer(entries, mtime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--client", required=True, help="runner-client binary, static")
    ap.add_argument("--out", required=True, help="OCI layout directory to write")
    ap.add_argument("--tag", default="latest")
    ap.add_argument("--ca-bundle", default=CA_BUNDLE, help=f"CA certificates to install (default {CA_BUNDLE})")
    a = ap.parse_args()
    try:
        arch = oci.elf_arch(a.client)
        require_static(a.client)
        epoch = oci.source_epoch()
        layer = runner_layer(stripped(a.client),
                             oci.read_file(a.ca_bundle, "install ca-certificates"), epoch)
        digest = oci.write_one_layer_image(
            a.out, layer, arch, epoch,
            {"User": USER, "Env": [f"PATH=/{HOME}", f"HOME=/{HOME}"], "Entrypoint": [f"/{HOME}/server"],
             "WorkingDir": f"/{HOME}", "ExposedPorts": {"9445/tcp": {}}},
            "images/runner_image.py", a.tag)
    except oci.ImageError as e:
        print(f"runner_image: {e}", file=sys.stderr)
        return 1
    print(digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
