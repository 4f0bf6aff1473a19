#!/usr/bin/env bash
# smoke.sh — checks run inside a built image by docker/Dockerfile.smoke (tools/docker/build.sh --smoke;
# tools/docker/check_image.sh). Runs through docker/entrypoint.sh with a stub PAI-DLC prepare
# script (prepare_env.sh). Each check prints "smoke: <name>: ok ..." or "smoke: <name>: FAILED"
# and the first failure fails the build. Env: SMOKE_ROWS (rows generated, default 250000, as scripts/quickstart.sh),
# SMOKE_WORK (scratch folder, /tmp/smoke), TZRUN_ENTRYPOINT (the entrypoint, for a run outside the image).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="${SMOKE_WORK:-/tmp/smoke}"
rm -rf "$WORK" && mkdir -p "$WORK"
step() { echo "smoke: $1: $2"; }
fail() { echo "smoke: $1: FAILED: $2" >&2; exit 1; }

# 1. The entrypoint sourced the stub prepare script and carried its export into this command.
[[ "${TZRUN_SMOKE_PREPARED:-}" == "from-prepare-script" ]] ||
  fail entrypoint "TZRUN_SMOKE_PREPARED='${TZRUN_SMOKE_PREPARED:-}' (the prepare script's export did not arrive)"
# ... and a failing prepare script stops the container with its status.
set +e
TZRUN_PREPARE_SCRIPT="$HERE/prepare_fail.sh" "${TZRUN_ENTRYPOINT:-/usr/local/bin/tzrun-entrypoint.sh}" true 2>"$WORK/fail.err"
rc=$?
set -e
((rc == 7)) && grep -q "exited with status 7" "$WORK/fail.err" ||
  fail entrypoint "a prepare script exiting 7 gave rc $rc: $(cat "$WORK/fail.err")"
step entrypoint "ok (prepare script's exports passed on; a failing one stops with its status 7)"

# 2. tzrun --version
v="$(tzrun --version)" || fail version "tzrun --version exited $?"
step version "ok ($v; $(tzrec_train --version 2>&1 | head -1))"

# 3. 2-rank tzrun --standalone all_reduce over gloo.
tzrun --standalone --nproc-per-node=2 "$HERE/allreduce.py" >"$WORK/allreduce.log" 2>&1 ||
  fail allreduce "tzrun exited $?: $(tail -20 "$WORK/allreduce.log")"
n="$(grep -c 'all_reduce ok' "$WORK/allreduce.log" || true)"
((n == 2)) || fail allreduce "$n of 2 ranks said 'all_reduce ok': $(tail -20 "$WORK/allreduce.log")"
step allreduce "ok (2 ranks, sum 3.0)"

# 4. The quickstart job (scripts/quickstart.sh's commands) on generated data.
CONFIG="$HERE/synthetic_criteo.config"
BUCKETS="$(grep -o 'num_buckets: [0-9]*' "$CONFIG" | awk '{print $2}' | paste -sd, -)"
python3 "$HERE/gen_data/gen_data.py" --kind criteo --rows "${SMOKE_ROWS:-250000}" --files 5 \
  --out "$WORK/data" --num-buckets "$BUCKETS" >"$WORK/gen.log" 2>&1 ||
  fail quickstart "gen_data.py exited $?: $(tail -5 "$WORK/gen.log")"
start=$SECONDS
tzrun --standalone --nproc-per-node=2 "$(command -v tzrec_train)" \
  --pipeline_config_path "$CONFIG" \
  --train_input_path "$WORK/data/part-0000[0-3].parquet" \
  --eval_input_path "$WORK/data/part-00004.parquet" \
  --model_dir "$WORK/model" >"$WORK/train.log" 2>&1 ||
  fail quickstart "tzrun tzrec_train exited $?: $(tail -20 "$WORK/train.log")"
auc="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["eval_auc"])' "$WORK/model/metrics.json")" ||
  fail quickstart "no eval_auc in $WORK/model/metrics.json: $(cat "$WORK/model/metrics.json" 2>&1)"
step quickstart "ok (${SMOKE_ROWS:-250000} rows, 2 ranks, $((SECONDS - start)) s, eval auc $auc)"
echo "smoke: metrics.json: $(tr -d "\n " <"$WORK/model/metrics.json")"
echo "smoke: all checks passed"
