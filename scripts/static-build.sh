#!/bin/sh
# make static: fully static musl builds of wrapper-server and copier in
# build/static/.
#
# nghttp2, libyaml and protobuf-c are compiled against musl from Debian's own
# source packages, fetched with `apt-get source` through a private sources
# list (the system's apt configuration is not touched) and cached under
# build/static-deps/, so a second run only rebuilds our code.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS=$ROOT/build/static-deps
PREFIX=$DEPS/prefix
SRC=$DEPS/src
APT="$DEPS/apt"
OUT=$ROOT/build/static
JOBS=$(nproc 2>/dev/null || echo 2)

need() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' && continue
        if [ "$(id -u)" -ne 0 ]; then
            echo "static-build: missing Debian package $p; run: sudo apt-get install -y $*" >&2
            exit 1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
        return
    done
}
need musl-tools dpkg-dev make file binutils

# Progress on stderr: the first run fetches and compiles three libraries,
# which takes a while; say what is happening rather than stay silent.
say() { echo "static: $*" >&2; }

apt_private() {
    apt-get -q -o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$APT/lists" -o Dir::Cache="$APT/cache" "$@"
}

# Fetch and unpack one source package into $SRC/<name>/ (once).
fetch_source() {
    name=$1
    [ -d "$SRC/$name" ] && return 0
    mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$SRC/dl-$name"
    if [ ! -f "$APT/sources.list" ]; then
        # The binary sources' suites, as deb-src lines.
        suites=$(apt-cache policy libnghttp2-dev | awk '/ 500 /{print $2, $3}' | sort -u |
                 sed -n 's#^\(http[^ ]*\) \([^/]*\)/.*#deb-src \1 \2 main#p')
        [ -n "$suites" ] || suites="deb-src http://deb.debian.org/debian bookworm main"
        echo "$suites" > "$APT/sources.list"
        say "reading the Debian source index (apt-get update, private lists in $APT)..."
        apt_private update >/dev/null
    fi
    say "fetching the source of $name (apt-get source, cached in $SRC)..."
    (cd "$SRC/dl-$name" && apt_private source --download-only "$name" >/dev/null 2>&1 ||
        { echo "static-build: apt-get source $name failed" >&2; exit 1; })
    dsc=$(ls "$SRC/dl-$name"/*.dsc | head -n 1)
    dpkg-source --no-check -x "$dsc" "$SRC/$name" >/dev/null
    rm -rf "$SRC/dl-$name"
}

# libyaml's source package has no generated configure; its eight C files
# need only the version macros, so compile them directly.
build_libyaml() {
    [ -f "$PREFIX/lib/libyaml.a" ] && return 0
    fetch_source libyaml
    say "building libyaml against musl..."
    version=$(dpkg-parsechangelog -l "$SRC/libyaml/debian/changelog" -S Version | sed 's/-[^-]*$//')
    major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}; patch=${rest#*.}
    mkdir -p "$PREFIX/lib" "$PREFIX/include" "$DEPS/obj/yaml"
    for f in "$SRC"/libyaml/src/*.c; do
        musl-gcc -O2 -ffunction-sections -fdata-sections -I"$SRC/libyaml/include" \
            -DYAML_VERSION_MAJOR="$major" -DYAML_VERSION_MINOR="$minor" \
            -DYAML_VERSION_PATCH="$patch" -DYAML_VERSION_STRING="\"$version\"" \
            -c -o "$DEPS/obj/yaml/$(basename "$f" .c).o" "$f"
    done
    ar rcs "$PREFIX/lib/libyaml.a" "$DEPS"/obj/yaml/*.o
    cp "$SRC/libyaml/include/yaml.h" "$PREFIX/include/"
}

# nghttp2's source package is the git tree (no generated configure); the
# library needs only its version header and a few HAVE_ macros, so compile
# lib/*.c directly.
build_nghttp2() {
    [ -f "$PREFIX/lib/libnghttp2.a" ] && return 0
    fetch_source nghttp2
    say "building nghttp2 against musl..."
    lib=$SRC/nghttp2/lib
    version=$(sed -n 's/^AC_INIT(\[nghttp2\], \[\([0-9.]*\)\].*/\1/p' "$SRC/nghttp2/configure.ac")
    num=$(echo "$version" | awk -F. '{printf "0x%02x%02x%02x", $1, $2, $3}')
    mkdir -p "$PREFIX/lib" "$PREFIX/include/nghttp2" "$DEPS/obj/nghttp2"
    sed -e "s/@PACKAGE_VERSION@/$version/" -e "s/@PACKAGE_VERSION_NUM@/$num/" \
        "$lib/includes/nghttp2/nghttp2ver.h.in" > "$PREFIX/include/nghttp2/nghttp2ver.h"
    cp "$lib/includes/nghttp2/nghttp2.h" "$PREFIX/include/nghttp2/"
    for f in "$lib"/*.c; do
        musl-gcc -Os -ffunction-sections -fdata-sections -DBUILDING_NGHTTP2 -DNGHTTP2_STATICLIB \
            -DHAVE_ARPA_INET_H=1 -DHAVE_NETINET_IN_H=1 -DHAVE_TIME_H=1 -DHAVE_CLOCK_GETTIME=1 \
            -I"$PREFIX/include" -I"$lib" -c -o "$DEPS/obj/nghttp2/$(basename "$f" .c).o" "$f"
    done
    ar rcs "$PREFIX/lib/libnghttp2.a" "$DEPS"/obj/nghttp2/*.o
}

# Only the runtime library (one C file) is needed; its configure would look
# for the C++ protobuf compiler, so compile it directly.
build_protobuf_c() {
    [ -f "$PREFIX/lib/libprotobuf-c.a" ] && return 0
    fetch_source protobuf-c
    say "building protobuf-c against musl..."
    mkdir -p "$PREFIX/lib" "$PREFIX/include/protobuf-c" "$DEPS/obj"
    musl-gcc -Os -ffunction-sections -fdata-sections -c -o "$DEPS/obj/protobuf-c.o" \
        "$SRC/protobuf-c/protobuf-c/protobuf-c.c"
    ar rcs "$PREFIX/lib/libprotobuf-c.a" "$DEPS/obj/protobuf-c.o"
    cp "$SRC/protobuf-c/protobuf-c/protobuf-c.h" "$PREFIX/include/protobuf-c/"
}

build_libyaml
build_nghttp2
build_protobuf_c

BINS=wrapper-server
ls "$ROOT"/copier/*.c >/dev/null 2>&1 && BINS="$BINS copier"
targets=""
for bin in $BINS; do targets="$targets build/static-obj/bin/$bin"; done
say "building$(for b in $BINS; do printf ' %s' "$b"; done) (static, musl) in build/static-obj..."
# shellcheck disable=SC2086
make -s -C "$ROOT" BUILD=build/static-obj STATIC_PREFIX="$PREFIX" $targets
mkdir -p "$OUT"
total=0
for bin in $BINS; do
    strip --strip-all -o "$OUT/$bin" "$ROOT/build/static-obj/bin/$bin"
    file "$OUT/$bin" | grep -q 'statically linked' || {
        echo "static-build: $OUT/$bin is not statically linked" >&2
        exit 1
    }
    size=$(stat -c %s "$OUT/$bin")
    total=$((total + size))
    printf '%-16s %8d bytes (%d KiB) stripped, static\n' "$bin" "$size" $(((size + 1023) / 1024))
done
printf '%-16s %8d bytes (%d KiB)\n' total "$total" $(((total + 1023) / 1024))
