/* wasinn._kernels: the inner loops over tensor bytes that pure Python runs
 * slowly inside a component (argmax, topk, bf16 conversion).
 *
 * tools/build_ext.py compiles this one file twice: for the guest (wasm32-wasi,
 * linked into every component by componentize-py) and for the CPython that
 * runs the native tests, so the tests run the code the component runs. It
 * sets Py_LIMITED_API (the stable ABI of CPython 3.11, whose headers Debian
 * has) and -ffp-contract=off. The Python side is wasinn/_tensor.py and
 * wasinn/_dtypes.py; the signatures are in wasinn/_kernels.pyi.
 *
 * Tensor bytes are wasi-nn's: little-endian, row-major. They are read byte by
 * byte into integers, so the byte order of the machine never matters.
 *
 * Ordering (argmax, topk): NaN (any sign or payload) above every number,
 * -0.0 equal to 0.0, ties to the lower index: numpy's argmax rule, and what
 * Tensor.argmax has always done. Contiguous argmax compares the values
 * themselves; topk and argmax across rows compare unsigned 64-bit keys whose
 * integer order is that order (make_keys).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum dtype { F16, BF16, F32, F64, U8, I32, I64 };

static const struct {
    const char *name;
    enum dtype code;
    Py_ssize_t size;
} DTYPES[] = {
    {"f16", F16, 2}, {"bf16", BF16, 2}, {"f32", F32, 4}, {"f64", F64, 8},
    {"u8", U8, 1},   {"i32", I32, 4},   {"i64", I64, 8},
};

#define NAN_KEY UINT64_MAX
#define SIGN64 0x8000000000000000ULL
/* Keys are made this many elements at a time, into a buffer on the stack. */
#define BLOCK 1024

static int parse_dtype(const char *name, enum dtype *code, Py_ssize_t *size) {
    for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++) {
        if (strcmp(name, DTYPES[i].name) == 0) {
            *code = DTYPES[i].code;
            *size = DTYPES[i].size;
            return 0;
        }
    }
    PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", name);
    return -1;
}

static inline uint16_t load16(const unsigned char *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t load32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t load64(const unsigned char *p) {
    return (uint64_t)load32(p) | ((uint64_t)load32(p + 4) << 32);
}

/* The bits of the f32 that holds an f16 exactly (NaN payloads kept). */
static inline uint32_t f16_bits_as_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f)
        return sign | 0x7f800000 | (mant << 13);
    if (exp)
        return sign | ((exp + 112) << 23) | (mant << 13);
    if (!mant)
        return sign;
    /* A subnormal half is a normal float: shift the mantissa up to its
       leading one and lower the exponent by as much. */
    uint32_t e = 113;
    while (!(mant & 0x400)) {
        mant <<= 1;
        e--;
    }
    return sign | (e << 23) | ((mant & 0x3ff) << 13);
}

static inline uint64_t f32_key(uint32_t bits) {
    if ((bits & 0x7fffffff) > 0x7f800000)
        return NAN_KEY;
    if ((bits & 0x7fffffff) == 0)
        return 0x80000000; /* -0.0 sorts with 0.0 */
    return (bits & 0x80000000) ? (uint64_t)(~bits & 0xffffffff) : (uint64_t)(bits | 0x80000000);
}

static inline uint64_t f64_key(uint64_t bits) {
    if ((bits & ~SIGN64) > 0x7ff0000000000000ULL)
        return NAN_KEY;
    if ((bits & ~SIGN64) == 0)
        return SIGN64;
    return (bits & SIGN64) ? ~bits : (bits | SIGN64);
}

/* keys[i] = the order key of element start + i, for i < count. */
static void make_keys(enum dtype dt, const unsigned char *data, Py_ssize_t start,
                      Py_ssize_t count, uint64_t *keys) {
    Py_ssize_t i;
    switch (dt) {
    case F16:
        for (i = 0; i < count; i++)
            keys[i] = f32_key(f16_bits_as_f32(load16(data + 2 * (start + i))));
        break;
    case BF16:
        for (i = 0; i < count; i++)
            keys[i] = f32_key((uint32_t)load16(data + 2 * (start + i)) << 16);
        break;
    case F32:
        for (i = 0; i < count; i++)
            keys[i] = f32_key(load32(data + 4 * (start + i)));
        break;
    case F64:
        for (i = 0; i < count; i++)
            keys[i] = f64_key(load64(data + 8 * (start + i)));
        break;
    case U8:
        for (i = 0; i < count; i++)
            keys[i] = data[start + i];
        break;
    case I32:
        for (i = 0; i < count; i++)
            keys[i] = (uint64_t)(int64_t)(int32_t)load32(data + 4 * (start + i)) ^ SIGN64;
        break;
    case I64:
        for (i = 0; i < count; i++)
            keys[i] = load64(data + 8 * (start + i)) ^ SIGN64;
        break;
    }
}

