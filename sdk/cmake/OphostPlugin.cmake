# CMake helpers for ophost plugins (installed with the ophost CMake package; `find_package(ophost)` includes
# this file).
#
#   ophost_add_pack(NAME acme VERSION 1.0.0 SOURCES acme.cpp [options below])
#       an operator pack (ophost_add_plugin with KIND operator-pack)
#   ophost_add_backend(NAME mydev VERSION 1.0.0 SOURCES mydev.cpp [options below])
#       a device backend (ophost_add_plugin with KIND device-backend)
#   ophost_add_plugin(NAME myops VERSION 1.0.0 [KIND operator-pack|device-backend]
#                     SOURCES a.cpp ... [LINK_LIBRARIES ...]
#                     [DESCRIPTION "..."] [LICENSE "..."]
#                     [REQUIRES_DEVICES cpu ...] [CPU_FEATURES avx2 ...]
#                     [PROBE_DEVICE_FILES /dev/x ...] [PROBE_LIBRARIES libxrt.so.1 ...]
#                     [OUTPUT_DIR dir] [COMPONENT name] [NO_INSTALL] [CHECK]
#                     [SAMPLES samples.json [data.npy ...]])
#
# Produces the module library `lib<NAME>.so` (a device backend: `lib<NAME>-backend.so`) in <OUTPUT_DIR>/<NAME>/ (default: the ophost build tree's
# lib/ophost/plugins inside the ophost project, else <CMAKE_BINARY_DIR>/plugins) with hidden visibility and a
# version script that exports only the entry symbol `oph_plugin_entry_v1`, then writes
# <NAME>/ophost-plugin.json next to it: name, version, ABI, ops and devices are read from the built library by
# `ophost pack manifest`, and the library's sha256 is filled in. The folder <OUTPUT_DIR>/<NAME> is a plugin
# ready to drop into any plugin root (`ophost run --plugin-path <OUTPUT_DIR>`).
#
# NAME and VERSION are also compiled in as OPH_PLUGIN_NAME / OPH_PLUGIN_VERSION (OPH_PACK uses them).
# DESCRIPTION and LICENSE may hold any text, ';' included. CHECK runs `ophost pack check` on the folder after
# every build (the build fails when it reports a finding or an op it could not run); a failed check removes the
# manifest and the library, so the folder is no plugin at all (a stale one would shadow a good installed pack of
# the same name) and the next build links and checks again. The old manifest is removed before each new one is
# written, so a failed `ophost pack manifest` leaves none either. SAMPLES names the pack's samples file for
# `ophost pack check` (attribute values and inputs per op, for ops with required attributes or host-memory
# inputs; see docs/writing-a-pack.md), copied beside the manifest as ophost-samples.json, followed by the data
# files it names (.npy), copied beside it under their own names; all are installed with the pack, and editing
# one relinks and re-checks the pack. Relative paths are relative to CMAKE_CURRENT_SOURCE_DIR. Installation (unless NO_INSTALL) goes to
# ${OPHOST_INSTALL_PLUGIN_DIR}/<NAME>, by default the host's own plugin folder relative to the install prefix
# (lib/ophost/plugins), as install COMPONENT (default `plugins`). The target is named ophost_plugin_<NAME>.
#
# With OPHOST_SPLIT_DEBUG_INFO on (the default in RelWithDebInfo builds without sanitizers, when objcopy is
# found), the library's debug info moves to .debug/<library>.debug beside it (linked with .gnu_debuglink, where
# gdb and addr2line look) before the manifest pins the sha256 of the stripped library; that file installs as
# COMPONENT <component>-dbgsym. ophost_split_debug_info(TARGET COMPONENT DESTINATION) does the same for any
# library or executable.
include_guard(GLOBAL)

