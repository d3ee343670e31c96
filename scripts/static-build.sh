#!/bin/sh
# make static: fully static musl builds of wrapper-server, copier and
# runner-client in build/static/.
#
# nghttp2, libyaml and protobuf-c (and for runner-client libseccomp,
# OpenSSL and libcurl) are compiled against musl from Debian's own source
# packages, fetched with `apt-get source` through a private sources
# list (the system's apt configuration is not touched) and cached under
# build/static-deps/, so a second run only rebuilds our code.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEPS=$ROOT/build/static-deps
PREFIX=$DEPS/prefix
CLIENT_PREFIX=$DEPS/client-prefix   # OpenSSL and libcurl: runner-client's alone
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

# Progress on stderr: the first run fetches and compiles six libraries,
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
    # The newest version first; if a mirror lacks one of its files (a
    # security update not mirrored yet), the release's own version.
    release=$(awk 'NR == 1 {print $3}' "$APT/sources.list")
    (cd "$SRC/dl-$name" && { apt_private source --download-only "$name" >/dev/null 2>&1 ||
        { rm -f ./*; apt_private source --download-only "$name/$release" >/dev/null 2>&1; }; } ||
        { echo "static-build: apt-get source $name failed (also $name/$release)" >&2; exit 1; })
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

# The Linux UAPI headers (linux/, asm/, asm-generic/) are libc-neutral but
# musl-gcc leaves /usr/include out of its search path; libseccomp, OpenSSL
# and the sandbox need them, so give them their own directory.
kernel_headers() {
    KHDR=$DEPS/kernel-include
    [ -e "$KHDR/asm" ] && return 0
    mkdir -p "$KHDR"
    multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
    for d in linux asm-generic; do ln -sfn "/usr/include/$d" "$KHDR/$d"; done
    ln -sfn "/usr/include/$multiarch/asm" "$KHDR/asm"
}

# libseccomp, OpenSSL and libcurl build out of their source tree, in a
# fresh $DEPS/obj/<name> each time (a failed build leaves nothing behind
# that a second run would take for done: they are installed last).
fresh_obj() { rm -rf "$DEPS/obj/$1" && mkdir -p "$DEPS/obj/$1" && cd "$DEPS/obj/$1"; }
build_failed() { echo "static-build: $1 failed to build (log above)" >&2; exit 1; }

# Their assertions name source files: by paths relative to this tree, so
# the binary is the same wherever the tree is.
DEP_CFLAGS="-Os -ffunction-sections -fdata-sections -ffile-prefix-map=$ROOT=."

# libseccomp's release tarball carries its generated syscall table and
# configure (which insists on gperf all the same); only the library is built.
build_libseccomp() {
    [ -f "$PREFIX/lib/libseccomp.a" ] && return 0
    need gperf
    fetch_source libseccomp
    say "building libseccomp against musl..."
    (fresh_obj libseccomp &&
        "$SRC/libseccomp/configure" -q CC=musl-gcc CFLAGS="$DEP_CFLAGS" \
            CPPFLAGS="-idirafter $KHDR" --prefix="$PREFIX" --disable-shared --enable-static \
            --disable-python >/dev/null &&
        make -s -j"$JOBS" -C src libseccomp.la >/dev/null &&
        make -s -C include install-includeHEADERS >/dev/null &&
        make -s -C src install-libLTLIBRARIES >/dev/null) || build_failed libseccomp
}

# OpenSSL: libcurl's TLS and the registry client's SHA-256 (libcrypto's
# EVP). mbedTLS (Debian's 2.28) makes a binary 2.2 MB smaller but does not
# match a certificate's IP address names, which an API server reached by
# its Service IP and a registry by address need (docs/images.md).
build_openssl() {
    [ -f "$CLIENT_PREFIX/lib/libssl.a" ] && return 0
    need perl   # Configure
    fetch_source openssl
    say "building OpenSSL against musl (the longest step)..."
    # Installed paths are the image's (/etc/ssl), the header path is relative,
    # not this tree's, and the "built on" date is the Debian changelog's:
    # OpenSSL compiles them into the binary, which must not depend on where
    # or when it was built.
    epoch=$(dpkg-parsechangelog -l "$SRC/openssl/debian/changelog" -S Timestamp)
    # What neither libcurl's HTTPS nor a registry or API server uses is left out.
    (fresh_obj openssl &&
        "$SRC/openssl/Configure" linux-x86_64 no-shared no-tests no-afalgeng no-engine no-dso \
            no-module no-legacy no-async no-comp no-ui-console no-ssl3 no-dtls no-srp no-srtp \
            no-idea no-camellia no-seed no-bf no-cast no-rc2 no-rc4 no-rc5 no-md4 no-mdc2 \
            no-whirlpool no-sm2 no-sm3 no-sm4 no-gost no-aria no-siphash no-cms no-ts no-ct \
            no-ocsp no-nextprotoneg no-psk -Os -ffunction-sections -fdata-sections \
            -idirafter../../kernel-include CC=musl-gcc --prefix=/ --libdir=lib --openssldir=/etc/ssl >/dev/null &&
        make -s -j"$JOBS" build_libs SOURCE_DATE_EPOCH="$epoch" >/dev/null &&
        make -s install_dev DESTDIR="$CLIENT_PREFIX" >/dev/null) ||
        build_failed OpenSSL
}

# libcurl for HTTP and HTTPS only (registries, the API server), HTTP/2
# through the nghttp2 built above; no LDAP, Kerberos, IDN, PSL, compression.
build_curl() {
    [ -f "$CLIENT_PREFIX/lib/libcurl.a" ] && return 0
    fetch_source curl
    say "building libcurl against musl..."
    (fresh_obj curl &&
        "$SRC/curl/configure" -q CC=musl-gcc CFLAGS="$DEP_CFLAGS" \
            CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib" PKG_CONFIG=false \
            --prefix="$CLIENT_PREFIX" --disable-shared --enable-static --with-openssl="$CLIENT_PREFIX" \
            --with-nghttp2="$PREFIX" --with-ca-bundle=/etc/ssl/certs/ca-certificates.crt \
            --without-ca-path --without-zlib --without-brotli --without-zstd --without-libidn2 \
            --without-libpsl --without-librtmp --without-libssh2 --without-libgsasl \
            --without-gssapi --without-hyper --without-msh3 --without-ngtcp2 --without-nghttp3 \
            --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet \
            --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp \
            --disable-gopher --disable-mqtt --disable-ftp --disable-file --disable-manual \
            --disable-ntlm --disable-ntlm-wb --disable-netrc --disable-alt-svc \
            --disable-hsts --disable-doh --disable-cookies >/dev/null &&
        make -s -j"$JOBS" -C lib >/dev/null && make -s -C include install >/dev/null &&
        make -s -C lib install >/dev/null) || build_failed libcurl
}

build_libyaml
build_nghttp2
build_protobuf_c

kernel_headers
build_libseccomp
build_openssl
build_curl

# runner-client apart (build/static-obj-rc): its objects see libcurl's,
# OpenSSL's and libseccomp's headers and keep the parts of lib/ that use
# them, which the wrapper server's build leaves out.
build_static() {
    obj=$1; shift
    bins=$1; shift
    targets=""
    for bin in $bins; do targets="$targets $obj/bin/$bin"; done
    say "building$(for b in $bins; do printf ' %s' "$b"; done) (static, musl) in $obj..."
    # shellcheck disable=SC2086
    make -s -j"$JOBS" -C "$ROOT" BUILD="$obj" STATIC_PREFIX="$PREFIX" "$@" $targets
    mkdir -p "$OUT"
    for bin in $bins; do
        strip --strip-all -o "$OUT/$bin" "$ROOT/$obj/bin/$bin"
        file "$OUT/$bin" | grep -q 'statically linked' || {
            echo "static-build: $OUT/$bin is not statically linked" >&2
            exit 1
        }
    done
}
BINS=wrapper-server
ls "$ROOT"/copier/*.c >/dev/null 2>&1 && BINS="$BINS copier"
build_static build/static-obj "$BINS"
build_static build/static-obj-rc runner-client STATIC_CLIENT_PREFIX="$CLIENT_PREFIX" STATIC_KHDR="$KHDR"

total=0
for bin in $BINS runner-client; do
    size=$(stat -c %s "$OUT/$bin")
    total=$((total + size))
    printf '%-16s %8d bytes (%d KiB) stripped, static\n' "$bin" "$size" $(((size + 1023) / 1024))
done
printf '%-16s %8d bytes (%d KiB)\n' total "$total" $(((total + 1023) / 1024))
