# CTest driver (cmake -P): the tutorial's examples (docs/writing-a-pack.md) built from the *installed* SDK.
#
#   1. cmake --install <build tree> --prefix <work>/prefix; the tutorial, its examples, OphostPackCheck.cmake and
#      ophost-sdk.pc are installed
#   2. pkg-config: ophost-sdk has Cflags and no Libs (packs never link libophost), ophost (embedders) links it;
#      the acme example pack built with the compiler and ophost-sdk.pc alone, its manifest written and checked
#   3. <prefix>/share/doc/ophost/examples/pack-tutorial configured against the prefix only and built: its
#      ophost_add_pack(... CHECK SAMPLES ...) runs `ophost pack check` with the samples in the build
#   4. pack check again (clean; every sample named), and with --no-samples (the ops that need them are not run)
#   5. model.onnx and dynamic.onnx run through the pack, outputs against the float64 references; inspect
#      --memory names the value that runs in place, inspect --kernels the Poly kernel's implementation
#   6. the pack installed with its samples; pack check on the installed folder is clean
#   7. the same source with CHECK but without SAMPLES (tests/packaging/check_fails): the build fails, twice,
#      leaving neither manifest nor library, and the good pack of the same name in a later root is the one loaded
#
# Variables: BUILD_DIR SOURCE_DIR WORK_DIR ALLCLOSE GENERATOR CXX_COMPILER C_COMPILER [MAKE_PROGRAM]
cmake_minimum_required(VERSION 3.25)

include("${CMAKE_CURRENT_LIST_DIR}/script_steps.cmake")

set(prefix "${WORK_DIR}/prefix")
set(doc "${prefix}/share/doc/ophost")
set(tutorial_src "${doc}/examples/pack-tutorial")
set(tutorial_build "${WORK_DIR}/tutorial-build")
set(ophost "${prefix}/bin/ophost")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# 1. install
step(NAME install COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f IN ITEMS share/doc/ophost/writing-a-pack.md share/doc/ophost/ABI.md
                   share/doc/ophost/examples/pack-tutorial/tutorial.cpp
                   share/doc/ophost/examples/pack-tutorial/samples.json
                   share/doc/ophost/examples/third-party-pack/acme.cpp
                   lib/cmake/ophost/OphostPackCheck.cmake lib/pkgconfig/ophost-sdk.pc lib/pkgconfig/ophost.pc)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "[install] ${prefix}/${f} is missing")
  endif()
endforeach()

# 2. pkg-config
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
step(NAME pkg-config COMMAND "${PKG_CONFIG}" --cflags ophost-sdk OUTPUT_VARIABLE sdk_cflags)
step(NAME pkg-config COMMAND "${PKG_CONFIG}" --libs ophost-sdk OUTPUT_VARIABLE sdk_libs)
step(NAME pkg-config COMMAND "${PKG_CONFIG}" --libs ophost OUTPUT_VARIABLE embed_libs)
step(NAME pkg-config COMMAND "${PKG_CONFIG}" --variable=ophost ophost-sdk OUTPUT_VARIABLE pc_ophost)
step(NAME pkg-config COMMAND "${PKG_CONFIG}" --variable=abi_major ophost-sdk OUTPUT_VARIABLE pc_abi_major)
foreach(v IN ITEMS sdk_cflags sdk_libs embed_libs pc_ophost pc_abi_major)
  string(STRIP "${${v}}" ${v})
endforeach()
if(NOT sdk_libs STREQUAL "")
  message(FATAL_ERROR "[pkg-config] ophost-sdk must have no Libs (packs never link libophost), has '${sdk_libs}'")
endif()
if(NOT embed_libs MATCHES "-lophost")
  message(FATAL_ERROR "[pkg-config] ophost (for embedders) should link -lophost, has '${embed_libs}'")
endif()
string(REGEX REPLACE "^-I" "" sdk_include "${sdk_cflags}")
if(NOT EXISTS "${sdk_include}/ophost/ophost_plugin.hpp" OR NOT EXISTS "${pc_ophost}" OR NOT pc_abi_major STREQUAL "1")
  message(FATAL_ERROR "[pkg-config] Cflags '${sdk_cflags}', ophost '${pc_ophost}', abi_major '${pc_abi_major}' "
                      "do not point into ${prefix}")
