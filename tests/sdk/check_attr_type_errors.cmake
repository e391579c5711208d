# CTest driver (cmake -P): compiles attr_type_errors.cpp with -DVARIANT_<VARIANT> straight from the SDK's
# include folder. VARIANT GOOD must compile; every other variant must fail with exactly one error, the SDK's
# static_assert naming the attribute types it takes (not a page of template errors).
#
# Variables: CXX_COMPILER SDK_INCLUDE SOURCE VARIANT
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND "${CXX_COMPILER}" -std=c++20 -fsyntax-only -Wall -Wextra "-I${SDK_INCLUDE}"
                        "-DOPH_PLUGIN_NAME=\"t\"" "-DOPH_PLUGIN_VERSION=\"0.0.1\"" "-DVARIANT_${VARIANT}" "${SOURCE}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(text "${out}${err}")
string(REPLACE ";" "," text "${text}")  # the message has a ';', which would split the lists below
if(VARIANT STREQUAL "GOOD")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the valid variant does not compile (so the failures below prove nothing):\n${text}")
  endif()
  message(STATUS "VARIANT_GOOD compiles")
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "VARIANT_${VARIANT} compiled, but its attribute type is unsupported")
endif()
string(REGEX MATCHALL "error:[^\n]*" errors "${text}")
list(LENGTH errors n)
set(want "ophost SDK: unsupported attribute type, use float, int64_t, std::string, std::vector<float>, std::vector<int64_t> or std::vector<std::string>")
string(FIND "${text}" "${want}" at)
if(NOT n EQUAL 1 OR at LESS 0)
  message(FATAL_ERROR "VARIANT_${VARIANT}: expected one error, the SDK's static_assert ('${want}'), got ${n}:\n${text}")
endif()
string(REGEX MATCHALL "\n" lines "${text}")
list(LENGTH lines nlines)
message(STATUS "VARIANT_${VARIANT}: one error (${nlines} lines of compiler output): ${errors}")
