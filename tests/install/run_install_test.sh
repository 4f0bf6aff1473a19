#!/usr/bin/env bash
# run_install_test.sh MODE BUILD_DIR WORK_DIR [VERSION [WITH_WORKER]]
#   MODE prefix: `cmake --install BUILD_DIR --prefix WORK_DIR/prefix` (components runtime, dev and,
#                when WITH_WORKER is 1, worker); checks the layout, runs the installed
#                binaries, then configures, builds and runs tests/install/consumer against the
#                prefix; a find_package(tzrun 99.0) must be refused.
#   MODE deb:    `cpack --config BUILD_DIR/CPackConfig.cmake`; checks the .deb's name, control
#                fields and contents with dpkg-deb, that every shared library bin/tzrun needs
#                comes from a package in Depends, then unpacks it (dpkg-deb -x, nothing is
#                installed) and builds + runs the consumer against WORK_DIR/root/usr.
# Env: CMAKE (cmake), CPACK (cpack), CXX (the compiler for the consumer), TZRUN_GENERATOR.
# Exit 0 = all checks passed; 1 = a check failed (the message says which and why).
set -euo pipefail
MODE="${1:?usage: run_install_test.sh prefix|deb BUILD_DIR WORK_DIR [VERSION [WITH_WORKER]]}"
BUILD="${2:?build dir}"
WORK="${3:?work dir}"
VERSION="${4:-}"
WITH_WORKER="${5:-0}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CMAKE="${CMAKE:-cmake}"
CPACK="${CPACK:-cpack}"
GEN="${TZRUN_GENERATOR:-Ninja}"
command -v ninja >/dev/null || GEN="Unix Makefiles"

fail() { echo "run_install_test($MODE): FAIL: $*" >&2; exit 1; }
need_file() { [[ -f "$1" ]] || fail "$1 is missing after the install (see cmake/Install.cmake)"; }

rm -rf "$WORK"
mkdir -p "$WORK"

