#!/usr/bin/env bash
# Idempotent set-up: Debian packages + a git-ignored virtualenv (.venv) with the
# pinned torch. Quick when already done. Usage: scripts/setup.sh [--no-torch]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_VERSION="${TZRUN_TORCH_VERSION:-2.11.0}"
VENV="${TZRUN_VENV:-$ROOT/.venv}"
WANT_TORCH=1
[[ "${1:-}" == "--no-torch" ]] && WANT_TORCH=0

DEB_PKGS=(build-essential cmake ninja-build ccache clang clang-tidy libclang-rt-14-dev
  libcli11-dev libspdlog-dev nlohmann-json3-dev libasio-dev libgtest-dev libprotobuf-dev protobuf-compiler
  libcurl4-openssl-dev
  python3-venv iproute2 procps etcd-server prometheus elfutils)

need=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  echo "setup: installing Debian packages: ${need[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

if ((WANT_TORCH)); then
  PY="${PYTHON:-python3}"
  if [[ ! -x "$VENV/bin/python" ]]; then
    echo "setup: creating virtualenv $VENV"
    "$PY" -m venv "$VENV"
  fi
  # pyarrow: tzrec::input builds against the Arrow/Parquet C++ libraries in its wheel (CXX11 ABI).
  PYARROW_VERSION="26.0.1"
  have="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"), m.version("pyarrow"))' 2>/dev/null || true)"
  if [[ "$have" != "$TORCH_VERSION"*" $PYARROW_VERSION" ]]; then
    echo "setup: installing torch==$TORCH_VERSION, pyarrow==$PYARROW_VERSION into $VENV (several GB the first time)"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q "torch==$TORCH_VERSION" "pyarrow==$PYARROW_VERSION" numpy pytest
  fi
  # python-etcd: real torchrun agents join tzrun agents' etcd / etcd-v2 rendezvous in
  # tests/integration/test_etcd_rendezvous.py (torch's etcd backends import it).
  PYTHON_ETCD_VERSION="0.4.5"
  if [[ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("python-etcd"))' 2>/dev/null || true)" != "$PYTHON_ETCD_VERSION" ]]; then
    echo "setup: installing python-etcd==$PYTHON_ETCD_VERSION into $VENV"
    "$VENV/bin/python" -m pip install -q "python-etcd==$PYTHON_ETCD_VERSION"
  fi
  # clang-tidy for ctest lint.identifier_naming.*: LLVM 23's matchers skip system headers, so the
  # naming check over a libtorch TU costs about its parse (9 s) instead of Debian's clang-tidy-14 (17 s).
  CLANG_TIDY_VERSION="23.1.4"
  if [[ "$("$VENV/bin/clang-tidy" --version 2>/dev/null | sed -n 's/.*LLVM version //p')" != "$CLANG_TIDY_VERSION" ]]; then
    echo "setup: installing clang-tidy==$CLANG_TIDY_VERSION into $VENV"
    "$VENV/bin/python" -m pip install -q "clang-tidy==$CLANG_TIDY_VERSION"
  fi
fi
echo "setup: ok"
