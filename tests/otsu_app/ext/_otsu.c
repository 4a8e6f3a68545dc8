/* _otsu: Otsu's threshold for 8-bit gray pixels, and the binary mask it
 * gives: the C routines of tests/otsu_app, an example of an app folder that
 * carries its own C extension module (see the README's "C extension modules").
 *
 * ./build.sh build compiles ext/_otsu.c into _otsu.cpython-314-wasm32-wasi.so
 * (linked into the component) and _otsu.abi3.so (for native tests) beside
 * app.py; _otsu.pyi gives mypy the signatures.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* 2**27 pixels keep every sum below in int64 (255 * N * N < 2**63). */
#define MAX_PIXELS ((Py_ssize_t)1 << 27)

/* The t that maximises the between-class variance of {v <= t} and {v > t}:
 * (S * w0 - s0 * N)^2 / (w0 * w1), with N pixels, S their sum, w0 and s0 the
 * count and sum of those <= t and w1 = N - w0 (the textbook variance times
 * N^2, which does not move the maximum). The first t wins a tie; an image
 * of one gray level gets that level. */
static PyObject *threshold(PyObject *self, PyObject *args) {
    const unsigned char *px;
    Py_ssize_t n;
    int64_t hist[256] = {0}, total = 0, w0 = 0, s0 = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#:threshold", (const char **)&px, &n))
        return NULL;
    if (n < 1 || n > MAX_PIXELS) {
        PyErr_Format(PyExc_ValueError, "threshold needs 1 to %zd pixels, not %zd", MAX_PIXELS, n);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        hist[px[i]]++;
    for (int v = 0; v < 256; v++)
        total += v * hist[v];
    int best = px[0];
    double best_score = -1.0;
    for (int t = 0; t < 255; t++) {
        w0 += hist[t];
        s0 += t * hist[t];
        int64_t w1 = (int64_t)n - w0;
        if (w0 == 0 || w1 == 0)
            continue;
        double d = (double)(total * w0 - s0 * (int64_t)n);
        double score = d * d / ((double)w0 * (double)w1);
        if (score > best_score) {
            best_score = score;
            best = t;
        }
    }
    return PyLong_FromLong(best);
}

/* 255 where a pixel is above the threshold, 0 elsewhere. */
static PyObject *binarize(PyObject *self, PyObject *args) {
    const unsigned char *px;
    Py_ssize_t n;
    int t;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#i:binarize", (const char **)&px, &n, &t))
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (!out)
        return NULL;
    unsigned char *mask = (unsigned char *)PyBytes_AsString(out);
    for (Py_ssize_t i = 0; i < n; i++)
        mask[i] = px[i] > t ? 255 : 0;
    return out;
}

static PyMethodDef methods[] = {
    {"threshold", threshold, METH_VARARGS, "threshold(gray) -> Otsu's threshold (0..255)"},
    {"binarize", binarize, METH_VARARGS, "binarize(gray, t) -> bytes: 255 above t, else 0"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_otsu", "Otsu's threshold for 8-bit gray pixels.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__otsu(void) { return PyModule_Create(&module); }