build_consumer() {  # build_consumer PREFIX NAME [extra cmake args...] -> runs it, checks output
  local prefix="$1" name="$2"; shift 2
  local bdir="$WORK/$name"
  local cxx_arg=()
  [[ -n "${CXX:-}" ]] && cxx_arg=("-DCMAKE_CXX_COMPILER=$CXX")
  "$CMAKE" -S "$HERE/consumer" -B "$bdir" -G "$GEN" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "${cxx_arg[@]}" "$@" \
    >"$bdir.configure.log" 2>&1 || { cat "$bdir.configure.log" >&2; fail "consumer configure against $prefix failed"; }
  local found
  found="$(sed -n 's/^tzrun_DIR:PATH=//p' "$bdir/CMakeCache.txt")"
  [[ "$found" == "$prefix"/* ]] || fail "consumer found tzrun in '$found', not under $prefix"
  "$CMAKE" --build "$bdir" >"$bdir.build.log" 2>&1 || { cat "$bdir.build.log" >&2; fail "consumer build failed"; }
  local out value="round trip through $name"
  out="$("$bdir/tzrun_consumer" "$value")" || fail "tzrun_consumer exited $? (output: $out)"
  echo "$out"
  [[ "$out" == *"value='$value'"* ]] || fail "tzrun_consumer printed '$out', expected value='$value'"
}

refuse_wrong_version() {  # refuse_wrong_version PREFIX
  local bdir="$WORK/consumer-wrong-version"
  if "$CMAKE" -S "$HERE/consumer" -B "$bdir" -G "$GEN" -DCMAKE_PREFIX_PATH="$1" \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DTZRUN_CONSUMER_WANT_VERSION=99.0 >"$bdir.log" 2>&1; then
    fail "find_package(tzrun 99.0) succeeded against $1; tzrunConfigVersion.cmake is wrong"
  fi
  grep -q 'requested version "99.0"' "$bdir.log" ||
    fail "find_package(tzrun 99.0) failed, but not for the version: $(grep -A5 'CMake Error' "$bdir.log")"
  echo "find_package(tzrun 99.0) refused, as expected"
}

case "$MODE" in
prefix)
  P="$WORK/prefix"
  comps=(runtime dev)
  [[ "$WITH_WORKER" == 1 ]] && comps+=(worker)
  for c in "${comps[@]}"; do
    "$CMAKE" --install "$BUILD" --prefix "$P" --component "$c" >"$WORK/install-$c.log" 2>&1 ||
      { cat "$WORK/install-$c.log" >&2; fail "cmake --install --component $c failed"; }
  done
  libdir="$(cd "$P" && ls -d lib*/cmake/tzrun | head -1)"
  libdir="${libdir%/cmake/tzrun}"
  [[ -n "$libdir" ]] || fail "no lib*/cmake/tzrun under $P"
  for f in bin/tzrun include/tzrun/store/server.hpp include/tzrun/store/client.hpp \
      include/tzrun/store/store.hpp "$libdir/libtzrun_store.a" \
      "$libdir/cmake/tzrun/tzrunConfig.cmake" "$libdir/cmake/tzrun/tzrunConfigVersion.cmake" \
      "$libdir/cmake/tzrun/tzrunTargets.cmake"; do
    need_file "$P/$f"
  done
  got="$("$P/bin/tzrun" --version)" || fail "installed bin/tzrun --version exited $?"
  [[ -z "$VERSION" || "$got" == "tzrun $VERSION"* ]] || fail "bin/tzrun --version printed '$got', expected tzrun $VERSION"
  echo "installed: $got"
  if [[ " ${comps[*]} " == *" worker "* ]]; then
    need_file "$P/bin/tzrec_train"
    runpath="$(readelf -d "$P/bin/tzrec_train" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p; s/.*(RPATH).*\[\(.*\)\]/\1/p')"
    [[ "$runpath" == *torch/lib* ]] || fail "installed tzrec_train has RUNPATH '$runpath', without torch/lib"
    got="$("$P/bin/tzrec_train" --version)" || fail "installed bin/tzrec_train --version exited $? (RUNPATH '$runpath')"
    echo "installed: $got (RUNPATH $runpath)"
  else
    echo "tzrec_train is not built here; the worker component is not checked"
  fi
  build_consumer "$P" consumer-prefix
  refuse_wrong_version "$P"
  ;;
deb)
  (cd "$WORK" && "$CPACK" --config "$BUILD/CPackConfig.cmake" -B "$WORK/cpack") >"$WORK/cpack.log" 2>&1 ||
    { cat "$WORK/cpack.log" >&2; fail "cpack failed"; }
  mapfile -t debs < <(find "$WORK/cpack" -maxdepth 1 -name '*.deb')
  ((${#debs[@]} == 1)) || fail "expected one .deb in $WORK/cpack, found ${#debs[@]}: ${debs[*]:-none}"
  deb="${debs[0]}"
  echo "package: $(basename "$deb")"
  [[ "$(dpkg-deb -f "$deb" Package)" == tzrun ]] || fail "Package is '$(dpkg-deb -f "$deb" Package)', expected tzrun"
  [[ -z "$VERSION" || "$(dpkg-deb -f "$deb" Version)" == "$VERSION" ]] ||
    fail "Version is '$(dpkg-deb -f "$deb" Version)', expected $VERSION"
  [[ -n "$(dpkg-deb -f "$deb" Maintainer)" ]] || fail "the .deb has no Maintainer"
  depends="$(dpkg-deb -f "$deb" Depends)"
  for p in libc6 libstdc++6; do
    [[ "$depends" == *"$p"* ]] || fail "Depends '$depends' lacks $p"
  done
  # eu-stack: the hung ranks' backtraces in --hang-timeout's report (docs/fault-tolerance.md)
  [[ "$(dpkg-deb -f "$deb" Recommends)" == *elfutils* ]] ||
    fail "Recommends is '$(dpkg-deb -f "$deb" Recommends)', expected elfutils"
  dpkg-deb -c "$deb" >"$WORK/contents.txt"
  for f in ./usr/bin/tzrun ./usr/include/tzrun/store/server.hpp /libtzrun_store.a \
      /cmake/tzrun/tzrunConfig.cmake /cmake/tzrun/tzrunConfigVersion.cmake /cmake/tzrun/tzrunTargets.cmake; do
    grep -q -- "$f\$" "$WORK/contents.txt" || fail "the .deb lacks $f (dpkg-deb -c in $WORK/contents.txt)"
  done
  ! grep -q "tzrec_train" "$WORK/contents.txt" || fail "the .deb holds tzrec_train, which needs the venv's libtorch"
  dpkg-deb -x "$deb" "$WORK/root"
  # Every shared library tzrun needs must come from a package that Depends names.
  if command -v dpkg >/dev/null; then
    while read -r lib; do
      # awk reads to the end (no early exit), so ldconfig never dies of SIGPIPE under pipefail.
      path="$(ldconfig -p | awk -v l="$lib" '!found && $1 == l && /x86-64|x32|64/ {print $NF; found = 1}')"
      [[ -n "$path" ]] || continue
      real="$(readlink -f "$path")"
      owner="$(dpkg -S "$path" 2>/dev/null || dpkg -S "$real" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null || true)"
      owner="${owner%%:*}"
      [[ -z "$owner" ]] && continue
      [[ "$depends" == *"$owner"* ]] || fail "bin/tzrun needs $lib from package $owner, which Depends ('$depends') lacks"
    done < <(readelf -d "$WORK/root/usr/bin/tzrun" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  fi
  echo "Depends: $depends"
  build_consumer "$WORK/root/usr" consumer-deb
  ;;
*) fail "unknown mode '$MODE' (prefix or deb)" ;;
esac
echo "run_install_test($MODE): ok"
