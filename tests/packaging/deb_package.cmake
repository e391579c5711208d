# CTest driver (cmake -P): CPack packages of the current build tree (no rebuild), the runtime .deb alone
# unpacked into a temporary root (no GPU runtime in its Depends, stripped libraries, no rejection), `ophost
# plugins` plus an example model run from it, then -dev on top (SDK) and -dbgsym's contents.
#
# Variables: BUILD_DIR SOURCE_DIR WORK_DIR ALLCLOSE
# Prints "SKIPPED: ..." (the test's SKIP_REGULAR_EXPRESSION) when dpkg-deb is not installed.
cmake_minimum_required(VERSION 3.25)

find_program(DPKG_DEB dpkg-deb)
if(NOT DPKG_DEB)
  message("SKIPPED: dpkg-deb is not installed (apt-get install dpkg); the .deb cannot be unpacked")
  return()
endif()
get_filename_component(cmake_bin "${CMAKE_COMMAND}" DIRECTORY)
find_program(CPACK cpack HINTS "${cmake_bin}" REQUIRED)

function(step name)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "[${name}] ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[${name}] failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/pkg")

# dpkg-shlibdeps (dpkg-dev) computes Depends; without it the package is still built, with no Depends.
set(extra)
find_program(DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NOT DPKG_SHLIBDEPS)
  message(STATUS "dpkg-shlibdeps not found: building the .deb without computed Depends")
  set(extra -D CPACK_DEBIAN_PACKAGE_SHLIBDEPS=OFF)
endif()
# CPACK_GENERATOR is "DEB;TGZ" in the config: one .deb per package (runtime, -dev, GPU backends, -dbgsym).
step(cpack "${CPACK}" --config "${BUILD_DIR}/CPackConfig.cmake" -B "${WORK_DIR}/pkg" ${extra})
file(GLOB runtime_deb "${WORK_DIR}/pkg/ophost_*.deb")
file(GLOB dev_deb "${WORK_DIR}/pkg/libophost-dev_*.deb")
file(GLOB dbg_deb "${WORK_DIR}/pkg/ophost-dbgsym_*.deb")
file(GLOB tgzs "${WORK_DIR}/pkg/*.tar.gz")
foreach(v IN ITEMS runtime_deb dev_deb tgzs)
  list(LENGTH ${v} n)
  if(NOT n EQUAL 1)
    file(GLOB all "${WORK_DIR}/pkg/*")
    message(FATAL_ERROR "expected one ${v} in ${WORK_DIR}/pkg, found: ${all}")
  endif()
endforeach()
step(info "${DPKG_DEB}" --info "${runtime_deb}")
message(STATUS "[info]\n${step_out}")
# The runtime package never pulls in a GPU runtime.
step(depends "${DPKG_DEB}" -f "${runtime_deb}" Depends)
if(step_out MATCHES "amdhip|hsa|cuda|cublas")
  message(FATAL_ERROR "the runtime package depends on a GPU runtime: ${step_out}")
endif()

# Unpack the runtime package alone into a temporary root: the host finds its plugins relative to its executable.
set(root "${WORK_DIR}/root")
step(unpack "${DPKG_DEB}" -x "${runtime_deb}" "${root}")
foreach(f IN ITEMS usr/bin/ophost usr/lib/ophost/plugins/onnx-core/ophost-plugin.json
                   usr/lib/ophost/plugins/cpu/ophost-plugin.json)
  if(NOT EXISTS "${root}/${f}")
    message(FATAL_ERROR "${f} is not in the runtime .deb")
  endif()
endforeach()
foreach(f IN ITEMS usr/include/ophost/ophost_plugin.h usr/lib/ophost/plugins/hip usr/lib/ophost/plugins/cuda)
  if(EXISTS "${root}/${f}")
    message(FATAL_ERROR "${f} is in the runtime .deb; it belongs to -dev or a GPU package")
  endif()
endforeach()
# Shipped stripped: no DWARF in the plugin libraries (their debug info is in ophost-dbgsym when split).
find_program(READELF readelf)
if(READELF)
  step(sections "${READELF}" -S "${root}/usr/lib/ophost/plugins/onnx-core/libonnx-core.so")
  if(step_out MATCHES "\\.debug_info")
    message(FATAL_ERROR "libonnx-core.so in the runtime .deb still carries .debug_info")
  endif()
endif()

step(plugins "${root}/usr/bin/ophost" plugins -v)
message(STATUS "[plugins]\n${step_out}")
foreach(p IN ITEMS onnx-core myops cpu)
  if(NOT step_out MATCHES "loaded    ${p} ")
    message(FATAL_ERROR "`ophost plugins` from the .deb did not load ${p}")
  endif()
