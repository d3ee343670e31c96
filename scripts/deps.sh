#!/bin/sh
# Installs the Debian packages the build and the tests need, when missing.
# Run by `make deps` (and so by `make`, `make test` and `make demo`). As root it
# runs apt-get itself; otherwise it prints the exact command and fails.
set -eu

PACKAGES="gcc make pkg-config protobuf-c-compiler libprotobuf-c-dev libnghttp2-dev
libyaml-dev libcriterion-dev protobuf-compiler python3 python3-grpcio
python3-protobuf python3-pytest procps util-linux
skopeo docker-registry umoci bubblewrap oci-image-tool busybox-static
clang libclang-rt-14-dev curl libcurl4-openssl-dev libssl-dev apache2-utils python3-yaml
golang-go golang-gopkg-yaml.v3-dev"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages:$missing" >&2
    echo "install them with: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Refresh the lists only when an install fails with stale or empty lists.
# shellcheck disable=SC2086
apt-get install -y -qq $missing >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq $missing
}
