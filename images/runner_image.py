#!/usr/bin/env python3
"""Builds the function-runner image: our drop-in for Porch's porch-function-runner.

Porch's function-runner Deployment runs `/home/nonroot/server` with its flags
and probes it with `/home/nonroot/grpc-health-probe -addr localhost:9445`;
runner-client answers to both names (runner-client/main.c), so the image
holds runner-client once and those two names as links to it, beside an
empty `/home/nonroot/functions` (Porch's `--functions`, and serve's default
`./functions` from the working directory /home/nonroot).

runner-client is linked dynamically (libcurl, OpenSSL, libseccomp and what
they pull in), so the image is FROM scratch plus exactly the binary's
shared-library closure as the system's loader resolves it (`ldd`, the loader
included), and what those libraries read at run time:

* /etc/ssl/certs/ca-certificates.crt, the CA bundle Debian's libcurl is built
  to trust (registries over HTTPS; the API server's CA comes from the
  service account instead);
* /etc/nsswitch.conf (hosts from files then DNS: glibc's files and dns
  lookups are inside libc.so.6 since 2.34, so no libnss_* module is needed)
  and /etc/passwd and /etc/group naming the user 65532 "nonroot" with home
  /home/nonroot, as distroless images do.

    runner_image.py --client build/bin/runner-client --out build/images/function-runner
                    [--tag latest]

Prints the manifest digest. Deterministic for a given binary and the
system's libraries and CA bundle (oci.py says how): two builds on one
machine give the same digest.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oci  # noqa: E402

HOME = "home/nonroot"
USER = "65532:65532"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"   # `curl-config --ca` on Debian

PASSWD = ("root:x:0:0:root:/root:/sbin/nologin\n"
          "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
          "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
GROUP = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n"

# `ldd` lines: "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)",
# "/lib64/ld-linux-x86-64.so.2 (0x...)", "linux-vdso.so.1 (0x...)".
LDD_RESOLVED = re.compile(r"^\s*(\S+) => (/\S+) \(0x[0-9a-f]+\)$")
LDD_DIRECT = re.compile(r"^\s*(/\S+) \(0x[0-9a-f]+\)$")
LDD_VIRTUAL = re.compile(r"^\s*(linux-vdso|linux-gate)\.so\.\d+ \(0x[0-9a-f]+\)$")


def run_tool(argv, package):
    try:
        return subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        raise oci.ImageError(f"cannot run {argv[0]}: {e.strerror} (Debian package {package})")


def shared_closure(binary):
    """The absolute paths, as the loader finds them, of every shared library
    binary needs, the loader (its PT_INTERP) included; sorted."""
    interp = oci.elf_interpreter(binary)
    if interp is None:
        return []                      # static: nothing to add
    r = run_tool(["ldd", binary], "libc-bin")
    if r.returncode != 0:
        raise oci.ImageError(f"ldd {binary} failed: {r.stderr.strip() or r.stdout.strip()}")
    paths = {interp}
    for line in r.stdout.splitlines():
        if "not found" in line:
            raise oci.ImageError(f"{binary}: a library it needs is missing: {line.strip()}")
        m = LDD_RESOLVED.match(line) or LDD_DIRECT.match(line)
        if m:
            paths.add(m.groups()[-1])
        elif not LDD_VIRTUAL.match(line):
            raise oci.ImageError(f"ldd {binary}: unexpected line {line.strip()!r}")
    return sorted(paths)


def stripped(binary):
    """binary's bytes without its symbols and debug information."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stripped")
        r = run_tool(["strip", "--strip-all", "-o", out, binary], "binutils")
        if r.returncode != 0:
            raise oci.ImageError(f"strip {binary} failed: {r.stderr.strip()}")
        return oci.read_file(out)


def runner_layer(client, libraries, ca_bundle, mtime):
    entries = [
        oci.Entry(f"{HOME}/runner-client", "file", 0o555, data=client),
        oci.Entry(f"{HOME}/server", "symlink", 0o777, target="runner-client"),
        oci.Entry(f"{HOME}/grpc-health-probe", "symlink", 0o777, target="runner-client"),
        oci.Entry(f"{HOME}/functions", "dir", 0o755),
        oci.Entry("etc/passwd", "file", 0o644, data=PASSWD.encode()),
        oci.Entry("etc/group", "file", 0o644, data=GROUP.encode()),
        oci.Entry("etc/nsswitch.conf", "file", 0o644, data=NSSWITCH.encode()),
        oci.Entry(CA_BUNDLE, "file", 0o644, data=ca_bundle),
        oci.Entry("tmp", "dir", 0o1777),
    ]
    # Each library under the name the loader looks for, holding the file
    # that name leads to on this system (Debian's sonames are links).
    for path in libraries:
        entries.append(oci.Entry(path, "file", 0o755, data=oci.read_file(os.path.realpath(path))))
    return oci.tar_layer(entries, mtime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--client", required=True, help="runner-client binary (dynamic or static)")
    ap.add_argument("--out", required=True, help="OCI layout directory to write")
    ap.add_argument("--tag", default="latest")
    ap.add_argument("--ca-bundle", default=CA_BUNDLE, help=f"CA certificates to install (default {CA_BUNDLE})")
    a = ap.parse_args()
    try:
        arch = oci.elf_arch(a.client)
        libraries = shared_closure(a.client)
        epoch = oci.source_epoch()
        layer = runner_layer(stripped(a.client), libraries,
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
