/* wasinn._pixels: per-pixel loops over decoded images, which pure Python runs
 * slowly inside a component once the codecs themselves are compiled:
 * channel conversion (wasinn.image's mode=), EXIF orientation and the box
 * reduction of decode(reduce=) for the formats that cannot decode smaller.
 *
 * Pixels are interleaved u8 samples, row-major, `channels` per pixel
 * (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA): what wasinn.image.decode returns.
 * The Python side is wasinn/image.py; signatures in wasinn/_pixels.pyi.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* The largest object size (the guest's pyconfig.h names no SSIZE_MAX for PY_SSIZE_T_MAX). */
#define MAX_BYTES ((Py_ssize_t)(SIZE_MAX / 2))

/* Checks that `data` holds exactly `count` pixels of `channels` samples. */
static int check_pixels(Py_buffer *data, Py_ssize_t count, int channels) {
    if (channels < 1 || channels > 4) {
        PyErr_Format(PyExc_ValueError, "channels must be 1 to 4, not %d", channels);
        return -1;
    }
    if (count < 0 || count > MAX_BYTES / 4 || data->len != count * channels) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not %zd pixels of %d channels", data->len,
                     count, channels);
        return -1;
    }
    return 0;
}

/* ITU-R 601-2 luma in Pillow's fixed point: exactly Image.convert("L"). */
static inline unsigned char luma(const unsigned char *p) {
    return (unsigned char)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 32768u) >> 16);
}

static PyObject *convert(PyObject *self, PyObject *args) {
    Py_buffer data;
    int channels, want;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*ii:convert", &data, &channels, &want)) return NULL;
    PyObject *result = NULL;
    if (want != 1 && want != 3 && want != 4) {
        PyErr_Format(PyExc_ValueError, "convert makes 1, 3 or 4 channels, not %d", want);
        goto done;
    }
    Py_ssize_t count = channels > 0 ? data.len / channels : 0;
    if (check_pixels(&data, count, channels) < 0) goto done;
    result = PyBytes_FromStringAndSize(NULL, count * want);
    if (result == NULL) goto done;
    const unsigned char *in = data.buf;
    unsigned char *out = (unsigned char *)PyBytes_AsString(result);
    /* Gray is in sample 0 for 1 and 2 channels; alpha is the last sample of 2 and 4. */
    int has_alpha = channels == 2 || channels == 4;
    for (Py_ssize_t i = 0; i < count; i++, in += channels, out += want) {
        if (want == 1) {
            out[0] = channels <= 2 ? in[0] : luma(in);
            continue;
        }
        if (channels <= 2) {
            out[0] = out[1] = out[2] = in[0];
        } else {
            out[0] = in[0];
            out[1] = in[1];
            out[2] = in[2];
        }
        if (want == 4) out[3] = has_alpha ? in[channels - 1] : 255;
    }
done:
    PyBuffer_Release(&data);
    return result;
}

/* EXIF orientation 1-8: how the stored image must be turned to be seen
 * upright, as Pillow's ImageOps.exif_transpose does it. For output pixel
 * (y, x) the source is (row, col):
 *   2 mirror:        (y, W-1-x)        5 transpose:  (x, y)
 *   3 rotate 180:    (H-1-y, W-1-x)    6 rotate 90 clockwise:  (H-1-x, y)
 *   4 flip:          (H-1-y, x)        7 transverse: (H-1-x, W-1-y)
 *                                      8 rotate 90 anticlockwise: (x, W-1-y)
 * 5-8 swap width and height. */
