#!/usr/bin/env bash
# Creates (idempotently) the git-ignored virtualenv .venv-torchrec with a torch /
# fbgemm-gpu-cpu / torchrec trio that work together, for the by-hand TorchRec side of
# tools/bench/embedding. It is separate from .venv so that the project's own torch is
# never touched.
#
# Usage: tools/bench/embedding/setup_torchrec.sh [--venv DIR]
#   env PYTHON (default python3) picks the interpreter the venv is made from.
#
# Trios are tried in order; the first whose install and import check passes is kept.
# fbgemm-gpu-cpu X.Y is built for exactly one torch minor (fbgemm_gpu/__init__.py's
# compatibility table: 1.6 -> 2.11, 1.9 -> 2.14) and torchrec X.Y follows fbgemm X.Y.
# torch comes from PyPI, where Linux wheels are the CUDA build (several GB with the
# nvidia-* wheels); that is fine on a CPU-only machine, it just runs on the CPU.
# torchrec declares a dependency on the CUDA package "fbgemm-gpu", so it is installed
# with --no-deps and its other requirements are listed here explicitly.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="$ROOT/.venv-torchrec"
if [[ "${1:-}" == "--venv" && -n "${2:-}" ]]; then VENV="$2"; fi
PY="${PYTHON:-python3}"

# torch fbgemm-gpu-cpu torchrec
TRIOS=(
  "2.11.0 1.6.0 >=1.6.0,<1.7"
  "2.14.1 1.9.0 >=1.9.0,<1.10"
)
TORCHREC_DEPS=(numpy tensordict "torchmetrics==1.0.3" tqdm pyre-extensions iopath)

check() {  # prints "torch X fbgemm_gpu Y torchrec Z" when the trio imports and a TBE runs
  "$VENV/bin/python" - <<'PYEOF'
import importlib.metadata as m
import logging
import warnings
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)  # fbgemm 1.6 warns per .so that its compat table lacks 1.6
import torch, fbgemm_gpu, torchrec  # noqa: F401
from torchrec.distributed.model_parallel import DistributedModelParallel  # noqa: F401
from fbgemm_gpu.split_table_batched_embeddings_ops_training import (  # noqa: F401
    SplitTableBatchedEmbeddingBagsCodegen,
)
assert hasattr(torch.ops.fbgemm, "asynchronous_complete_cumsum"), "fbgemm ops not loaded"
print("torch", torch.__version__, "fbgemm-gpu-cpu", m.version("fbgemm-gpu-cpu"),
      "torchrec", m.version("torchrec"))
PYEOF
}

if [[ ! -x "$VENV/bin/python" ]]; then
  if ! command -v "$PY" >/dev/null; then
    echo "setup_torchrec: no Python interpreter '$PY'; install python3" \
         "or set PYTHON=/path/to/python3" >&2
    exit 1
  fi
  echo "setup_torchrec: creating virtualenv $VENV (from $($PY --version 2>&1))"
  if ! "$PY" -m venv "$VENV"; then
    echo "setup_torchrec: '$PY -m venv $VENV' failed; install python3-venv" \
         "(apt-get install python3-venv) or set PYTHON=" >&2
    exit 1
  fi
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi

if have="$(check 2>/dev/null)"; then
  echo "setup_torchrec: already installed in $VENV: $have"
  exit 0
fi

for trio in "${TRIOS[@]}"; do
  read -r torch_v fbgemm_v torchrec_spec <<<"$trio"
  echo "setup_torchrec: trying torch==$torch_v fbgemm-gpu-cpu==$fbgemm_v torchrec$torchrec_spec" \
       "(torch is several GB the first time)"
  # A CUDA fbgemm-gpu left by an earlier attempt would shadow the CPU one.
  "$VENV/bin/python" -m pip uninstall -q -y fbgemm-gpu >/dev/null 2>&1 || true
  if ! "$VENV/bin/python" -m pip install -q "torch==$torch_v" "fbgemm-gpu-cpu==$fbgemm_v" \
        "${TORCHREC_DEPS[@]}"; then
    echo "setup_torchrec: pip could not install torch==$torch_v + fbgemm-gpu-cpu==$fbgemm_v" >&2
    continue
  fi
  if ! "$VENV/bin/python" -m pip install -q --no-deps "torchrec$torchrec_spec"; then
    echo "setup_torchrec: pip could not install torchrec$torchrec_spec" >&2
    continue
  fi
  if have="$(check)"; then
    echo "setup_torchrec: installed in $VENV: $have"
    exit 0
  fi
  echo "setup_torchrec: torch==$torch_v / fbgemm-gpu-cpu==$fbgemm_v / torchrec$torchrec_spec" \
       "installed but does not import (see the traceback above)" >&2
done

echo "setup_torchrec: no compatible torch/fbgemm-gpu-cpu/torchrec trio installed in $VENV" \
     "(tried: ${TRIOS[*]}). Check that PyPI is reachable and that Python is 3.10-3.13" \
     "(this one: $("$VENV/bin/python" --version 2>&1)); remove $VENV to start clean." >&2
exit 1
