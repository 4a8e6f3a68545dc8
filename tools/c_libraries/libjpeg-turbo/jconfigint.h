/* libjpeg-turbo 2.1.5's internal configuration for wasinn's build (see
 * tools/c_libraries.toml). SIZEOF_SIZE_T comes from the compiler, so one file
 * serves wasm32 (4) and x86-64 (8). */
#define BUILD "wasinn"
#undef inline
#define INLINE __inline__ __attribute__((always_inline))
/* One thread in the guest; the native tests call it from one thread too. */
#define THREAD_LOCAL
#define PACKAGE_NAME "libjpeg-turbo"
#define VERSION "2.1.5"
#define SIZEOF_SIZE_T __SIZEOF_SIZE_T__
#if __SIZEOF_LONG__ == __SIZEOF_SIZE_T__
#define HAVE_BUILTIN_CTZL
#endif
#if defined(__has_attribute) && __has_attribute(fallthrough)
#define FALLTHROUGH __attribute__((fallthrough));
#else
#define FALLTHROUGH
#endif
