#!/usr/bin/env bash
# install_cuda.sh [PKG...] — install PKGs (cuda-toolkit-12-6, cuda-compat-13-0, ...) from NVIDIA's
# CUDA apt repository for Debian 12, adding that repository first (NVIDIA's cuda-keyring package)
# when it is not configured yet. No PKG (the cpu image): does nothing and exits 0.
# Used by docker/Dockerfile in both stages; runs as root inside `docker build`.
# Exit 0 = installed; non-zero = the message on stderr says which step failed.
set -euo pipefail
(($#)) || exit 0
REPO=https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64
KEYRING_DEB=cuda-keyring_1.1-1_all.deb

if ! dpkg-query -W -f='${Status}' cuda-keyring 2>/dev/null | grep -q "install ok installed"; then
  if ! command -v curl >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends ca-certificates curl
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL --retry 3 -o "$tmp/$KEYRING_DEB" "$REPO/$KEYRING_DEB" || {
    echo "install_cuda: could not download $REPO/$KEYRING_DEB; the build needs NVIDIA's CUDA" \
      "repository (check the network / proxy of the docker build)" >&2
    exit 1
  }
  dpkg -i "$tmp/$KEYRING_DEB"
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@" || {
  echo "install_cuda: 'apt-get install $*' failed; check that $REPO offers these packages" \
    "(apt-cache policy $*)" >&2
  exit 1
}
echo "install_cuda: installed $*"
