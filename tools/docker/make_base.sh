#!/usr/bin/env bash
# make_base.sh [--engine docker|podman] [--tag TAG] [--suite SUITE] [--mirror URL]
#   Makes a Debian base image from Debian's own packages, for hosts that cannot pull debian:12
#   from a registry: `mmdebstrap --variant=minbase SUITE base.tar [MIRROR]`, then
#   `ENGINE import base.tar TAG`. Defaults: engine as tools/docker/build.sh picks it, TAG
#   localhost/debian:12, SUITE bookworm, MIRROR the host's apt sources (mmdebstrap's default).
#   Then: tools/docker/build.sh --debian-image localhost/debian:12 --runtime-image localhost/debian:12
#   (minbase is about the size of debian:12-slim, so it serves both stages).
# Env: TZRUN_BASE_TAR where base.tar is written (default: a temporary folder, removed after import).
# Needs: mmdebstrap (apt-get install mmdebstrap) and root (or mmdebstrap's unshare mode).
# Exit: 0 imported; 1 mmdebstrap or the import failed; 2 bad usage / missing tool.
set -euo pipefail
NAME=make_base.sh
# shellcheck source=tools/docker/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

TAG=localhost/debian:12
SUITE=bookworm
MIRROR=()
ENGINE_ARG=""
while (($#)); do
  case "$1" in
    --engine) ENGINE_ARG="${2:?--engine needs docker or podman}"; shift 2 ;;
    --tag) TAG="${2:?--tag needs a value}"; shift 2 ;;
    --suite) SUITE="${2:?--suite needs a value}"; shift 2 ;;
    --mirror) MIRROR=("${2:?--mirror needs a URL}"); shift 2 ;;
    -h | --help) usage "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "$NAME: unknown argument '$1'; see $NAME --help" >&2; exit 2 ;;
  esac
done
pick_engine "$ENGINE_ARG"
command -v mmdebstrap >/dev/null || {
  echo "$NAME: mmdebstrap not found; install it (apt-get install mmdebstrap)" >&2
  exit 2
}

tar="${TZRUN_BASE_TAR:-}"
if [[ -z "$tar" ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  tar="$tmp/base.tar"
fi
echo "$NAME: mmdebstrap --variant=minbase $SUITE $tar ${MIRROR[*]}"
mmdebstrap --quiet --variant=minbase "$SUITE" "$tar" "${MIRROR[@]}" || {
  echo "$NAME: mmdebstrap of $SUITE failed (network to the Debian mirror? root?)" >&2
  exit 1
}
"${ENGINE[@]}" import "$tar" "$TAG" >/dev/null || {
  echo "$NAME: '${ENGINE[*]} import $tar $TAG' failed" >&2
  exit 1
}
echo "$NAME: imported $TAG ($(du -h "$tar" | cut -f1) tar)"
