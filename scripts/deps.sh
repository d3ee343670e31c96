#!/bin/sh
# Installs the Debian packages a target needs, when missing.
#   scripts/deps.sh [build|test]
# build: what `make`, `make install` and `make demo` need (compilers, the
# libraries, protoc, help2man for the man pages);
# test (the default): also what the tests, the static build, the images and
# the fuzzers use. Run by `make deps` (make test, make e2e, make bench...) and
# `make deps-build` (make demo). As root it runs apt-get itself, waiting for
# another apt or dpkg to finish instead of failing on its lock; otherwise it
# prints the exact command and fails.
set -eu

BUILD_PACKAGES="gcc make pkg-config protobuf-c-compiler libprotobuf-c-dev libnghttp2-dev
libyaml-dev protobuf-compiler libcurl4-openssl-dev libssl-dev help2man
libseccomp-dev"
TEST_PACKAGES="libcriterion-dev python3 python3-grpcio python3-protobuf python3-pytest
python3-pytest-xdist python3-yaml procps time util-linux skopeo docker-registry umoci
bubblewrap oci-image-tool busybox-static clang libclang-rt-14-dev curl apache2-utils
golang-go golang-gopkg-yaml.v3-dev golang-google-grpc-dev golang-google-protobuf-dev
golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc"

case ${1:-test} in
build) PACKAGES=$BUILD_PACKAGES ;;
test) PACKAGES="$BUILD_PACKAGES $TEST_PACKAGES" ;;
*) echo "usage: scripts/deps.sh [build|test]" >&2; exit 2 ;;
esac

installed() {
    dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# The packages of the list given that are not installed.
not_installed() {
    for p in "$@"; do
        installed "$p" || printf ' %s' "$p"
    done
}

# shellcheck disable=SC2086
missing=$(not_installed $PACKAGES)
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages:$missing" >&2
    echo "install them with: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "deps: installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt or dpkg (unattended upgrades, a second make) may hold the
# package lock: apt waits up to LOCK_WAIT seconds for dpkg's lock, and the
# lists' lock (apt-get update) is retried here as long.
LOCK_WAIT=${DEPS_LOCK_WAIT:-600}

# Progress: a line per package fetched, unpacked and set up, and apt's errors.
apt_install() {
    # shellcheck disable=SC2086
    apt-get -o DPkg::Lock::Timeout="$LOCK_WAIT" -y -q install "$@" 2>&1 |
        sed -u 's/\r/\n/g' |
        awk '/^(Get:|Unpacking|Setting up|E:|Waiting for)/ && $0 != last { print "deps: " $0; fflush(); last = $0 }' >&2 || true
}

update_lists() {
    waited=0
    while ! out=$(apt-get -q update 2>&1); do
        if ! printf '%s\n' "$out" | grep -q 'Could not get lock' || [ "$waited" -ge "$LOCK_WAIT" ]; then
            printf '%s\n' "$out" >&2
            return 1
        fi
        [ "$waited" -eq 0 ] && echo "deps: waiting for the package lists' lock (another apt is running)" >&2
        sleep 5
        waited=$((waited + 5))
    done
}

# The lists are refreshed only when an install leaves packages missing
# (stale or empty lists).
# shellcheck disable=SC2086
apt_install $missing
# shellcheck disable=SC2086
still=$(not_installed $missing)
if [ -n "$still" ]; then
    echo "deps: refreshing the package lists" >&2
    update_lists
    # shellcheck disable=SC2086
    apt_install $still
    # shellcheck disable=SC2086
    still=$(not_installed $still)
    if [ -n "$still" ]; then
        echo "deps: FAILED to install:$still (apt-get's messages above)" >&2
        exit 1
    fi
fi
echo "deps: done" >&2
