/* libwebp's SSE2 code (src/dsp/..._sse2.c, sharpyuv/sharpyuv_sse2.c) includes
 * <emmintrin.h>. In the guest that is SIMDe's SSE2: each intrinsic, under its
 * Intel name (SIMDe's native aliases), written with WebAssembly SIMD128 (the
 * guest is compiled with -msimd128). clang's own header refuses any target but
 * x86, and natively it is the one used: this folder comes first in the include
 * path, so the real header is reached with #include_next. */
#if defined(__wasm__)
#ifndef WASINN_EMMINTRIN_H
#define WASINN_EMMINTRIN_H
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/sse2.h>

/* Where SIMDe 0.7.4 has no WebAssembly form of an intrinsic that libwebp uses,
 * its portable one is a loop over lanes, or worse; these are SIMD128's own
 * instructions for the same results, bit for bit (SIMDe's simde_mm_... stay as
 * they were). */

/* _mm_madd_epi16: SIMDe's generic form (widen to 8 x i32, shuffle, add) also
 * crashes clang 19's WebAssembly back end where the operands are zero-extended
 * bytes ("Do not know how to widen the result of this operator", libwebp's
 * SSE16x16_SSE2). i32x4.dot_i16x8_s: a0*b0 + a1*b1 per 32-bit lane, wrapping
 * alike. */
#undef _mm_madd_epi16
#define _mm_madd_epi16(a, b) wasm_i32x4_dot_i16x8((a), (b))

/* _mm_mulhi_epi16, _mm_mulhi_epu16 (the transforms, YUV to RGB): the high
 * halves of the 32-bit products, both extended products then one shuffle
 * (SIMDe's shuffles its operands first and narrows after). */
#undef _mm_mulhi_epi16
#define _mm_mulhi_epi16(a, b) \
  wasm_i16x8_shuffle(wasm_i32x4_extmul_low_i16x8((a), (b)), wasm_i32x4_extmul_high_i16x8((a), (b)), \
                     1, 3, 5, 7, 9, 11, 13, 15)
#undef _mm_mulhi_epu16
#define _mm_mulhi_epu16(a, b) \
  wasm_i16x8_shuffle(wasm_u32x4_extmul_low_u16x8((a), (b)), wasm_u32x4_extmul_high_u16x8((a), (b)), \
                     1, 3, 5, 7, 9, 11, 13, 15)

/* _mm_movemask_epi8: the top bit of each byte, i8x16.bitmask. */
#undef _mm_movemask_epi8
#define _mm_movemask_epi8(a) ((int)wasm_i8x16_bitmask(a))

/* _mm_sad_epu8: the sums of |a - b| over each half's 8 bytes, in the low bits
 * of its 64-bit lane: |a - b| as max - min, then pairwise widening adds to four
 * 32-bit sums, then each 64-bit lane's two halves added (at most 8 * 255). */
#undef _mm_sad_epu8
#define _mm_sad_epu8(a, b) wasinn_mm_sad_epu8((a), (b))
static __inline__ __attribute__((__always_inline__)) v128_t wasinn_mm_sad_epu8(v128_t a, v128_t b) {
  v128_t diff = wasm_i8x16_sub(wasm_u8x16_max(a, b), wasm_u8x16_min(a, b));
  v128_t sums = wasm_u32x4_extadd_pairwise_u16x8(wasm_u16x8_extadd_pairwise_u8x16(diff));
  return wasm_i64x2_add(wasm_v128_and(sums, wasm_i64x2_splat(0xffffffff)),
                        wasm_u64x2_shr(sums, 32));
}
#endif
#else
#include_next <emmintrin.h>
#endif
