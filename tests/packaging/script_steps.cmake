# Helpers of the packaging script tests (included by third_party_pack.cmake and pack_tutorial.cmake).
#
#   step(NAME n COMMAND cmd... [OUTPUT_VARIABLE v] [EXPECT_FAIL 1])
#       runs cmd, prints it; fails the test when it fails (or, with EXPECT_FAIL, when it succeeds); v gets
#       stdout + stderr
#   expect_contains(name text want)   fails the test unless `text` contains `want` literally
#   out_of_tree_configure_args(var)   the cmake arguments that configure a project against <WORK_DIR>/prefix
#                                     only (no package registry, no build tree), with the test's compilers
function(step)
  cmake_parse_arguments(S "" "NAME;OUTPUT_VARIABLE;EXPECT_FAIL" "COMMAND" ${ARGN})
  string(REPLACE ";" " " shown "${S_COMMAND}")
  message(STATUS "[${S_NAME}] ${shown}")
  execute_process(COMMAND ${S_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(S_EXPECT_FAIL)
    if(rc EQUAL 0)
      message(FATAL_ERROR "[${S_NAME}] succeeded but should have failed:\n${out}\n${err}")
    endif()
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "[${S_NAME}] failed (${rc}):\n${out}\n${err}")
  endif()
  if(S_OUTPUT_VARIABLE)
    set(${S_OUTPUT_VARIABLE} "${out}${err}" PARENT_SCOPE)
  endif()
endfunction()

function(expect_contains name text want)
  string(FIND "${text}" "${want}" at)
  if(at LESS 0)
    message(FATAL_ERROR "[${name}] expected to find:\n  ${want}\nin:\n${text}")
  endif()
endfunction()

function(out_of_tree_configure_args var)
  set(cfg -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release
          -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER} -G "${GENERATOR}")
  if(MAKE_PROGRAM)
    list(APPEND cfg -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
  endif()
  set(${var} "${cfg}" PARENT_SCOPE)
endfunction()