static inline float f32_of_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline double f64_of_bits(uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

#define LOAD_F16(p, i) f32_of_bits(f16_bits_as_f32(load16((p) + 2 * (i))))
#define LOAD_BF16(p, i) f32_of_bits((uint32_t)load16((p) + 2 * (i)) << 16)
#define LOAD_F32(p, i) f32_of_bits(load32((p) + 4 * (i)))
#define LOAD_F64(p, i) f64_of_bits(load64((p) + 8 * (i)))
#define LOAD_U8(p, i) ((p)[i])
#define LOAD_I32(p, i) ((int32_t)load32((p) + 4 * (i)))
#define LOAD_I64(p, i) ((int64_t)load64((p) + 8 * (i)))
#define IS_NAN(v) ((v) != (v))
#define NEVER(v) 0

/* Index of the first NaN, else of the first largest, of the `count` (>= 1)
   elements from p: compares values as they are (no keys), the fastest way. */
#define SCAN(T, LOAD, NAN_TEST)                                                                   \
    do {                                                                                          \
        T best = LOAD(p, 0);                                                                      \
        Py_ssize_t at = 0;                                                                        \
        if (NAN_TEST(best))                                                                       \
            return 0;                                                                             \
        for (Py_ssize_t i = 1; i < count; i++) {                                                  \
            T v = LOAD(p, i);                                                                     \
            if (v > best) {                                                                       \
                best = v;                                                                         \
                at = i;                                                                           \
            } else if (NAN_TEST(v)) {                                                             \
                return i;                                                                         \
            }                                                                                     \
        }                                                                                         \
        return at;                                                                                \
    } while (0)

static Py_ssize_t first_max(enum dtype dt, const unsigned char *p, Py_ssize_t count) {
    switch (dt) {
    case F16:
        SCAN(float, LOAD_F16, IS_NAN);
    case BF16:
        SCAN(float, LOAD_BF16, IS_NAN);
    case F32:
        SCAN(float, LOAD_F32, IS_NAN);
    case F64:
        SCAN(double, LOAD_F64, IS_NAN);
    case U8:
        SCAN(unsigned char, LOAD_U8, NEVER);
    case I32:
        SCAN(int32_t, LOAD_I32, NEVER);
    case I64:
        SCAN(int64_t, LOAD_I64, NEVER);
    }
    return 0;
}

/* Element ``index`` as the Python number Tensor.tolist() gives for it. */
static PyObject *element(enum dtype dt, const unsigned char *p, Py_ssize_t i) {
    switch (dt) {
    case F16:
        return PyFloat_FromDouble(LOAD_F16(p, i));
    case BF16:
        return PyFloat_FromDouble(LOAD_BF16(p, i));
    case F32:
        return PyFloat_FromDouble(LOAD_F32(p, i));
    case F64:
        return PyFloat_FromDouble(LOAD_F64(p, i));
    case U8:
        return PyLong_FromLong(LOAD_U8(p, i));
    case I32:
        return PyLong_FromLong(LOAD_I32(p, i));
    case I64:
        return PyLong_FromLongLong(LOAD_I64(p, i));
    }
    return NULL;
}

/* The data of a kernel call: bytes, dtype, and the element count. */
struct tensor {
    const unsigned char *data;
    Py_ssize_t n, size; /* elements, bytes per element */
    enum dtype dt;
};

static int tensor_of(const char *data, Py_ssize_t nbytes, const char *dtype, struct tensor *t) {
    if (parse_dtype(dtype, &t->dt, &t->size) < 0)
        return -1;
    if (nbytes % t->size) {
        PyErr_Format(PyExc_ValueError, "%zd bytes is not a whole number of %s elements", nbytes,
                     dtype);
        return -1;
    }
    t->data = (const unsigned char *)data;
    t->n = nbytes / t->size;
    return 0;
}

/* ------------------------------------------------------------ argmax */

static PyObject *argmax(PyObject *self, PyObject *args) {
    const char *data, *dtype;
    Py_ssize_t nbytes;
    struct tensor t;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#s:argmax", &data, &nbytes, &dtype) ||
        tensor_of(data, nbytes, dtype, &t) < 0)
        return NULL;
    if (t.n == 0) {
        PyErr_SetString(PyExc_ValueError, "argmax of no elements");
        return NULL;
    }
    return PyLong_FromSsize_t(first_max(t.dt, t.data, t.n));
}

