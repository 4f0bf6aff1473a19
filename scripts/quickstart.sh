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
# -t 3: worker output on the console with [default<local_rank>]: prefixes (and under the log dir).
build/bin/tzrun --nproc-per-node="${NPROC:-2}" --tee 3 examples/allreduce.py "$@"
echo "quickstart: OK — tzrun ran ${NPROC:-2} PyTorch workers that met at its store and all_reduced."
echo "Next: export PATH=\"$ROOT/.venv/bin:\$PATH\" and run build/bin/tzrun --help (docs/launcher.md)."
