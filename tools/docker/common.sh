# shellcheck shell=bash
# common.sh — sourced by build.sh and promote.sh (set NAME first): the repository root, the docker
# command, the project version, DEVICE validation and the engine choice (docker or podman).
# Sets ROOT, DOCKER, VALID, VERSION; defines usage SCRIPT, check_engine_arg VALUE,
# check_devices DEVICE... and pick_engine [ENGINE].
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOCKER_SET_BY_USER="${DOCKER:-}"
DOCKER="${DOCKER:-docker}"
VALID=(cpu cu126 cu129 cu130)

VERSION="$(sed -n 's/^project(tzrun VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
[[ -n "$VERSION" ]] || { echo "$NAME: no project(tzrun VERSION x.y.z) in $ROOT/CMakeLists.txt" >&2; exit 2; }

# usage SCRIPT: prints SCRIPT's leading comment block (after the #! line) without the "# ".
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$1"; }

# check_engine_arg VALUE: exits 2 unless VALUE (from --engine) names docker or podman, or a path
# to one.
check_engine_arg() {
  [[ "${1##*/}" == docker* || "${1##*/}" == podman* ]] ||
    { echo "$NAME: --engine '$1': use docker or podman (or a path to one)" >&2; exit 2; }
}

# Exits 2 naming the first DEVICE that is not one of VALID.
check_devices() {
  local d
  for d in "$@"; do
    [[ " ${VALID[*]} " == *" $d "* ]] || { echo "$NAME: unknown DEVICE '$d'; use: ${VALID[*]}" >&2; exit 2; }
  done
}

# pick_engine [docker|podman]: sets ENGINE (the command, as an array), ENGINE_KIND (docker or
# podman) and DOCKER (ENGINE[0]). Order: the argument, then $TZRUN_ENGINE,
# then $DOCKER when set, then docker when its daemon answers, then podman (--engine accepts only
# docker or podman; the caller checks that). For podman,
# $TZRUN_PODMAN_STORAGE_DRIVER (e.g. vfs, where overlay mounts are not allowed) is passed as
# --storage-driver. Exits 2 naming the engine when none is usable.
pick_engine() {
  local want="${1:-${TZRUN_ENGINE:-}}"
  if [[ -z "$want" && -n "${DOCKER_SET_BY_USER:-}" ]]; then want="$DOCKER"; fi
  if [[ -z "$want" ]]; then
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
      want=docker
    elif command -v podman >/dev/null; then
      want=podman
    else
      want=docker
    fi
  fi
  # Anything whose name is not podman's is driven like docker (DOCKER=/path/to/docker works).
  case "${want##*/}" in
    podman*) ENGINE_KIND=podman ;;
    *) ENGINE_KIND=docker ;;
  esac
  DOCKER="$want"
  ENGINE=("$want")
  if [[ "$ENGINE_KIND" == podman && -n "${TZRUN_PODMAN_STORAGE_DRIVER:-}" ]]; then
    ENGINE+=(--storage-driver "$TZRUN_PODMAN_STORAGE_DRIVER")
  fi
  if ! command -v "$want" >/dev/null; then
    echo "$NAME: '$want' not found; install Docker or podman (apt-get install podman), or pick" \
      "one with --engine" >&2
    exit 2
  fi
  if [[ "$ENGINE_KIND" == docker ]] && ! "$want" info >/dev/null 2>&1; then
    echo "$NAME: '$want info' failed: no Docker daemon reachable (is it running, and may this" \
      "user use it?); or use podman (--engine podman)" >&2
    exit 2
  fi
}
