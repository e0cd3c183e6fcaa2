# ctest `installed_package`: installs the built vkconv into a fresh prefix, then builds and runs
# tests/consumer against it twice: through its CMake package (find_package + vkconv::vkconv) and through
# its pkg-config file (where pkg-config is installed). Exit code 77 of a consumer (no Vulkan device)
# becomes ctest's skip.
# cmake -DBUILD_DIR=<vkconv build> -DSOURCE_DIR=<vkconv source> -DWORK_DIR=<scratch> -DCXX=<compiler> -P ...
file(REMOVE_RECURSE "${WORK_DIR}")
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

run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(file include/vkconv/vkconv.hpp include/vkconv/version.hpp lib/libvkconv.a lib/cmake/vkconv/vkconvConfig.cmake
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
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs --static vkconv OUTPUT_VARIABLE flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "pkg-config does not know the installed vkconv")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run("build the consumer with pkg-config" ${CXX} -O1 "${SOURCE_DIR}/tests/consumer/main.cpp" ${flags}
      -o "${WORK_DIR}/consumer_pkgconfig")
  run("run the consumer (pkg-config)" "${WORK_DIR}/consumer_pkgconfig")
endif()