static PyObject *orient(PyObject *self, PyObject *args) {
    Py_buffer data;
    Py_ssize_t width, height;
    int channels, orientation;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnii:orient", &data, &width, &height, &channels, &orientation))
        return NULL;
    PyObject *result = NULL;
    if (orientation < 1 || orientation > 8) {
        PyErr_Format(PyExc_ValueError, "EXIF orientation is 1 to 8, not %d", orientation);
        goto done;
    }
    if (width < 0 || height < 0 || (width && height > MAX_BYTES / 4 / width)) {
        PyErr_Format(PyExc_ValueError, "bad image size %zdx%zd", width, height);
        goto done;
    }
    if (check_pixels(&data, width * height, channels) < 0) goto done;
    result = PyBytes_FromStringAndSize(NULL, data.len);
    if (result == NULL) goto done;
    const unsigned char *in = data.buf;
    unsigned char *out = (unsigned char *)PyBytes_AsString(result);
    int swap = orientation >= 5;
    Py_ssize_t out_w = swap ? height : width, out_h = swap ? width : height;
    /* Mirrored axes: of rows (flip_rows) and of columns (flip_cols), read from the table above. */
    int flip_rows = orientation == 3 || orientation == 4 || orientation == 6 || orientation == 7;
    int flip_cols = orientation == 2 || orientation == 3 || orientation == 7 || orientation == 8;
    for (Py_ssize_t y = 0; y < out_h; y++) {
        for (Py_ssize_t x = 0; x < out_w; x++) {
            Py_ssize_t row = swap ? x : y, col = swap ? y : x;
            if (flip_rows) row = height - 1 - row;
            if (flip_cols) col = width - 1 - col;
            memcpy(out, in + (row * width + col) * channels, (size_t)channels);
            out += channels;
        }
    }
done:
    PyBuffer_Release(&data);
    return result;
}

/* Pillow's fixed-point reciprocal of a box's pixel count: the box average is
 * ((sum + count / 2) * reciprocal(count)) >> 24. Computed in float as Pillow
 * computes it (Reduce.c), so the truncation, and with it every rounding of
 * an edge box whose count is not a power of two, is the same; for a power
 * of two it is exact, round half up. Sums fit: at most 64 pixels of 255. */
static uint32_t reciprocal(uint32_t count) {
    float dividend = 4294967296.0f, divisor = (float)(count << 8);
    return (uint32_t)(dividend / divisor);
}

/* a * b / 255 rounded, in Pillow's form (its MULDIV255). */
static inline unsigned char times_alpha(unsigned v, unsigned alpha) {
    unsigned t = v * alpha + 128;
    return (unsigned char)(((t >> 8) + t) >> 8);
}

/* Adds one input row to the sums of its boxes (premultiplied when there is
 * alpha). Always inlined, and called with `channels` a constant, so that the
 * loop over the channels unrolls and its tests vanish: this loop is the
 * whole cost of a reduction (a 4000x3000 RGB picture is 36 million adds). */
static inline __attribute__((always_inline)) void add_row(uint32_t *sums,
                                                          const unsigned char *px,
                                                          Py_ssize_t width, int channels,
                                                          int factor) {
    int alpha = channels == 2 || channels == 4 ? channels - 1 : -1;
    for (Py_ssize_t x0 = 0; x0 < width; x0 += factor, sums += channels) {
        Py_ssize_t cols = width - x0 < factor ? width - x0 : factor;
        for (Py_ssize_t k = 0; k < cols; k++, px += channels)
            for (int c = 0; c < channels; c++)
                sums[c] += alpha < 0 || c == alpha ? px[c] : times_alpha(px[c], px[alpha]);
    }
}

/* Pillow's Image.reduce(factor): each output pixel is the rounded average of
 * a factor x factor box (the boxes of the last row and column hold what is
 * left, so the result is ceil(width / factor) x ceil(height / factor)).
 * With alpha (2 or 4 channels) Pillow averages premultiplied colours (its
 * reduce converts LA to La and RGBA to RGBa, and back), so a transparent
 * pixel's colour does not bleed into its neighbours: the same here, with
 * its rounding both ways. One pass over the input, a row of sums at a time;
 * the premultiplied copy is never made whole. */
