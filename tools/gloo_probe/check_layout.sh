#!/usr/bin/env bash
# check_layout.sh TORCH_LIB_DIR PROBE [PROBE...] — compare the object sizes our TUs compute from
# the headers (PROBE --layout prints "<type> <bytes>" lines) with the sizes libtorch itself
# allocates: the immediate passed to operator new (_Znwm) inside a libtorch function that does
# make_intrusive<T>. Our code allocates ProcessGroupGloo (make_intrusive in our TU) and
# ProcessGroupNCCL + its Options (Options::create() is inline), so these sizes must agree; the
# Gloo ones are where older Debian gloo headers could have made a difference (docs/gloo-route.md).
#
# Exit 0: every size was found among libtorch's allocations. 1: a mismatch or a function that
# could not be inspected (message says which; after a torch upgrade re-check by hand).
# Needs: nm, objdump (binutils).
set -euo pipefail
LIBDIR="${1:?usage: check_layout.sh TORCH_LIB_DIR PROBE [PROBE...]}"
shift

# type -> "library mangled-symbol-prefix" of a function that allocates that type.
declare -A WHERE=(
  ["ProcessGroupGloo"]="libtorch_cpu.so _ZN4c10d16ProcessGroupGloo5splitE"
  ["ProcessGroupGloo::Options"]="libtorch_cpu.so _ZN4c10d16ProcessGroupGloo7Options14create_defaultE"
  ["ProcessGroupNCCL"]="libtorch_cuda.so _ZN4c10d16ProcessGroupNCCL5splitE"
)

# new_sizes LIB PREFIX -> decimal immediates moved into %edi and still there (no other call or
# write to %edi/%rdi in between) at a call to _Znwm.
new_sizes() {
  local lib="$1" prefix="$2" line addr size
  # awk reads to the end (no early exit), so nm never dies of SIGPIPE under pipefail.
  line="$(nm -D -S --defined-only "$lib" |
    awk -v p="$prefix" '!found && index($4, p) == 1 {print $1, $2; found = 1}')"
  [[ -n "$line" ]] || return 1
  read -r addr size <<<"$line"
  objdump -d --no-show-raw-insn --start-address=$((16#$addr)) \
    --stop-address=$((16#$addr + 16#$size)) "$lib" |
    awk '/mov +\$0x[0-9a-f]+,%edi$/ { match($0, /\$0x[0-9a-f]+/); imm = substr($0, RSTART + 1, RLENGTH - 1); next }
         /call.*<_Znwm/ { if (imm != "") print imm; imm = ""; next }
         /call|,%[er]di$/ { imm = "" }' |
    while read -r hex; do echo $((hex)); done
}

status=0
for probe in "$@"; do
  while read -r type bytes; do
    [[ -n "${WHERE[$type]:-}" ]] || continue
    read -r lib prefix <<<"${WHERE[$type]}"
    if ! sizes="$(new_sizes "$LIBDIR/$lib" "$prefix")" || [[ -z "$sizes" ]]; then
      echo "FAIL layout $type: no operator new found in $prefix* of $LIBDIR/$lib; inspect by hand" >&2
      status=1
      continue
    fi
    if grep -qx "$bytes" <<<"$sizes"; then
      echo "PASS layout $type: ours $bytes bytes = libtorch's allocation in $prefix*"
    else
      echo "FAIL layout $type: ours $bytes bytes, $lib allocates $(tr '\n' ' ' <<<"$sizes")in $prefix*" >&2
      status=1
    fi
  done < <("$probe" --layout)
done
exit $status
