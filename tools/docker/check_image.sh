#!/usr/bin/env bash
# check_image.sh [--engine docker|podman] [--keep-base] [--skip-cpu] [--skip-cuda] — the by-hand
#   image check (not a CI step: it downloads several GB and compiles tzrun + tzrec_train).
#   1. base: tools/docker/make_base.sh makes localhost/debian:12 from Debian's packages
#      (--keep-base: reuse it when it exists).
#   2. cpu: tools/docker/build.sh --smoke --no-run cpu on that base, torch and pyarrow from
#      PyPI (or download.pytorch.org when it answers), the host's CA bundle as pip's build secret;
#      the smoke build runs the entrypoint, tzrun --version, a 2-rank all_reduce and the
#      quickstart job inside the image. Prints the runtime image size. --skip-cpu: not built
#      (to recheck only step 3 after a full run; it takes over an hour on 2 cores).
#   3. cu126, cu129, cu130: where NVIDIA's CUDA repository answers, built like cpu (without the
#      smoke stage: no GPU here); where it does not, the build must pass every step before
#      docker/install_cuda.sh and stop there with install_cuda's message. Also says whether each
#      DEVICE's torch wheel index answers.
#   Prints "check_image: <step>: PASS|FAIL ... (N s)" per step, then the wall time.
# Env: TZRUN_ENGINE, TZRUN_PODMAN_STORAGE_DRIVER (default vfs for podman),
#      TZRUN_DOCKER_BUILD_ARGS (default for podman: "--isolation chroot --network host"),
#      TZRUN_PIP_CERT (default: pip's configured cert, else /etc/ssl/certs/ca-certificates.crt),
#      TZRUN_CHECK_LOG_DIR (build logs, default /tmp/tzrun-check-image).
# Exit: 0 every step passed; 1 a step failed; 2 bad usage / no engine.
set -uo pipefail
NAME=check_image.sh
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/docker/common.sh
source "$HERE/common.sh"
engine_arg="" keep_base=0 cpu=1 cuda=1
while (($#)); do
  case "$1" in
    --engine) engine_arg="${2:-}"; shift 2 ;;
    --keep-base) keep_base=1; shift ;;
    --skip-cpu) cpu=0; shift ;;
    --skip-cuda) cuda=0; shift ;;
    -h | --help) usage "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "$NAME: unknown argument '$1'; see $NAME --help" >&2; exit 2 ;;
  esac
done
pick_engine "$engine_arg"
if [[ "$ENGINE_KIND" == podman ]]; then
  export TZRUN_PODMAN_STORAGE_DRIVER="${TZRUN_PODMAN_STORAGE_DRIVER-vfs}"
  export TZRUN_DOCKER_BUILD_ARGS="${TZRUN_DOCKER_BUILD_ARGS-"--isolation chroot --network host"}"
  pick_engine "$engine_arg"
fi
LOGS="${TZRUN_CHECK_LOG_DIR:-/tmp/tzrun-check-image}"
mkdir -p "$LOGS"
BASE=localhost/debian:12
NVIDIA_REPO=https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64
TORCH_INDEX_BASE=https://download.pytorch.org/whl
cert="${TZRUN_PIP_CERT:-$(pip config get global.cert 2>/dev/null || true)}"
[[ -r "$cert" ]] || cert=/etc/ssl/certs/ca-certificates.crt
t0=$SECONDS failed=0
result() { # $1 step, $2 PASS|FAIL, $3 detail, $4 start seconds
  echo "check_image: $1: $2 $3 ($((SECONDS - $4)) s)"
  [[ "$2" == PASS ]] || failed=1
}
answers() { curl -fsS -o /dev/null -m 20 "$1" 2>/dev/null; }
image_size() { "${ENGINE[@]}" image inspect --format '{{.Size}}' "$1" 2>/dev/null |
  awk '{printf "%.2f GB", $1 / 1e9}'; }
