# Install.cmake — `cmake --install`, the find_package(tzrun) package config and the CPack .deb.
# Included once, at the end of the top-level CMakeLists.txt (after every target exists).
#
# Layout under the prefix (GNUInstallDirs; LIBDIR is "lib" unless the prefix is /usr on a
# multiarch system):
#   bin/tzrun                          component "runtime"
#   bin/tzrec_train                    component "worker", only when the worker is built
#   include/tzrun/store/*.hpp          component "dev": the public API of tzrun::store
#   lib/libtzrun_store.a               component "dev"
#   lib/cmake/tzrun/tzrunConfig.cmake, tzrunConfigVersion.cmake, tzrunTargets*.cmake   ("dev")
#
# find_package(tzrun) gives tzrun::store (static; needs only Threads at the consumer: no header
# under include/tzrun/store includes asio, so no asio include path is exported for it).
# tzrun::asio and tzrun::options are build-only helpers: tzrun_store links them as
# $<BUILD_INTERFACE:...>, so the exported link interface lists only Threads and they are not
# exported.
#
# Only tzrun::store is exported: the launcher's other libraries (cli, platform, rendezvous,
# agent) are internal, and the worker headers (include/tzrun/worker) need libtorch, so their
# headers are not installed.
#
# tzrec_train links libtorch and Arrow from the virtualenv it was configured with (scripts/
# setup.sh). Its installed RUNPATH is that venv's torch/lib and pyarrow folders, so an installed
# tzrec_train runs only where that venv exists at the same path (the Docker image keeps the venv
# at /opt/tzrun/venv in both stages for this reason). Override with -DTZRUN_WORKER_INSTALL_RPATH.
#
# CPack: `cpack --config <build>/CPackConfig.cmake` makes tzrun_<version>_<arch>.deb holding the
# "runtime" and "dev" components under /usr. tzrec_train is left out of the .deb on purpose: it
# cannot run without the venv (libtorch is not a Debian package).

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TZRUN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/tzrun" CACHE STRING
  "Where tzrunConfig.cmake is installed, relative to the prefix")

# --- launcher ------------------------------------------------------------------------------------
install(TARGETS tzrun
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# --- worker (libtorch) ---------------------------------------------------------------------------
if(TARGET tzrec_train)
  set(_tzrun_worker_rpath "${TZRUN_TORCH_DIR}/lib")
  if(TZRUN_PYARROW_DIR)
    list(APPEND _tzrun_worker_rpath "${TZRUN_PYARROW_DIR}")
  endif()
  set(TZRUN_WORKER_INSTALL_RPATH "${_tzrun_worker_rpath}" CACHE STRING
    "RUNPATH of the installed tzrec_train (default: the configure-time venv's torch/lib and pyarrow)")
  set_target_properties(tzrec_train PROPERTIES INSTALL_RPATH "${TZRUN_WORKER_INSTALL_RPATH}")
  install(TARGETS tzrec_train
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT worker)
endif()

# --- tzrun::store for other C++ programs ---------------------------------------------------------
set_target_properties(tzrun_store PROPERTIES EXPORT_NAME store)
# The headers are tzrun_store's HEADERS file set (src/store/CMakeLists.txt), installed under
# include/ with their paths relative to the repository's include/ folder.
install(TARGETS tzrun_store
  EXPORT tzrunTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tzrunTargets
  NAMESPACE tzrun::
  DESTINATION ${TZRUN_INSTALL_CMAKEDIR}
  COMPONENT dev)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/tzrunConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/tzrunConfig.cmake
  INSTALL_DESTINATION ${TZRUN_INSTALL_CMAKEDIR})
# 0.x: a minor release may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/tzrunConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/tzrunConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/tzrunConfigVersion.cmake
  DESTINATION ${TZRUN_INSTALL_CMAKEDIR}
  COMPONENT dev)

# --- CPack: one .deb named tzrun -----------------------------------------------------------------
set(TZRUN_PACKAGE_MAINTAINER "tzrun maintainers <tzrun-maintainers@users.noreply.github.com>"
  CACHE STRING "Maintainer field of the .deb")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tzrun)
set(CPACK_PACKAGE_VENDOR tzrun)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "${TZRUN_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# RelWithDebInfo binaries carry ~40 MB of debug info; the package ships them stripped.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_PACKAGE_NAME tzrun)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TZRUN_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "tzrun is a drop-in torchrun in C++ with its own c10d-compatible TCP store.\n\
This package holds the tzrun launcher and the tzrun::store static library with its\n\
headers and CMake package (find_package(tzrun)).")
# tzrun links spdlog, fmt and libcurl dynamically (Debian's libspdlog-dev, libcurl4-openssl-dev);
# the versions are bookworm's.
set(TZRUN_DEB_DEPENDS "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1, libspdlog1.10, libfmt9, libcurl4"
  CACHE STRING "Depends field of the .deb")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${TZRUN_DEB_DEPENDS}")
# eu-stack (elfutils) gives --hang-timeout's report the hung ranks' backtraces (gdb otherwise).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "elfutils")
include(CPack)
