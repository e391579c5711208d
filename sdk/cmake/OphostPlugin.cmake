# ophost_add_plugin(): build an ophost plugin (operator pack or device backend) in one call.
#
#   ophost_add_plugin(NAME myops VERSION 1.0.0 [KIND operator-pack|device-backend]
#                     SOURCES a.cpp ... [LINK_LIBRARIES ...]
#                     [DESCRIPTION "..."] [LICENSE "..."]
#                     [REQUIRES_DEVICES cpu ...] [CPU_FEATURES avx2 ...]
#                     [OUTPUT_DIR dir] [NO_INSTALL])
#
# Produces the module library `lib<NAME>.so` in <OUTPUT_DIR>/<NAME>/ (default: the build tree's
# lib/ophost/plugins) with hidden visibility and a version script that exports only the entry symbol, then
# writes <NAME>/ophost-plugin.json next to it: ops and devices are read from the built library by
# `ophost pack manifest`, and the library's sha256 is filled in. The target is named ophost_plugin_<NAME>.
include_guard(GLOBAL)

set(_OPHOST_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(ophost_add_plugin)
  cmake_parse_arguments(P "NO_INSTALL" "NAME;VERSION;KIND;DESCRIPTION;LICENSE;OUTPUT_DIR"
                        "SOURCES;LINK_LIBRARIES;REQUIRES_DEVICES;CPU_FEATURES" ${ARGN})
  if(NOT P_NAME OR NOT P_VERSION OR NOT P_SOURCES)
    message(FATAL_ERROR "ophost_add_plugin: NAME, VERSION and SOURCES are required")
  endif()
  if(NOT P_KIND)
    set(P_KIND operator-pack)
  endif()
  if(NOT P_KIND STREQUAL "operator-pack" AND NOT P_KIND STREQUAL "device-backend")
    message(FATAL_ERROR "ophost_add_plugin(${P_NAME}): KIND must be operator-pack or device-backend")
  endif()
  if(NOT P_LICENSE)
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

  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE ophost::sdk ${P_LINK_LIBRARIES})
  target_compile_definitions(${target} PRIVATE OPH_PLUGIN_NAME="${P_NAME}" OPH_PLUGIN_VERSION="${P_VERSION}")
  set(vscript "${CMAKE_CURRENT_BINARY_DIR}/${target}.map")
  file(WRITE "${vscript}" "{\n  global: oph_plugin_entry_v1;\n  local: *;\n};\n")
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${P_NAME}
    PREFIX "lib"
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
  if(TARGET ophost)
    set(tool $<TARGET_FILE:ophost>)
    add_dependencies(${target} ophost)
  elseif(TARGET ophost::ophost)
    set(tool $<TARGET_FILE:ophost::ophost>)
  else()
    message(FATAL_ERROR "ophost_add_plugin: the ophost command is needed to write manifests (find_package(ophost))")
  endif()
  set(args --library "$<TARGET_FILE:${target}>" --kind ${P_KIND} --license "${P_LICENSE}"
           --out "${dir}/ophost-plugin.json")
  if(P_DESCRIPTION)
    list(APPEND args --description "${P_DESCRIPTION}")
  endif()
  foreach(d IN LISTS P_REQUIRES_DEVICES)
    list(APPEND args --requires-device ${d})
  endforeach()
  foreach(f IN LISTS P_CPU_FEATURES)
    list(APPEND args --cpu-feature ${f})
  endforeach()
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${tool} pack manifest ${args}
    COMMENT "ophost: writing manifest for plugin ${P_NAME}"
    VERBATIM)

  if(NOT P_NO_INSTALL)
    if(NOT DEFINED OPHOST_INSTALL_PLUGIN_DIR)
      set(OPHOST_INSTALL_PLUGIN_DIR "${CMAKE_INSTALL_LIBDIR}/ophost/plugins")
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION "${OPHOST_INSTALL_PLUGIN_DIR}/${P_NAME}" COMPONENT plugins)
    install(FILES "${dir}/ophost-plugin.json" DESTINATION "${OPHOST_INSTALL_PLUGIN_DIR}/${P_NAME}" COMPONENT plugins)
  endif()
endfunction()
