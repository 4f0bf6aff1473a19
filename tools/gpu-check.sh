#!/usr/bin/env bash
# tools/gpu-check.sh — the checks that need GPUs, in under 5 minutes on a machine where this repo
# is copied with build/ configured (or configurable: `cmake --preset default` needs the gloo
# headers fetch, i.e. the Debian archive, unless build/_deps/gloo-headers is already there).
#
#   bash tools/gpu-check.sh            (from the repo root)
#
# Builds tzrun, nccl_probe, tzrec_comm_check and (when the target exists) tzrec_sharding_check in
# build/, then with N = number of GPUs (nvidia-smi -L) runs, each under `timeout`:
#   nccl_probe                          tzrun --standalone --nproc-per-node=N --no-python
#   tzrec_comm_check [--force-group]    the same, TZREC_BACKEND=nccl (--force-group when N == 1,
#                                       so one GPU still runs every collective through NCCL)
#   tzrec_sharding_check --device cuda  the same, TZREC_BACKEND=nccl (if the binary exists)
# Prints "PASS <check>" / "FAIL <check> (...)" per check and a summary; exit 1 on any failure.
# No GPU (no nvidia-smi, or it lists none): prints "SKIP: no GPU" and exits 0.
#
# Environment: BUILD_DIR (default build), GPU_CHECK_BUILD_TIMEOUT (s, default 150),
# GPU_CHECK_STEP_TIMEOUT (s per check, default 50), PROCESS_GROUP_TIMEOUT_SECONDS (default 30),
# GPU_CHECK_LOG_DIR (default: a temp dir; each check's full output is kept there).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BUILD_DIR=${BUILD_DIR:-build}
BUILD_TIMEOUT=${GPU_CHECK_BUILD_TIMEOUT:-150}
STEP_TIMEOUT=${GPU_CHECK_STEP_TIMEOUT:-50}
export PROCESS_GROUP_TIMEOUT_SECONDS=${PROCESS_GROUP_TIMEOUT_SECONDS:-30}
LOG_DIR=${GPU_CHECK_LOG_DIR:-$(mktemp -d /tmp/gpu-check.XXXXXX)}
mkdir -p "$LOG_DIR"

if ! command -v nvidia-smi > /dev/null 2>&1; then
  echo "SKIP: no GPU (nvidia-smi not found)"
  exit 0
fi
NGPU=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
if [[ -z "$NGPU" || "$NGPU" -lt 1 ]]; then
  echo "SKIP: no GPU (nvidia-smi -L lists none)"
  exit 0
fi
echo "gpu-check: $NGPU GPU(s); build dir $BUILD_DIR; logs in $LOG_DIR"
nvidia-smi -L

declare -a RESULTS=()
FAILED=0
record() {  # record <PASS|FAIL> <name> [detail]
  local line="$1 $2${3:+ ($3)}"
  RESULTS+=("$line")
  echo "$line"
  [[ "$1" == FAIL ]] && FAILED=1
  return 0
}

# --- build -------------------------------------------------------------------------------------
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  if [[ "$BUILD_DIR" == build ]]; then
    configure=(cmake --preset default)
  else
    configure=(cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
  fi
  echo "gpu-check: configuring: ${configure[*]}"
  if ! timeout "$BUILD_TIMEOUT" "${configure[@]}" > "$LOG_DIR/configure.log" 2>&1; then
    tail -30 "$LOG_DIR/configure.log"
    record FAIL configure "see $LOG_DIR/configure.log"
    printf '%s\n' "gpu-check summary:" "${RESULTS[@]}"
    exit 1
  fi
fi
has_target() {
  cmake --build "$BUILD_DIR" --target help 2> /dev/null | grep -qE "(^|[ ./])$1(:| |$)"
}
targets=(tzrun nccl_probe tzrec_comm_check)
if has_target tzrec_sharding_check; then targets+=(tzrec_sharding_check); fi
for t in nccl_probe tzrec_comm_check; do
  has_target "$t" || record FAIL "target $t" "not defined in $BUILD_DIR: no torch or no CUDA toolkit/nccl.h at configure time?"
done
echo "gpu-check: building ${targets[*]}"
if timeout "$BUILD_TIMEOUT" cmake --build "$BUILD_DIR" --target "${targets[@]}" -j "$(nproc)" \
    > "$LOG_DIR/build.log" 2>&1; then
  record PASS build
else
  tail -30 "$LOG_DIR/build.log"
  record FAIL build "see $LOG_DIR/build.log"
fi

# --- checks ------------------------------------------------------------------------------------
bin_path() {  # the built executable, wherever the build put it
  local p
  for p in "$BUILD_DIR/bin/$1" "$BUILD_DIR/$1"; do
    [[ -x "$p" ]] && { echo "$p"; return 0; }
  done
  find "$BUILD_DIR" -type f -name "$1" -perm -u+x 2> /dev/null | head -1
}
TZRUN=$(bin_path tzrun)

run_check() {  # run_check <name> <binary> [args...]
  local name=$1 bin=$2
  shift 2
  local log="$LOG_DIR/$name.log"
  if [[ -z "$TZRUN" || -z "$bin" ]]; then
    record FAIL "$name" "binary missing (tzrun='$TZRUN', check='$bin')"
    return
  fi
  echo "gpu-check: $name: $TZRUN --standalone --nproc-per-node=$NGPU --no-python $bin $*"
  timeout -k 10 "$STEP_TIMEOUT" env TZREC_BACKEND=nccl \
    "$TZRUN" --standalone --nproc-per-node="$NGPU" --no-python "$bin" "$@" > "$log" 2>&1
  local rc=$?
  grep -E '^(PASS|FAIL|SKIP) ' "$log" | sort | uniq -c | sort -rn | head -40
  local fails
  fails=$(grep -c '^FAIL ' "$log" || true)
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    tail -20 "$log"
    record FAIL "$name" "timed out after ${STEP_TIMEOUT}s; log $log"
  elif [[ $rc -ne 0 || "$fails" -ne 0 ]]; then
    tail -20 "$log"
    record FAIL "$name" "exit $rc, $fails FAIL line(s); log $log"
  elif ! grep -q '^PASS ' "$log"; then
    # A SKIP here means the process saw no CUDA device although nvidia-smi lists some.
    record FAIL "$name" "no PASS line ($(grep -m1 '^SKIP ' "$log" || echo 'no SKIP either')); log $log"
  else
    record PASS "$name" "$(grep -c '^PASS ' "$log") PASS line(s)"
  fi
}

run_check nccl_probe "$(bin_path nccl_probe)"
if [[ "$NGPU" -eq 1 ]]; then
  run_check comm_check_nccl "$(bin_path tzrec_comm_check)" --force-group
else
  run_check comm_check_nccl "$(bin_path tzrec_comm_check)"
fi
SHARDING=$(bin_path tzrec_sharding_check)
if [[ -n "$SHARDING" ]]; then
  run_check sharding_check_cuda "$SHARDING" --device cuda
else
  echo "gpu-check: tzrec_sharding_check not built; its check is skipped"
fi

echo "gpu-check summary ($NGPU GPU(s)):"
printf '  %s\n' "${RESULTS[@]}"
exit "$FAILED"
