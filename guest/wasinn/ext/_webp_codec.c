/* wasinn._webp_codec: WebP files read and written by libwebp (Debian's
 * 1.2.4, with its security patches, CVE-2023-4863's fix among them).
 *
 * tools/build_ext.py compiles this file and libwebp for the guest and for the
 * native CPython, so the native tests run the code the component runs. The
 * Python side is wasinn/_image/webp.py, which turns the ValueErrors raised here into
 * ImageErrors naming the file; the signatures are in wasinn/_webp_codec.pyi.
 *
 * Memory: probe reads only the headers. decode allocates its result, a bytes
 * object of exactly width * height * channels, before decoding, and has
 * libwebp write the pixels straight into it (no second copy). libwebp adds
 * its own working memory: for a lossy image a few rows of YUV (and the alpha
 * plane when there is one, one byte a pixel), for a lossless one the whole
 * image as 32-bit ARGB, so a decode peaks below three times its pixels.
 * The caller checks the size the headers declare before calling decode.
 */
/* build_ext: link libwebp */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <webp/decode.h>
#include <webp/encode.h>

/* Why libwebp refused a file, phrased to follow the file's name. ``where``:
   what was being read, the headers (0) or a lossy (1) or lossless (2) image. */
static const char *decode_problem(VP8StatusCode status, int where) {
    static const char *corrupt[] = {
        "is corrupt: its WebP headers (RIFF, VP8X or the frame header) are invalid",
        "is corrupt: its lossy (VP8) image data or its alpha (ALPH) is invalid",
        "is corrupt: its lossless (VP8L) image data is invalid",
    };
    switch (status) {
    case VP8_STATUS_NOT_ENOUGH_DATA:
        return where ? "is truncated: its WebP data ends before the image does"
                     : "is truncated: its WebP headers end early";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
        return "uses a WebP feature that is not supported";
    default: /* BITSTREAM_ERROR; INVALID_PARAM, SUSPENDED, USER_ABORT do not occur here */
        return corrupt[where];
    }
}

/* ValueError(problem) for a refused file; MemoryError when libwebp ran out. */
static PyObject *decode_error(VP8StatusCode status, int where) {
    if (status == VP8_STATUS_OUT_OF_MEMORY)
        return PyErr_NoMemory();
    PyErr_SetString(PyExc_ValueError, decode_problem(status, where));
    return NULL;
}

/* The headers' features (RIFF, VP8X, VP8/VP8L frame header), or an error set. */
static int features_of(const char *data, Py_ssize_t size, WebPBitstreamFeatures *features) {
    VP8StatusCode status;
    Py_BEGIN_ALLOW_THREADS
    status = WebPGetFeatures((const uint8_t *)data, (size_t)size, features);
    Py_END_ALLOW_THREADS
    if (status != VP8_STATUS_OK) {
        decode_error(status, 0);
        return -1;
    }
    return 0;
}

static PyObject *probe(PyObject *self, PyObject *args) {
    const char *data;
    Py_ssize_t size;
    WebPBitstreamFeatures features;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#:probe", &data, &size) || features_of(data, size, &features) < 0)
        return NULL;
    return Py_BuildValue("(iiNNN)", features.width, features.height,
                         PyBool_FromLong(features.has_alpha),
                         PyBool_FromLong(features.has_animation),
                         PyBool_FromLong(features.format == 2));
}

static PyObject *decode(PyObject *self, PyObject *args) {
    const char *data;
    Py_ssize_t size;
    int channels;
    WebPDecoderConfig config;
    VP8StatusCode status;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#i:decode", &data, &size, &channels))
        return NULL;
    if (channels != 3 && channels != 4) {
        PyErr_Format(PyExc_ValueError, "decode writes 3 (RGB) or 4 (RGBA) channels, not %d",
                     channels);
        return NULL;
    }
    if (!WebPInitDecoderConfig(&config)) { /* only when libwebp's ABI differs from its headers' */
        PyErr_SetString(PyExc_RuntimeError, "libwebp's decoder ABI does not match its headers");
        return NULL;
    }
    if (features_of(data, size, &config.input) < 0)
        return NULL;
    if (config.input.has_animation) {
        PyErr_SetString(PyExc_ValueError, "is an animated WebP, which is not supported");
        return NULL;
    }
    /* WebPGetFeatures keeps both sides within 1..16383 (WebP's 14-bit fields),
       so the product fits in a Py_ssize_t on 32-bit wasm too. */
    Py_ssize_t stride = (Py_ssize_t)config.input.width * channels;
    PyObject *out = PyBytes_FromStringAndSize(NULL, stride * config.input.height);
    if (!out)
        return NULL;
    config.output.colorspace = channels == 4 ? MODE_RGBA : MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = (uint8_t *)PyBytes_AsString(out);
    config.output.u.RGBA.stride = (int)stride;
    config.output.u.RGBA.size = (size_t)(stride * config.input.height);
    Py_BEGIN_ALLOW_THREADS
    status = WebPDecode((const uint8_t *)data, (size_t)size, &config);
    Py_END_ALLOW_THREADS
    WebPFreeDecBuffer(&config.output); /* frees nothing of ours: the memory is external */
    if (status != VP8_STATUS_OK) {
        Py_DECREF(out);
        /* format: 1 lossy, 2 lossless (0, mixed, is only an animation's) */
        return decode_error(status, config.input.format == 2 ? 2 : 1);
    }
    return out;
}

