# Checks that engine/ keeps its layers: a file in engine/<layer>/ includes engine headers only from its own
# layer or a layer below it, always by their folder ("vulkan/device.hpp", never a bare "device.hpp").
# Run by ctest as `engine_layers`: cmake -DENGINE_DIR=<path to engine> -P check_layers.cmake
#
# The layers, lowest first (docs/architecture.md says what each holds):
set(layers core io vulkan memory context gemm conv select api)

file(GLOB_RECURSE sources RELATIVE "${ENGINE_DIR}" "${ENGINE_DIR}/*.cpp" "${ENGINE_DIR}/*.hpp")
set(violations "")
foreach(source IN LISTS sources)
  string(REGEX MATCH "^[^/]+" layer "${source}")
  list(FIND layers "${layer}" rank)
  if(rank EQUAL -1)
    string(APPEND violations "  ${source}: not in a layer folder\n")
    continue()
  endif()
  file(STRINGS "${ENGINE_DIR}/${source}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" header "${line}")
    if(header MATCHES "^vkconv/" OR header MATCHES "^contract/")
      continue()  # the public API, and the shaders' contracts generated from their GLSL
    endif()
    string(REGEX MATCH "^[^/]+" top "${header}")
    list(FIND layers "${top}" included_rank)
    if(NOT header MATCHES "/" OR included_rank EQUAL -1)
      string(APPEND violations "  ${source}: includes \"${header}\" without its layer folder\n")
    elseif(included_rank GREATER rank)
      string(APPEND violations "  ${source} (${layer}) includes \"${header}\" from the higher layer ${top}\n")
    endif()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "engine/ layering broken (layers, lowest first: ${layers}):\n${violations}")
endif()
list(LENGTH sources count)
message(STATUS "engine layers: ${count} files, every include points down")
