/* Minimal setjmp.h for wasm32-wasi with clang's -mllvm -wasm-enable-sjlj
 * (Debian bookworm's wasi-libc has none). The compiler lowers every call to
 * setjmp/longjmp in files built with that flag into calls to the runtime in
 * wasm_sjlj_rt.c (__wasm_setjmp, __wasm_setjmp_test, __wasm_longjmp) plus
 * WebAssembly exception handling (tag __c_longjmp); no real setjmp/longjmp
 * function exists. Layout of the buffer: see wasm_sjlj_rt.c (needs 16 bytes;
 * 64 reserved). */
#ifndef WASM_SJLJ_SETJMP_H
#define WASM_SJLJ_SETJMP_H
typedef struct { unsigned long long __opaque[8]; } jmp_buf[1];
int setjmp(jmp_buf env) __attribute__((returns_twice));
_Noreturn void longjmp(jmp_buf env, int val);
#endif
