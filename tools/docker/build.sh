#!/usr/bin/env bash
# build.sh [options] [DEVICE...] — build docker/Dockerfile once per DEVICE and tag
#   tzrun-test:VERSION-DEVICE, with docker or podman. DEVICE: cpu | cu126 | cu129 | cu130 (default:
#   all four). VERSION: project(VERSION) in CMakeLists.txt. Test the image, then
#   tools/docker/promote.sh retags it tzrun:VERSION-DEVICE.
# Options:
#   --engine docker|podman  the build engine, or a path to one (default: docker when its daemon
#                           answers, else podman; or $TZRUN_ENGINE / $DOCKER)
#   --debian-image IMG      base of the build stage (build arg DEBIAN_IMAGE, default debian:12)
#   --runtime-image IMG     base of the runtime stage (build arg RUNTIME_IMAGE, default
#                           debian:12-slim); for hosts without registry access both can be
#                           localhost/debian:12 from tools/docker/make_base.sh
#   --torch-index URL       the whole torch index (build arg TORCH_INDEX), e.g.
#                           https://pypi.org/simple where download.pytorch.org is unreachable
#   --pip-cert FILE         CA bundle pip trusts inside the build (a build secret, not stored in
#                           the image), for a TLS-intercepting proxy
#   --smoke                 then build docker/Dockerfile.smoke FROM the image (tag
#                           tzrun-smoke:VERSION-DEVICE): the checks inside the image
#   --no-run                skip `ENGINE run --rm IMAGE tzrun --version` (hosts where containers
#                           cannot start; --smoke checks the same inside a build)
# Env: TZRUN_IMAGE_REPO (default tzrun-test), TZRUN_ENGINE, DOCKER (the engine command),
#      TZRUN_PODMAN_STORAGE_DRIVER (podman --storage-driver, e.g. vfs; with vfs every layer is a
#      full copy, so the build runs with --layers=false), TZRUN_DOCKER_BUILD_ARGS extra arguments
#      for the build (e.g. "--isolation chroot --network host" for podman in a sandbox,
#      "--build-arg USER_NAME=tz --build-arg PIP_MIRROR=https://mirror/simple").
# podman always gets --format docker (the Dockerfile's SHELL needs it) and --ignorefile.
# Exit: 0 built; 1 a build or check failed; 2 no usable engine / bad usage.
set -euo pipefail
NAME=build.sh
# shellcheck source=tools/docker/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
REPO="${TZRUN_IMAGE_REPO:-tzrun-test}"

engine_arg="" smoke=0 run_check=1 args=()
while (($#)); do
  case "$1" in
    --engine) engine_arg="${2:-}"; check_engine_arg "$engine_arg"; shift 2 ;;
    --debian-image) args+=(--build-arg "DEBIAN_IMAGE=${2:?--debian-image needs an image}"); shift 2 ;;
    --runtime-image) args+=(--build-arg "RUNTIME_IMAGE=${2:?--runtime-image needs an image}"); shift 2 ;;
    --torch-index) args+=(--build-arg "TORCH_INDEX=${2:?--torch-index needs a URL}"); shift 2 ;;
    --pip-cert)
      [[ -f "${2:-}" && -r "${2:-}" ]] || {
        echo "$NAME: --pip-cert '${2:-}' is not a readable file; give the CA bundle file (PEM)," \
          "e.g. /etc/ssl/certs/ca-certificates.crt" >&2
        exit 2
      }
      args+=(--secret "id=pip_cert,src=$2"); shift 2 ;;
    --smoke) smoke=1; shift ;;
    --no-run) run_check=0; shift ;;
    -h | --help) usage "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "$NAME: unknown option '$1'; see $NAME --help" >&2; exit 2 ;;
    *) break ;;
  esac
done
(($#)) || set -- "${VALID[@]}"
check_devices "$@"
pick_engine "$engine_arg"

read -r -a extra <<<"${TZRUN_DOCKER_BUILD_ARGS:-}"
# $1 Dockerfile, $2 tag, rest: build arguments. Runs the engine's build on the repository root.
build_one() {
  local file="$1" tag="$2"
  shift 2
  local engine_args=()
  if [[ "$ENGINE_KIND" == podman ]]; then
    engine_args=(--format docker --ignorefile "$file.dockerignore")
    [[ "${TZRUN_PODMAN_STORAGE_DRIVER:-}" == vfs ]] && engine_args+=(--layers=false)
  fi
  echo "$NAME: ${ENGINE[*]} build -f ${file#"$ROOT"/} $* ${engine_args[*]} ${extra[*]} -t $tag"
  DOCKER_BUILDKIT=1 "${ENGINE[@]}" build -f "$file" "${engine_args[@]}" "$@" "${extra[@]}" -t "$tag" "$ROOT"
}

for d in "$@"; do
  tag="$REPO:$VERSION-$d"
  start=$SECONDS
  build_one "$ROOT/docker/Dockerfile" "$tag" --build-arg "DEVICE=$d" --build-arg "TZRUN_VERSION=$VERSION" \
    "${args[@]}" || { echo "$NAME: build of $tag failed" >&2; exit 1; }
  echo "$NAME: built $tag in $((SECONDS - start)) s"
  if ((run_check)); then
    "${ENGINE[@]}" run --rm "$tag" tzrun --version ||
      { echo "$NAME: $tag does not run 'tzrun --version' (--no-run where containers cannot start)" >&2; exit 1; }
  fi
  if ((smoke)); then
    start=$SECONDS
    smoke_tag="tzrun-smoke:$VERSION-$d"
    build_one "$ROOT/docker/Dockerfile.smoke" "$smoke_tag" --build-arg "IMAGE=$tag" ||
      { echo "$NAME: smoke checks inside $tag failed (the build log above says which)" >&2; exit 1; }
    echo "$NAME: smoke checks inside $tag passed in $((SECONDS - start)) s"
  fi
done
