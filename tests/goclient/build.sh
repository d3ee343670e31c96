#!/bin/sh
# Builds tests/goclient with Debian's Go and grpc-go (golang-google-grpc-dev),
# offline: GOPATH mode over /usr/share/gocode, the evaluator stubs generated
# from proto/evaluator.proto by Debian's protoc-gen-go and protoc-gen-go-grpc
# into the import path Porch's code uses. Usage: build.sh OUTDIR; prints the
# binary's path. Go's build cache stays in OUTDIR, so a rebuild is quick.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
PKG=github.com/nephio-project/porch/func/evaluator
SRC=$OUT/gopath/src
BIN=$OUT/goclient

if [ -x "$BIN" ] && [ -z "$(find "$ROOT/tests/goclient" "$ROOT/proto/evaluator.proto" -newer "$BIN")" ]; then
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
echo "$BIN"
