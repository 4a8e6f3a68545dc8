/* libjpeg-turbo's Arm Neon code (simd/arm/..., C intrinsics) includes
 * <arm_neon.h>. Here it is SIMDe's Neon on every target: each intrinsic under
 * its Arm name (SIMDe's native aliases), written with WebAssembly SIMD128 in
 * the guest (compiled with -msimd128) and with SSE2 natively on x86-64. The
 * native build runs the same SIMD code as the guest so that both decode a
 * corrupt file to the same pixels: the Neon IDCT computes in 16 and 32 bits
 * where the C one computes in 64 (JLONG, jlong-64-bit.patch), and a file's
 * huge coefficients overflow differently (tests/test_fuzz_jpeg.py compares
 * the guest with the native build). */
#ifndef WASINN_ARM_NEON_H
#define WASINN_ARM_NEON_H
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/arm/neon.h>

#if defined(__wasm_simd128__)
/* Where SIMDe 0.7.4's form of an intrinsic that libjpeg-turbo's decoder runs
 * for every block or row is a loop over lanes in the guest, SIMD128's own
 * instructions give the same results (SIMDe's simde_v... stay as they were). */
#include <wasm_simd128.h>

/* A Neon vector's bytes as a v128_t and back (SIMDe's types hold the same 16
 * bytes; a 64-bit one goes in the low half). Copies the compiler removes. */
#define WASINN_V128(x) wasinn_v128_of(&(x), sizeof(x))
static __inline__ __attribute__((__always_inline__)) v128_t wasinn_v128_of(const void *p, unsigned n) {
  v128_t r = wasm_i64x2_splat(0);
  __builtin_memcpy(&r, p, n);
  return r;
}
#define WASINN_FROM_V128(type, v) \
  __extension__({ type r_; v128_t v_ = (v); __builtin_memcpy(&r_, &v_, sizeof r_); r_; })

/* vst4_s16 (the islow IDCT's first pass stores its transposed rows): four
 * 4-lane vectors interleaved, a0 b0 c0 d0 a1 ... d3, as two 8-lane shuffles. */
#undef vst4_s16
#define vst4_s16(p, v) wasinn_vst4_s16((p), (v))
static __inline__ __attribute__((__always_inline__)) void wasinn_vst4_s16(int16_t *p, int16x4x4_t v) {
  int16x8_t ab_ = vcombine_s16(v.val[0], v.val[1]), cd_ = vcombine_s16(v.val[2], v.val[3]);
  v128_t ab = WASINN_V128(ab_), cd = WASINN_V128(cd_);
  wasm_v128_store(p, wasm_i16x8_shuffle(ab, cd, 0, 4, 8, 12, 1, 5, 9, 13));
  wasm_v128_store(p + 8, wasm_i16x8_shuffle(ab, cd, 2, 6, 10, 14, 3, 7, 11, 15));
}

/* vqrdmulhq_lane_s16 (YCbCr to RGB): saturate((2ab + 2^15) >> 16) is
 * saturate((ab + 2^14) >> 15), i16x8.q15mulr_sat_s. */
#undef vqrdmulhq_lane_s16
#define vqrdmulhq_lane_s16(a, v, lane) wasinn_vqrdmulhq_n_s16((a), vget_lane_s16((v), (lane)))
static __inline__ __attribute__((__always_inline__)) int16x8_t wasinn_vqrdmulhq_n_s16(int16x8_t a, int16_t b) {
  return WASINN_FROM_V128(int16x8_t, wasm_i16x8_q15mulr_sat(WASINN_V128(a), wasm_i16x8_splat(b)));
}

/* vtrnq_s16, vtrnq_s32 (transposes in the DCTs): two shuffles each. */
#undef vtrnq_s16
#define vtrnq_s16(a, b) wasinn_vtrnq_s16((a), (b))
static __inline__ __attribute__((__always_inline__)) int16x8x2_t wasinn_vtrnq_s16(int16x8_t a, int16x8_t b) {
  v128_t x = WASINN_V128(a), y = WASINN_V128(b);
  int16x8x2_t r;
  r.val[0] = WASINN_FROM_V128(int16x8_t, wasm_i16x8_shuffle(x, y, 0, 8, 2, 10, 4, 12, 6, 14));
  r.val[1] = WASINN_FROM_V128(int16x8_t, wasm_i16x8_shuffle(x, y, 1, 9, 3, 11, 5, 13, 7, 15));
  return r;
}
#undef vtrnq_s32
#define vtrnq_s32(a, b) wasinn_vtrnq_s32((a), (b))
static __inline__ __attribute__((__always_inline__)) int32x4x2_t wasinn_vtrnq_s32(int32x4_t a, int32x4_t b) {
  v128_t x = WASINN_V128(a), y = WASINN_V128(b);
  int32x4x2_t r;
  r.val[0] = WASINN_FROM_V128(int32x4_t, wasm_i32x4_shuffle(x, y, 0, 4, 2, 6));
  r.val[1] = WASINN_FROM_V128(int32x4_t, wasm_i32x4_shuffle(x, y, 1, 5, 3, 7));
  return r;
}

/* vld4q_s16 (the forward DCTs load a block): 32 values de-interleaved by
 * fours, as two rounds of even/odd shuffles. */
