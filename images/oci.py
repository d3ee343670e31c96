"""Deterministic OCI image layouts, written and read with Python's standard library.

Why this exists: the images must be built where there is no Docker daemon
(CI, this machine) and two builds must give the same digests, so that a
digest pinned in a Pod spec or a Porch config can be rebuilt and checked.
Everything that usually leaks the build host into an image is fixed here:

* layers are ustar archives with entries sorted byte-wise by path, parents
  before children, owner 0:0, empty user/group names, one fixed mtime;
* gzip members carry no file name and MTIME 0, compressed at level 9;
* JSON documents are written compactly with a fixed key order, and their
  digests are taken over exactly the bytes written.

The fixed time is SOURCE_DATE_EPOCH when set (the reproducible-builds
convention), else 0. See ../shared/reference/oci.md for the format.
"""

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
MT_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MT_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MT_DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"
INDEX_TYPES = (MT_INDEX, MT_DOCKER_LIST)
MANIFEST_TYPES = (MT_MANIFEST, MT_DOCKER_MANIFEST)
REF_NAME = "org.opencontainers.image.ref.name"

# ELF e_machine values of the architectures we can name in a config.
ELF_ARCH = {3: "386", 40: "arm", 62: "amd64", 183: "arm64", 243: "riscv64", 22: "s390x", 21: "ppc64le"}


class ImageError(Exception):
    """A problem with an input image or file, worded for the user."""


def source_epoch():
    value = os.environ.get("SOURCE_DATE_EPOCH", "0")
    try:
        epoch = int(value)
    except ValueError:
        raise ImageError(f"SOURCE_DATE_EPOCH={value!r} is not a whole number of seconds")
    if epoch < 0:
        raise ImageError(f"SOURCE_DATE_EPOCH={value!r} is negative")
    return epoch


def rfc3339(epoch):
    import datetime
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_file(path, hint=None):
    """The bytes of path; a failure is an ImageError naming it (and hint,
    what to do about it, when given)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ImageError(f"{path}: {e.strerror}" + (f"; {hint}" if hint else ""))


def elf_arch(path):
    """The OCI architecture name of an ELF executable, read from its header."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        raise ImageError(f"{path}: not an ELF executable")
    order = "little" if head[5] == 1 else "big"
    machine = int.from_bytes(head[18:20], order)
    if machine not in ELF_ARCH:
        raise ImageError(f"{path}: unknown ELF machine {machine}")
    return ELF_ARCH[machine]


def elf_interpreter(path):
    """The program interpreter (PT_INTERP) an ELF executable asks for, e.g.
    /lib64/ld-linux-x86-64.so.2, or None for a static one (static-pie
    included: it has no PT_INTERP)."""
    with open(path, "rb") as f:
        data = f.read(1 << 20)   # the header and program headers are at the start
    if len(data) < 52 or data[:4] != b"\x7fELF":
        raise ImageError(f"{path}: not an ELF executable")
    wide, order = data[4] == 2, ("little" if data[5] == 1 else "big")
    num = lambda off, size: int.from_bytes(data[off:off + size], order)
    phoff, phentsize, phnum = (num(0x20, 8), num(0x36, 2), num(0x38, 2)) if wide else \
        (num(0x1C, 4), num(0x2A, 2), num(0x2C, 2))
    for i in range(phnum):
        ph = phoff + i * phentsize
        if ph + phentsize > len(data):
            raise ImageError(f"{path}: its program headers are past its first MiB")
        if num(ph, 4) == 3:   # PT_INTERP
            offset, size = (num(ph + 8, 8), num(ph + 32, 8)) if wide else (num(ph + 4, 4), num(ph + 16, 4))
            return data[offset:offset + size].rstrip(b"\0").decode("utf-8", "replace") or "?"
    return None


# ---------------------------------------------------------------- layers

class Entry:
    """One file system entry of a layer: kind is 'dir', 'file' or 'symlink'."""

    def __init__(self, path, kind, mode, data=b"", target=""):
        self.path, self.kind, self.mode, self.data, self.target = path.strip("/"), kind, mode, data, target


