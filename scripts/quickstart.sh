#!/usr/bin/env bash
# Install, build, and run the main job on a built-in default:
# tzrun launching 2 PyTorch workers that rendezvous at tzrun's own store and all_reduce.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
export PATH="$ROOT/.venv/bin:$PATH"
cmake --preset default >/dev/null
cmake --build --preset default --target tzrun
exec build/bin/tzrun --nproc-per-node="${NPROC:-2}" examples/allreduce.py "$@"
