/* The part of <pthread.h> that CPython 3.14's headers need when a package is
 * built for the guest against its full C API (tools/guest_packages.py):
 * the type of a thread-specific-storage key, inside Py_tss_t. Debian
 * bookworm's wasi-libc has no pthread.h; the guest's libc (wasi-libc, musl)
 * declares the key as `unsigned`, which this must match. CPython's own
 * pthread_stubs.h would do as well, but it uses `restrict`, which C++ lacks. */
#ifndef WASINN_GUEST_PTHREAD_H
#define WASINN_GUEST_PTHREAD_H
typedef unsigned pthread_key_t;
#endif
