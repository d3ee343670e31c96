#!/bin/sh
# Builds tests/goclient with Debian's Go and grpc-go (golang-google-grpc-dev),
# offline: GOPATH mode over /usr/share/gocode, the evaluator stubs generated
# from proto/evaluator.proto by Debian's protoc-gen-go and protoc-gen-go-grpc
# into the import path Porch's code uses. Usage: build.sh OUTDIR; prints the
# binary's path. Go's build cache stays in OUTDIR, so a rebuild is quick.
# The binary is rebuilt when the sources' checksum differs from the one it
# was built from (times mislead once a build directory is copied), and one
# build at a time runs in OUTDIR: parallel test workers all call this.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
PKG=github.com/nephio-project/porch/func/evaluator
SRC=$OUT/gopath/src
BIN=$OUT/goclient

exec 9>"$OUT/build.lock"
flock 9
SUM=$(cat "$ROOT/tests/goclient/main.go" "$ROOT/tests/goclient/build.sh" \
          "$ROOT/proto/evaluator.proto" | sha256sum | cut -d' ' -f1)
if [ -x "$BIN" ] && [ "$(cat "$BIN.sum" 2>/dev/null)" = "$SUM" ]; then
    echo "$BIN"
    exit 0
fi
rm -rf "$SRC"
mkdir -p "$SRC/$PKG" "$SRC/goclient"
protoc --proto_path="$ROOT/proto" --go_out="$SRC" --go-grpc_out="$SRC" \
    "$ROOT/proto/evaluator.proto"
cp "$ROOT/tests/goclient/main.go" "$SRC/goclient/"
cd "$SRC/goclient"
GOPATH=$OUT/gopath:/usr/share/gocode GO111MODULE=off GOFLAGS= GOPROXY=off \
    GOCACHE=$OUT/cache go build -o "$BIN.tmp" . >&2
mv "$BIN.tmp" "$BIN"
echo "$SUM" >"$BIN.sum"
echo "$BIN"
