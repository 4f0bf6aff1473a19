#!/usr/bin/env bash
# fetch_gloo_headers.sh DEST — put gloo's C++ headers under DEST/include/gloo without installing
# anything: `apt-get download` Debian's libgloo-dev (apt checks it against the signed archive
# index), `dpkg-deb -x` it into a temporary folder, copy usr/include/gloo, write DEST/STAMP.
#
# Why: the torch wheel ships torch/csrc/distributed/c10d/ProcessGroupGloo.hpp but not the five
# gloo headers it includes; gloo itself is compiled into libtorch_cpu.so. docs/gloo-route.md
# explains why the header vintage does not have to match the gloo inside libtorch (every gloo type
# in ProcessGroupGloo.hpp sits behind a pointer; the build checks that our binaries define no
# gloo symbol).
#
# Idempotent: does nothing when DEST/STAMP records the same request.
# Env: TZRUN_GLOO_DEB_VERSION  version to fetch; "candidate" = whatever apt offers. Unset: the
#      bookworm pin below, falling back to the candidate (with a notice) where apt does not have
#      it (e.g. on Debian 13, whose 0.0~git20231202 headers work the same way).
# Needs: apt-get, dpkg-deb, Debian's archive reachable; runs `apt-get update` once (as root) if the
# package is unknown to apt. Exit 0 = headers in place; non-zero = message on stderr says why.
set -euo pipefail
DEST="${1:?usage: fetch_gloo_headers.sh DEST}"
PKG=libgloo-dev
# bookworm (Debian 12): 0.0~git20220518.5b14351-3. See docs/gloo-route.md before changing it.
PIN=0.0~git20220518.5b14351-3
WANT="${TZRUN_GLOO_DEB_VERSION:-$PIN}"

if [[ -f "$DEST/STAMP" && -f "$DEST/include/gloo/rendezvous/store.h" ]] &&
  grep -qxF "request=$PKG=$WANT" "$DEST/STAMP"; then
  exit 0
fi
for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || {
    echo "fetch_gloo_headers: '$tool' not found; gloo headers come from Debian's $PKG" \
      "(install libgloo-dev's headers some other way and pass -DTZRUN_GLOO_INCLUDE_DIR=...)" >&2
    exit 1
  }
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
spec="$PKG"
[[ "$WANT" != candidate ]] && spec="$PKG=$WANT"
download() {  # download SPEC
  (cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "$1") >"$tmp/apt.log" 2>&1
}
if ! download "$spec"; then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq >/dev/null 2>&1 || true
  fi
  if ! download "$spec"; then
    if [[ -z "${TZRUN_GLOO_DEB_VERSION:-}" ]] && download "$PKG"; then
      echo "fetch_gloo_headers: notice: $PKG=$PIN is not in this machine's apt sources;" \
        "using its candidate version instead" >&2
    else
      echo "fetch_gloo_headers: 'apt-get download $spec' failed:" >&2
      sed 's/^/  /' "$tmp/apt.log" >&2
      echo "  (run 'apt-get update' as root, or set TZRUN_GLOO_DEB_VERSION=candidate if Debian" \
        "replaced that version)" >&2
      exit 1
    fi
  fi
fi
deb="$(ls "$tmp"/"$PKG"_*.deb)"
got="$(dpkg-deb -f "$deb" Version)"
dpkg-deb -x "$deb" "$tmp/x"
[[ -f "$tmp/x/usr/include/gloo/rendezvous/store.h" ]] || {
  echo "fetch_gloo_headers: $deb has no usr/include/gloo/rendezvous/store.h" >&2
  exit 1
}
mkdir -p "$DEST"
rm -rf "$DEST/include.new"
mkdir -p "$DEST/include.new"
cp -a "$tmp/x/usr/include/gloo" "$DEST/include.new/gloo"
cp "$tmp/x/usr/share/doc/$PKG/copyright" "$DEST/copyright" 2>/dev/null || true
rm -rf "$DEST/include"
mv "$DEST/include.new" "$DEST/include"
printf 'request=%s=%s\ngot=%s=%s\n' "$PKG" "$WANT" "$PKG" "$got" >"$DEST/STAMP"
echo "fetch_gloo_headers: $PKG $got headers in $DEST/include"