echo "check_image: engine: ${ENGINE[*]} ($("${ENGINE[@]}" --version 2>&1 | head -1))"
echo "check_image: build args: ${TZRUN_DOCKER_BUILD_ARGS:-}; pip cert: $cert; logs: $LOGS"

# --- 1. base ---------------------------------------------------------------------------------
s=$SECONDS
if ((keep_base)) && "${ENGINE[@]}" image exists "$BASE" 2>/dev/null; then
  result base PASS "$BASE kept" "$s"
elif bash "$HERE/make_base.sh" --engine "$ENGINE_KIND" --tag "$BASE" >"$LOGS/base.log" 2>&1; then
  result base PASS "$(tail -1 "$LOGS/base.log")" "$s"
else
  result base FAIL "see $LOGS/base.log: $(tail -1 "$LOGS/base.log")" "$s"
  exit 1
fi

torch_args=()
if ! answers "$TORCH_INDEX_BASE/cpu/torch/"; then
  torch_args=(--torch-index https://pypi.org/simple)
  echo "check_image: $TORCH_INDEX_BASE does not answer: torch from PyPI (its CUDA 13.0 build)"
fi
common=(--engine "$ENGINE_KIND" --debian-image "$BASE" --runtime-image "$BASE" --pip-cert "$cert" --no-run)

# --- 2. cpu, with the smoke checks inside -------------------------------------------------------
if ((cpu)); then
  s=$SECONDS
  if nice -n 10 bash "$HERE/build.sh" "${common[@]}" "${torch_args[@]}" --smoke cpu >"$LOGS/cpu.log" 2>&1; then
    result cpu PASS "tzrun-test:$VERSION-cpu $(image_size "tzrun-test:$VERSION-cpu")" "$s"
  else
    result cpu FAIL "see $LOGS/cpu.log: $(grep -m1 -E 'smoke: .*FAILED|Error:|error:' "$LOGS/cpu.log")" "$s"
  fi
  grep -E '^smoke: ' "$LOGS/cpu.log" | sed 's/^/check_image:   /'
  grep -E '^build.sh: (built|smoke)' "$LOGS/cpu.log" | sed 's/^/check_image:   /'
else
  echo "check_image: cpu: skipped (--skip-cpu)"
fi

# --- 3. CUDA variants ----------------------------------------------------------------------------
if ((cuda)); then
  nvidia=0
  answers "$NVIDIA_REPO/cuda-keyring_1.1-1_all.deb" && nvidia=1
  for d in cu126 cu129 cu130; do
    s=$SECONDS
    if answers "$TORCH_INDEX_BASE/$d/torch/"; then wheel="$TORCH_INDEX_BASE/$d answers"; else
      wheel="$TORCH_INDEX_BASE/$d does not answer from here"; fi
    log="$LOGS/$d.log"
    if ((nvidia)); then
      if nice -n 10 bash "$HERE/build.sh" "${common[@]}" "$d" >"$log" 2>&1; then
        result "$d" PASS "tzrun-test:$VERSION-$d $(image_size "tzrun-test:$VERSION-$d"); $wheel" "$s"
      else
        result "$d" FAIL "see $log" "$s"
      fi
      continue
    fi
    nice -n 10 bash "$HERE/build.sh" "${common[@]}" "$d" >"$log" 2>&1
    rc=$?
    if ((rc != 0)) && grep -q "^setup: ok" "$log" && grep -q "install_cuda: could not download" "$log" &&
      grep -q "^CUDA_PKG=cuda-toolkit-" "$log"; then
      detail="$(grep -m1 '^CUDA_PKG=' "$log"); Debian packages installed; stops at"
      detail+=" docker/install_cuda.sh: $NVIDIA_REPO does not answer from here (expected); $wheel"
      result "$d" PASS "$detail" "$s"
    else
      result "$d" FAIL "rc $rc, not the expected stop at install_cuda.sh; see $log" "$s"
    fi
  done
fi
echo "check_image: wall time $((SECONDS - t0)) s; $([[ $failed == 0 ]] && echo all steps passed || echo some steps FAILED)"
exit "$failed"