endif()
message(STATUS "[pkg-config] ophost-sdk: Cflags ${sdk_cflags}, no Libs; ophost: ${embed_libs}")
# The acme pack with the compiler and ophost-sdk.pc alone (docs/writing-a-pack.md, "Without CMake").
set(pc_pack "${WORK_DIR}/pkgconfig-plugins/acme")
file(MAKE_DIRECTORY "${pc_pack}")
file(WRITE "${WORK_DIR}/exports.map" "{\n  global: oph_plugin_entry_v1;\n  local: *;\n};\n")
step(NAME "pkg-config build"
     COMMAND "${CXX_COMPILER}" -std=c++20 -O2 -fPIC -shared -fvisibility=hidden -fvisibility-inlines-hidden
             ${sdk_cflags} "-DOPH_PLUGIN_NAME=\"acme\"" "-DOPH_PLUGIN_VERSION=\"1.0.0\""
             "${doc}/examples/third-party-pack/acme.cpp" -o "${pc_pack}/libacme.so"
             "-Wl,--version-script=${WORK_DIR}/exports.map" -Wl,--no-undefined)
step(NAME "pkg-config manifest"
     COMMAND "${pc_ophost}" pack manifest --library "${pc_pack}/libacme.so" --kind operator-pack
             --out "${pc_pack}/ophost-plugin.json")
step(NAME "pkg-config pack check" COMMAND "${ophost}" pack check "${pc_pack}" OUTPUT_VARIABLE out)
expect_contains("pkg-config pack check" "${out}" "result: clean")

# 3. the tutorial from the installed copy, against the prefix only (no package registry, no build tree)
out_of_tree_configure_args(cfg)
step(NAME configure COMMAND "${CMAKE_COMMAND}" -S "${tutorial_src}" -B "${tutorial_build}" ${cfg})
step(NAME build COMMAND "${CMAKE_COMMAND}" --build "${tutorial_build}" OUTPUT_VARIABLE out)
expect_contains(build "${out}" "ophost pack check ${tutorial_build}/plugins/tutorial")
expect_contains(build "${out}" "result: clean")
set(plugin "${tutorial_build}/plugins/tutorial")
foreach(f IN ITEMS ophost-plugin.json libtutorial.so ophost-samples.json pad_rows_x.npy)
  if(NOT EXISTS "${plugin}/${f}")
    message(FATAL_ERROR "[build] ${plugin}/${f} is missing")
  endif()
endforeach()

# 4. pack check with and without the samples
step(NAME "pack check" COMMAND "${ophost}" pack check "${plugin}" OUTPUT_VARIABLE out)
message(STATUS "[pack check]\n${out}")
foreach(want IN ITEMS
        "ok       samples ${plugin}/ophost-samples.json: 3 of 3 sample(s) read, for 2 op(s)"
        "ok       tut::repeat_rows [1+] on cpu, sample 1 of ophost-samples.json: run check (5 runs, float32, the sample's attributes)"
        "ok       tut::row_argmax [1+] on cpu: run check ("
        "ok       tut::poly [1+] on cpu: run check (6 runs, float32, 6 in place)"
        "ok       tut::positive [1+] on cpu: run check (6 runs, float32)"
        "ok       tut::pad_rows [1+] on cpu, sample 1 of ophost-samples.json: run check (the sample's inputs)"
        "ok       tut::pad_rows [1+] on cpu, sample 2 of ophost-samples.json: run check (the sample's inputs)"
        "result: clean")
  expect_contains("pack check" "${out}" "${want}")
endforeach()
step(NAME "pack check --no-samples" COMMAND "${ophost}" pack check "${plugin}" --no-samples EXPECT_FAIL 1
     OUTPUT_VARIABLE out)
expect_contains("pack check --no-samples" "${out}" "tut::repeat_rows [1+] on cpu: not run: attribute 'times' is required")
expect_contains("pack check --no-samples" "${out}" "tut::pad_rows [1+] on cpu: not run: input 1 'rows' is a host-memory")
expect_contains("pack check --no-samples" "${out}" "result: incomplete: 2 op(s) not run")

# 5. the models
step(NAME run COMMAND "${ophost}" run "${tutorial_src}/model.onnx" --plugin-path "${tutorial_build}/plugins"
                      --input "x=${tutorial_src}/model.input.x.npy" --output-dir "${WORK_DIR}/out")