/* Why libwebp could not encode, for the ValueError (a caller's mistake or a limit). */
static const char *encode_problem(WebPEncodingError error) {
    switch (error) {
    case VP8_ENC_ERROR_BAD_DIMENSION:
        return "WebP stores at most 16383 x 16383 pixels";
    case VP8_ENC_ERROR_PARTITION0_OVERFLOW:
    case VP8_ENC_ERROR_PARTITION_OVERFLOW:
        return "the image is too big for a lossy WebP's partitions (512 KiB of headers); "
               "use a lower quality or lossless=True";
    case VP8_ENC_ERROR_FILE_TOO_BIG:
        return "the encoded WebP would be larger than 4 GiB";
    default:
        return "libwebp could not encode the image";
    }
}

/* ``pixels`` of 1 or 2 channels widened to 3 or 4 (gray repeated in R, G
   and B; alpha kept), into a new buffer; NULL with MemoryError set. */
static uint8_t *widen_gray(const uint8_t *pixels, Py_ssize_t count, int channels) {
    int wide = channels + 2;
    uint8_t *out = PyMem_Malloc((size_t)(count * wide));
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        uint8_t gray = pixels[i * channels];
        uint8_t *px = out + i * wide;
        px[0] = px[1] = px[2] = gray;
        if (channels == 2)
            px[3] = pixels[i * 2 + 1];
    }
    return out;
}

static PyObject *encode(PyObject *self, PyObject *args) {
    const char *data;
    Py_ssize_t size;
    int width, height, channels, quality, lossless;
    WebPConfig config;
    WebPPicture picture;
    WebPMemoryWriter writer;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#iiiip:encode", &data, &size, &width, &height, &channels,
                          &quality, &lossless))
        return NULL;
    if (width <= 0 || height <= 0 || channels < 1 || channels > 4 || quality < 0 ||
        quality > 100 || size % ((Py_ssize_t)channels * width) ||
        size / channels / width != height) {
        PyErr_Format(PyExc_ValueError,
                     "encode takes %d x %d x %d u8 pixels and a quality of 0..100, got %zd bytes "
                     "and quality %d",
                     width, height, channels, size, quality);
        return NULL;
    }
    if (width > WEBP_MAX_DIMENSION || height > WEBP_MAX_DIMENSION) {
        PyErr_Format(PyExc_ValueError, "WebP stores at most %d x %d pixels, not %d x %d",
                     WEBP_MAX_DIMENSION, WEBP_MAX_DIMENSION, width, height);
        return NULL;
    }
    const uint8_t *rgb = (const uint8_t *)data;
    uint8_t *widened = NULL;
    if (channels <= 2) {
        rgb = widened = widen_gray(rgb, (Py_ssize_t)width * height, channels);
        if (!widened)
            return NULL;
        channels += 2;
    }
    /* Pillow's settings: its default preset at ``quality``, method 4, and for
       lossless ``quality`` as the effort. ``exact`` keeps the colour under
       fully transparent pixels in lossless files (Pillow's default drops it),
       so that lossless means the same bytes back. */
    if (!WebPConfigInit(&config) || !WebPPictureInit(&picture)) {
        PyMem_Free(widened);
        PyErr_SetString(PyExc_RuntimeError, "libwebp's encoder ABI does not match its headers");
        return NULL;
    }
    config.quality = (float)quality;
    config.method = 4;
    config.lossless = lossless;
    config.exact = lossless;
    picture.width = width;
    picture.height = height;
    picture.use_argb = lossless; /* lossless codes ARGB; lossy converts to YUV on import */
    WebPMemoryWriterInit(&writer);
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = &writer;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = channels == 4 ? WebPPictureImportRGBA(&picture, rgb, width * 4)
                       : WebPPictureImportRGB(&picture, rgb, width * 3);
    ok = ok && WebPEncode(&config, &picture);
    Py_END_ALLOW_THREADS
    PyMem_Free(widened);
    PyObject *out = NULL;
    WebPEncodingError error = picture.error_code;
    /* An import fails only when it cannot allocate the picture (error_code stays OK). */
    if (!ok && (error == VP8_ENC_OK || error == VP8_ENC_ERROR_OUT_OF_MEMORY ||
                error == VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY))
        PyErr_NoMemory();
    else if (!ok)
        PyErr_SetString(PyExc_ValueError, encode_problem(error));
    else
        out = PyBytes_FromStringAndSize((const char *)writer.mem, (Py_ssize_t)writer.size);
    WebPPictureFree(&picture);
    WebPMemoryWriterClear(&writer);
    return out;
}

static PyMethodDef methods[] = {
    {"probe", probe, METH_VARARGS,
     "probe(data) -> (width, height, has_alpha, animated, lossless) from the WebP headers"},
    {"decode", decode, METH_VARARGS,
     "decode(data, channels) -> width * height * channels bytes, RGB (3) or RGBA (4)"},
    {"encode", encode, METH_VARARGS,
     "encode(pixels, width, height, channels, quality, lossless) -> the WebP file's bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_webp_codec", "WebP files read and written by libwebp.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__webp_codec(void) { return PyModule_Create(&module); }
