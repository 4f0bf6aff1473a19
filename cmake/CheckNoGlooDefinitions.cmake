# cmake -DNM=<nm> -DBINARY=<file> -P CheckNoGlooDefinitions.cmake
#
# Fails when BINARY *defines* code or data of gloo itself or of ProcessGroupGloo's classes:
#   - anything in namespace gloo (functions, vtables, typeinfo, guard variables, thunks);
#   - anything mentioning GlooStore (it derives from gloo::rendezvous::Store, whose vtable layout
#     differs between the Debian headers and the gloo inside libtorch: a GlooStore built by us
#     would call the wrong slots);
#   - member functions, vtables or typeinfo of c10d::ProcessGroupGloo and its nested classes.
# Allowed: instantiations of std/c10 templates over pointers to those types (intrusive_ptr<
# ProcessGroupGloo::Options>, shared_ptr<gloo::Context>, ...), whose code does not depend on the
# pointee's layout, the header's static TORCH_GLOO_LAZY_INIT vector of strings, and local
# read-only constants of gloo's headers (kept by -O0 builds).
#
# Why: our code compiles ProcessGroupGloo.hpp against Debian's gloo headers, older than the gloo
# compiled into libtorch_cpu.so. That is sound while every gloo entity is used through libtorch's
# own definitions (undefined references here); a definition in our binary would be built from the
# older headers and could also interpose libtorch's copy at run time. See docs/gloo-route.md.
if(NOT NM OR NOT BINARY)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DBINARY=<file> -P CheckNoGlooDefinitions.cmake")
endif()
execute_process(COMMAND ${NM} -C --defined-only ${BINARY}
  OUTPUT_VARIABLE _syms RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gloo symbol check: '${NM} -C --defined-only ${BINARY}' failed: ${_err}")
endif()
# nm -C lines: "<address> <type> <demangled name>"; names may contain ';' (not in C++ names)
# and '[' ']' (abi tags), which CMake lists tolerate here because we only iterate.
string(REPLACE "\n" ";" _lines "${_syms}")
# The entity a symbol defines starts the name, or follows its return type / a "vtable for "-like
# prefix after a space; after "<", "(" or ", " the type is only a template or parameter argument.
set(_bad "")
foreach(_l IN LISTS _lines)
  if(NOT _l MATCHES "^[0-9a-fA-F]* *([A-Za-z]) (.*)$")
    continue()
  endif()
  set(_type "${CMAKE_MATCH_1}")
  set(_name "${CMAKE_MATCH_2}")
  # Local read-only/bss data ('r', 'b': e.g. gloo's namespace-scope constants such as
  # gloo::kNoTimeout, which -O0 builds keep) cannot interpose anything and is not code.
  if(_type MATCHES "^[rb]$")
    continue()
  endif()
  if(_name MATCHES "(^|[^,] )(gloo::|c10d::ProcessGroupGloo(::|$|[ (]))" OR _name MATCHES "GlooStore")
    string(APPEND _bad "  ${_l}\n")
  endif()
endforeach()
if(_bad)
  message(FATAL_ERROR
    "gloo symbol check: ${BINARY} defines gloo / ProcessGroupGloo symbols, built from the older "
    "Debian gloo headers:\n${_bad}"
    "Only call ProcessGroupGloo's exported API (constructor, Options::create_default, the "
    "c10d::Backend virtuals); never construct GlooStore or other gloo types in our code. "
    "See docs/gloo-route.md.")
endif()
