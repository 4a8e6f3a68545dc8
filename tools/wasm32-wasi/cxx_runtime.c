/* Linked, hidden, into every extension module of a package that
 * tools/guest_packages.py builds for the guest (numpy's C++ included).
 *
 * _ZTH5errno: Debian's wasi-libc declares errno `thread_local` for C++, so
 * clang calls this hook before touching it; errno needs no initialising.
 *
 * C++ exceptions come from LLVM's own libc++abi and libunwind, built by
 * guest_packages.py (cxx_exception_runtime), not from here.
 */
#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN void _ZTH5errno(void) {}
