#!/usr/bin/env bash
# promote.sh [DEVICE...] — retag tested images tzrun-test:VERSION-DEVICE as tzrun:VERSION-DEVICE.
#   DEVICE: cpu | cu126 | cu129 | cu130 (default: all four); VERSION: project(VERSION).
# Env: TZRUN_IMAGE_REPO (source, default tzrun-test), TZRUN_RELEASE_REPO (target, default tzrun),
#      DOCKER (default docker). Pushing is left to the caller (docker push tzrun:VERSION-DEVICE).
# Exit: 0 retagged; 1 a source image is missing; 2 docker is missing / unreachable / bad usage.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOCKER="${DOCKER:-docker}"
SRC="${TZRUN_IMAGE_REPO:-tzrun-test}"
DST="${TZRUN_RELEASE_REPO:-tzrun}"
VALID=(cpu cu126 cu129 cu130)

VERSION="$(sed -n 's/^project(tzrun VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
[[ -n "$VERSION" ]] || { echo "promote.sh: no project(tzrun VERSION x.y.z) in $ROOT/CMakeLists.txt" >&2; exit 2; }
(($#)) || set -- "${VALID[@]}"
for d in "$@"; do
  [[ " ${VALID[*]} " == *" $d "* ]] || { echo "promote.sh: unknown DEVICE '$d'; use: ${VALID[*]}" >&2; exit 2; }
done
if ! command -v "$DOCKER" >/dev/null || ! "$DOCKER" info >/dev/null 2>&1; then
  echo "promote.sh: Docker is not available here ('$DOCKER' missing or its daemon unreachable);" \
    "run it where tools/docker/build.sh built the images" >&2
  exit 2
fi
for d in "$@"; do
  "$DOCKER" image inspect "$SRC:$VERSION-$d" >/dev/null 2>&1 || {
    echo "promote.sh: $SRC:$VERSION-$d does not exist; build and test it first (tools/docker/build.sh $d)" >&2
    exit 1
  }
  "$DOCKER" tag "$SRC:$VERSION-$d" "$DST:$VERSION-$d"
  echo "promote.sh: $SRC:$VERSION-$d -> $DST:$VERSION-$d"
done
