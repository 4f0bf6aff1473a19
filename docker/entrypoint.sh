#!/usr/bin/env bash
# tzrun image entrypoint (docker/Dockerfile): prepares the environment, then `exec "$@"`.
#
# 1. Platform preparation script. PAI-DLC images may carry a script that prepares the job's
#    environment; when the file named by TZRUN_PREPARE_SCRIPT exists it is sourced in a subshell
#    and the variables it exports are carried into the command. Default path (set in the image):
#    /etc/dsw/prepare_env.sh — not a documented PAI-DLC path, so set TZRUN_PREPARE_SCRIPT to the
#    right one on your platform. Absent at the default path: skipped silently; absent at a path
#    you set explicitly (TZRUN_PREPARE_SCRIPT_REQUIRED=1): an error. Empty: skipped. A script that
#    fails stops the container with its exit status.
# 2. CUDA forward compatibility (cu* images): when the host driver is older than the image's
#    cuda-compat driver, the compat folder is put first on LD_LIBRARY_PATH.
#    TZRUN_CUDA_COMPAT=auto (default) | 1 (always) | 0 (never). The host driver version is read
#    from /proc/driver/nvidia/version (TZRUN_NVIDIA_VERSION_FILE), CUDA_HOME from
#    /etc/tzrun/device.env (TZRUN_DEVICE_ENV_FILE); both overrides exist for the tests.
# 3. sshd for multi-node jobs when TZRUN_START_SSHD=1 (needs root): host keys are generated on
#    first start (the image ships none) and sshd listens on TZRUN_SSHD_PORT (default 22).
# Everything this script says goes to stderr, prefixed "tzrun-entrypoint:".
set -euo pipefail

say() { echo "tzrun-entrypoint: $*" >&2; }

# --- 1. platform preparation -----------------------------------------------------------------------
prepare="${TZRUN_PREPARE_SCRIPT-/etc/dsw/prepare_env.sh}"
if [[ -n "$prepare" ]]; then
  if [[ -f "$prepare" ]]; then
    envfile="$(mktemp)"
    # Source in a subshell so an `exit` inside the script cannot end this one; dump the exported
    # environment on the way out, whatever way the script ends.
    set +e
    bash -c '__tzrun_env_out=$1; shift; trap "env -0 >\"\$__tzrun_env_out\"" EXIT; . "$0"' \
      "$prepare" "$envfile" >&2
    rc=$?
    set -e
    if ((rc != 0)); then
      rm -f "$envfile"
      say "$prepare exited with status $rc; fix it, or set TZRUN_PREPARE_SCRIPT= to skip it"
      exit "$rc"
    fi
    while IFS= read -r -d '' kv; do
      case "${kv%%=*}" in
        _ | SHLVL | PWD | OLDPWD | BASH_* | SHELLOPTS | BASHOPTS) ;;
        *) export "$kv" ;;
      esac
    done <"$envfile"
    rm -f "$envfile"
    say "sourced $prepare"
  elif [[ "${TZRUN_PREPARE_SCRIPT_REQUIRED:-0}" == 1 ]]; then
    say "TZRUN_PREPARE_SCRIPT=$prepare does not exist (TZRUN_PREPARE_SCRIPT_REQUIRED=1);" \
      "set TZRUN_PREPARE_SCRIPT to your platform's script, or unset TZRUN_PREPARE_SCRIPT_REQUIRED"
    exit 1
  fi
fi

# --- 2. CUDA forward compatibility ---------------------------------------------------------------
compat_mode="${TZRUN_CUDA_COMPAT:-auto}"
device_env="${TZRUN_DEVICE_ENV_FILE:-/etc/tzrun/device.env}"
cuda_home=""
[[ -r "$device_env" ]] && cuda_home="$(sed -n 's/^CUDA_HOME=//p' "$device_env")"
compat_dir="${cuda_home:+$cuda_home/compat}"
if [[ -n "$compat_dir" && -d "$compat_dir" && "$compat_mode" != 0 ]]; then
  use_compat=0
  if [[ "$compat_mode" == 1 ]]; then
    use_compat=1
  else
    # Host kernel driver major version vs the compat libcuda's (libcuda.so.<major>.<minor>...).
    host_version="$(grep -o -m1 -E '[0-9]{3,}\.[0-9]+(\.[0-9]+)?' \
      "${TZRUN_NVIDIA_VERSION_FILE:-/proc/driver/nvidia/version}" 2>/dev/null | head -1 || true)"
    host_major="${host_version%%.*}"
    compat_lib="$(ls "$compat_dir"/libcuda.so.*.* 2>/dev/null | head -1 || true)"
    compat_major="${compat_lib##*/libcuda.so.}"
    compat_major="${compat_major%%.*}"
    if [[ -n "$host_major" && "$compat_major" =~ ^[0-9]+$ ]] && ((host_major < compat_major)); then
      use_compat=1
    fi
  fi
  if ((use_compat)); then
    export LD_LIBRARY_PATH="$compat_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    say "host driver ${host_major:-?} < cuda-compat ${compat_major:-?}: using $compat_dir"
  fi
fi

# --- 3. sshd -------------------------------------------------------------------------------------
if [[ "${TZRUN_START_SSHD:-0}" == 1 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    say "TZRUN_START_SSHD=1 needs root (this container runs as uid $(id -u)); build the image" \
      "without USER_NAME or start sshd yourself"
    exit 1
  fi
  ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1 || ssh-keygen -A >/dev/null
  mkdir -p /run/sshd
  /usr/sbin/sshd -p "${TZRUN_SSHD_PORT:-22}"
  say "sshd listening on port ${TZRUN_SSHD_PORT:-22}"
fi

(($#)) || set -- bash
exec "$@"