/* For the `length` rows of `inner` elements from element `start`: the row
   index of the first NaN, else of the first largest, of each column. Rows are
   read one after another (contiguous), in blocks of order keys. */
static void columns_max(const struct tensor *t, Py_ssize_t start, Py_ssize_t length,
                        Py_ssize_t inner, uint64_t *best, Py_ssize_t *at) {
    uint64_t keys[BLOCK];
    for (Py_ssize_t i = 0; i < length; i++) {
        for (Py_ssize_t col = 0; col < inner; col += BLOCK) {
            Py_ssize_t count = inner - col < BLOCK ? inner - col : BLOCK;
            make_keys(t->dt, t->data, start + i * inner + col, count, keys);
            for (Py_ssize_t j = 0; j < count; j++) {
                if (i == 0 || keys[j] > best[col + j]) {
                    best[col + j] = keys[j];
                    at[col + j] = i;
                }
            }
        }
    }
}

/* The tensor seen as [outer, length, inner]: the argmax of each of the
   outer * inner lines along the middle axis, in row-major order. */
static PyObject *argmax_along(PyObject *self, PyObject *args) {
    const char *data, *dtype;
    Py_ssize_t nbytes, length, inner;
    struct tensor t;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#snn:argmax_along", &data, &nbytes, &dtype, &length, &inner) ||
        tensor_of(data, nbytes, dtype, &t) < 0)
        return NULL;
    if (length < 1 || inner < 1 || t.n % length || (t.n / length) % inner || t.n == 0) {
        PyErr_Format(PyExc_ValueError,
                     "%zd elements do not make lines of length %zd with %zd columns", t.n, length,
                     inner);
        return NULL;
    }
    Py_ssize_t outer = t.n / length / inner;
    uint64_t *best = PyMem_Malloc((size_t)inner * sizeof *best);
    Py_ssize_t *at = PyMem_Malloc((size_t)inner * sizeof *at);
    PyObject *out = best && at ? PyList_New(outer * inner) : PyErr_NoMemory();
    if (!out) {
        PyMem_Free(best);
        PyMem_Free(at);
        return NULL;
    }
    for (Py_ssize_t o = 0; o < outer && out; o++) {
        if (inner == 1) /* contiguous lines: scan values */
            at[0] = first_max(t.dt, t.data + o * length * t.size, length);
        else
            columns_max(&t, o * length * inner, length, inner, best, at);
        for (Py_ssize_t j = 0; j < inner; j++) {
            PyObject *index = PyLong_FromSsize_t(at[j]);
            if (!index || PyList_SetItem(out, o * inner + j, index) < 0) {
                Py_CLEAR(out);
                break;
            }
        }
    }
    PyMem_Free(best);
    PyMem_Free(at);
    return out;
}

/* ------------------------------------------------------------ topk */

struct ranked {
    uint64_t key;
    Py_ssize_t index;
};

/* a ranks below b: a smaller value, or an equal one at a higher index. */
static inline int below(const struct ranked *a, const struct ranked *b) {
    return a->key < b->key || (a->key == b->key && a->index > b->index);
}

/* Restore the min-heap (lowest-ranked at the root) below position i. */
static void sift_down(struct ranked *heap, Py_ssize_t size, Py_ssize_t i) {
    for (;;) {
        Py_ssize_t low = i, left = 2 * i + 1, right = left + 1;
        if (left < size && below(&heap[left], &heap[low]))
            low = left;
        if (right < size && below(&heap[right], &heap[low]))
            low = right;
        if (low == i)
            return;
        struct ranked tmp = heap[i];
        heap[i] = heap[low];
        heap[low] = tmp;
        i = low;
    }
}

static void sift_up(struct ranked *heap, Py_ssize_t i) {
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!below(&heap[i], &heap[parent]))
            return;
        struct ranked tmp = heap[i];
        heap[i] = heap[parent];
        heap[parent] = tmp;
        i = parent;
    }
}

/* The k largest, largest first, ties (and NaNs) by lower index: a min-heap of
   the best k so far, then taken apart from the lowest-ranked up. */
