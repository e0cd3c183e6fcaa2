# -DVKCONV_SANITIZE=address,undefined (or thread): the library, the tests and the samples built with those
# sanitizers, and every program run with their options:
#   - AddressSanitizer with leak checking on; UndefinedBehaviorSanitizer halts at the first report.
#   - A report fails the test: the process exits with 86 (never a code the tests expect) and ctest also
#     fails any test whose output names a sanitizer report.
#   - Suppressions only for the Vulkan driver's and the loader's own frames (tests/sanitizers/*.supp).
# ThreadSanitizer cannot be combined with AddressSanitizer; a build has one or the other.
set(VKCONV_SANITIZER_FAIL_REGEX "")
if(NOT VKCONV_SANITIZE)
  return()
endif()

string(REPLACE "," ";" vkconv_sanitizers "${VKCONV_SANITIZE}")
foreach(sanitizer IN LISTS vkconv_sanitizers)
  if(NOT sanitizer MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "VKCONV_SANITIZE: unknown sanitizer '${sanitizer}' (address, undefined or thread)")
  endif()
endforeach()
if("thread" IN_LIST vkconv_sanitizers AND "address" IN_LIST vkconv_sanitizers)
  message(FATAL_ERROR "VKCONV_SANITIZE: thread and address cannot be combined; build them separately")
endif()

# -O1 keeps the stacks readable and the build fast; frame pointers give the leak checker whole stacks; line
# tables are all a report needs (and much less to compile and link than full debug information).
add_compile_options(-fsanitize=${VKCONV_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all -O1
                    $<IF:$<CXX_COMPILER_ID:Clang>,-gline-tables-only,-g1>)
add_link_options(-fsanitize=${VKCONV_SANITIZE})

# Every program of the build (tests, samples, fuzz targets) carries its sanitizers' defaults and the
# suppressions (tests/sanitizers/sanitizer_defaults.cpp.in), so a plain `ctest` or a program started by hand
# runs exactly as CI does; ASAN_OPTIONS and the like in the environment still add to or override them.
set(VKCONV_SANITIZER_COMMON "exitcode=86:print_stacktrace=1")
set(VKCONV_ASAN_OPTIONS "${VKCONV_SANITIZER_COMMON}:detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1")
set(VKCONV_LSAN_OPTIONS "${VKCONV_SANITIZER_COMMON}:print_suppressions=0")
set(VKCONV_UBSAN_OPTIONS "${VKCONV_SANITIZER_COMMON}:halt_on_error=1")
set(VKCONV_TSAN_OPTIONS "${VKCONV_SANITIZER_COMMON}:halt_on_error=1:second_deadlock_stack=1:print_suppressions=0")
set(supp_dir ${PROJECT_SOURCE_DIR}/tests/sanitizers)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${supp_dir}/lsan.supp ${supp_dir}/tsan.supp)
file(READ ${supp_dir}/lsan.supp VKCONV_LSAN_SUPPRESSIONS)
file(READ ${supp_dir}/tsan.supp VKCONV_TSAN_SUPPRESSIONS)
configure_file(${supp_dir}/sanitizer_defaults.cpp.in ${PROJECT_BINARY_DIR}/sanitizer_defaults.cpp @ONLY)
add_library(vkconv_sanitizer_defaults OBJECT ${PROJECT_BINARY_DIR}/sanitizer_defaults.cpp)
# Output that names a report fails a test even where a process's exit code is not checked.
set(VKCONV_SANITIZER_FAIL_REGEX "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer")
message(STATUS "vkconv: built with -fsanitize=${VKCONV_SANITIZE}")
