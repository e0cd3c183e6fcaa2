# vkconv_shader_contracts(OUTPUT SOURCES...): writes OUTPUT, a C++ header with the contract of each GLSL
# compute shader in SOURCES, read from the GLSL itself and every .glsl file it includes, directly or through
# another include, each inlined where it is included (see _vkconv_inline_includes):
#   namespace vkconv::detail::contract { struct <shader> {
#     name;                                                                   // "<shader>"
#     struct spec { static constexpr uint32_t <NAME> = <constant_id>; ...; constants; };  // specialization constants
#     struct push { static constexpr uint32_t <member> = <byte offset>; ...; bytes; }; };  // push constants
#   }
# The host fills specialization constants by these names (SpecializationValues in vulkan/pipeline_cache.hpp)
# and checks its push-constant structs against these offsets (VKCONV_CHECK_PUSH), so the host and a shader
# cannot drift apart: changing an id or a member in the GLSL regenerates the header. Runs at configure time;
# every source is a configure dependency. Push-constant members must be 32-bit scalars (uint, int, float).

# _vkconv_inline_includes(FILE TEXT_VAR SEEN_VAR): sets TEXT_VAR to FILE's text with each `#include "name"`
# line replaced by the included file's text (its own includes inlined in turn), as the preprocessor would
# see it, each file once (SEEN_VAR lists the files read so far; a second include of one adds nothing, as
# its guard would). A name resolves as glslangValidator resolves it: against the folder of the file that
# includes it, so a shader's "../common/tensor_index.glsl" and depthwise_common.glsl's own includes are both
# found. Every file read is a configure dependency.
# The contracts read declarations in this order, so a block moved into an include keeps its place in the
# generated header.
function(_vkconv_inline_includes file text_var seen_var)
  set(seen "${${seen_var}}")
  file(READ "${file}" content)
  get_filename_component(folder "${file}" DIRECTORY)
  set(result "")
  while(TRUE)
    string(REGEX MATCH "(^|\n)[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"[^\n]*" line "${content}")
    if(NOT line)
      break()
    endif()
    set(included "${CMAKE_MATCH_2}")
    string(FIND "${content}" "${line}" at)
    string(LENGTH "${line}" line_length)
    string(SUBSTRING "${content}" 0 ${at} before)
    math(EXPR rest "${at} + ${line_length}")
    string(SUBSTRING "${content}" ${rest} -1 content)
    string(APPEND result "${before}\n")
    get_filename_component(path "${included}" ABSOLUTE BASE_DIR "${folder}")  # also folds "../"
    if(NOT EXISTS "${path}")
      message(FATAL_ERROR "${file}: included file ${included} not found (looked for ${path})")
    endif()
    if(NOT path IN_LIST seen)
      list(APPEND seen "${path}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
      _vkconv_inline_includes("${path}" included_text seen)
      string(APPEND result "${included_text}")
    endif()
  endwhile()
  string(APPEND result "${content}")
  set(${text_var} "${result}" PARENT_SCOPE)
  set(${seen_var} "${seen}" PARENT_SCOPE)
endfunction()

function(vkconv_shader_contracts output)
  set(body "")
  foreach(source IN LISTS ARGN)
    get_filename_component(stem "${source}" NAME_WE)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source}")
    set(seen "${source}")
    _vkconv_inline_includes("${source}" text seen)  # includes in place: declarations keep their order
    # Strip comments so commented-out declarations do not count.
    string(REGEX REPLACE "//[^\n]*" "" text "${text}")

    # Specialization constants: layout(constant_id = N) const TYPE NAME, and local_size_*_id = N.
    set(ids "")
    set(spec "")
    string(REGEX MATCHALL "layout[ \t]*\\([ \t]*constant_id[ \t]*=[ \t]*[0-9]+[ \t]*\\)[ \t]*const[ \t]+[a-z0-9]+[ \t]+[A-Za-z0-9_]+" constants "${text}")
    foreach(constant IN LISTS constants)
      string(REGEX REPLACE ".*constant_id[ \t]*=[ \t]*([0-9]+).*const[ \t]+[a-z0-9]+[ \t]+([A-Za-z0-9_]+)$" "\\1;\\2" pair "${constant}")
      list(GET pair 0 id)
      list(GET pair 1 name)
      if("${spec}" MATCHES " ${name} = ")
        message(FATAL_ERROR "${source}: specialization constant ${name} is declared twice")
      endif()
      list(APPEND ids ${id})
      string(APPEND spec "        static constexpr uint32_t ${name} = ${id};\n")
    endforeach()
    foreach(axis x y z)
      if(text MATCHES "local_size_${axis}_id[ \t]*=[ \t]*([0-9]+)")
        string(TOUPPER "${axis}" upper)
        list(APPEND ids ${CMAKE_MATCH_1})
        string(APPEND spec "        static constexpr uint32_t LOCAL_SIZE_${upper} = ${CMAKE_MATCH_1};\n")
      endif()
    endforeach()
    set(count 0)
    list(LENGTH ids listed)
    if(listed GREATER 0)  # (not `if(ids)`: a list holding only "0" reads as false)
      list(REMOVE_DUPLICATES ids)
      list(LENGTH ids count)
      # The host passes constants 0 .. count-1 in order: the ids must have no gaps.
      foreach(id RANGE 0 ${count})
        if(id LESS count)
          list(FIND ids ${id} found)
          if(found EQUAL -1)
            message(FATAL_ERROR "${source}: specialization constant ids must be 0..${count}-1 without gaps; ${id} is missing")
          endif()
        endif()
      endforeach()
    endif()

    # Push constants: the members of the push_constant block, 4 bytes each, in order.
    set(push "")
    set(offset 0)
    if(text MATCHES "layout[ \t]*\\([ \t]*push_constant[ \t]*\\)[ \t]*uniform[ \t]+[A-Za-z0-9_]+[ \t\n]*{([^}]*)}")
      string(REGEX REPLACE "[\n\t ]+" " " block "${CMAKE_MATCH_1}")
      string(REPLACE ";" "|" block "${block}")
      string(REPLACE "|" ";" declarations "${block}")
      foreach(declaration IN LISTS declarations)
        string(STRIP "${declaration}" declaration)
        if(declaration STREQUAL "")
          continue()
        endif()
        if(NOT declaration MATCHES "^(uint|int|float) (.+)$")
          message(FATAL_ERROR "${source}: push constant '${declaration}' is not a 32-bit scalar")
        endif()
        string(REPLACE "," ";" names "${CMAKE_MATCH_2}")
        foreach(name IN LISTS names)
          string(STRIP "${name}" name)
          string(APPEND push "        static constexpr uint32_t ${name} = ${offset};\n")
          math(EXPR offset "${offset} + 4")
        endforeach()
      endforeach()
    endif()
    string(APPEND body "struct ${stem} {\n    static constexpr const char* name = \"${stem}\";\n"
                       "    struct spec {\n${spec}        static constexpr uint32_t constants = ${count};\n    };\n"
                       "    struct push {\n${push}        static constexpr uint32_t bytes = ${offset};\n    };\n};\n")
  endforeach()
  set(content "// Generated from the shaders' GLSL by cmake/shader_contracts.cmake; do not edit.\n#pragma once\n\n#include <cstdint>\n\nnamespace vkconv::detail::contract {\n\n${body}\n}  // namespace vkconv::detail::contract\n")
  if(EXISTS "${output}")
    file(READ "${output}" old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE "${output}" "${content}")
  endif()
endfunction()
