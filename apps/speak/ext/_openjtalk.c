/* _openjtalk: OpenJTalk's text-processing front end for the speak app: Japanese
 * text in, one dict per word out (its reading, pronunciation, accent and accent
 * phrase), as pyopenjtalk's run_frontend gives them.
 *
 * OpenJTalk 1.11 is Debian's source package open-jtalk 1.11-3, built by
 * tools/c_libraries.py (MeCab's tagger in C++ and OpenJTalk's C stages; see
 * tools/c_libraries.toml). Its dictionary is the naist-jdic of pyopenjtalk-plus's
 * wheel, which apps/speak/prepare.py takes out of it; load() reads it into memory
 * (about 107 MB: WASI has no mmap, and the native build does the same).
 *
 * The stages, in pyopenjtalk's order: text2mecab (ASCII to full width, control
 * characters dropped), MeCab, mecab2njd, njd_set_pronunciation, njd_set_digit,
 * njd_set_accent_phrase, njd_set_accent_type, njd_set_unvoiced_vowel,
 * njd_set_long_vowel.
 *
 * Limits, so that nothing overflows: a text of at most MAX_TEXT_BYTES UTF-8
 * bytes (ValueError beyond). text2mecab's output, at most three bytes per input
 * byte, goes to a buffer of that size (text2mecab_bounded, wasinn's patch,
 * checks it too); MeCab's path costs are `long`, 32 bits in wasm32, and each
 * word adds at most 2 * 32767 (a word cost and a connection cost, both 16-bit),
 * so 3 * 8192 words stay below 2^31. OpenJTalk's own fixed buffers (1,024 bytes
 * per field of a word) hold a dictionary entry's fields; MeCab groups at most 24
 * unknown characters into one word.
 *
 * The dictionary is trusted: load() checks that its four files are there and
 * big enough, and MeCab checks their sizes against their headers and sys.dic's
 * magic number and version (a damaged or foreign file raises ValueError), but
 * not every index inside them: a crafted dictionary could make MeCab read out
 * of bounds. prepare.py checks each file's SHA-256.
 *
 * One dictionary per process, kept in static state; the GIL guards it.
 */
/* build_ext: link open-jtalk */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mecab.h"
#include "njd.h" /* before the stages' headers, which use its NJD */
#include "mecab2njd.h"
#include "njd_set_accent_phrase.h"
#include "njd_set_accent_type.h"
#include "njd_set_digit.h"
#include "njd_set_long_vowel.h"
#include "njd_set_pronunciation.h"
#include "njd_set_unvoiced_vowel.h"
#include "text2mecab.h"

#define MAX_TEXT_BYTES 8192

/* OpenJTalk's rule tables compare bytes as `char`: the same signedness on both
 * targets (wasm32 and x86-64 both sign it) keeps their results the same. */
_Static_assert((char)-1 < 0, "OpenJTalk's tables were checked with a signed char");

static Mecab mecab;
static NJD njd;
static int initialized, loaded;

/* The files MeCab opens in a dictionary folder (Tokenizer::open, Connector::open),
 * with the least size each can have. MeCab checks each file's size against its
 * header, but reads char.bin's header before looking at its size. */
static const struct {
    const char *name;
    long long least;
} dictionary_files[] = {
    {"sys.dic", 100}, /* Dictionary::open's own check */
    {"unk.dic", 100},
    {"char.bin", 4 + 4 * 0xffff}, /* a count, then a CharInfo per UCS-2 code */
    {"matrix.bin", 4},            /* two sizes, then the costs */
};

static void initialize(void) {
    if (!initialized) {
        Mecab_initialize(&mecab);
        NJD_initialize(&njd);
        initialized = 1;
    }
}

static PyObject *load(PyObject *self, PyObject *args) {
    const char *folder;
    (void)self;
    if (!PyArg_ParseTuple(args, "s:load", &folder))
        return NULL;
    if (!*folder) {
        PyErr_SetString(PyExc_ValueError, "load() needs the dictionary's folder, not ''");
        return NULL;
    }
    initialize();
    /* The dictionary loaded before goes first, whatever happens next: two would
     * take twice the memory while loading, and the guest's memory never shrinks. */
    Mecab_clear(&mecab);
    loaded = 0;
    for (size_t i = 0; i < sizeof dictionary_files / sizeof *dictionary_files; i++) {
        const char *file = dictionary_files[i].name;
        PyObject *path = PyUnicode_FromFormat("%s/%s", folder, file);
        if (!path)
            return NULL;
        const char *name = PyUnicode_AsUTF8AndSize(path, NULL);
        struct stat info;
        int found = name && stat(name, &info) == 0 && S_ISREG(info.st_mode);
        Py_DECREF(path);
        if (!name)
            return NULL;
        if (!found) {
            PyErr_Format(PyExc_FileNotFoundError,
                         "%s is not an OpenJTalk dictionary: it has no %s (apps/speak/"
                         "prepare.py takes one from pyopenjtalk-plus's wheel)",
                         folder, file);
            return NULL;
        }
        if ((long long)info.st_size < dictionary_files[i].least) {
            PyErr_Format(PyExc_ValueError, "%s/%s is too small (%lld bytes) to be MeCab's %s",
                         folder, file, (long long)info.st_size, file);
            return NULL;
        }
    }
    if (!Mecab_load(&mecab, folder)) {
        const char *why = mecab_strerror(NULL);
        PyErr_Format(PyExc_ValueError, "MeCab cannot read the dictionary in %s: %s", folder,
                     why && *why ? why : "(no reason given)");
        return NULL;
    }
    loaded = 1;
    Py_RETURN_NONE;
}

