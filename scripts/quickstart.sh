#!/usr/bin/env bash
# Install, build, and run the main job on its built-in default: tzrun launching 2 tzrec_train ranks
# that train a DLRM (sharded embeddings over Gloo) on synthetic Criteo-like Parquet written by
# tools/gen_data, then evaluate it. Usage: scripts/quickstart.sh [extra tzrec_train flags]
# Environment: NPROC (ranks, default 2), ROWS (rows generated, default 250000), OUT (default build/quickstart).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
export PATH="$ROOT/.venv/bin:$PATH"
cmake --preset default >/dev/null
cmake --build --preset default --target tzrun tzrec_train

CONFIG=examples/configs/synthetic_criteo.config
OUT="${OUT:-$ROOT/build/quickstart}"
rm -rf "$OUT/model"
if [[ ! -f "$OUT/data/part-00004.parquet" ]]; then
  # The config's table sizes, so every generated id fits its table.
  BUCKETS="$(grep -o 'num_buckets: [0-9]*' "$CONFIG" | awk '{print $2}' | paste -sd, -)"
  python tools/gen_data/gen_data.py --kind criteo --rows "${ROWS:-250000}" --files 5 --out "$OUT/data" \
    --num-buckets "$BUCKETS"
fi
# Train on the first 4 files, evaluate on the 5th.
build/bin/tzrun --standalone --nproc-per-node="${NPROC:-2}" build/bin/tzrec_train \
  --pipeline_config_path "$CONFIG" \
  --train_input_path "$OUT/data/part-0000[0-3].parquet" \
  --eval_input_path "$OUT/data/part-00004.parquet" \
  --model_dir "$OUT/model" "$@"
echo "quickstart: OK — metrics in $OUT/model/metrics.json:"
cat "$OUT/model/metrics.json"
echo "Next: docs/training.md (configs, Criteo and MovieLens examples, checkpoints, export)."