set(_OPHOST_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
# The samples file `ophost pack check` reads from a plugin folder (beside ophost-plugin.json).
set(_OPHOST_SAMPLES_FILE "ophost-samples.json")

# The ophost command used to write manifests: the in-tree target when building ophost itself, else the one
# imported by find_package(ophost).
function(_ophost_tool out_var target)
  if(TARGET ophost)
    set(${out_var} "$<TARGET_FILE:ophost>" PARENT_SCOPE)
    add_dependencies(${target} ophost)
  elseif(TARGET ophost::ophost)
    set(${out_var} "$<TARGET_FILE:ophost::ophost>" PARENT_SCOPE)
  else()
    message(FATAL_ERROR "ophost plugins: the ophost command is needed to write manifests; "
                        "call find_package(ophost) first")
  endif()
endfunction()

# Text for one argument of add_custom_command: ';' would split it into several arguments, so each one becomes
# the generator expression $<SEMICOLON>, which is expanded after the command line is split.
function(_ophost_escape_arg out_var text)
  string(REPLACE ";" "$<SEMICOLON>" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

function(ophost_add_plugin)
  # PARSE_ARGV keeps a quoted value with ';' in it as one value (plain ${ARGN} would split it).
  cmake_parse_arguments(PARSE_ARGV 0 P "NO_INSTALL;CHECK" "NAME;VERSION;KIND;DESCRIPTION;LICENSE;OUTPUT_DIR;COMPONENT"
                        "SOURCES;LINK_LIBRARIES;REQUIRES_DEVICES;CPU_FEATURES;PROBE_DEVICE_FILES;PROBE_LIBRARIES;SAMPLES")
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ophost_add_plugin(${P_NAME}): unknown arguments: ${P_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT P_NAME OR NOT P_VERSION OR NOT P_SOURCES)
    message(FATAL_ERROR "ophost_add_plugin: NAME, VERSION and SOURCES are required")
  endif()
  if(NOT P_NAME MATCHES "^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    message(FATAL_ERROR "ophost_add_plugin: NAME '${P_NAME}' must be letters, digits, '_', '.', '-' "
                        "(it names the folder, the library and the target)")
  endif()
  if(NOT P_VERSION MATCHES "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)([-+][0-9A-Za-z.+-]*)?$")
    message(FATAL_ERROR "ophost_add_plugin(${P_NAME}): VERSION '${P_VERSION}' is not semver (MAJOR.MINOR.PATCH)")
  endif()
  if(NOT P_KIND)
    set(P_KIND operator-pack)
  endif()
  if(NOT P_KIND STREQUAL "operator-pack" AND NOT P_KIND STREQUAL "device-backend")
    message(FATAL_ERROR "ophost_add_plugin(${P_NAME}): KIND must be operator-pack or device-backend")
  endif()
  if(NOT P_COMPONENT)
    set(P_COMPONENT plugins)
  endif()
  if(NOT DEFINED P_LICENSE OR P_LICENSE STREQUAL "")
    set(P_LICENSE "unspecified")
  endif()
  if(NOT P_OUTPUT_DIR)
    if(DEFINED OPHOST_BUILD_PLUGIN_DIR)
      set(P_OUTPUT_DIR "${OPHOST_BUILD_PLUGIN_DIR}")
    else()
      set(P_OUTPUT_DIR "${CMAKE_BINARY_DIR}/plugins")
    endif()
  endif()
  set(dir "${P_OUTPUT_DIR}/${P_NAME}")
  set(target ophost_plugin_${P_NAME})
  # Backends are named after device runtimes (cuda, hip, ...): their file gets a suffix so that it never reads
  # like the vendor's own library (libcuda.so is NVIDIA's driver).
  set(output_name ${P_NAME})
  if(P_KIND STREQUAL "device-backend")
    set(output_name ${P_NAME}-backend)
  endif()

  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE ophost::sdk ${P_LINK_LIBRARIES})
  target_compile_definitions(${target} PRIVATE OPH_PLUGIN_NAME="${P_NAME}" OPH_PLUGIN_VERSION="${P_VERSION}")
  set(vscript "${CMAKE_CURRENT_BINARY_DIR}/${target}.map")
  file(CONFIGURE OUTPUT "${vscript}" CONTENT "{\n  global: oph_plugin_entry_v1;\n  local: *;\n};\n")
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${output_name}
    PREFIX "lib"
    SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY "${dir}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    # The manifest pins the library's sha256: the installed file must be byte-identical to the built one,
    # so no RPATH is rewritten at install time.
    SKIP_BUILD_RPATH ON
    BUILD_WITH_INSTALL_RPATH ON
    INSTALL_RPATH "")
  target_link_options(${target} PRIVATE "LINKER:--version-script=${vscript}" "LINKER:--no-undefined")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${vscript}")

  # Manifest generation: `ophost pack manifest` loads the library, reads its op and device tables and
  # writes the manifest with the sha256 of the library.
  _ophost_tool(tool ${target})
  _ophost_escape_arg(license "${P_LICENSE}")
  set(args --library "$<TARGET_FILE:${target}>" --kind ${P_KIND} --license "${license}"
           --out "${dir}/ophost-plugin.json")
  if(NOT "${P_DESCRIPTION}" STREQUAL "")
    _ophost_escape_arg(description "${P_DESCRIPTION}")
    list(APPEND args --description "${description}")
  endif()
  foreach(d IN LISTS P_REQUIRES_DEVICES)
    list(APPEND args --requires-device ${d})
  endforeach()
  foreach(f IN LISTS P_CPU_FEATURES)
    list(APPEND args --cpu-feature ${f})
  endforeach()
  foreach(f IN LISTS P_PROBE_DEVICE_FILES)
    list(APPEND args --probe-device-file ${f})
  endforeach()
  foreach(l IN LISTS P_PROBE_LIBRARIES)
    list(APPEND args --probe-library ${l})
  endforeach()
  # Samples for pack check: the samples file as <dir>/ophost-samples.json, its data files beside it.
  set(samples_cmd)
  set(sample_files)
  foreach(f IN LISTS P_SAMPLES)
    get_filename_component(f "${f}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${f}")
      message(FATAL_ERROR "ophost_add_plugin(${P_NAME}): SAMPLES file '${f}' does not exist")
    endif()
    list(APPEND sample_files "${f}")
  endforeach()
  list(LENGTH sample_files n_samples)
  if(n_samples GREATER 0)
    list(GET sample_files 0 samples_json)
    if(NOT samples_json MATCHES "\\.json$")
      message(FATAL_ERROR "ophost_add_plugin(${P_NAME}): SAMPLES starts with the samples file (.json), then the "
                          "data files it names; '${samples_json}' is not a .json file")
    endif()
    set(samples_cmd COMMAND ${CMAKE_COMMAND} -E copy "${samples_json}" "${dir}/${_OPHOST_SAMPLES_FILE}")
    set(sample_data "${sample_files}")
    list(REMOVE_AT sample_data 0)
    if(sample_data)
      list(APPEND samples_cmd COMMAND ${CMAKE_COMMAND} -E copy ${sample_data} "${dir}/")
    endif()
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${sample_files})
  endif()
  set(check_cmd)
  if(P_CHECK)
    # A failed check removes the manifest and the library (see above).
    set(check_cmd COMMAND ${CMAKE_COMMAND} "-DOPHOST=${tool}" "-DDIR=${dir}" "-DLIBRARY=$<TARGET_FILE:${target}>"
                          -P "${_OPHOST_PLUGIN_CMAKE_DIR}/OphostPackCheck.cmake")
  endif()
  # Debug info split off first: the manifest pins the sha256 of the library as installed.
  _ophost_split_debug_commands(split_cmds ${target})
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E rm -f "${dir}/ophost-plugin.json"
    ${split_cmds}
    ${samples_cmd}
    COMMAND ${tool} pack manifest ${args}
    ${check_cmd}
    COMMENT "ophost: writing manifest for plugin ${P_NAME}"
    VERBATIM)
  set_property(TARGET ${target} APPEND PROPERTY ADDITIONAL_CLEAN_FILES "${dir}/ophost-plugin.json")

  if(NOT P_NO_INSTALL)
    if(NOT DEFINED OPHOST_INSTALL_PLUGIN_DIR)
      set(OPHOST_INSTALL_PLUGIN_DIR "lib/ophost/plugins")
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION "${OPHOST_INSTALL_PLUGIN_DIR}/${P_NAME}" COMPONENT ${P_COMPONENT})
    install(FILES "${dir}/ophost-plugin.json" DESTINATION "${OPHOST_INSTALL_PLUGIN_DIR}/${P_NAME}"
            COMPONENT ${P_COMPONENT})
    if(n_samples GREATER 0)
      install(FILES "${samples_json}" RENAME "${_OPHOST_SAMPLES_FILE}"
              DESTINATION "${OPHOST_INSTALL_PLUGIN_DIR}/${P_NAME}" COMPONENT ${P_COMPONENT})
      if(sample_data)
        install(FILES ${sample_data} DESTINATION "${OPHOST_INSTALL_PLUGIN_DIR}/${P_NAME}" COMPONENT ${P_COMPONENT})
      endif()
    endif()
    if(split_cmds)
      install(FILES "${dir}/.debug/$<TARGET_FILE_NAME:${target}>.debug"
              DESTINATION "${OPHOST_INSTALL_PLUGIN_DIR}/${P_NAME}/.debug" COMPONENT ${P_COMPONENT}-dbgsym)
    endif()
  endif()
