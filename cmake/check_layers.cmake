# Checks that engine/ and the public headers keep their layers, include by include:
#  - a file in engine/<layer>/ includes engine headers only from its own layer or a layer below it, always by
#    their folder ("vulkan/device.hpp", never a bare "device.hpp");
#  - every public header (include/vkconv/) belongs to a layer, given in the table below; a file in
#    engine/<layer>/ includes a public header ("vkconv/...") only of its own layer or a layer below it, and a
#    public header includes another public header only of its own layer or below;
#  - a public header that is not in the table is a violation: a new header is given its layer here first.
#    A header in the table that does not exist (yet) is accepted.
# The shaders' contracts (contract/..., generated from their GLSL) are not in a layer and may be included
# anywhere in engine/.
# What the includes cannot see, the link check does: no engine object file needs a symbol that an object
# file of a higher layer defines (cmake/check_link_layers.py, ctest `engine_link_layers`, reading the layer
# order below).
# Run by ctest as `engine_layers`:
#   cmake -DENGINE_DIR=<path to engine> -DPUBLIC_DIR=<path to include/vkconv> -P check_layers.cmake
#
cmake_minimum_required(VERSION 3.25)  # a -P script starts with no policies set (IN_LIST, below)

# The layers, lowest first (docs/architecture.md says what each holds):
set(layers core io vulkan memory context gemm conv select api)

# Each public header in include/vkconv/ and its layer, one per line: the header's name, its layer, and what
# it holds. A header's layer is the lowest that needs its declarations; a higher layer may define some of
# them (the passes the public calls, the test hooks), which the link check keeps one way. A header generated from <name>.in (version.hpp) is listed by its generated name.
set(public_headers
  export.hpp      core     # VKCONV_API_BEGIN / VKCONV_API_END: what a shared library exports
  error.hpp       core     # vkconv::Error, the one exception type, and its categories
  problem.hpp     core     # ConvProblem and ConvTransposeProblem, their layouts, and the passes
  algorithm.hpp   core     # vkconv::Algorithm and the list of algorithms
  version.hpp     core     # the version (generated from version.hpp.in into the build folder)
  npy.hpp         io       # float32 .npy files, read and written
  reference.hpp   io       # the CPU reference convolution
  device.hpp      vulkan   # devices: their description, messages, and the dispatches a plan lists
  pool.hpp        memory   # the device-memory pool's counters and a scoped peak
  context.hpp     context  # vkconv::Context, its options, and RunStats
  tensor.hpp      context  # vkconv::Tensor, device arrays and their views
  recording.hpp   context  # Recording and Submission (passes recorded now, run later), Target
  kernel.hpp      context  # vkconv::Kernel, a user's own compute shader on tensors
  interop.hpp     context  # an application's own Vulkan device, buffers and command buffers
  testing.hpp     context  # hooks for tests (lost device, failed allocations, lowered limits; defined in api/)
  gemm.hpp        gemm     # the GEMM on its own, and the activations fused epilogues apply
  conv.hpp        conv     # every convolution pass, its options and workspace queries (passes defined in select/)
  find.hpp        select   # measured algorithm choice (find_algorithms, Auto's measuring)
  plan.hpp        api      # plans without running (on a device or a described one), and tuning
  vkconv.hpp      api      # the umbrella header
)

set(violations "")
list(LENGTH public_headers entries)
math(EXPR odd "${entries} % 2")
if(NOT odd EQUAL 0)
  message(FATAL_ERROR "check_layers.cmake: the public header table needs a layer after every header")
endif()
set(listed_headers "")
math(EXPR last "${entries} - 1")
foreach(index RANGE 0 ${last} 2)
  math(EXPR next "${index} + 1")
  list(GET public_headers ${index} header)
  list(GET public_headers ${next} header_layer)
  if(NOT header_layer IN_LIST layers)
    string(APPEND violations "  the table gives vkconv/${header} the layer \"${header_layer}\", which is not a layer\n")
  elseif(header IN_LIST listed_headers)
    string(APPEND violations "  the table lists vkconv/${header} twice\n")
  endif()
  list(APPEND listed_headers "${header}")
  set("layer_of_${header}" "${header_layer}")
endforeach()

