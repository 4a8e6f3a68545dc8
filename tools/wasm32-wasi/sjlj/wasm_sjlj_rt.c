/* Runtime support for clang/LLVM 19's -mllvm -wasm-enable-sjlj lowering
 * (setjmp/longjmp implemented with WebAssembly exception handling).
 * Written for the wasinn EH spike from the contract of LLVM's
 * WebAssemblyLowerEmscriptenEHSjLj pass as observed in its output:
 *
 *  - setjmp(env) in function F becomes  __wasm_setjmp(env, label, id),
 *    where label (>0) names the setjmp call site inside F and id is an address
 *    unique to this invocation of F;
 *  - longjmp(env, val) becomes  __wasm_longjmp(env, val), which must throw
 *    the tag __c_longjmp with a pointer p to { void *env; int val; };
 *  - every call in F that may longjmp is wrapped in try/catch __c_longjmp;
 *    the handler reads p->env and p->val and asks __wasm_setjmp_test(env, id)
 *    for the label: nonzero -> resume at that setjmp returning val; zero (the
 *    buffer belongs to another invocation) -> __wasm_longjmp(env, val) again.
 */
#include <stdint.h>

struct wasm_sjlj_arg { void *env; int val; };
struct wasm_sjlj_buf {
    void *func_invocation_id;   /* the frame that called setjmp */
    uint32_t label;             /* which setjmp in that frame */
    struct wasm_sjlj_arg arg;   /* the exception's payload (lives in the buffer,
                                   whose frame is alive until it is caught) */
};
_Static_assert(sizeof(struct wasm_sjlj_buf) <= 64, "jmp_buf in setjmp.h is 64 bytes");

#define RT __attribute__((visibility("hidden")))

RT void __wasm_setjmp(void *env, uint32_t label, void *func_invocation_id) {
    struct wasm_sjlj_buf *jb = env;
    jb->func_invocation_id = func_invocation_id;
    jb->label = label;
}

RT uint32_t __wasm_setjmp_test(void *env, void *func_invocation_id) {
    struct wasm_sjlj_buf *jb = env;
    return jb->func_invocation_id == func_invocation_id ? jb->label : 0;
}

RT _Noreturn void __wasm_longjmp(void *env, int val) {
    struct wasm_sjlj_buf *jb = env;
    jb->arg.env = env;
    jb->arg.val = val == 0 ? 1 : val;   /* C: longjmp(env, 0) makes setjmp return 1 */
    __builtin_wasm_throw(1 /* C_LONGJMP: tag __c_longjmp */, &jb->arg);
}