endfunction()

# Whether debug info is split off (see above): the user's OPHOST_SPLIT_DEBUG_INFO, else on for RelWithDebInfo
# builds without -fsanitize when objcopy exists.
function(_ophost_split_debug_enabled out_var)
  set(on OFF)
  if(DEFINED OPHOST_SPLIT_DEBUG_INFO)
    set(on ${OPHOST_SPLIT_DEBUG_INFO})
  elseif(CMAKE_BUILD_TYPE STREQUAL "RelWithDebInfo" AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize"
         AND NOT CMAKE_C_FLAGS MATCHES "-fsanitize")
    set(on ON)
  endif()
  if(on AND NOT CMAKE_OBJCOPY)
    set(on OFF)
  endif()
  set(${out_var} ${on} PARENT_SCOPE)
endfunction()

# POST_BUILD commands that move `target`'s debug info to $<TARGET_FILE_DIR>/.debug/<file>.debug (empty when
# splitting is off).
function(_ophost_split_debug_commands out_var target)
  _ophost_split_debug_enabled(on)
  if(NOT on)
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  set(f "$<TARGET_FILE:${target}>")
  set(dbg "$<TARGET_FILE_DIR:${target}>/.debug/$<TARGET_FILE_NAME:${target}>.debug")
  set(${out_var}
      COMMAND ${CMAKE_COMMAND} -E make_directory "$<TARGET_FILE_DIR:${target}>/.debug"
      COMMAND ${CMAKE_OBJCOPY} --only-keep-debug "${f}" "${dbg}"
      COMMAND ${CMAKE_OBJCOPY} --strip-debug "--add-gnu-debuglink=${dbg}" "${f}"
      PARENT_SCOPE)
