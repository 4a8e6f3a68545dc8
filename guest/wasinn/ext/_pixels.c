/* wasinn._pixels: per-pixel loops over decoded images, which pure Python runs
 * slowly inside a component once the codecs themselves are compiled:
 * channel conversion (wasinn.image's mode=) and EXIF orientation.
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

static PyMethodDef methods[] = {
    {"convert", convert, METH_VARARGS,
     "convert(data, channels, want) -> the pixels with `want` channels (1, 3 or 4), "
     "as Pillow's Image.convert to L, RGB or RGBA"},
    {"orient", orient, METH_VARARGS,
     "orient(data, width, height, channels, orientation) -> the pixels turned upright for "
     "EXIF orientation 1-8 (5-8 swap width and height)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wasinn._pixels", "Per-pixel loops over decoded images.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pixels(void) { return PyModule_Create(&module); }
