# ctest `installed_package`: installs the built vkconv into a fresh prefix, then builds and runs
# tests/consumer against it twice: through its CMake package (find_package + vkconv::vkconv) and through
# its pkg-config file (where pkg-config is installed). Exit code 77 of a consumer (no Vulkan device)
# becomes ctest's skip.
# With -DSHARED=ON it first builds vkconv as a shared library (library only) from SOURCE_DIR, checks that the
# library exports nothing but the public API (cmake/check_symbols.cmake), and installs that instead.
# cmake -DBUILD_DIR=<vkconv build> -DSOURCE_DIR=<vkconv source> -DWORK_DIR=<scratch> -DCXX=<compiler>
#       [-DSHARED=ON -DNM=<nm>] -P ...
# Everything but a shared build from an earlier run (rebuilt incrementally: the suite runs once per device).
file(REMOVE_RECURSE "${WORK_DIR}/prefix" "${WORK_DIR}/consumer" "${WORK_DIR}/consumer_pkgconfig")
set(prefix "${WORK_DIR}/prefix")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(result EQUAL 77)
    message("${what}: skipped (no Vulkan device)\n${err}")
    message(FATAL_ERROR "VKCONV_SKIP")
  endif()
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} failed (${result}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ${out}")
endfunction()

set(library lib/libvkconv.a)
if(SHARED)
  set(BUILD_DIR "${WORK_DIR}/build")
  run("configure a shared build" ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${BUILD_DIR}" -DBUILD_SHARED_LIBS=ON
      -DVKCONV_BUILD_TESTS=OFF -DVKCONV_BUILD_SAMPLES=OFF -DCMAKE_BUILD_TYPE=Release)
  cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
  run("build the shared library" ${CMAKE_COMMAND} --build "${BUILD_DIR}" -j ${cores})
  run("check its symbols" ${CMAKE_COMMAND} -DNM=${NM} -DLIBRARY=${BUILD_DIR}/libvkconv.so
      -P "${SOURCE_DIR}/cmake/check_symbols.cmake")
  set(library lib/libvkconv.so)
endif()

run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(file include/vkconv/vkconv.hpp include/vkconv/version.hpp ${library} lib/cmake/vkconv/vkconvConfig.cmake
             lib/pkgconfig/vkconv.pc)
  if(NOT EXISTS "${prefix}/${file}")
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()

run("configure the consumer" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/consumer"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/consumer")
run("run the consumer (CMake package)" "${WORK_DIR}/consumer/consumer")

find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
  set(static --static)
  if(SHARED)
    set(static "")
  endif()
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${static} vkconv OUTPUT_VARIABLE flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "pkg-config does not know the installed vkconv")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  if(SHARED)
    list(APPEND flags "-Wl,-rpath,${prefix}/lib")
  endif()
  run("build the consumer with pkg-config" ${CXX} -O1 "${SOURCE_DIR}/tests/consumer/main.cpp" ${flags}
      -o "${WORK_DIR}/consumer_pkgconfig")
  run("run the consumer (pkg-config)" "${WORK_DIR}/consumer_pkgconfig")
endif()
