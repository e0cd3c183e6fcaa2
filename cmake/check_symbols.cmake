# Checks that the built library defines no Vulkan entry-point symbol (a global named vk<Upper>...): an
# application that links the Vulkan loader itself must be able to link vkconv beside it, and a library
# that defines vkCreateInstance (as volk's globals do) would take the application's calls.
# A shared library (.so) is checked on its dynamic symbols, and must also export nothing of the engine
# (vkconv::detail): only the public headers' declarations (include/vkconv/export.hpp).
# Run by ctest as `no_global_vulkan_symbols`: cmake -DNM=<nm> -DLIBRARY=<path> -P check_symbols.cmake
set(dynamic "")
if(LIBRARY MATCHES "\\.so$")
  set(dynamic --dynamic)
endif()
execute_process(COMMAND "${NM}" --defined-only ${dynamic} "${LIBRARY}" OUTPUT_VARIABLE symbols RESULT_VARIABLE result
                ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${NM} could not read ${LIBRARY}: ${errors}")
endif()
string(REGEX MATCHALL "[0-9a-fA-F]* [A-Za-z] vk[A-Z][A-Za-z0-9_]*" defined "${symbols}")
if(defined)
  list(JOIN defined "\n  " listed)
  message(FATAL_ERROR "${LIBRARY} defines Vulkan entry-point symbols:\n  ${listed}")
endif()
if(dynamic)
  execute_process(COMMAND "${NM}" --defined-only --dynamic --demangle "${LIBRARY}" OUTPUT_VARIABLE demangled)
  string(REGEX MATCHALL "[0-9a-fA-F]+ [A-Za-z] vkconv::detail::[^\n]*" engine "${demangled}")
  if(engine)
    list(JOIN engine "\n  " listed)
    message(FATAL_ERROR "${LIBRARY} exports engine symbols (vkconv::detail):\n  ${listed}")
  endif()
  string(REGEX MATCHALL "[0-9a-fA-F]+ [TDBR] vkconv::[^\n]*" api "${demangled}")
  list(LENGTH api api_count)
  message(STATUS "${LIBRARY}: exports ${api_count} vkconv:: API symbols and nothing of vkconv::detail")
endif()
string(REGEX MATCHALL "\n[0-9a-fA-F]+ [TtDdBbRr] " all "${symbols}")
list(LENGTH all count)
message(STATUS "${LIBRARY}: ${count} defined symbols, none named like a Vulkan entry point")
