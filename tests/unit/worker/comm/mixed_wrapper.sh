#!/usr/bin/env bash
# Per-rank command for comm_mixed_python (tzrun has no per-rank command):
#   tzrun --standalone --nproc-per-node=2 --no-python bash mixed_wrapper.sh <tzrec_comm_check> <python> <mixed_rank.py>
# RANK 0 runs the C++ rank, every other rank the Python one.
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: mixed_wrapper.sh <tzrec_comm_check> <python> <mixed_rank.py>" >&2
  exit 2
fi
if [[ "${RANK:?RANK is not set; run this under tzrun}" == 0 ]]; then
  exec "$1" --mixed-allreduce
fi
exec "$2" "$3"
