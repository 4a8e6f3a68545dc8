/* OpenJTalk 1.11's mecab/config.h, as its configure would write it for wasinn
 * (both targets: wasm32-wasi and native): the headers and functions the C
 * library has. No HAVE_MMAP: WASI has no mmap, so MeCab reads its dictionary
 * files into memory, and the native build does the same. No HAVE_ICONV: the
 * dictionary and the text are UTF-8 (MECAB_USE_UTF8_ONLY). */
#define HAVE_CTYPE_H 1
#define HAVE_DIRENT_H 1
#define HAVE_FCNTL_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_UNISTD_H 1
#define HAVE_GETENV 1
#define HAVE_OPENDIR 1
#define HAVE_SQRT 1
#define HAVE_STRSTR 1
#define PACKAGE "open_jtalk"
#define VERSION "1.11"
