#!/usr/bin/env bash
# build.sh [DEVICE...] — build docker/Dockerfile once per DEVICE and tag tzrun-test:VERSION-DEVICE.
#   DEVICE: cpu | cu126 | cu129 | cu130 (default: all four). VERSION: project(VERSION) in
#   CMakeLists.txt. Test the image, then tools/docker/promote.sh retags it tzrun:VERSION-DEVICE.
# Env: TZRUN_IMAGE_REPO (default tzrun-test), DOCKER (default docker),
#      TZRUN_DOCKER_BUILD_ARGS extra arguments for `docker build` (e.g. "--build-arg USER_NAME=tz
#      --build-arg PIP_MIRROR=https://mirror/simple --build-arg TORCH_INDEX_BASE=https://mirror/whl").
# Exit: 0 built; 1 a build failed; 2 docker is missing or its daemon is unreachable / bad usage.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOCKER="${DOCKER:-docker}"
REPO="${TZRUN_IMAGE_REPO:-tzrun-test}"
VALID=(cpu cu126 cu129 cu130)

VERSION="$(sed -n 's/^project(tzrun VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
[[ -n "$VERSION" ]] || { echo "build.sh: no project(tzrun VERSION x.y.z) in $ROOT/CMakeLists.txt" >&2; exit 2; }

(($#)) || set -- "${VALID[@]}"
for d in "$@"; do
  [[ " ${VALID[*]} " == *" $d "* ]] || { echo "build.sh: unknown DEVICE '$d'; use: ${VALID[*]}" >&2; exit 2; }
done

if ! command -v "$DOCKER" >/dev/null; then
  echo "build.sh: '$DOCKER' not found; building the images needs Docker (or set DOCKER=podman)." \
    "Without Docker, tools/docker/check_dockerfile.py checks the Dockerfile (ctest -R docker)." >&2
  exit 2
fi
if ! "$DOCKER" info >/dev/null 2>&1; then
  echo "build.sh: '$DOCKER info' failed: no Docker daemon reachable (is it running, and may this" \
    "user use it?). Without Docker, tools/docker/check_dockerfile.py checks the Dockerfile." >&2
  exit 2
fi

read -r -a extra <<<"${TZRUN_DOCKER_BUILD_ARGS:-}"
for d in "$@"; do
  tag="$REPO:$VERSION-$d"
  echo "build.sh: building $tag"
  DOCKER_BUILDKIT=1 "$DOCKER" build -f "$ROOT/docker/Dockerfile" \
    --build-arg "DEVICE=$d" --build-arg "TZRUN_VERSION=$VERSION" \
    "${extra[@]}" -t "$tag" "$ROOT" || { echo "build.sh: docker build of $tag failed" >&2; exit 1; }
  "$DOCKER" run --rm "$tag" tzrun --version || { echo "build.sh: $tag does not run 'tzrun --version'" >&2; exit 1; }
  echo "build.sh: built $tag"
done
