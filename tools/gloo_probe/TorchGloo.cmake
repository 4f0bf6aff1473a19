# TorchGloo.cmake — libtorch's c10d process groups for our own executables, without
# find_package(Torch) (a CUDA wheel's TorchConfig wants nvcc at configure time).
#
# Defines (each only once, so it can be included from several places):
#   tzrun::torch_c10d  INTERFACE: torch headers, _GLIBCXX_USE_CXX11_ABI, libtorch_cpu + libc10.
#                      Enough for c10d::TCPStore, PrefixStore, Backend, ProcessGroup.
#   tzrun::torch_gloo  INTERFACE: + USE_C10D_GLOO and gloo's headers (see below), for
#                      <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>.
#   tzrun::torch_nccl  INTERFACE, only when the CUDA toolkit's cuda_runtime_api.h and nccl.h are
#                      found: + USE_C10D_NCCL, CUDA include dir, libtorch_cuda + libc10_cuda, for
#                      <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>. TZRUN_TORCH_NCCL_FOUND.
#   tzrun_check_no_gloo_definitions(<target>)
#                      POST_BUILD check: the target must not *define* any gloo symbol (vtable,
#                      inline function, typeinfo); it may only reference libtorch's. This is the
#                      invariant that makes older gloo headers safe (docs/gloo-route.md).
#
# Inputs (cache variables):
#   TZRUN_PYTHON            python of the venv holding torch (default <source>/.venv/bin/python)
#   TZRUN_TORCH_DIR         torch package folder (default: asked from TZRUN_PYTHON)
#   TZRUN_GLOO_INCLUDE_DIR  folder holding gloo/rendezvous/store.h. Default: fetched at configure
#                           time by fetch_gloo_headers.sh (apt-get download libgloo-dev +
#                           dpkg-deb -x, nothing installed) into <build>/_deps/gloo-headers.
#   TZRUN_CUDA_ROOT         CUDA toolkit (default /usr/local/cuda)
#
# Sets TZRUN_TORCH_FOUND (FALSE when there is no torch: callers skip their targets then).
# Safe to include from several directories: targets are defined once, the fetch is idempotent.

