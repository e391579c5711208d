# CTest driver (cmake -P): the third-party pack example built against the *installed* tree.
#
#   1. cmake --install <build tree> --prefix <work>/prefix   (and check the installed layout)
#   2. configure examples/third-party-pack against that prefix (find_package(ophost 0.1 REQUIRED));
#      find_package(ophost 1.0) must fail (SameMajorVersion)
#   3. build it: ophost_add_pack writes plugins/acme/{libacme.so, ophost-plugin.json}
#   4. <prefix>/bin/ophost pack check plugins/acme  -> clean
#   5. <prefix>/bin/ophost run model.onnx --plugin-path <example build>/plugins --input x=...  -> reference
#
# Variables: BUILD_DIR SOURCE_DIR WORK_DIR ALLCLOSE GENERATOR CXX_COMPILER C_COMPILER [MAKE_PROGRAM]
# These are the commands of docs/writing-a-pack.md ("Build it against the installed SDK").
cmake_minimum_required(VERSION 3.25)

include("${CMAKE_CURRENT_LIST_DIR}/script_steps.cmake")

set(prefix "${WORK_DIR}/prefix")
set(example_src "${SOURCE_DIR}/examples/third-party-pack")
set(example_build "${WORK_DIR}/acme-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# 1. install
step(NAME install COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f IN ITEMS bin/ophost include/ophost/ophost_plugin.h include/ophost/ophost_plugin.hpp
                   include/ophost/sdk/status.hpp include/ophost/sdk/types.hpp include/ophost/sdk/attrs.hpp
                   include/ophost/sdk/infer.hpp include/ophost/sdk/kernel.hpp include/ophost/sdk/pack.hpp
                   include/ophost/runtime.hpp lib/cmake/ophost/ophostConfig.cmake
                   lib/cmake/ophost/ophostConfigVersion.cmake lib/cmake/ophost/OphostPlugin.cmake
                   lib/cmake/ophost/ophostTargets.cmake lib/pkgconfig/ophost.pc
                   lib/ophost/plugins/onnx-core/ophost-plugin.json lib/ophost/plugins/cpu/ophost-plugin.json
                   lib/ophost/plugins/myops/ophost-plugin.json)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "[install] ${prefix}/${f} is missing")
  endif()
endforeach()
file(GLOB libs "${prefix}/lib*/libophost.so*")
if(NOT libs)
  message(FATAL_ERROR "[install] libophost.so is missing under ${prefix}")
endif()
file(READ "${prefix}/lib/cmake/ophost/ophostConfigVersion.cmake" version_file)
if(NOT version_file MATCHES "SameMajorVersion|CVF_VERSION_MAJOR")
  message(FATAL_ERROR "[install] ophostConfigVersion.cmake is not SameMajorVersion")
endif()
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
  step(NAME pkg-config COMMAND "${PKG_CONFIG}" --cflags --libs ophost OUTPUT_VARIABLE pc_flags)
  step(NAME pkg-config COMMAND "${PKG_CONFIG}" --variable=plugindir ophost OUTPUT_VARIABLE pc_plugindir)
  string(STRIP "${pc_plugindir}" pc_plugindir)
  if(NOT EXISTS "${pc_plugindir}/onnx-core/ophost-plugin.json")
    message(FATAL_ERROR "[pkg-config] plugindir '${pc_plugindir}' does not hold the installed plugins")
  endif()
  string(STRIP "${pc_flags}" pc_flags)
  message(STATUS "[pkg-config] ${pc_flags}; plugindir ${pc_plugindir}")
endif()

# 2. configure against the prefix (nothing else: no package registry, no build tree)
out_of_tree_configure_args(cfg)
step(NAME configure COMMAND "${CMAKE_COMMAND}" -S "${example_src}" -B "${example_build}" ${cfg})

# SameMajorVersion: a request for ophost 1.0 must not accept this 0.x package.
file(WRITE "${WORK_DIR}/major/CMakeLists.txt"
     "cmake_minimum_required(VERSION 3.25)\nproject(m NONE)\nfind_package(ophost 1.0 REQUIRED)\n")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${WORK_DIR}/major" -B "${WORK_DIR}/major/build"
                        -DCMAKE_PREFIX_PATH=${prefix} -G "${GENERATOR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "version: 0\\.")
  message(FATAL_ERROR "[version] find_package(ophost 1.0) should have rejected ophost 0.x:\n${out}\n${err}")
endif()
message(STATUS "[version] find_package(ophost 1.0) rejects the installed 0.x package, as it should")

# 3. build
step(NAME build COMMAND "${CMAKE_COMMAND}" --build "${example_build}")
set(plugin "${example_build}/plugins/acme")
file(READ "${plugin}/ophost-plugin.json" manifest)
string(JSON desc GET "${manifest}" description)
string(JSON ops LENGTH "${manifest}" provides ops)
string(JSON op_name GET "${manifest}" provides ops 0 name)
string(JSON op_domain GET "${manifest}" provides ops 0 domain)
string(JSON sha GET "${manifest}" sha256)
file(SHA256 "${plugin}/libacme.so" actual_sha)
set(want_desc "acme::swish (y = x * sigmoid(beta * x); float32, CPU)")
if(NOT desc STREQUAL want_desc)
  message(FATAL_ERROR "[manifest] description is '${desc}', want '${want_desc}' (';' must survive)")
endif()
if(NOT ops EQUAL 1 OR NOT op_domain STREQUAL "acme" OR NOT op_name STREQUAL "swish" OR NOT sha STREQUAL actual_sha)
  message(FATAL_ERROR "[manifest] unexpected manifest:\n${manifest}")
endif()
message(STATUS "[manifest] acme::swish, sha256 ${sha}, description with ';' intact")

# 4. pack check
step(NAME "pack check" COMMAND "${prefix}/bin/ophost" pack check "${plugin}" OUTPUT_VARIABLE check_out)
message(STATUS "[pack check]\n${check_out}")
step(NAME "pack check" COMMAND "${prefix}/bin/ophost" pack check "${example_build}/plugins/acme_c" OUTPUT_VARIABLE check_out)
message(STATUS "[pack check]\n${check_out}")

# 5. run the model through the installed ophost with the example's plugin folder
step(NAME run COMMAND "${prefix}/bin/ophost" run "${example_src}/model.onnx" --plugin-path "${example_build}/plugins"
                      --input "x=${example_src}/model.input.x.npy" --output-dir "${WORK_DIR}/out"
     OUTPUT_VARIABLE run_out)
message(STATUS "[run]\n${run_out}")
step(NAME compare COMMAND "${ALLCLOSE}" "${WORK_DIR}/out/y.npy" "${example_src}/model.output.y.npy" 1e-5 1e-6
     OUTPUT_VARIABLE cmp)
message(STATUS "[compare] ${cmp}")