endfunction()

# ophost_split_debug_info(TARGET t COMPONENT c DESTINATION d): for a library or executable installed to d as
# component c, splits its debug info off after each link (when enabled) and installs it to d/.debug as
# component c-dbgsym.
function(ophost_split_debug_info)
  cmake_parse_arguments(PARSE_ARGV 0 S "" "TARGET;COMPONENT;DESTINATION" "")
  _ophost_split_debug_commands(cmds ${S_TARGET})
  if(NOT cmds)
    return()
  endif()
  add_custom_command(TARGET ${S_TARGET} POST_BUILD ${cmds} VERBATIM)
  install(FILES "$<TARGET_FILE_DIR:${S_TARGET}>/.debug/$<TARGET_FILE_NAME:${S_TARGET}>.debug"
          DESTINATION "${S_DESTINATION}/.debug" COMPONENT ${S_COMPONENT}-dbgsym)
endfunction()

# ophost_add_pack(NAME ... VERSION ... SOURCES ... [options of ophost_add_plugin]): an operator pack.
function(ophost_add_pack)
  cmake_parse_arguments(PARSE_ARGV 0 A "" "KIND" "")
  if(DEFINED A_KIND AND NOT A_KIND STREQUAL "operator-pack")
    message(FATAL_ERROR "ophost_add_pack: KIND is always operator-pack (use ophost_add_backend for a device)")
  endif()
  _ophost_forward_plugin(operator-pack ${A_UNPARSED_ARGUMENTS})
endfunction()

# ophost_add_backend(NAME ... VERSION ... SOURCES ... [options of ophost_add_plugin]): a device backend.
function(ophost_add_backend)
  cmake_parse_arguments(PARSE_ARGV 0 A "" "KIND" "")
  if(DEFINED A_KIND AND NOT A_KIND STREQUAL "device-backend")
    message(FATAL_ERROR "ophost_add_backend: KIND is always device-backend (use ophost_add_pack for ops)")
  endif()
  _ophost_forward_plugin(device-backend ${A_UNPARSED_ARGUMENTS})
endfunction()

# Forwards arguments to ophost_add_plugin keeping values with ';' in one piece.
function(_ophost_forward_plugin kind)
  set(fwd)
  math(EXPR last "${ARGC} - 1")
  foreach(i RANGE 1 ${last})
    string(REPLACE ";" "\\;" a "${ARGV${i}}")
    list(APPEND fwd "${a}")
  endforeach()
  ophost_add_plugin(KIND ${kind} ${fwd})
endfunction()
