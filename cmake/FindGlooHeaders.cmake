# FindGlooHeaders.cmake — gloo's C++ headers for <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
# (the torch wheel ships none). Default: Debian's libgloo-dev headers, downloaded and unpacked at
# configure time by cmake/fetch_gloo_headers.sh (apt-get download + dpkg-deb -x, nothing
# installed) into <build>/_deps/gloo-headers. Why older headers are safe: docs/gloo-route.md
# (the invariant is checked per executable by tzrun_check_no_gloo_definitions, see
# TzrunTorchExecutable.cmake).
#
#   find_package(GlooHeaders [REQUIRED])
#
# IMPORTED target: tzrun::gloo_headers (INTERFACE, SYSTEM include dir).
# Result variables: GlooHeaders_FOUND, TZRUN_GLOO_HEADERS_DIR (the include folder used).
# Input (cache): TZRUN_GLOO_INCLUDE_DIR, a folder holding gloo/rendezvous/store.h (empty: fetch).
include(FindPackageHandleStandardArgs)
set(TZRUN_GLOO_INCLUDE_DIR "" CACHE PATH
  "Folder with gloo/rendezvous/store.h (empty: fetch Debian's libgloo-dev headers into the build tree)")

set(_tzrun_gloo_why "")
set(TZRUN_GLOO_HEADERS_DIR "${TZRUN_GLOO_INCLUDE_DIR}")
if(NOT TZRUN_GLOO_HEADERS_DIR)
  set(_tzrun_gloo_dest "${CMAKE_BINARY_DIR}/_deps/gloo-headers")
  execute_process(
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fetch_gloo_headers.sh ${_tzrun_gloo_dest}
    RESULT_VARIABLE _tzrun_rc)
  if(_tzrun_rc EQUAL 0)
    set(TZRUN_GLOO_HEADERS_DIR "${_tzrun_gloo_dest}/include")
  else()
    set(_tzrun_gloo_why "could not fetch gloo's headers (see the message above); pass "
                        "-DTZRUN_GLOO_INCLUDE_DIR=<folder with gloo/rendezvous/store.h>")
  endif()
endif()
if(TZRUN_GLOO_HEADERS_DIR AND NOT EXISTS "${TZRUN_GLOO_HEADERS_DIR}/gloo/rendezvous/store.h")
  set(_tzrun_gloo_why "${TZRUN_GLOO_HEADERS_DIR}/gloo/rendezvous/store.h does not exist; "
                      "TZRUN_GLOO_INCLUDE_DIR must hold gloo's headers")
  set(TZRUN_GLOO_HEADERS_DIR "")
endif()

if(TZRUN_GLOO_HEADERS_DIR AND NOT TARGET tzrun::gloo_headers)
  add_library(tzrun::gloo_headers INTERFACE IMPORTED)
  target_include_directories(tzrun::gloo_headers SYSTEM INTERFACE ${TZRUN_GLOO_HEADERS_DIR})
endif()
find_package_handle_standard_args(GlooHeaders
  REQUIRED_VARS TZRUN_GLOO_HEADERS_DIR
  REASON_FAILURE_MESSAGE "${_tzrun_gloo_why}")
