#!/bin/sh
# `make images`: writes, as OCI layouts under build/images/, the init-container
# image (wrapper-server/) and the function-runner image (function-runner/)
# from the static binaries `make static` made; prints each one's digest and
# size. No Docker daemon is involved; two runs give the same digests
# (images/oci.py says how).
set -eu
cd "$(dirname "$0")/.."
STATIC=${STATIC:-build/static}
OUT=${OUT:-build/images}
TAG=${TAG:-latest}

digest=$(python3 images/init_image.py --wrapper "$STATIC/wrapper-server" \
         --copier "$STATIC/copier" --out "$OUT/wrapper-server" --tag "$TAG")
bytes=$(du -sb "$OUT/wrapper-server/blobs" | cut -f1)
echo "images: $OUT/wrapper-server:$TAG $digest ($bytes bytes of blobs)"

digest=$(python3 images/runner_image.py --client "$STATIC/runner-client" \
         --out "$OUT/function-runner" --tag "$TAG")
bytes=$(du -sb "$OUT/function-runner/blobs" | cut -f1)
echo "images: $OUT/function-runner:$TAG $digest ($bytes bytes of blobs)"
