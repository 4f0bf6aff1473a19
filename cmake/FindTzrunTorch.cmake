# FindTzrunTorch.cmake — libtorch's c10d process groups from the venv's torch wheel, without
# find_package(Torch) (a CUDA wheel's TorchConfig wants nvcc at configure time).
#
#   find_package(TzrunTorch [REQUIRED] [COMPONENTS gloo] [OPTIONAL_COMPONENTS nccl])
#
# IMPORTED targets (INTERFACE, visible in the calling directory and below):
#   tzrun::torch_c10d  torch headers, _GLIBCXX_USE_CXX11_ABI, libtorch_cpu + libc10.
#                      Enough for c10d::TCPStore, PrefixStore, Backend, ProcessGroup.
#   tzrun::torch_gloo  component "gloo": + USE_C10D_GLOO and gloo's headers (FindGlooHeaders.cmake),
#                      for <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>.
#   tzrun::torch_nccl  component "nccl", only when the CUDA toolkit's cuda_runtime_api.h and nccl.h
#                      and libtorch_cuda.so exist: + USE_C10D_NCCL USE_CUDA, CUDA include dirs,
#                      libtorch_cuda + libc10_cuda, for ProcessGroupNCCL.hpp.
# Result variables: TzrunTorch_FOUND, TzrunTorch_<component>_FOUND, TZRUN_TORCH_NCCL_FOUND,
#   TZRUN_TORCH_DIR (cache: the torch package folder; its lib/ is what executables put on their
#   BUILD_RPATH, see TzrunTorchExecutable.cmake).
#
# Inputs (cache variables):
#   TZRUN_PYTHON     python of the venv holding torch (default <source>/.venv/bin/python)
#   TZRUN_TORCH_DIR  torch package folder (default: asked from TZRUN_PYTHON)
#   TZRUN_CUDA_ROOT  CUDA toolkit (default /usr/local/cuda)
# Gloo's headers: see FindGlooHeaders.cmake (TZRUN_GLOO_INCLUDE_DIR). docs/gloo-route.md has why.
include(FindPackageHandleStandardArgs)
get_filename_component(_tzrun_repo_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(TZRUN_PYTHON "${_tzrun_repo_root}/.venv/bin/python" CACHE FILEPATH
  "Python interpreter of the virtualenv holding torch and pyarrow (scripts/setup.sh creates it)")
set(TZRUN_TORCH_DIR "" CACHE PATH "torch package folder (empty: ask TZRUN_PYTHON)")
set(TZRUN_CUDA_ROOT "/usr/local/cuda" CACHE PATH "CUDA toolkit root (for nccl.h, cuda_runtime_api.h)")

# --- torch --------------------------------------------------------------------------------------
set(_tzrun_abi "")
set(_tzrun_torch_why "")
if(NOT TZRUN_TORCH_DIR)
  execute_process(
    COMMAND ${TZRUN_PYTHON} -c
      "import torch, os; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
    OUTPUT_VARIABLE _tzrun_out RESULT_VARIABLE _tzrun_rc
    ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_tzrun_rc EQUAL 0)
    string(REPLACE "\n" ";" _tzrun_out "${_tzrun_out}")
    list(GET _tzrun_out 0 _tzrun_dir)
    list(GET _tzrun_out 1 _tzrun_abi)
    set(TZRUN_TORCH_DIR "${_tzrun_dir}" CACHE PATH "torch package folder (empty: ask TZRUN_PYTHON)" FORCE)
  else()
    set(_tzrun_torch_why "no torch in ${TZRUN_PYTHON} (run scripts/setup.sh, or set TZRUN_PYTHON / TZRUN_TORCH_DIR)")
  endif()
endif()
set(TZRUN_TORCH_CPU_LIBRARY "")
if(TZRUN_TORCH_DIR)
  if(EXISTS "${TZRUN_TORCH_DIR}/lib/libtorch_cpu.so")
    set(TZRUN_TORCH_CPU_LIBRARY "${TZRUN_TORCH_DIR}/lib/libtorch_cpu.so")
  else()
    set(_tzrun_torch_why "${TZRUN_TORCH_DIR}/lib/libtorch_cpu.so not found; set TZRUN_TORCH_DIR to "
                         "the torch package folder of a torch wheel")
  endif()
endif()
if(_tzrun_abi STREQUAL "")
  set(_tzrun_abi 1)  # wheels since torch 2.7 are all built with the CXX11 ABI
endif()

if(TZRUN_TORCH_CPU_LIBRARY AND NOT TARGET tzrun::torch_c10d)
  add_library(tzrun::torch_c10d INTERFACE IMPORTED)
  target_include_directories(tzrun::torch_c10d SYSTEM INTERFACE
    ${TZRUN_TORCH_DIR}/include
    ${TZRUN_TORCH_DIR}/include/torch/csrc/api/include)
  target_compile_definitions(tzrun::torch_c10d INTERFACE _GLIBCXX_USE_CXX11_ABI=${_tzrun_abi})
  find_package(Threads REQUIRED)
  target_link_libraries(tzrun::torch_c10d INTERFACE
    ${TZRUN_TORCH_CPU_LIBRARY} ${TZRUN_TORCH_DIR}/lib/libc10.so Threads::Threads)
endif()

# OpenMP for our own at::parallel_for loops: ATen's OpenMP backend opens its `#pragma omp parallel`
# in the header (ATen/ParallelOpenMP.h), i.e. in the caller's translation unit, so a unit built
# without -fopenmp runs every at::parallel_for on one thread. TZRUN_OPENMP_COMPILE_OPTIONS is
# -fopenmp with GCC (the compiler the wheel's GOMP ABI matches; others get -fopenmp-simd and stay
# serial), and tzrun::torch_openmp links the wheel's own libgomp.so.1, so the process has one
# OpenMP runtime and one thread pool (the soname resolves to it through the torch RUNPATH).
set(TZRUN_OPENMP_COMPILE_OPTIONS "-fopenmp-simd")
if(TZRUN_TORCH_CPU_LIBRARY AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
   AND EXISTS "${TZRUN_TORCH_DIR}/lib/libgomp.so.1" AND NOT TARGET tzrun::torch_openmp)
  set(TZRUN_OPENMP_COMPILE_OPTIONS "-fopenmp")
  add_library(tzrun::torch_openmp INTERFACE IMPORTED)
  target_link_libraries(tzrun::torch_openmp INTERFACE "${TZRUN_TORCH_DIR}/lib/libgomp.so.1")
endif()

# --- component gloo -----------------------------------------------------------------------------
if(TZRUN_TORCH_CPU_LIBRARY AND "gloo" IN_LIST TzrunTorch_FIND_COMPONENTS)
  if(NOT TARGET tzrun::torch_gloo)
    if(TzrunTorch_FIND_REQUIRED_gloo)
      find_package(GlooHeaders REQUIRED)
    else()
      find_package(GlooHeaders)
    endif()
    if(GlooHeaders_FOUND)
      add_library(tzrun::torch_gloo INTERFACE IMPORTED)
      target_compile_definitions(tzrun::torch_gloo INTERFACE USE_C10D_GLOO)
      target_link_libraries(tzrun::torch_gloo INTERFACE tzrun::gloo_headers tzrun::torch_c10d)
    endif()
  endif()
  if(TARGET tzrun::torch_gloo)
    set(TzrunTorch_gloo_FOUND TRUE)
  endif()
endif()

# --- component nccl (compile + link only; runs where there is a GPU) ----------------------------
set(TZRUN_TORCH_NCCL_FOUND FALSE)
if(TZRUN_TORCH_CPU_LIBRARY AND "nccl" IN_LIST TzrunTorch_FIND_COMPONENTS)
  if(NOT TARGET tzrun::torch_nccl)
    find_path(TZRUN_CUDA_INCLUDE_DIR cuda_runtime_api.h
      HINTS ${TZRUN_CUDA_ROOT}/include ${TZRUN_CUDA_ROOT}/targets/x86_64-linux/include NO_DEFAULT_PATH)
    find_path(TZRUN_NCCL_INCLUDE_DIR nccl.h
      HINTS ${TZRUN_CUDA_ROOT}/include ${TZRUN_TORCH_DIR}/../nvidia/nccl/include NO_DEFAULT_PATH)
    if(TZRUN_CUDA_INCLUDE_DIR AND TZRUN_NCCL_INCLUDE_DIR
       AND EXISTS "${TZRUN_TORCH_DIR}/lib/libtorch_cuda.so")
      add_library(tzrun::torch_nccl INTERFACE IMPORTED)
      target_include_directories(tzrun::torch_nccl SYSTEM INTERFACE
        ${TZRUN_CUDA_INCLUDE_DIR} ${TZRUN_NCCL_INCLUDE_DIR})
      target_compile_definitions(tzrun::torch_nccl INTERFACE USE_C10D_NCCL USE_CUDA)
      # libtorch_cuda's own RPATH finds libnccl/libcudart in the nvidia-* wheels at run time.
      target_link_libraries(tzrun::torch_nccl INTERFACE
        ${TZRUN_TORCH_DIR}/lib/libtorch_cuda.so
        ${TZRUN_TORCH_DIR}/lib/libc10_cuda.so
        tzrun::torch_c10d)
      message(STATUS "FindTzrunTorch: NCCL path with ${TZRUN_NCCL_INCLUDE_DIR}/nccl.h")
    else()
      message(STATUS "FindTzrunTorch: no CUDA toolkit/nccl.h under ${TZRUN_CUDA_ROOT} or no "
                     "libtorch_cuda.so; tzrun::torch_nccl is not defined")
    endif()
  endif()
  if(TARGET tzrun::torch_nccl)
    set(TzrunTorch_nccl_FOUND TRUE)
    set(TZRUN_TORCH_NCCL_FOUND TRUE)
  endif()
endif()

if(_tzrun_torch_why)
  set(TzrunTorch_NOT_FOUND_MESSAGE "${_tzrun_torch_why}")
endif()
find_package_handle_standard_args(TzrunTorch
  REQUIRED_VARS TZRUN_TORCH_CPU_LIBRARY TZRUN_TORCH_DIR
  HANDLE_COMPONENTS
  REASON_FAILURE_MESSAGE "${_tzrun_torch_why}")
