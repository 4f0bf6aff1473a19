# TzrunTesting.cmake — ctest conventions shared by the test folders.
#
#   tzrun_gtest_report_skips(<gtest target>)
#       After gtest_discover_tests(<target> ...): a discovered test that calls GTEST_SKIP() is
#       reported by ctest as *skipped* (SKIP_REGULAR_EXPRESSION on gtest's "[  SKIPPED ]" line),
#       not as passed. Works with DISCOVERY_MODE PRE_TEST: the properties are set by a ctest
#       include file that runs after discovery, on the discovered list (<target>_TESTS).
function(tzrun_gtest_report_skips target)
  set(_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_skips.cmake)
  file(WRITE ${_file}
    "if(${target}_TESTS)\n"
    "  set_tests_properties(\${${target}_TESTS} PROPERTIES SKIP_REGULAR_EXPRESSION \"\\\\[  SKIPPED \\\\]\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_file})
endfunction()
