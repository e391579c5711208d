# GPU toolchains, found once for the whole build (included from the top-level CMakeLists.txt before devices/
# and plugins/). Prints one STATUS line per GPU API: found, with version and paths, or skipped, with what is
# missing and how to get it. Each API has one option; OFF skips its backend and packs:
#   OPHOST_WITH_CUDA   CUDA: find_package(CUDAToolkit) in CUDAToolkit_ROOT (default /usr/local/cuda); the
#                      backend needs the runtime headers and libcudart, the packs also nvcc (CMake's CUDA
#                      language, enabled here; CMAKE_CUDA_ARCHITECTURES defaults to 80-real;90)
#   OPHOST_WITH_HIP    HIP: Debian's hipcc + libamdhip64-dev (ROCm 5.x); kernels are compiled by hipcc for
#                      OPHOST_HIP_ARCHITECTURES (default gfx90a;gfx940;gfx1030) without CMake's HIP language,
#                      which expects ROCm's own layout (/usr/lib/cmake/hip-lang) that Debian does not use
#
# Defines, for devices/ and plugins/:
#   OPHOST_GPU_APIS          the APIs whose backend can build (cuda, hip: runtime headers and library found)
#   OPHOST_GPU_KERNEL_APIS   the APIs whose packs can build (their kernel compiler found too)
#   ophost_cuda_runtime, ophost_hip_runtime
#                            imported targets: the runtime's headers and shared library (libcudart /
#                            libamdhip64; __HIP_PLATFORM_AMD__ for HIP), one per API found
#   ophost_gpu_kernels(<var> API <api> SOURCES <src>... [INCLUDE_DIRECTORIES <dir>...])
#                            compiles kernel sources with the API's compiler; <var> holds the objects
#   ophost_add_gpu_pack(API <api> KERNELS <src>|"<src>;..." <ophost_add_pack arguments>)
#                            a pack whose kernels <api>'s compiler builds, in one call
include_guard(GLOBAL)

option(OPHOST_WITH_CUDA "Build the CUDA backend and packs when the CUDA toolkit is found" ON)
option(OPHOST_WITH_HIP "Build the HIP backend and packs when hipcc and libamdhip64 are found" ON)

set(OPHOST_GPU_APIS)
set(OPHOST_GPU_KERNEL_APIS)

# --- CUDA ----------------------------------------------------------------------------------------------------
if(NOT OPHOST_WITH_CUDA)
  message(STATUS "CUDA skipped: OPHOST_WITH_CUDA=OFF")
