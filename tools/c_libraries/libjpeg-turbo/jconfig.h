/* libjpeg-turbo 2.1.5's public configuration, as its CMake build would write
 * it for wasinn: the libjpeg 6.2 API (what Pillow and Debian's libjpeg62-turbo
 * use), 8-bit samples, arithmetic coding, memory sources and destinations, no
 * SIMD (jsimd_none.c). */
#define JPEG_LIB_VERSION 62
#define LIBJPEG_TURBO_VERSION 2.1.5
#define LIBJPEG_TURBO_VERSION_NUMBER 2001005
#define C_ARITH_CODING_SUPPORTED 1
#define D_ARITH_CODING_SUPPORTED 1
#define MEM_SRCDST_SUPPORTED 1
#define BITS_IN_JSAMPLE 8