#undef vld4q_s16
#define vld4q_s16(p) wasinn_vld4q_s16(p)
static __inline__ __attribute__((__always_inline__)) int16x8x4_t wasinn_vld4q_s16(const int16_t *p) {
  v128_t q0 = wasm_v128_load(p), q1 = wasm_v128_load(p + 8);
  v128_t q2 = wasm_v128_load(p + 16), q3 = wasm_v128_load(p + 24);
  v128_t e01 = wasm_i16x8_shuffle(q0, q1, 0, 2, 4, 6, 8, 10, 12, 14);
  v128_t o01 = wasm_i16x8_shuffle(q0, q1, 1, 3, 5, 7, 9, 11, 13, 15);
  v128_t e23 = wasm_i16x8_shuffle(q2, q3, 0, 2, 4, 6, 8, 10, 12, 14);
  v128_t o23 = wasm_i16x8_shuffle(q2, q3, 1, 3, 5, 7, 9, 11, 13, 15);
  int16x8x4_t r;
  r.val[0] = WASINN_FROM_V128(int16x8_t, wasm_i16x8_shuffle(e01, e23, 0, 2, 4, 6, 8, 10, 12, 14));
  r.val[1] = WASINN_FROM_V128(int16x8_t, wasm_i16x8_shuffle(o01, o23, 0, 2, 4, 6, 8, 10, 12, 14));
  r.val[2] = WASINN_FROM_V128(int16x8_t, wasm_i16x8_shuffle(e01, e23, 1, 3, 5, 7, 9, 11, 13, 15));
  r.val[3] = WASINN_FROM_V128(int16x8_t, wasm_i16x8_shuffle(o01, o23, 1, 3, 5, 7, 9, 11, 13, 15));
  return r;
}

/* vld3_u8 (RGB to YCbCr loads 8 pixels): 24 bytes de-interleaved by threes. */
#undef vld3_u8
#define vld3_u8(p) wasinn_vld3_u8(p)
static __inline__ __attribute__((__always_inline__)) uint8x8x3_t wasinn_vld3_u8(const uint8_t *p) {
  v128_t lo = wasm_v128_load(p), hi = wasm_v128_load64_zero(p + 16);
  uint8x8x3_t r;
  r.val[0] = WASINN_FROM_V128(uint8x8_t, wasm_i8x16_shuffle(lo, hi, 0, 3, 6, 9, 12, 15, 18, 21,
                                                              0, 0, 0, 0, 0, 0, 0, 0));
  r.val[1] = WASINN_FROM_V128(uint8x8_t, wasm_i8x16_shuffle(lo, hi, 1, 4, 7, 10, 13, 16, 19, 22,
                                                              0, 0, 0, 0, 0, 0, 0, 0));
  r.val[2] = WASINN_FROM_V128(uint8x8_t, wasm_i8x16_shuffle(lo, hi, 2, 5, 8, 11, 14, 17, 20, 23,
                                                              0, 0, 0, 0, 0, 0, 0, 0));
  return r;
}

/* vshlq_u16 (quantisation shifts each coefficient by its own count): Neon's
 * shift by the signed low byte of each lane, left when positive, right when
 * negative, 0 from 16 places on. SIMD128 shifts all lanes alike, so: a left
 * shift by n (0..15) is a product with 2^n, a right one by m (1..16) the high
 * half of a product with 2^(16 - m); the powers of two are looked up (two
 * byte tables, swizzle gives 0 for an index out of range). */
#undef vshlq_u16
#define vshlq_u16(a, b) wasinn_vshlq_u16((a), (b))
static __inline__ __attribute__((__always_inline__)) uint16x8_t wasinn_vshlq_u16(uint16x8_t a, int16x8_t b) {
  v128_t x = WASINN_V128(a), n = WASINN_V128(b);
  n = wasm_i16x8_shr(wasm_i16x8_shl(n, 8), 8);               /* the signed low byte */
  v128_t left = wasm_i16x8_ge(n, wasm_i16x8_splat(0));
  v128_t k = wasm_i16x8_add(n, wasm_v128_andnot(wasm_i16x8_splat(16), left)); /* n, or n + 16 */
  v128_t valid = wasm_v128_and(wasm_i16x8_ge(k, wasm_i16x8_splat(0)), wasm_i16x8_lt(k, wasm_i16x8_splat(16)));
  v128_t idx = wasm_v128_or(wasm_i16x8_mul(k, wasm_i16x8_splat(0x0101)), wasm_v128_not(valid));
  v128_t lo = wasm_i8x16_swizzle(wasm_i8x16_const(1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0), idx);
  v128_t hi = wasm_i8x16_swizzle(wasm_i8x16_const(0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, -128), idx);
  v128_t pow2 = wasm_v128_bitselect(lo, hi, wasm_i16x8_splat(0x00ff));
  v128_t shl = wasm_i16x8_mul(x, pow2);
  v128_t shr = wasm_i16x8_shuffle(wasm_u32x4_extmul_low_u16x8(x, pow2),
                                  wasm_u32x4_extmul_high_u16x8(x, pow2), 1, 3, 5, 7, 9, 11, 13, 15);
  return WASINN_FROM_V128(uint16x8_t, wasm_v128_bitselect(shl, shr, left));
}
#endif
#endif
