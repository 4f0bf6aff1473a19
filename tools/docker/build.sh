#!/usr/bin/env bash
# build.sh [DEVICE...] — build docker/Dockerfile once per DEVICE and tag tzrun-test:VERSION-DEVICE.
#   DEVICE: cpu | cu126 | cu129 | cu130 (default: all four). VERSION: project(VERSION) in
#   CMakeLists.txt. Test the image, then tools/docker/promote.sh retags it tzrun:VERSION-DEVICE.
# Env: TZRUN_IMAGE_REPO (default tzrun-test), DOCKER (default docker),
#      TZRUN_DOCKER_BUILD_ARGS extra arguments for `docker build` (e.g. "--build-arg USER_NAME=tz
#      --build-arg PIP_MIRROR=https://mirror/simple --build-arg TORCH_INDEX_BASE=https://mirror/whl").
# Exit: 0 built; 1 a build failed; 2 docker is missing or its daemon is unreachable / bad usage.
set -euo pipefail
NAME=build.sh
# shellcheck source=tools/docker/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
REPO="${TZRUN_IMAGE_REPO:-tzrun-test}"

(($#)) || set -- "${VALID[@]}"
check_devices "$@"
require_docker "Without Docker, tools/docker/check_dockerfile.py checks the Dockerfile (ctest -R docker)."

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
