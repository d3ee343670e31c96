#!/bin/sh
# `make images`: writes the init-container image as an OCI layout under
# build/images/wrapper-server/ from the static binaries `make static` made,
# and prints its digest and size. No Docker daemon is involved; two runs give
# the same digest (images/oci.py says how).
set -eu
cd "$(dirname "$0")/.."
STATIC=${STATIC:-build/static}
OUT=${OUT:-build/images}
TAG=${TAG:-latest}

digest=$(python3 images/init_image.py --wrapper "$STATIC/wrapper-server" \
         --copier "$STATIC/copier" --out "$OUT/wrapper-server" --tag "$TAG")
bytes=$(du -sb "$OUT/wrapper-server/blobs" | cut -f1)
echo "images: $OUT/wrapper-server:$TAG $digest ($bytes bytes of blobs)"
