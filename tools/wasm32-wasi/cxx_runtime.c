/* Linked, hidden, into every extension module of a package that
 * tools/guest_packages.py builds for the guest (numpy's C++ included).
 *
 * - _ZTH5errno: Debian's wasi-libc declares errno `thread_local` for C++, so
 *   clang calls this hook before touching it; errno needs no initialising.
 * - C++ exceptions: the guest's libc++abi.so (componentize-py's) has no
 *   __cxa_throw, and without -fwasm-exceptions nothing could catch a throw
 *   anyway. A throw ends the program with a message naming it, instead of an
 *   unresolved import at link time.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN void _ZTH5errno(void) {}

HIDDEN void *__cxa_allocate_exception(size_t size) { return malloc(size); }

HIDDEN void __cxa_free_exception(void *exception) { free(exception); }

HIDDEN void __cxa_throw(void *exception, void *type, void (*destroy)(void *)) {
    (void)exception; (void)type; (void)destroy;
    fputs("C++ exception thrown in an extension module built without unwinding\n", stderr);
    abort();
}
