#!/usr/bin/env bash
# promote.sh [--engine docker|podman] [DEVICE...] — retag tested images tzrun-test:VERSION-DEVICE
#   as tzrun:VERSION-DEVICE. DEVICE: cpu | cu126 | cu129 | cu130 (default: all four); VERSION:
#   project(VERSION). --engine as for build.sh (docker, podman or a path to one).
# Env: TZRUN_IMAGE_REPO (source, default tzrun-test), TZRUN_RELEASE_REPO (target, default tzrun),
#      TZRUN_ENGINE or DOCKER (docker or podman; default: docker when its daemon answers, else
#      podman), TZRUN_PODMAN_STORAGE_DRIVER (as for build.sh). Pushing is left to the caller
#      (docker push tzrun:VERSION-DEVICE).
# Exit: 0 retagged; 1 a source image is missing; 2 docker is missing / unreachable / bad usage.
set -euo pipefail
NAME=promote.sh
# shellcheck source=tools/docker/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SRC="${TZRUN_IMAGE_REPO:-tzrun-test}"
DST="${TZRUN_RELEASE_REPO:-tzrun}"

engine_arg=""
while (($#)); do
  case "$1" in
    --engine) engine_arg="${2:-}"; check_engine_arg "$engine_arg"; shift 2 ;;
    -h | --help) usage "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "$NAME: unknown option '$1'; see $NAME --help" >&2; exit 2 ;;
    *) break ;;
  esac
done
(($#)) || set -- "${VALID[@]}"
check_devices "$@"
pick_engine "$engine_arg"
for d in "$@"; do
  "${ENGINE[@]}" image inspect "$SRC:$VERSION-$d" >/dev/null 2>&1 || {
    echo "promote.sh: $SRC:$VERSION-$d does not exist; build and test it first (tools/docker/build.sh $d)" >&2
    exit 1
  }
  "${ENGINE[@]}" tag "$SRC:$VERSION-$d" "$DST:$VERSION-$d"
  echo "promote.sh: $SRC:$VERSION-$d -> $DST:$VERSION-$d"
done
