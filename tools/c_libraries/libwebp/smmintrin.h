/* libwebp's SSE4.1 code (src/dsp/..._sse41.c) includes <smmintrin.h>: in the
 * guest SIMDe's SSE4.1 (which includes its SSE2 to SSSE3) on WebAssembly
 * SIMD128, natively the compiler's own header. See emmintrin.h beside this file. */
#if defined(__wasm__)
#ifndef WASINN_SMMINTRIN_H
#define WASINN_SMMINTRIN_H
#include <emmintrin.h> /* beside this file: SIMDe's SSE2, with its replacements */
#include <simde/x86/sse4.1.h>

/* _mm_shuffle_epi8 (SSSE3): SIMDe 0.7.4's is a loop over the 16 bytes in the
 * guest. i8x16.swizzle gives 0 for an index above 15, as pshufb does for an
 * index with its top bit set: the index's bits 4 to 6 cleared, the top one kept. */
#undef _mm_shuffle_epi8
#define _mm_shuffle_epi8(a, b) wasm_i8x16_swizzle((a), wasm_v128_and((b), wasm_i8x16_splat(0x8f)))
#endif
#else
#include_next <smmintrin.h>
#endif