def with_parents(entries):
    """Adds a 0755 directory entry for every parent not listed explicitly."""
    have = {e.path for e in entries}
    out = list(entries)
    for e in entries:
        parts = e.path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            parent = "/".join(parts[:i])
            if parent not in have:
                have.add(parent)
                out.append(Entry(parent, "dir", 0o755))
    return out


def tar_layer(entries, mtime):
    """The uncompressed ustar bytes of entries, in byte-wise path order."""
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for e in sorted(with_parents(entries), key=lambda e: e.path.encode()):
            info = tarfile.TarInfo(e.path)
            info.mode, info.mtime = e.mode, mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if e.kind == "dir":
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            elif e.kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, e.target
                tf.addfile(info)
            elif e.kind == "file":
                info.type, info.size = tarfile.REGTYPE, len(e.data)
                tf.addfile(info, io.BytesIO(e.data))
            else:
                raise ValueError(f"unknown entry kind {e.kind}")
    return bio.getvalue()


def gzip_layer(tar_bytes):
    return gzip.compress(tar_bytes, compresslevel=9, mtime=0)


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def to_json(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def descriptor(media_type, data, **extra):
    d = {"mediaType": media_type, "digest": sha256(data), "size": len(data)}
    d.update(extra)
    return d


# ---------------------------------------------------------------- layouts

class LayoutWriter:
    """Collects blobs in a temporary directory next to `out`; commit() puts the
    finished layout in place with one rename, so `out` never holds half an image."""

    def __init__(self, out):
        self.out = os.path.abspath(out)
        parent = os.path.dirname(self.out)
        os.makedirs(parent, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix=".oci-", dir=parent)
        os.makedirs(os.path.join(self.tmp, "blobs", "sha256"))

    def blob_path(self, digest):
        return os.path.join(self.tmp, "blobs", "sha256", digest.split(":", 1)[1])

    def add_blob(self, data):
        digest = sha256(data)
        with open(self.blob_path(digest), "wb") as f:
            f.write(data)
        return digest

    def copy_blob(self, layout, digest):
        """Copies a blob from another layout, checking it against its digest."""
        src = layout.blob_path(digest)
        h = hashlib.sha256()
        with open(src, "rb") as fin, open(self.blob_path(digest), "wb") as fout:
            for chunk in iter(lambda: fin.read(1 << 20), b""):
                h.update(chunk)
                fout.write(chunk)
        if "sha256:" + h.hexdigest() != digest:
            raise ImageError(f"{src}: content does not match its digest {digest}")

    def commit(self, manifests):
        index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": manifests}
        with open(os.path.join(self.tmp, "index.json"), "wb") as f:
            f.write(to_json(index))
        with open(os.path.join(self.tmp, "oci-layout"), "wb") as f:
            f.write(to_json({"imageLayoutVersion": "1.0.0"}))
        os.chmod(self.tmp, 0o755)
        old = None
        if os.path.lexists(self.out):
            old = self.tmp + ".old"
            os.rename(self.out, old)
        os.rename(self.tmp, self.out)
        if old:
            shutil.rmtree(old)

    def abort(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def write_image(out, layers, config, tag, platform):
    """Writes a one-image layout: layers is a list of tar bytes (gzipped here),
    config the image config without rootfs, which is filled in."""
    w = LayoutWriter(out)
    try:
        layer_descs, diff_ids = [], []
        for tar_bytes in layers:
            gz = gzip_layer(tar_bytes)
            w.add_blob(gz)
            layer_descs.append(descriptor(MT_LAYER_GZIP, gz))
            diff_ids.append(sha256(tar_bytes))
        config = dict(config, rootfs={"type": "layers", "diff_ids": diff_ids})
        config_bytes = to_json(config)
        w.add_blob(config_bytes)
        manifest = {"schemaVersion": 2, "mediaType": MT_MANIFEST,
                    "config": descriptor(MT_CONFIG, config_bytes), "layers": layer_descs}
        manifest_bytes = to_json(manifest)
        w.add_blob(manifest_bytes)
        w.commit([descriptor(MT_MANIFEST, manifest_bytes, platform=platform, annotations={REF_NAME: tag})])
    except BaseException:
        w.abort()
        raise
    return sha256(manifest_bytes)


def write_one_layer_image(out, tar_bytes, arch, epoch, inner_config, builder, tag):
    """Writes a linux/arch image of one layer built at epoch by builder (its
    name in the history), inner_config the config's "config" (User,
    Entrypoint, ...). Returns the manifest digest."""
    created = rfc3339(epoch)
    config = {
        "created": created,
        "architecture": arch,
        "os": "linux",
        "config": inner_config,
        "history": [{"created": created, "created_by": f"krm-fn-runtime {builder}"}],
    }
    return write_image(out, [tar_bytes], config, tag, {"architecture": arch, "os": "linux"})


class Layout:
    """An OCI image layout on disk, read-only."""

    def __init__(self, path):
        self.path = path
        marker = os.path.join(path, "oci-layout")
        if not os.path.isfile(marker):
            raise ImageError(f"{path}: not an OCI image layout (no oci-layout file)")
        self.index = self.read_json_file(os.path.join(path, "index.json"))

    @staticmethod
    def read_json_file(path):
        try:
            with open(path, "rb") as f:
                return json.loads(f.read())
        except OSError as e:
            raise ImageError(f"{path}: {e.strerror}")
        except ValueError as e:
            raise ImageError(f"{path}: invalid JSON: {e}")

    def blob_path(self, digest):
        algo, _, hexpart = digest.partition(":")
        if algo != "sha256" or len(hexpart) != 64:
            raise ImageError(f"{self.path}: unsupported digest {digest!r}")
        return os.path.join(self.path, "blobs", "sha256", hexpart)

    def blob(self, desc):
        path = self.blob_path(desc["digest"])
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ImageError(f"{path}: {e.strerror}")
        if sha256(data) != desc["digest"] or len(data) != desc.get("size", len(data)):
            raise ImageError(f"{path}: content does not match its descriptor")
        return data

    def json_blob(self, desc):
        try:
            return json.loads(self.blob(desc))
        except ValueError as e:
            raise ImageError(f"{self.path}: blob {desc['digest']} is not JSON: {e}")

    def select(self, ref, arch):
        """The image manifest descriptor for tag `ref` (or the only image when
        ref is empty), choosing linux/<arch> inside an index."""
        entries = self.index.get("manifests") or []
        if ref:
            entries = [d for d in entries if (d.get("annotations") or {}).get(REF_NAME) == ref]
            if not entries:
                tags = sorted({(d.get("annotations") or {}).get(REF_NAME, "") for d in self.index.get("manifests", [])} - {""})
                raise ImageError(f"{self.path}: no image tagged {ref!r} (tags: {', '.join(tags) or 'none'})")
        if len(entries) != 1:
            raise ImageError(f"{self.path}: holds {len(entries)} images; name one as {self.path}:TAG")
        return self.platform_manifest(entries[0], arch)

    def platform_manifest(self, desc, arch):
        for _ in range(8):          # nested indexes, bounded
            mt = desc.get("mediaType")
            if mt in MANIFEST_TYPES:
                return desc
            if mt not in INDEX_TYPES:
                raise ImageError(f"{self.path}: unsupported manifest media type {mt!r}")
            children = self.json_blob(desc).get("manifests") or []
            match = [c for c in children if platform_matches(c.get("platform"), arch)]
            if not match:
                have = [f"{(c.get('platform') or {}).get('os')}/{(c.get('platform') or {}).get('architecture')}" for c in children]
                raise ImageError(f"{self.path}: no linux/{arch} image in the index (has {', '.join(have) or 'none'})")
            desc = match[0]
        raise ImageError(f"{self.path}: indexes nested too deeply")


def platform_matches(platform, arch):
    if not platform:                # no platform: linux/amd64 by convention
        return arch == "amd64"
    return platform.get("os") == "linux" and platform.get("architecture") == arch
