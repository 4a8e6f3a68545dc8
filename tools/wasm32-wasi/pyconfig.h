/* pyconfig.h for compiling stable-ABI (Py_LIMITED_API) extension modules for
 * componentize-py's guest CPython (3.14, wasm32-wasi) with Debian's CPython
 * 3.11 headers, whose own pyconfig.h knows only Linux targets.
 * tools/build_ext.py copies those headers with this file in place of theirs,
 * and checks every SIZEOF_ value below against the guest's own sysconfig
 * before each build (a mismatch stops the build).
 */
#ifndef Py_PYCONFIG_H
#define Py_PYCONFIG_H
#define SIZEOF_DOUBLE 8
#define SIZEOF_FLOAT 4
#define SIZEOF_FPOS_T 16
#define SIZEOF_INT 4
#define SIZEOF_LONG 4
#define SIZEOF_LONG_DOUBLE 16
#define SIZEOF_LONG_LONG 8
#define SIZEOF_OFF_T 8
#define SIZEOF_PID_T 4
#define SIZEOF_PTHREAD_KEY_T 4
#define SIZEOF_PTHREAD_T 4
#define SIZEOF_SHORT 2
#define SIZEOF_SIZE_T 4
#define SIZEOF_TIME_T 8
#define SIZEOF_UINTPTR_T 4
#define SIZEOF_VOID_P 4
#define SIZEOF_WCHAR_T 4
#define SIZEOF__BOOL 1
#define HAVE_SSIZE_T 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_STRING_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_WCHAR_H 1
#define STDC_HEADERS 1
#define PY_SUPPORT_TIER 3
#endif