/* A dict's text field, or NULL with an exception set. */
static int set_text(PyObject *dict, const char *key, const char *value) {
    PyObject *text = PyUnicode_DecodeUTF8(value, (Py_ssize_t)strlen(value), "replace");
    if (!text)
        return -1;
    int failed = PyDict_SetItemString(dict, key, text);
    Py_DECREF(text);
    return failed;
}

static int set_int(PyObject *dict, const char *key, int value) {
    PyObject *number = PyLong_FromLong(value);
    if (!number)
        return -1;
    int failed = PyDict_SetItemString(dict, key, number);
    Py_DECREF(number);
    return failed;
}

static PyObject *node_dict(NJDNode *node) {
    PyObject *dict = PyDict_New();
    if (!dict)
        return NULL;
    if (set_text(dict, "string", NJDNode_get_string(node)) ||
        set_text(dict, "pos", NJDNode_get_pos(node)) ||
        set_text(dict, "pos_group1", NJDNode_get_pos_group1(node)) ||
        set_text(dict, "pos_group2", NJDNode_get_pos_group2(node)) ||
        set_text(dict, "pos_group3", NJDNode_get_pos_group3(node)) ||
        set_text(dict, "ctype", NJDNode_get_ctype(node)) ||
        set_text(dict, "cform", NJDNode_get_cform(node)) ||
        set_text(dict, "orig", NJDNode_get_orig(node)) ||
        set_text(dict, "read", NJDNode_get_read(node)) ||
        set_text(dict, "pron", NJDNode_get_pron(node)) ||
        set_int(dict, "acc", NJDNode_get_acc(node)) ||
        set_int(dict, "mora_size", NJDNode_get_mora_size(node)) ||
        set_text(dict, "chain_rule", NJDNode_get_chain_rule(node)) ||
        set_int(dict, "chain_flag", NJDNode_get_chain_flag(node))) {
        Py_DECREF(dict);
        return NULL;
    }
    return dict;
}

static PyObject *run_frontend(PyObject *self, PyObject *args) {
    PyObject *text;
    (void)self;
    if (!PyArg_ParseTuple(args, "U:run_frontend", &text))
        return NULL;
    if (!loaded) {
        PyErr_SetString(PyExc_RuntimeError, "no dictionary is loaded: call load(FOLDER) first");
        return NULL;
    }
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size); /* lone surrogates raise */
    if (!utf8)
        return NULL;
    if (size > MAX_TEXT_BYTES) {
        PyErr_Format(PyExc_ValueError,
                     "the text is %zd bytes of UTF-8; run_frontend takes at most %d (split it "
                     "into sentences)",
                     size, MAX_TEXT_BYTES);
        return NULL;
    }
    if ((Py_ssize_t)strlen(utf8) != size) {
        PyErr_SetString(PyExc_ValueError, "the text contains a NUL character");
        return NULL;
    }
    PyObject *words = PyList_New(0);
    if (!words)
        return NULL;
    if (size == 0)
        return words;
    size_t capacity = 3 * (size_t)size + 1;
    char *converted = malloc(capacity);
    if (!converted) {
        Py_DECREF(words);
        return PyErr_NoMemory();
    }
    if (text2mecab_bounded(converted, capacity, utf8) != 0) {
        free(converted);
        Py_DECREF(words);
        PyErr_SetString(PyExc_RuntimeError, "text2mecab's output outgrew its buffer");
        return NULL;
    }
    int analysed = Mecab_analysis(&mecab, converted);
    free(converted);
    if (!analysed) {
        const char *why = mecab_strerror(NULL);
        Mecab_refresh(&mecab);
        Py_DECREF(words);
        PyErr_Format(PyExc_RuntimeError, "MeCab could not analyse the text: %s",
                     why && *why ? why : "(no reason given)");
        return NULL;
    }
    mecab2njd(&njd, Mecab_get_feature(&mecab), Mecab_get_size(&mecab));
    njd_set_pronunciation(&njd);
    njd_set_digit(&njd);
    njd_set_accent_phrase(&njd);
    njd_set_accent_type(&njd);
    njd_set_unvoiced_vowel(&njd);
    njd_set_long_vowel(&njd);
    for (NJDNode *node = njd.head; node; node = node->next) {
        PyObject *word = node_dict(node);
        if (!word || PyList_Append(words, word)) {
            Py_XDECREF(word);
            Py_CLEAR(words);
            break;
        }
        Py_DECREF(word);
    }
    NJD_refresh(&njd);
    Mecab_refresh(&mecab);
    return words;
}

static PyMethodDef methods[] = {
    {"load", load, METH_VARARGS,
     "load(folder): read the MeCab dictionary in folder (sys.dic, unk.dic, char.bin, "
     "matrix.bin) for run_frontend."},
    {"run_frontend", run_frontend, METH_VARARGS,
     "run_frontend(text): OpenJTalk's front end on text: a list with one dict per word."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_openjtalk", "OpenJTalk's text-processing front end, in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__openjtalk(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "MAX_TEXT_BYTES", MAX_TEXT_BYTES) < 0)
        Py_CLEAR(m);
    return m;
}
