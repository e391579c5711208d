# `ophost pack check` after a plugin's build (ophost_add_plugin(... CHECK), run as cmake -P):
#
#   cmake -DOPHOST=<ophost> -DDIR=<plugin folder> -DLIBRARY=<its library> -P OphostPackCheck.cmake
#
# Runs the check (its report goes to the build's output). When it fails, the manifest and the library (and its
# split-off debug info) are removed before the build step fails: the folder is then no plugin at all, so a stale
# copy cannot shadow a good installed pack of the same name, and the next build links and checks the pack again.
cmake_minimum_required(VERSION 3.25)
foreach(v IN ITEMS OPHOST DIR LIBRARY)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "OphostPackCheck.cmake: -D${v}=... is required")
  endif()
endforeach()
execute_process(COMMAND "${OPHOST}" pack check "${DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  get_filename_component(library_name "${LIBRARY}" NAME)
  file(REMOVE "${DIR}/ophost-plugin.json" "${LIBRARY}" "${DIR}/.debug/${library_name}.debug")
  message(FATAL_ERROR "ophost pack check ${DIR} failed (exit status ${rc}; the report is above). Removed "
                      "${DIR}/ophost-plugin.json and ${LIBRARY}, so that the folder is not taken for a plugin; "
                      "fix what the report says (an op not run needs its values in the pack's samples file: "
                      "ophost_add_pack(... SAMPLES samples.json)) and build again.")
endif()
