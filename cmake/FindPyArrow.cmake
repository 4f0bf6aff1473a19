# FindPyArrow.cmake — the Arrow/Parquet C++ libraries shipped in the venv's pyarrow wheel (headers
# under pyarrow/include, libarrow.so.N / libparquet.so.N). That wheel is built with
# _GLIBCXX_USE_CXX11_ABI=1 like torch (evidence: src/worker/input/README.md).
#
#   find_package(PyArrow [REQUIRED])
#
# IMPORTED target: tzrec::arrow (INTERFACE: include dir, libparquet + libarrow, and the wheel
#   folder on the executable's RUNPATH: the wheel's libraries find each other through their own
#   $ORIGIN RUNPATH, executables need the folder itself).
# Result variables: PyArrow_FOUND, TZRUN_PYARROW_DIR (cache: the pyarrow package folder).
# Input (cache): TZRUN_PYTHON (see FindTzrunTorch.cmake), TZRUN_PYARROW_DIR.
include(FindPackageHandleStandardArgs)
get_filename_component(_tzrec_repo_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(TZRUN_PYTHON "${_tzrec_repo_root}/.venv/bin/python" CACHE FILEPATH
  "Python interpreter of the virtualenv holding torch and pyarrow (scripts/setup.sh creates it)")
set(TZRUN_PYARROW_DIR "" CACHE PATH "pyarrow package folder (empty: ask TZRUN_PYTHON)")

set(_tzrec_pyarrow_why "")
if(NOT TZRUN_PYARROW_DIR)
  execute_process(
    COMMAND ${TZRUN_PYTHON} -c "import os, pyarrow; print(os.path.dirname(pyarrow.__file__))"
    OUTPUT_VARIABLE _tzrec_pyarrow_dir RESULT_VARIABLE _tzrec_rc
    ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_tzrec_rc EQUAL 0)
    set(TZRUN_PYARROW_DIR "${_tzrec_pyarrow_dir}" CACHE PATH "pyarrow package folder (empty: ask TZRUN_PYTHON)" FORCE)
  else()
    set(_tzrec_pyarrow_why "no pyarrow in ${TZRUN_PYTHON} (run scripts/setup.sh, or set TZRUN_PYARROW_DIR)")
  endif()
endif()
set(TZRUN_PYARROW_ARROW_LIBRARY "")
set(TZRUN_PYARROW_PARQUET_LIBRARY "")
if(TZRUN_PYARROW_DIR)
  file(GLOB _tzrec_libarrow "${TZRUN_PYARROW_DIR}/libarrow.so.[0-9]*")
  file(GLOB _tzrec_libparquet "${TZRUN_PYARROW_DIR}/libparquet.so.[0-9]*")
  if(_tzrec_libarrow AND _tzrec_libparquet AND EXISTS "${TZRUN_PYARROW_DIR}/include/parquet/arrow/reader.h")
    list(GET _tzrec_libarrow 0 TZRUN_PYARROW_ARROW_LIBRARY)
    list(GET _tzrec_libparquet 0 TZRUN_PYARROW_PARQUET_LIBRARY)
  else()
    set(_tzrec_pyarrow_why "${TZRUN_PYARROW_DIR} lacks libarrow.so.N, libparquet.so.N or "
                           "include/parquet/arrow/reader.h; install the pyarrow wheel (scripts/setup.sh)")
  endif()
endif()

if(TZRUN_PYARROW_ARROW_LIBRARY AND NOT TARGET tzrec::arrow)
  add_library(tzrec::arrow INTERFACE IMPORTED)
  target_include_directories(tzrec::arrow SYSTEM INTERFACE ${TZRUN_PYARROW_DIR}/include)
  target_link_libraries(tzrec::arrow INTERFACE
    ${TZRUN_PYARROW_PARQUET_LIBRARY} ${TZRUN_PYARROW_ARROW_LIBRARY})
  target_link_options(tzrec::arrow INTERFACE "LINKER:-rpath,${TZRUN_PYARROW_DIR}")
endif()
find_package_handle_standard_args(PyArrow
  REQUIRED_VARS TZRUN_PYARROW_ARROW_LIBRARY TZRUN_PYARROW_PARQUET_LIBRARY TZRUN_PYARROW_DIR
  REASON_FAILURE_MESSAGE "${_tzrec_pyarrow_why}")