step(NAME run COMMAND "${ophost}" run "${tutorial_src}/dynamic.onnx" --plugin-path "${tutorial_build}/plugins"
                      --input "x=${tutorial_src}/model.input.x.npy" --input "rows=${tutorial_src}/dynamic.input.rows.npy"
                      --output-dir "${WORK_DIR}/out")
foreach(o IN ITEMS model.values model.indices model.padded dynamic.pos dynamic.cut)
  string(REPLACE "." ";" parts "${o}")
  list(GET parts 0 m)
  list(GET parts 1 name)
  step(NAME compare COMMAND "${ALLCLOSE}" "${WORK_DIR}/out/${name}.npy" "${tutorial_src}/${m}.output.${name}.npy"
                            1e-5 1e-6 OUTPUT_VARIABLE cmp)
  message(STATUS "[compare] ${m}.onnx ${name}: ${cmp}")
endforeach()
step(NAME inspect COMMAND "${ophost}" inspect "${tutorial_src}/model.onnx" --plugin-path "${tutorial_build}/plugins"
                          --memory --kernels OUTPUT_VARIABLE out)
message(STATUS "[inspect]\n${out}")
expect_contains(inspect "${out}" "1 in place\n  in place: 'p' in the buffer of 't' (node 'poly', tut::poly)\n")
expect_contains(inspect "${out}" "horner, degree 2")

# 6. installed with its samples
step(NAME "install pack" COMMAND "${CMAKE_COMMAND}" --install "${tutorial_build}" --prefix "${WORK_DIR}/pack-prefix")
set(installed "${WORK_DIR}/pack-prefix/lib/ophost/plugins/tutorial")
step(NAME "pack check installed" COMMAND "${ophost}" pack check "${installed}" OUTPUT_VARIABLE out)
expect_contains("pack check installed" "${out}" "3 of 3 sample(s) read")
expect_contains("pack check installed" "${out}" "result: clean")

# 7. CHECK without the samples: the build fails and leaves no plugin folder behind
set(bad_build "${WORK_DIR}/check-fails-build")
set(bad_root "${WORK_DIR}/check-fails-plugins")
step(NAME "configure check_fails" COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/packaging/check_fails"
     -B "${bad_build}" ${cfg} "-DTUTORIAL_SOURCE=${tutorial_src}/tutorial.cpp" "-DPLUGIN_ROOT=${bad_root}")
foreach(attempt IN ITEMS 1 2)  # the second build must not pass for want of anything to rebuild
  step(NAME "build check_fails (${attempt})" COMMAND "${CMAKE_COMMAND}" --build "${bad_build}" EXPECT_FAIL 1
       OUTPUT_VARIABLE out)
  expect_contains("build check_fails" "${out}" "result: incomplete: 2 op(s) not run")
  string(REGEX REPLACE "[ \n]+" " " flat "${out}")  # CMake wraps the message of OphostPackCheck.cmake
  expect_contains("build check_fails" "${flat}" "so that the folder is not taken for a plugin")
  foreach(f IN ITEMS ophost-plugin.json libtutorial.so)
    if(EXISTS "${bad_root}/tutorial/${f}")
      message(FATAL_ERROR "[build check_fails] ${bad_root}/tutorial/${f} was left behind after the failed check")
    endif()
  endforeach()
endforeach()
# The failed folder comes first, the good pack of the same name second: the good one loads.
step(NAME plugins COMMAND "${ophost}" plugins -v --plugin-path "${bad_root}" --plugin-path "${tutorial_build}/plugins"
     OUTPUT_VARIABLE out)
message(STATUS "[plugins]\n${out}")
expect_contains(plugins "${out}" "${tutorial_build}/plugins/tutorial/ophost-plugin.json")
string(FIND "${out}" "${bad_root}/tutorial" at)
if(NOT at LESS 0)
  message(FATAL_ERROR "[plugins] the failed build's folder ${bad_root}/tutorial is still seen:\n${out}")
endif()
step(NAME run COMMAND "${ophost}" run "${tutorial_src}/model.onnx" --plugin-path "${bad_root}"
                      --plugin-path "${tutorial_build}/plugins" --input "x=${tutorial_src}/model.input.x.npy"
                      --output-dir "${WORK_DIR}/out2")
