# Turns a .spv file into a C++ source holding its words: -DINPUT=file.spv -DOUTPUT=file.cpp -DNAME=symbol.
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR remainder "${hex_length} % 8")
if(hex_length EQUAL 0 OR NOT remainder EQUAL 0)
  message(FATAL_ERROR "${INPUT} is not a whole number of 32-bit words")
endif()
# SPIR-V words are little-endian in the file: reverse each group of four bytes into one hex literal.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x........u,){8})" "\\1\n    " words "${words}")
math(EXPR word_count "${hex_length} / 8")
file(WRITE ${OUTPUT}.tmp
"// Generated from ${NAME}.comp by cmake/embed_spirv.cmake; do not edit.\n#include <cstddef>\n#include <cstdint>\n"
"extern const uint32_t ${NAME}_spv[];\nextern const size_t ${NAME}_spv_words;\n"
"alignas(4) const uint32_t ${NAME}_spv[] = {\n    ${words}\n};\nconst size_t ${NAME}_spv_words = ${word_count};\n")
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