else()
  if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    if(DEFINED CUDAToolkit_ROOT)
      set(_ophost_cuda_where "CUDAToolkit_ROOT=${CUDAToolkit_ROOT}")
    elseif(DEFINED ENV{CUDAToolkit_ROOT})
      set(_ophost_cuda_where "CUDAToolkit_ROOT=$ENV{CUDAToolkit_ROOT} (environment)")
    else()
      set(_ophost_cuda_where "/usr/local/cuda")
    endif()
    message(STATUS "CUDA skipped: no CUDA toolkit in ${_ophost_cuda_where} nor nvcc on PATH (NVIDIA's toolkit "
                   "is not a Debian package: install it and pass -DCUDAToolkit_ROOT=<dir>; "
                   "-DOPHOST_WITH_CUDA=OFF silences this)")
  else()
    list(APPEND OPHOST_GPU_APIS cuda)
    add_library(ophost_cuda_runtime INTERFACE IMPORTED GLOBAL)
    set_target_properties(ophost_cuda_runtime PROPERTIES INTERFACE_LINK_LIBRARIES CUDA::cudart)
    get_filename_component(_ophost_cuda_dir "${CUDAToolkit_BIN_DIR}" DIRECTORY)
    # nvcc for the packs' kernels: CMake's CUDA language, pointed at the toolkit just found.
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND CUDAToolkit_NVCC_EXECUTABLE)
      set(ENV{CUDACXX} "${CUDAToolkit_NVCC_EXECUTABLE}")  # check_language and enable_language read it
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      # Few architectures keep CI's nvcc time low: SASS for Ampere (sm_80) and Hopper (sm_90) plus PTX for
      # sm_90, which newer GPUs JIT-compile. Override with -DCMAKE_CUDA_ARCHITECTURES=native on a GPU machine.
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES "80-real;90")
      endif()
      if(NOT DEFINED CMAKE_CUDA_COMPILER_LAUNCHER AND CMAKE_CXX_COMPILER_LAUNCHER)
        set(CMAKE_CUDA_COMPILER_LAUNCHER "${CMAKE_CXX_COMPILER_LAUNCHER}")
      endif()
      enable_language(CUDA)
      list(APPEND OPHOST_GPU_KERNEL_APIS cuda)
      message(STATUS "CUDA: CUDA ${CUDAToolkit_VERSION} at ${_ophost_cuda_dir} (backend; packs: nvcc "
                     "${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
    else()
      message(STATUS "CUDA: CUDA ${CUDAToolkit_VERSION} at ${_ophost_cuda_dir} (backend only; packs skipped: nvcc "
                     "not found or not working, set CUDACXX or CMAKE_CUDA_COMPILER)")
    endif()
  endif()
endif()

# --- HIP -----------------------------------------------------------------------------------------------------
if(NOT OPHOST_WITH_HIP)
  message(STATUS "HIP skipped: OPHOST_WITH_HIP=OFF")
else()
  find_program(OPHOST_HIPCC NAMES hipcc PATHS /opt/rocm/bin)
  find_path(OPHOST_HIP_INCLUDE_DIR NAMES hip/hip_runtime_api.h PATHS /opt/rocm/include)
  find_library(OPHOST_AMDHIP64 NAMES amdhip64 PATHS /opt/rocm/lib)
  # ROCm 5.2 in Debian 12 has no device libraries for gfx11.
  set(OPHOST_HIP_ARCHITECTURES "gfx90a;gfx940;gfx1030" CACHE STRING
      "AMD GPU architectures the HIP kernels are compiled for (hipcc --offload-arch)")
  set(_ophost_hip_missing)
  foreach(_v IN ITEMS OPHOST_HIPCC OPHOST_HIP_INCLUDE_DIR OPHOST_AMDHIP64)
    if(NOT ${_v})
      list(APPEND _ophost_hip_missing "${_v}")
    endif()
  endforeach()
  list(TRANSFORM _ophost_hip_missing REPLACE "^OPHOST_HIPCC$" "hipcc")
  list(TRANSFORM _ophost_hip_missing REPLACE "^OPHOST_HIP_INCLUDE_DIR$" "hip/hip_runtime_api.h")
  list(TRANSFORM _ophost_hip_missing REPLACE "^OPHOST_AMDHIP64$" "libamdhip64")
  if(_ophost_hip_missing)
    list(JOIN _ophost_hip_missing ", " _ophost_hip_missing)
    message(STATUS "HIP skipped: ${_ophost_hip_missing} not found (Debian: apt-get install hipcc "
                   "libamdhip64-dev; -DOPHOST_WITH_HIP=OFF silences this)")
  else()
    list(APPEND OPHOST_GPU_APIS hip)
    list(APPEND OPHOST_GPU_KERNEL_APIS hip)
    add_library(ophost_hip_runtime INTERFACE IMPORTED GLOBAL)
    set_target_properties(ophost_hip_runtime PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${OPHOST_HIP_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "__HIP_PLATFORM_AMD__"
      INTERFACE_LINK_LIBRARIES "${OPHOST_AMDHIP64}")
    set(_ophost_hip_version "(version unknown)")
    if(EXISTS "${OPHOST_HIP_INCLUDE_DIR}/hip/hip_version.h")
      file(STRINGS "${OPHOST_HIP_INCLUDE_DIR}/hip/hip_version.h" _v REGEX "^#define HIP_VERSION_(MAJOR|MINOR|PATCH) ")
      string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3"
             _ophost_hip_version "${_v}")
    endif()
    message(STATUS "HIP: HIP ${_ophost_hip_version} at ${OPHOST_AMDHIP64} (backend; packs: ${OPHOST_HIPCC}, "
                   "architectures ${OPHOST_HIP_ARCHITECTURES})")
  endif()
endif()

# ophost_gpu_kernels(<var> API cuda|hip SOURCES <src>... [INCLUDE_DIRECTORIES <dir>...])
# Compiles GPU kernel sources into position-independent objects and sets <var> to them, ready for a pack's
# SOURCES (link the pack with ophost_<api>_runtime). The same source may serve both APIs (see
# plugins/myops-gpu). C++17 for both compilers: CMake 3.25 has no CUDA20 dialect for nvcc.
#   cuda: an OBJECT library `ophost_<var>` in CMake's CUDA language (CMAKE_CUDA_ARCHITECTURES)
#   hip:  one hipcc command per source (with a depfile) for OPHOST_HIP_ARCHITECTURES, objects in
#         <binary dir>/<var>/; through the C++ compiler launcher (ccache) when one is set
function(ophost_gpu_kernels out_var)
  cmake_parse_arguments(PARSE_ARGV 1 K "" "API" "SOURCES;INCLUDE_DIRECTORIES")
  if(K_UNPARSED_ARGUMENTS OR NOT K_SOURCES)
    message(FATAL_ERROR "ophost_gpu_kernels(${out_var}): usage: API cuda|hip SOURCES src... "
                        "[INCLUDE_DIRECTORIES dir...]")
  endif()
  if(NOT K_API IN_LIST OPHOST_GPU_KERNEL_APIS)
    message(FATAL_ERROR "ophost_gpu_kernels(${out_var}): API '${K_API}' has no kernel compiler in this build "
                        "(found: '${OPHOST_GPU_KERNEL_APIS}'); guard the call with OPHOST_GPU_KERNEL_APIS")
  endif()
  if(K_API STREQUAL "cuda")
    set(lib ophost_${out_var})
    add_library(${lib} OBJECT ${K_SOURCES})
    set_source_files_properties(${K_SOURCES} PROPERTIES LANGUAGE CUDA)  # whatever the extension
    target_include_directories(${lib} PRIVATE ${K_INCLUDE_DIRECTORIES})
    set_target_properties(${lib} PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                          CUDA_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ON)
    set(${out_var} $<TARGET_OBJECTS:${lib}> PARENT_SCOPE)
    return()
  endif()
  set(archs)
  foreach(a IN LISTS OPHOST_HIP_ARCHITECTURES)
    list(APPEND archs "--offload-arch=${a}")
  endforeach()
  set(incs)
  foreach(d IN LISTS K_INCLUDE_DIRECTORIES)
    list(APPEND incs "-I${d}")
  endforeach()
  set(opt -O3)
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    set(opt -O0 -g)
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${out_var}")
  set(objs)
  foreach(src IN LISTS K_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE)
    get_filename_component(name "${src}" NAME)
    set(obj "${dir}/${name}.o")
    add_custom_command(
      OUTPUT "${obj}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}"
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

# ophost_add_gpu_pack(API cuda|hip KERNELS <src>|"<src>;<src>..." NAME ... VERSION ... SOURCES ...
#                     [other ophost_add_pack arguments])
# A GPU pack in one call: KERNELS compiled by the API's compiler (ophost_gpu_kernels), SOURCES (the pack's
# C++ code, which needs no runtime header) by the C++ compiler, linked with the API's runtime, REQUIRES_DEVICES
# <api>, installed as COMPONENT <api> (the ophost-cuda / ophost-hip package); the C++ code sees
# OPH_GPU_DEVICE="<api>". Add LINK_LIBRARIES for more (CUDA::cublas). KERNELS is one value (a quoted list
# for several files), so that every other argument reaches ophost_add_pack unparsed.
function(ophost_add_gpu_pack)
  cmake_parse_arguments(PARSE_ARGV 0 G "" "API;NAME;KERNELS" "")
  if(NOT G_NAME OR NOT G_API OR NOT G_KERNELS)
    message(FATAL_ERROR "ophost_add_gpu_pack: NAME, API and KERNELS are required")
  endif()
  foreach(k IN ITEMS REQUIRES_DEVICES COMPONENT)
    if(k IN_LIST G_UNPARSED_ARGUMENTS)
      message(FATAL_ERROR "ophost_add_gpu_pack(${G_NAME}): ${k} is set from API (${G_API}); leave it out")
    endif()
  endforeach()
  string(MAKE_C_IDENTIFIER "${G_NAME}" id)
  ophost_gpu_kernels(${id}_kernels API ${G_API} SOURCES ${G_KERNELS})
  set(fwd)  # the other arguments as given, values with ';' kept in one piece
  foreach(a IN LISTS G_UNPARSED_ARGUMENTS)
    string(REPLACE ";" "\\;" a "${a}")
    list(APPEND fwd "${a}")
  endforeach()
  ophost_add_pack(NAME ${G_NAME} ${fwd} REQUIRES_DEVICES ${G_API} COMPONENT ${G_API})
  set(target ophost_plugin_${G_NAME})
  target_sources(${target} PRIVATE ${${id}_kernels})
  target_link_libraries(${target} PRIVATE ophost_${G_API}_runtime)
  target_compile_definitions(${target} PRIVATE OPH_GPU_DEVICE="${G_API}")
endfunction()