set(_tzrun_torchgloo_dir ${CMAKE_CURRENT_LIST_DIR})
get_filename_component(_tzrun_repo_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(TZRUN_PYTHON "${_tzrun_repo_root}/.venv/bin/python" CACHE FILEPATH
  "Python interpreter of the virtualenv holding torch")
set(TZRUN_TORCH_DIR "" CACHE PATH "torch package folder (empty: ask TZRUN_PYTHON)")
set(TZRUN_GLOO_INCLUDE_DIR "" CACHE PATH
  "Folder with gloo/rendezvous/store.h (empty: fetch Debian's libgloo-dev headers into the build tree)")
set(TZRUN_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit root (for nccl.h, cuda_runtime_api.h)")

set(TZRUN_TORCH_FOUND FALSE)
set(TZRUN_TORCH_NCCL_FOUND FALSE)

# --- torch --------------------------------------------------------------------------------------
set(_tzrun_abi "")
if(NOT TZRUN_TORCH_DIR)
  execute_process(
    COMMAND ${TZRUN_PYTHON} -c
      "import torch, os; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
    OUTPUT_VARIABLE _tzrun_out RESULT_VARIABLE _tzrun_rc
    ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _tzrun_rc EQUAL 0)
    message(STATUS "TorchGloo: no torch in ${TZRUN_PYTHON}; c10d targets are not defined "
                   "(run scripts/setup.sh, or set TZRUN_PYTHON / TZRUN_TORCH_DIR)")
    return()
  endif()
  string(REPLACE "\n" ";" _tzrun_out "${_tzrun_out}")
  list(GET _tzrun_out 0 _tzrun_dir)
  list(GET _tzrun_out 1 _tzrun_abi)
  set(TZRUN_TORCH_DIR "${_tzrun_dir}" CACHE PATH "torch package folder (empty: ask TZRUN_PYTHON)" FORCE)
endif()
if(NOT EXISTS "${TZRUN_TORCH_DIR}/lib/libtorch_cpu.so")
  message(FATAL_ERROR "TorchGloo: ${TZRUN_TORCH_DIR}/lib/libtorch_cpu.so not found; "
                      "set TZRUN_TORCH_DIR to the torch package folder of a torch wheel")
endif()
if(_tzrun_abi STREQUAL "")
  # Wheels since torch 2.7 are all built with the CXX11 ABI.
  set(_tzrun_abi 1)
endif()
set(TZRUN_TORCH_FOUND TRUE)

if(NOT TARGET tzrun_torch_c10d)
  add_library(tzrun_torch_c10d INTERFACE)
  add_library(tzrun::torch_c10d ALIAS tzrun_torch_c10d)
  target_include_directories(tzrun_torch_c10d SYSTEM INTERFACE
    ${TZRUN_TORCH_DIR}/include
    ${TZRUN_TORCH_DIR}/include/torch/csrc/api/include)
  target_compile_definitions(tzrun_torch_c10d INTERFACE _GLIBCXX_USE_CXX11_ABI=${_tzrun_abi})
  find_package(Threads REQUIRED)
  target_link_libraries(tzrun_torch_c10d INTERFACE
    ${TZRUN_TORCH_DIR}/lib/libtorch_cpu.so
    ${TZRUN_TORCH_DIR}/lib/libc10.so
    Threads::Threads)
endif()

# --- gloo headers -------------------------------------------------------------------------------
if(NOT TARGET tzrun_torch_gloo)
  set(_tzrun_gloo_inc "${TZRUN_GLOO_INCLUDE_DIR}")
  if(NOT _tzrun_gloo_inc)
    set(_tzrun_gloo_dest "${CMAKE_BINARY_DIR}/_deps/gloo-headers")
    execute_process(
      COMMAND bash ${_tzrun_torchgloo_dir}/fetch_gloo_headers.sh ${_tzrun_gloo_dest}
      RESULT_VARIABLE _tzrun_rc)
    if(NOT _tzrun_rc EQUAL 0)
      message(FATAL_ERROR "TorchGloo: could not fetch gloo's headers (see the message above); "
                          "pass -DTZRUN_GLOO_INCLUDE_DIR=<folder with gloo/rendezvous/store.h>")
    endif()
    set(_tzrun_gloo_inc "${_tzrun_gloo_dest}/include")
  endif()
  if(NOT EXISTS "${_tzrun_gloo_inc}/gloo/rendezvous/store.h")
    message(FATAL_ERROR "TorchGloo: ${_tzrun_gloo_inc}/gloo/rendezvous/store.h does not exist; "
                        "TZRUN_GLOO_INCLUDE_DIR must hold gloo's headers")
  endif()
  message(STATUS "TorchGloo: torch ${TZRUN_TORCH_DIR}, gloo headers ${_tzrun_gloo_inc}")
  add_library(tzrun_torch_gloo INTERFACE)
  add_library(tzrun::torch_gloo ALIAS tzrun_torch_gloo)
  target_include_directories(tzrun_torch_gloo SYSTEM INTERFACE ${_tzrun_gloo_inc})
  target_compile_definitions(tzrun_torch_gloo INTERFACE USE_C10D_GLOO)
  target_link_libraries(tzrun_torch_gloo INTERFACE tzrun_torch_c10d)
endif()

# --- NCCL (compile + link only; runs where there is a GPU) --------------------------------------
if(NOT TARGET tzrun_torch_nccl)
  find_path(TZRUN_CUDA_INCLUDE_DIR cuda_runtime_api.h
    HINTS ${TZRUN_CUDA_ROOT}/include ${TZRUN_CUDA_ROOT}/targets/x86_64-linux/include NO_DEFAULT_PATH)
  find_path(TZRUN_NCCL_INCLUDE_DIR nccl.h
    HINTS ${TZRUN_CUDA_ROOT}/include ${TZRUN_TORCH_DIR}/../nvidia/nccl/include NO_DEFAULT_PATH)
  if(TZRUN_CUDA_INCLUDE_DIR AND TZRUN_NCCL_INCLUDE_DIR
     AND EXISTS "${TZRUN_TORCH_DIR}/lib/libtorch_cuda.so")
    add_library(tzrun_torch_nccl INTERFACE)
    add_library(tzrun::torch_nccl ALIAS tzrun_torch_nccl)
    target_include_directories(tzrun_torch_nccl SYSTEM INTERFACE
      ${TZRUN_CUDA_INCLUDE_DIR} ${TZRUN_NCCL_INCLUDE_DIR})
    target_compile_definitions(tzrun_torch_nccl INTERFACE USE_C10D_NCCL USE_CUDA)
    # libtorch_cuda's own RPATH finds libnccl/libcudart in the nvidia-* wheels at run time;
    # -rpath-link lets ld check libtorch_cuda's NEEDED libraries at link time.
    target_link_libraries(tzrun_torch_nccl INTERFACE
      ${TZRUN_TORCH_DIR}/lib/libtorch_cuda.so
      ${TZRUN_TORCH_DIR}/lib/libc10_cuda.so
      tzrun_torch_c10d)
    set(TZRUN_TORCH_NCCL_FOUND TRUE)
    message(STATUS "TorchGloo: NCCL path with ${TZRUN_NCCL_INCLUDE_DIR}/nccl.h")
  else()
    message(STATUS "TorchGloo: no CUDA toolkit/nccl.h under ${TZRUN_CUDA_ROOT} or no "
                   "libtorch_cuda.so; tzrun::torch_nccl is not defined")
  endif()
elseif(TARGET tzrun_torch_nccl)
  set(TZRUN_TORCH_NCCL_FOUND TRUE)
endif()

function(tzrun_check_no_gloo_definitions target)
  if(NOT CMAKE_NM)
    message(WARNING "TorchGloo: no nm; the gloo symbol check of ${target} is skipped")
    return()
  endif()
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DBINARY=$<TARGET_FILE:${target}>
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/CheckNoGlooDefinitions.cmake
    COMMENT "Checking that ${target} defines no gloo symbol"
    VERBATIM)
endfunction()
