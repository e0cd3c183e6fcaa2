// What a shared vkconv library exports: exactly the declarations of the public headers. The library is
// built with hidden visibility (everything in engine/ stays inside it); each public header brackets its
// declarations with VKCONV_API_BEGIN / VKCONV_API_END, which give them default visibility. In a static
// library the brackets change nothing.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define VKCONV_API_BEGIN _Pragma("GCC visibility push(default)")
#define VKCONV_API_END _Pragma("GCC visibility pop")
#else
#define VKCONV_API_BEGIN
#define VKCONV_API_END
#endif