static PyObject *topk(PyObject *self, PyObject *args) {
    const char *data, *dtype;
    Py_ssize_t nbytes, k;
    struct tensor t;
    uint64_t keys[BLOCK];
    (void)self;
    if (!PyArg_ParseTuple(args, "y#sn:topk", &data, &nbytes, &dtype, &k) ||
        tensor_of(data, nbytes, dtype, &t) < 0)
        return NULL;
    if (k < 0) {
        PyErr_Format(PyExc_ValueError, "topk needs k >= 0, not %zd", k);
        return NULL;
    }
    if (k > t.n)
        k = t.n;
    struct ranked *heap = PyMem_Malloc((size_t)(k ? k : 1) * sizeof *heap);
    if (!heap)
        return PyErr_NoMemory();
    Py_ssize_t size = 0;
    for (Py_ssize_t start = 0; start < t.n && k; start += BLOCK) {
        Py_ssize_t count = t.n - start < BLOCK ? t.n - start : BLOCK;
        make_keys(t.dt, t.data, start, count, keys);
        for (Py_ssize_t i = 0; i < count; i++) {
            if (size < k) {
                heap[size].key = keys[i];
                heap[size].index = start + i;
                sift_up(heap, size++);
            } else if (keys[i] > heap[0].key) {
                /* Later indices only win on a strictly larger value. */
                heap[0].key = keys[i];
                heap[0].index = start + i;
                sift_down(heap, size, 0);
            }
        }
    }
    PyObject *out = PyList_New(size);
    if (!out) {
        PyMem_Free(heap);
        return NULL;
    }
    for (Py_ssize_t slot = size - 1; slot >= 0; slot--) {
        Py_ssize_t index = heap[0].index;
        heap[0] = heap[slot];
        sift_down(heap, slot, 0);
        PyObject *value = element(t.dt, t.data, index);
        PyObject *pair = value ? Py_BuildValue("(nN)", index, value) : NULL;
        if (!pair || PyList_SetItem(out, slot, pair) < 0) {
            PyMem_Free(heap);
            Py_DECREF(out);
            return NULL;
        }
    }
    PyMem_Free(heap);
    return out;
}

/* ------------------------------------------------------------ bf16 */

/* f32 -> bf16, rounding to nearest, ties to even; a NaN stays a quiet NaN
   (rounding could carry its payload into an infinity). */
static PyObject *bf16_from_f32(PyObject *self, PyObject *args) {
    const char *data;
    Py_ssize_t nbytes;
    struct tensor t;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#:bf16_from_f32", &data, &nbytes) ||
        tensor_of(data, nbytes, "f32", &t) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 2 * t.n);
    if (!out)
        return NULL;
    unsigned char *dst = (unsigned char *)PyBytes_AsString(out);
    for (Py_ssize_t i = 0; i < t.n; i++) {
        uint32_t b = load32(t.data + 4 * i), h;
        if ((b & 0x7fffffff) > 0x7f800000)
            h = (b >> 16) | 0x0040;
        else
            h = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
        dst[2 * i] = (unsigned char)h;
        dst[2 * i + 1] = (unsigned char)(h >> 8);
    }
    return out;
}

/* bf16 -> f32 is exact: the bf16 bits become the high half of the f32. */
static PyObject *f32_from_bf16(PyObject *self, PyObject *args) {
    const char *data;
    Py_ssize_t nbytes;
    struct tensor t;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#:f32_from_bf16", &data, &nbytes) ||
        tensor_of(data, nbytes, "bf16", &t) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 * t.n);
    if (!out)
        return NULL;
    unsigned char *dst = (unsigned char *)PyBytes_AsString(out);
    for (Py_ssize_t i = 0; i < t.n; i++) {
        dst[4 * i] = 0;
        dst[4 * i + 1] = 0;
        dst[4 * i + 2] = t.data[2 * i];
        dst[4 * i + 3] = t.data[2 * i + 1];
    }
    return out;
}

static PyMethodDef methods[] = {
    {"argmax", argmax, METH_VARARGS,
     "argmax(data, dtype) -> index of the first NaN, else of the first largest element"},
    {"argmax_along", argmax_along, METH_VARARGS,
     "argmax_along(data, dtype, length, inner) -> argmax of each line along the middle axis "
     "of [outer, length, inner], row-major"},
    {"topk", topk, METH_VARARGS,
     "topk(data, dtype, k) -> [(index, value)] of the k largest, largest first, ties by index"},
    {"bf16_from_f32", bf16_from_f32, METH_VARARGS,
     "bf16_from_f32(data) -> bf16 bytes, rounded to nearest even"},
    {"f32_from_bf16", f32_from_bf16, METH_VARARGS, "f32_from_bf16(data) -> f32 bytes (exact)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "wasinn's compiled loops over tensor bytes.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
