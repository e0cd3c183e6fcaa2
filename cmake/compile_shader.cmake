# vkconv_compile_shader(NAME SOURCE OUT_DIR CPP_VAR [DEFINES...]): compiles one GLSL compute shader to
# SPIR-V at build time (into OUT_DIR, never the source tree; a shader that fails to compile fails the
# build) and turns it into a C++ source defining `const uint32_t NAME_spv[]` and `size_t NAME_spv_words`.
# The generated source's path is returned in CPP_VAR. Used by shaders/ and by samples with shaders of their own.
# glslangValidator resolves `#include "..."` against the including file's folder and writes every file it
# read into the depfile (shaders/common/ helpers and nested includes too), so editing an included file
# rebuilds exactly the shaders that include it.
# Works from any project that includes this file (vkconv's own, a parent that adds vkconv as a
# subdirectory, or an application using the installed package): it finds its helper script beside itself
# and glslangValidator on the PATH where find_package(Vulkan COMPONENTS glslangValidator) did not.
if(NOT Vulkan_GLSLANG_VALIDATOR_EXECUTABLE)
  find_program(Vulkan_GLSLANG_VALIDATOR_EXECUTABLE glslangValidator REQUIRED)
endif()
function(vkconv_compile_shader name src out_dir cpp_var)
  set(helper ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_spirv.cmake)  # beside this file, from any caller
  set(defines)
  foreach(define IN LISTS ARGN)
    list(APPEND defines -D${define})
  endforeach()
  set(spv ${out_dir}/${name}.spv)
  set(cpp ${out_dir}/${name}_spv.cpp)
  add_custom_command(
    OUTPUT ${spv}
    COMMAND ${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE} --quiet --target-env vulkan1.1 -Os -g0 ${defines}
            --depfile ${out_dir}/${name}.d -o ${spv} ${src}
    DEPENDS ${src}
    DEPFILE ${out_dir}/${name}.d
    COMMENT "Compiling shader ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${cpp}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${spv} -DOUTPUT=${cpp} -DNAME=${name}
            -P ${helper}
    DEPENDS ${spv} ${helper}
    VERBATIM)
  set(${cpp_var} ${cpp} PARENT_SCOPE)
endfunction()
