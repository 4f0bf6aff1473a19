# common.sh — sourced by build.sh and promote.sh (set NAME first): the repository root, the docker
# command, the project version, DEVICE validation and the docker-availability check.
# Sets ROOT, DOCKER, VALID, VERSION; defines check_devices DEVICE... and require_docker HINT.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOCKER="${DOCKER:-docker}"
VALID=(cpu cu126 cu129 cu130)

VERSION="$(sed -n 's/^project(tzrun VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
[[ -n "$VERSION" ]] || { echo "$NAME: no project(tzrun VERSION x.y.z) in $ROOT/CMakeLists.txt" >&2; exit 2; }

# Exits 2 naming the first DEVICE that is not one of VALID.
check_devices() {
  local d
  for d in "$@"; do
    [[ " ${VALID[*]} " == *" $d "* ]] || { echo "$NAME: unknown DEVICE '$d'; use: ${VALID[*]}" >&2; exit 2; }
  done
}

# Exits 2 when the docker command or its daemon is missing; $1 says what to do instead.
require_docker() {
  if ! command -v "$DOCKER" >/dev/null; then
    echo "$NAME: '$DOCKER' not found; this needs Docker (or set DOCKER=podman). $1" >&2
    exit 2
  fi
  if ! "$DOCKER" info >/dev/null 2>&1; then
    echo "$NAME: '$DOCKER info' failed: no Docker daemon reachable (is it running, and may this" \
      "user use it?). $1" >&2
    exit 2
  fi
}