# The checks of one file's includes: `source` (its path, for messages), `layer` and `rank` (its layer and
# that layer's place in `layers`), `engine_headers` (whether engine headers may be included: engine/ files).
macro(check_includes path)
  file(STRINGS "${path}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*" "\\1" header "${line}")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<" AND NOT header MATCHES "^vkconv/")
      continue()  # a system or library header
    endif()
    if(header MATCHES "^vkconv/(.+)$")
      set(public "${CMAKE_MATCH_1}")
      if(NOT DEFINED "layer_of_${public}")
        string(APPEND violations "  ${source} (${layer}) includes \"${header}\", which has no layer in the table\n")
      else()
        set(included_layer "${layer_of_${public}}")
        list(FIND layers "${included_layer}" included_rank)
        if(included_rank GREATER rank)
          string(APPEND violations
                 "  ${source} (${layer}) includes \"${header}\" of the higher layer ${included_layer}\n")
        endif()
      endif()
      continue()
    endif()
    if(NOT engine_headers)
      string(APPEND violations "  ${source} (${layer}) includes \"${header}\": a public header includes only "
                               "public headers, by their folder (\"vkconv/...\")\n")
      continue()
    endif()
    if(header MATCHES "^contract/")
      continue()  # the shaders' contracts generated from their GLSL
    endif()
    string(REGEX MATCH "^[^/]+" top "${header}")
    list(FIND layers "${top}" included_rank)
    if(NOT header MATCHES "/" OR included_rank EQUAL -1)
      string(APPEND violations "  ${source}: includes \"${header}\" without its layer folder\n")
    elseif(included_rank GREATER rank)
      string(APPEND violations "  ${source} (${layer}) includes \"${header}\" from the higher layer ${top}\n")
    endif()
  endforeach()
endmacro()

# The public headers: each in the table, each including only its own layer or below.
if(NOT PUBLIC_DIR)
  get_filename_component(PUBLIC_DIR "${ENGINE_DIR}/../include/vkconv" ABSOLUTE)
endif()
file(GLOB_RECURSE public_files RELATIVE "${PUBLIC_DIR}" "${PUBLIC_DIR}/*")
list(SORT public_files)
set(engine_headers FALSE)
set(public_checked 0)
set(public_found "")
foreach(file IN LISTS public_files)
  string(REGEX REPLACE "\\.in$" "" public "${file}")  # version.hpp.in becomes the build's version.hpp
  list(APPEND public_found "${public}")
  set(source "include/vkconv/${file}")
  if(NOT DEFINED "layer_of_${public}")
    string(APPEND violations "  ${source}: a public header with no layer in the table (cmake/check_layers.cmake)\n")
    continue()
  endif()
  set(layer "${layer_of_${public}}")
  list(FIND layers "${layer}" rank)
  check_includes("${PUBLIC_DIR}/${file}")
  math(EXPR public_checked "${public_checked} + 1")
endforeach()

# engine/: every file in a layer folder, its engine and public includes of its own layer or below.
file(GLOB_RECURSE sources RELATIVE "${ENGINE_DIR}" "${ENGINE_DIR}/*.cpp" "${ENGINE_DIR}/*.hpp")
list(SORT sources)
set(engine_headers TRUE)
foreach(file IN LISTS sources)
  set(source "engine/${file}")
  string(REGEX MATCH "^[^/]+" layer "${file}")
  list(FIND layers "${layer}" rank)
  if(NOT file MATCHES "/" OR rank EQUAL -1)
    string(APPEND violations "  ${source}: not in a layer folder\n")
    continue()
  endif()
  check_includes("${ENGINE_DIR}/${file}")
endforeach()

if(violations)
  list(JOIN layers " " layer_order)
  message(FATAL_ERROR "engine/ and include/vkconv/ layering broken (layers, lowest first: ${layer_order}):\n${violations}")
endif()
list(LENGTH sources count)
set(absent "${listed_headers}")
list(REMOVE_ITEM absent ${public_found})
set(absent_note "")
if(absent)
  list(JOIN absent ", " absent_list)
  set(absent_note " (in the table, not in include/vkconv/: ${absent_list})")
endif()
message(STATUS "engine layers: ${count} engine files and ${public_checked} public headers, every include points "
               "down${absent_note}")