endforeach()
if(NOT step_out MATCHES " 0 rejected\n")
  message(FATAL_ERROR "`ophost plugins` from the runtime .deb alone reports a rejection")
endif()
# Every library loaded is the unpacked one (the build tree's plugins are not reachable).
string(REGEX MATCHALL "library  [^\n]*" libraries "${step_out}")
foreach(l IN LISTS libraries)
  string(FIND "${l}" "library  ${root}/usr/lib/ophost/plugins/" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "`ophost plugins` from the .deb loaded a library from outside it: ${l}")
  endif()
endforeach()

# -dev on top: the SDK and the CMake package.
step(unpack_dev "${DPKG_DEB}" -x "${dev_deb}" "${root}")
foreach(f IN ITEMS usr/include/ophost/ophost_plugin.h usr/lib/cmake/ophost/ophostConfig.cmake)
  if(NOT EXISTS "${root}/${f}")
    message(FATAL_ERROR "${f} is not in the -dev .deb")
  endif()
endforeach()
if(dbg_deb)
  step(dbg_contents "${DPKG_DEB}" -c "${dbg_deb}")
  if(NOT step_out MATCHES "plugins/onnx-core/\\.debug/libonnx-core\\.so\\.debug")
    message(FATAL_ERROR "ophost-dbgsym does not hold onnx-core's debug info:\n${step_out}")
  endif()
endif()

# The .tar.gz holds the same tree (relocatable: bin/, lib/, include/ at its top).
execute_process(COMMAND "${CMAKE_COMMAND}" -E tar tf "${tgzs}" OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT listing MATCHES "/bin/ophost\n" OR NOT listing MATCHES "/lib/ophost/plugins/onnx-core/ophost-plugin.json")
  message(FATAL_ERROR "${tgzs} does not hold bin/ophost and lib/ophost/plugins/onnx-core")
endif()
message(STATUS "[tgz] ${tgzs}: bin/ophost, lib/ophost/plugins/... present")

set(models "${SOURCE_DIR}/examples/models")
step(run "${root}/usr/bin/ophost" run "${models}/mixed_small.onnx" --input "x=${models}/mixed_small.input.x.npy"
     --output-dir "${WORK_DIR}/out")
message(STATUS "[run]\n${step_out}")
step(compare "${ALLCLOSE}" "${WORK_DIR}/out/y.npy" "${models}/mixed_small.output.y.npy" 1e-4 1e-5)
message(STATUS "[compare] ${step_out}")

# python3-ophost (when the Python module was built): unpacked on top of the runtime package, `import ophost` from
# the unpacked root finds that root's libophost (RUNPATH) and plugins (relative to the package), and runs the
# example model.
file(GLOB py_deb "${WORK_DIR}/pkg/python3-ophost_*.deb")
if(py_deb AND CXX_FLAGS MATCHES "-fsanitize=")
  # Debian's python3 cannot load a sanitizer-instrumented extension; the regular build checks this step.
  message(STATUS "[python] not imported: a sanitizer build (${CXX_FLAGS})")
elseif(py_deb)
  step(py_depends "${DPKG_DEB}" -f "${py_deb}" Depends)
  if(NOT step_out MATCHES "ophost \\(= " OR NOT step_out MATCHES "python3-numpy" OR NOT step_out MATCHES "python3 \\(<< ")
    message(FATAL_ERROR "python3-ophost's Depends lacks ophost, python3-numpy or the Python minor: ${step_out}")
  endif()
  step(unpack_python "${DPKG_DEB}" -x "${py_deb}" "${root}")
  find_program(DEBIAN_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
  set(py [=[
import os, sys, numpy as np, ophost
root, models = sys.argv[1], sys.argv[2]
assert ophost.__file__.startswith(root), ophost.__file__
libs = [p["library"] for p in ophost.plugins() if p["loaded"]]
assert libs and all(l.startswith(root + "/usr/lib/ophost/plugins/") for l in libs), libs
s = ophost.InferenceSession(os.path.join(models, "mixed_small.onnx"))
(y,) = s.run(None, {"x": np.load(os.path.join(models, "mixed_small.input.x.npy"))})
np.testing.assert_allclose(y, np.load(os.path.join(models, "mixed_small.output.y.npy")), rtol=1e-4, atol=1e-5)
print("python3-ophost:", ophost.__file__, ophost.get_available_providers())
]=])
  step(python "${CMAKE_COMMAND}" -E env "PYTHONPATH=${root}/usr/lib/python3/dist-packages"
       "${DEBIAN_PYTHON}" -c "${py}" "${root}" "${models}")
  message(STATUS "[python]\n${step_out}")
else()
  message(STATUS "[python] no python3-ophost package (the module was not built)")
endif()
