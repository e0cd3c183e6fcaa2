# -DVKCONV_FUZZ=ON: the fuzz targets in tests/fuzz/ become libFuzzer programs, and ctest runs each for a
# bounded number of inputs (VKCONV_FUZZ_RUNS). Off, the same targets are built with a replay main that runs
# their seed corpora and regression inputs, with any compiler.
#
# libFuzzer steers by coverage, so the library's objects must be instrumented too, not only the fuzz
# targets: -fsanitize=fuzzer-no-link goes on every target from here on. That instrumentation needs a
# runtime at link time, which -fsanitize=fuzzer-no-link on the link line supplies for the programs that are
# not fuzz targets (the tests and samples); the fuzz targets link -fsanitize=fuzzer (tests/fuzz/).
if(NOT VKCONV_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "VKCONV_FUZZ=ON needs clang (libFuzzer is part of clang), but the C++ compiler is "
                      "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}); configure a fresh build folder with "
                      "CC=clang CXX=clang++, or leave VKCONV_FUZZ off to replay the corpora only")
endif()
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
add_link_options($<$<LINK_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)

# About a minute and a half for the four targets together in a Debug address,undefined build on two busy
# cores; fuzz_cli_args takes most of it (a fresh CLI11 app per input).
set(VKCONV_FUZZ_RUNS 6000 CACHE STRING "Inputs each fuzz_<name> ctest test runs (libFuzzer -runs)")
message(STATUS "vkconv: fuzz targets built with libFuzzer, ${VKCONV_FUZZ_RUNS} runs each under ctest")
