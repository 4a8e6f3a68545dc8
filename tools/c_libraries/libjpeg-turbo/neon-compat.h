/* What libjpeg-turbo's CMake build writes from simd/arm/neon-compat.h.in: which
 * Neon loads the compiler has (SIMDe has the three: simde/arm/neon/ld1_x2.h,
 * ld1_x3.h, ld1q_x4.h) and the bit-counting built-ins (clang's). */
#ifndef WASINN_NEON_COMPAT_H
#define WASINN_NEON_COMPAT_H
#define HAVE_VLD1_S16_X3
#define HAVE_VLD1_U16_X2
#define HAVE_VLD1Q_U8_X4
#define BUILTIN_CLZ(x)  __builtin_clz(x)
#define BUILTIN_CLZLL(x)  __builtin_clzll(x)
#define BUILTIN_BSWAP64(x)  __builtin_bswap64(x)
#endif