static PyObject *reduce(PyObject *self, PyObject *args) {
    Py_buffer data;
    Py_ssize_t width, height;
    int channels, factor;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnii:reduce", &data, &width, &height, &channels, &factor))
        return NULL;
    PyObject *result = NULL;
    uint32_t *sums = NULL;
    if (factor < 1 || factor > 8) {
        PyErr_Format(PyExc_ValueError, "reduce factor must be 1 to 8, not %d", factor);
        goto done;
    }
    if (width < 1 || height < 1 || height > MAX_BYTES / 4 / width) {
        PyErr_Format(PyExc_ValueError, "bad image size %zdx%zd", width, height);
        goto done;
    }
    if (check_pixels(&data, width * height, channels) < 0) goto done;
    if (factor == 1) {
        /* Pillow's reduce(1) is a copy; the premultiplied round trip below is not
         * (a colour under alpha 1 would lose its low bits). */
        result = PyBytes_FromStringAndSize(data.buf, width * height * channels);
        goto done;
    }
    Py_ssize_t out_w = (width + factor - 1) / factor, out_h = (height + factor - 1) / factor;
    result = PyBytes_FromStringAndSize(NULL, out_w * out_h * channels);
    if (result == NULL) goto done;
    sums = PyMem_Calloc((size_t)(out_w * channels), sizeof *sums);
    if (sums == NULL) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *in = data.buf;
    unsigned char *out = (unsigned char *)PyBytes_AsString(result);
    int alpha = channels == 2 || channels == 4 ? channels - 1 : -1;
    for (Py_ssize_t y0 = 0; y0 < height; y0 += factor) {
        Py_ssize_t rows = height - y0 < factor ? height - y0 : factor;
        memset(sums, 0, (size_t)(out_w * channels) * sizeof *sums);
        for (Py_ssize_t y = y0; y < y0 + rows; y++) {
            const unsigned char *px = in + y * width * channels;
            switch (channels) {
            case 1: add_row(sums, px, width, 1, factor); break;
            case 2: add_row(sums, px, width, 2, factor); break;
            case 3: add_row(sums, px, width, 3, factor); break;
            default: add_row(sums, px, width, 4, factor); break;
            }
        }
        uint32_t full_count = (uint32_t)(rows * factor), full_scale = reciprocal(full_count);
        for (Py_ssize_t x = 0; x < out_w; x++) {
            Py_ssize_t cols = width - x * factor < factor ? width - x * factor : factor;
            uint32_t count = (uint32_t)(rows * cols);
            uint32_t scale = cols == factor ? full_scale : reciprocal(count);
            const uint32_t *sum = sums + x * channels;
            for (int c = 0; c < channels; c++)
                out[c] = (unsigned char)(((sum[c] + count / 2) * scale) >> 24);
            if (alpha >= 0 && out[alpha] != 0 && out[alpha] != 255) {
                /* Back from premultiplied, as Pillow's RGBa to RGBA: truncated, clipped. */
                for (int c = 0; c < alpha; c++) {
                    unsigned v = 255u * out[c] / out[alpha];
                    out[c] = (unsigned char)(v > 255 ? 255 : v);
                }
            }
            out += channels;
        }
    }
done:
    PyMem_Free(sums);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"convert", convert, METH_VARARGS,
     "convert(data, channels, want) -> the pixels with `want` channels (1, 3 or 4), "
     "as Pillow's Image.convert to L, RGB or RGBA"},
    {"orient", orient, METH_VARARGS,
     "orient(data, width, height, channels, orientation) -> the pixels turned upright for "
     "EXIF orientation 1-8 (5-8 swap width and height)"},
    {"reduce", reduce, METH_VARARGS,
     "reduce(data, width, height, channels, factor) -> the pixels box-averaged by `factor` "
     "(1-8), as Pillow's Image.reduce: ceil(width / factor) x ceil(height / factor)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wasinn._pixels", "Per-pixel loops over decoded images.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pixels(void) { return PyModule_Create(&module); }
