# TzrunTorchExecutable.cmake — what every executable linking libtorch needs (docs/gloo-route.md).
#
#   tzrun_torch_executable(<target>)
#       BUILD_RPATH ${TZRUN_TORCH_DIR}/lib (the wheel's libtorch_cpu.so / libc10.so are not on the
#       loader's path) and tzrun_check_no_gloo_definitions(<target>).
#   tzrun_check_no_gloo_definitions(<target>)
#       POST_BUILD check: the target must not *define* any gloo symbol (vtable, inline function,
#       typeinfo); it may only reference libtorch's. This is the invariant that makes the older
#       Debian gloo headers safe (cmake/CheckNoGlooDefinitions.cmake has the rules).

function(tzrun_check_no_gloo_definitions target)
  if(NOT CMAKE_NM)
    message(FATAL_ERROR "tzrun: no nm (CMAKE_NM); the gloo symbol check of ${target} cannot run")
  endif()
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DBINARY=$<TARGET_FILE:${target}>
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/CheckNoGlooDefinitions.cmake
    COMMENT "Checking that ${target} defines no gloo symbol"
    VERBATIM)
endfunction()

function(tzrun_torch_executable target)
  if(NOT TZRUN_TORCH_DIR)
    message(FATAL_ERROR "tzrun_torch_executable(${target}): TZRUN_TORCH_DIR is empty "
                        "(find_package(TzrunTorch) first)")
  endif()
  set_target_properties(${target} PROPERTIES BUILD_RPATH "${TZRUN_TORCH_DIR}/lib")
  tzrun_check_no_gloo_definitions(${target})
endfunction()
