# Finds Debian's HIP toolchain (hipcc + libamdhip64-dev, ROCm 5.x) without CMake's HIP language, which
# expects ROCm's own layout (/usr/lib/cmake/hip-lang) that Debian does not use. Sets (cached):
#   OPHOST_HIPCC            hipcc (compiles the .hip kernels of the HIP packs into objects)
#   OPHOST_HIP_INCLUDE_DIR  folder holding hip/hip_runtime_api.h
#   OPHOST_AMDHIP64         libamdhip64
#   OPHOST_HIP_ARCHITECTURES  --offload-arch list for kernels (default gfx90a;gfx940;gfx1030: MI200, MI300, RDNA2;
#                           ROCm 5.2 in Debian 12 has no device libraries for gfx11)
# and OPHOST_HIP_FOUND (normal variable) with OPHOST_HIP_MISSING naming what is missing.
find_program(OPHOST_HIPCC NAMES hipcc PATHS /opt/rocm/bin)
find_path(OPHOST_HIP_INCLUDE_DIR NAMES hip/hip_runtime_api.h PATHS /opt/rocm/include)
find_library(OPHOST_AMDHIP64 NAMES amdhip64 PATHS /opt/rocm/lib)
set(OPHOST_HIP_ARCHITECTURES "gfx90a;gfx940;gfx1030" CACHE STRING
    "AMD GPU architectures the HIP kernels are compiled for (hipcc --offload-arch)")
set(OPHOST_HIP_MISSING)
if(NOT OPHOST_HIPCC)
  list(APPEND OPHOST_HIP_MISSING "hipcc")
endif()
if(NOT OPHOST_HIP_INCLUDE_DIR)
  list(APPEND OPHOST_HIP_MISSING "hip/hip_runtime_api.h")
endif()
if(NOT OPHOST_AMDHIP64)
  list(APPEND OPHOST_HIP_MISSING "libamdhip64")
endif()
if(OPHOST_HIP_MISSING)
  set(OPHOST_HIP_FOUND FALSE)
  string(REPLACE ";" ", " OPHOST_HIP_MISSING "${OPHOST_HIP_MISSING}")
else()
  set(OPHOST_HIP_FOUND TRUE)
  if(NOT TARGET ophost_hip_runtime)
    add_library(ophost_hip_runtime INTERFACE IMPORTED GLOBAL)
    set_target_properties(ophost_hip_runtime PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${OPHOST_HIP_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "__HIP_PLATFORM_AMD__"
      INTERFACE_LINK_LIBRARIES "${OPHOST_AMDHIP64}")
  endif()
endif()

# ophost_hip_objects(<out_var> SOURCES a.hip ... [INCLUDE_DIRECTORIES dir ...])
# Compiles HIP kernel sources with hipcc into position-independent objects (one per source, with a depfile)
# for OPHOST_HIP_ARCHITECTURES, and returns their paths in <out_var>, ready to add to a target's sources
# (link the target with ophost_hip_runtime). Uses the C++ compiler launcher (ccache) when one is set.
function(ophost_hip_objects out_var)
  cmake_parse_arguments(PARSE_ARGV 1 H "" "" "SOURCES;INCLUDE_DIRECTORIES")
  set(archs)
  foreach(a IN LISTS OPHOST_HIP_ARCHITECTURES)
    list(APPEND archs "--offload-arch=${a}")
  endforeach()
  set(incs)
  foreach(d IN LISTS H_INCLUDE_DIRECTORIES)
    list(APPEND incs "-I${d}")
  endforeach()
  set(opt -O3)
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    set(opt -O0 -g)
  endif()
  set(objs)
  foreach(src IN LISTS H_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE)
    get_filename_component(name "${src}" NAME)
    set(obj "${CMAKE_CURRENT_BINARY_DIR}/hip_objects/${name}.o")
    add_custom_command(
      OUTPUT "${obj}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/hip_objects"
      COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${OPHOST_HIPCC} -x hip -std=c++17 -fPIC ${opt} ${archs} ${incs}
              -MD -MF "${obj}.d" -c "${abs}" -o "${obj}"
      DEPENDS "${abs}"
      DEPFILE "${obj}.d"
      COMMENT "hipcc ${name} (${OPHOST_HIP_ARCHITECTURES})"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND objs "${obj}")
  endforeach()
  set_source_files_properties(${objs} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  set(${out_var} ${objs} PARENT_SCOPE)
endfunction()
