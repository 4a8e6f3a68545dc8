/* wasinn._jpeg_codec: JPEG files to pixels and back with libjpeg-turbo 2.1.5
 * (Debian's source, libjpeg 6.2 API, no SIMD, arithmetic coding; see
 * tools/c_libraries.toml). The Python side is wasinn/_image/jpeg.py; signatures
 * in wasinn/_jpeg_codec.pyi.
 *
 * Pixels are what wasinn.image.decode returns: interleaved u8 samples,
 * row-major, 1 (gray) or 3 (RGB) per pixel. Decoding keeps libjpeg's
 * defaults, which are Pillow's (islow IDCT, fancy upsampling, block
 * smoothing), so the pixels are Pillow's; encoding keeps its defaults too
 * (4:2:0 for colour, standard Huffman tables, baseline), as Pillow's save.
 *
 * libjpeg reports a fatal error by calling error_exit, which must not return:
 * ours records a message and longjmps back to the function that called
 * libjpeg, which frees everything and raises Error. Some warnings are fatal
 * too (see emit_message): the pixels would be partly invented.
 */
/* build_ext: link libjpeg-turbo */
/* build_ext: sjlj */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h uses FILE */
#include <stdint.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

/* Scans of any one component a file may have. Encoders write up to about 6
 * (libjpeg's progressive script: 6 of luma, 4 of each chroma component);
 * each scan costs a pass over every block of its components however few
 * bytes it has (one end-of-band run covers 32767 blocks), so thousands of
 * tiny scans would make a small file take minutes: at this limit the scans
 * of a file cost at most a few times what decoding its pixels costs. */
#define MAX_PASSES 32
/* What libjpeg may allocate besides a multi-scan file's coefficients: tables,
 * row buffers (a few dozen rows), saved markers. */
#define MEMORY_SLACK (16L << 20)

static PyObject *Error; /* wasinn._jpeg_codec.Error, made by PyInit */

enum stage { HEADER, PIXELS, ENCODING };

/* The error manager. libjpeg passes its methods the jpeg_error_mgr, which is
 * the first member, so they reach the rest by a cast. */
typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf escape;
    enum stage stage;
    int ran_out;              /* times libjpeg asked for data past the end */
    char text[JMSG_LENGTH_MAX + 160];  /* Error's message, set before the longjmp */
} Failure;

/* libjpeg's own message (the `pub` fields of the last ERREXIT or WARNMS). */
static void library_message(j_common_ptr cinfo, char *out) {
    (*cinfo->err->format_message)(cinfo, out);
    /* "corrupt: Corrupt JPEG data: ..." would say it twice. */
    static const char prefix[] = "Corrupt JPEG data: ";
    if (strncmp(out, prefix, sizeof prefix - 1) == 0)
        memmove(out, out + sizeof prefix - 1, strlen(out) - (sizeof prefix - 1) + 1);
}

/* The kinds of JPEG that libjpeg refuses by their SOF marker. */
static const char *unsupported_process(int marker) {
    switch (marker) {
    case 0xC3: return "lossless JPEG";
    case 0xC5: case 0xC6: return "hierarchical JPEG";
    case 0xC7: return "hierarchical lossless JPEG";
    case 0xCB: return "arithmetic-coded lossless JPEG";
    case 0xCD: case 0xCE: return "arithmetic-coded hierarchical JPEG";
    case 0xCF: return "arithmetic-coded hierarchical lossless JPEG";
    default: return "JPEG extension (SOF marker)";
    }
}

/* Failure.text for the message libjpeg just raised: what is wrong with the
 * file, in words that follow "NAME is ". Data that ran out explains any
 * error after it, and libjpeg's own message would mislead: it read its fake
 * end marker as if it were data ("Bogus marker length"). */
static void describe(j_common_ptr cinfo) {
    Failure *failure = (Failure *)cinfo->err;
    char said[JMSG_LENGTH_MAX];
    char *text = failure->text;
    size_t size = sizeof failure->text;
    int code = cinfo->err->msg_code, *parm = cinfo->err->msg_parm.i;
    library_message(cinfo, said);
    if (failure->stage == ENCODING) {
        snprintf(text, size, "not encodable: %s", said);
        return;
    }
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (failure->ran_out) {
        const char *where = failure->stage == PIXELS ? "inside its image data"
                            : d->num_components == 0 ? "before its frame header (SOF)"
                                                     : "before its image data (SOS)";
        snprintf(text, size, "truncated: it ends %s", where);
    } else if (code == JERR_SOF_UNSUPPORTED) {
        snprintf(text, size, "an unsupported kind of JPEG: %s (SOF marker 0x%02X)",
                 unsupported_process(parm[0]), parm[0]);
    } else if (code == JERR_BAD_PRECISION) {
        snprintf(text, size, "an unsupported kind of JPEG: %d-bit samples", parm[0]);
    } else if (code == JERR_EMPTY_IMAGE && d->num_components <= 0) {
        snprintf(text, size, "corrupt: its frame header (SOF) has no components");
    } else if (code == JERR_EMPTY_IMAGE && d->image_height == 0 && d->image_width > 0) {
        snprintf(text, size, "an unsupported kind of JPEG: its height is in a DNL marker");
    } else if (code == JERR_EMPTY_IMAGE) {
        snprintf(text, size, "corrupt: its size is %ux%u", d->image_width, d->image_height);
    } else if (code == JERR_IMAGE_TOO_BIG) {
        snprintf(text, size, "too large: %ux%u is more than the %d pixels a side libjpeg decodes",
                 d->image_width, d->image_height, parm[0]);
    } else if (code == JERR_OUT_OF_MEMORY || code == JERR_NO_BACKING_STORE) {
        snprintf(text, size, "too large: decoding it needs more than the %ld bytes its size allows",
                 cinfo->mem->max_memory_to_use);
    } else {
        snprintf(text, size, "corrupt: %s", said);
    }
}

static void error_exit(j_common_ptr cinfo) {
    describe(cinfo);
    longjmp(((Failure *)cinfo->err)->escape, 1);
}

/* Warnings (level -1) that leave the pixels as the file means them are
 * let through, as Pillow lets every warning through. Those that mean the
 * entropy-coded data is cut short or corrupt (premature end of a segment, a
 * bad Huffman or arithmetic code, a restart marker out of place, an AC scan
 * before its DC scan) are errors: libjpeg would paint the rest gray, and a
 * truncated upload should not pass for a picture. Running out of data once
 * is how a file without its EOI marker ends, so only the second time is an
 * error (the first fake EOI was then read as data). */
static void emit_message(j_common_ptr cinfo, int level) {
    Failure *failure = (Failure *)cinfo->err;
    if (level >= 0) return; /* trace messages */
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
        if (failure->ran_out++ == 0) return;
        break;
    case JWRN_EXTRANEOUS_DATA: /* bytes between segments, skipped */
    case JWRN_JFIF_MAJOR:
    case JWRN_ADOBE_XFORM:     /* an unknown transform: YCbCr is assumed */
    case JWRN_BOGUS_ICC:       /* ICC profiles are not read */
    case JWRN_NOT_SEQUENTIAL:
        return;
    }
    error_exit(cinfo);
}

static void fail(j_common_ptr cinfo, const char *text) {
    Failure *failure = (Failure *)cinfo->err;
    snprintf(failure->text, sizeof failure->text, "%s", text);
    longjmp(failure->escape, 1);
}

/* libjpeg's progress monitor, with the scans of each component counted. */
typedef struct {
    struct jpeg_progress_mgr pub; /* first: libjpeg passes a pointer to it */
    int scan;                     /* the scan last counted */
    int passes[MAX_COMPONENTS];
} Watch;

/* Called by libjpeg before it reads each batch of input, so at least once
 * per scan, before that scan's data. */
static void count_scans(j_common_ptr cinfo) {
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    Watch *watch = (Watch *)cinfo->progress;
    if (d->input_scan_number == watch->scan) return;
    watch->scan = d->input_scan_number;
    for (int i = 0; i < d->comps_in_scan; i++)
        if (++watch->passes[d->cur_comp_info[i]->component_index] > MAX_PASSES)
            fail(cinfo, "refused: it has more than " Py_STRINGIFY(MAX_PASSES) " scans of one "
                        "component (encoders write at most about 6; each costs a pass over "
                        "the whole component)");
}

static void init_failure(Failure *failure, j_common_ptr cinfo, enum stage stage) {
    cinfo->err = jpeg_std_error(&failure->pub);
    failure->pub.error_exit = error_exit;
    failure->pub.emit_message = emit_message;
    failure->stage = stage;
    failure->ran_out = 0;
    failure->text[0] = '\0';
}

/* The channels decode gives, or -1 with Failure.text set for kinds refused:
 * 4-component files (CMYK/YCCK, whose pixels would pass for RGBA) and 2 or
 * 5+ components (no colour space). */
static int output_channels(j_decompress_ptr cinfo, Failure *failure) {
    switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
        return 1;
    case JCS_YCbCr:
    case JCS_RGB:
        cinfo->out_color_space = JCS_RGB;
        return 3;
    case JCS_CMYK:
    case JCS_YCCK:
        snprintf(failure->text, sizeof failure->text,
                 "an unsupported kind of JPEG: CMYK/YCCK (4 components); "
                 "convert it to RGB first");
        return -1;
    default:
        snprintf(failure->text, sizeof failure->text,
                 "an unsupported kind of JPEG: %d components", cinfo->num_components);
        return -1;
    }
}

/* The body of the first APP1 segment that starts with "Exif\0\0" (where the
 * orientation is), as Pillow takes the first; None if there is none. */
static PyObject *exif_body(j_decompress_ptr cinfo) {
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m != NULL; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
            memcmp(m->data, "Exif\0\0", 6) == 0)
            return PyBytes_FromStringAndSize((const char *)m->data, (Py_ssize_t)m->data_length);
    }
    Py_RETURN_NONE;
}

/* Reads the header of `data` into `cinfo` (set up by the caller); the EXIF
 * segment is kept. Longjmps on failure like any libjpeg call. */
static void read_header(j_decompress_ptr cinfo, const Py_buffer *data) {
    jpeg_mem_src(cinfo, data->buf, (unsigned long)data->len);
    jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(cinfo, TRUE);
}

static PyObject *probe(PyObject *self, PyObject *args) {
    Py_buffer data;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*:probe", &data)) return NULL;
    struct jpeg_decompress_struct cinfo;
    Failure failure;
    PyObject *result = NULL;
    init_failure(&failure, (j_common_ptr)&cinfo, HEADER);
    jpeg_create_decompress(&cinfo);
    if (setjmp(failure.escape)) {
        PyErr_SetString(Error, failure.text);
        goto done;
    }
    read_header(&cinfo, &data);
    int channels = output_channels(&cinfo, &failure);
    if (channels < 0) {
        PyErr_SetString(Error, failure.text);
        goto done;
    }
    PyObject *exif = exif_body(&cinfo);
    if (exif != NULL)
        result = Py_BuildValue("IIiN", cinfo.image_width, cinfo.image_height, channels, exif);
done:
    jpeg_destroy_decompress(&cinfo);
    PyBuffer_Release(&data);
    return result;
}

/* The bytes libjpeg's coefficient buffer takes for a multi-scan file
 * (jdcoefct.c: blocks padded to whole MCUs, 64 JCOEFs each); 0 for a
 * single-scan one, which decodes an MCU row at a time. 64-bit: on wasm32 a
 * size_t cannot hold what a 65500x65500 header asks for. */
static uint64_t coefficient_bytes(j_decompress_ptr cinfo) {
    uint64_t total = 0;
    if (!jpeg_has_multiple_scans(cinfo)) return 0;
    for (int ci = 0; ci < cinfo->num_components; ci++) {
        jpeg_component_info *c = &cinfo->comp_info[ci];
        uint64_t w = (c->width_in_blocks + c->h_samp_factor - 1) / c->h_samp_factor;
        uint64_t h = (c->height_in_blocks + c->v_samp_factor - 1) / c->v_samp_factor;
        total += w * c->h_samp_factor * h * c->v_samp_factor * sizeof(JBLOCK);
    }
    return total;
}

/* For a progressive file: why its scans do not make a whole image, or NULL.
 * Without a DC scan libjpeg paints a component flat, from a file that can
 * be a few bytes whatever size it declares. A file whose data ran out with
 * coefficients short of their last bit was cut between two scans (encoders
 * end with every coefficient refined to bit 0); libjpeg would show the
 * blurred image a browser shows while loading, Pillow calls it truncated. */
static const char *progression_gap(j_decompress_ptr cinfo, int ran_out) {
    if (!cinfo->progressive_mode || cinfo->coef_bits == NULL) return NULL;
    for (int ci = 0; ci < cinfo->num_components; ci++) {
        if (cinfo->coef_bits[ci][0] < 0) return "corrupt: a component has no DC scan";
        for (int k = 0; ran_out && k < DCTSIZE2; k++)
            if (cinfo->coef_bits[ci][k] != 0) return "truncated: it ends between two scans";
    }
    return NULL;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *check;
    int reduce = 1;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*O|i:decode", &data, &check, &reduce)) return NULL;
    if (reduce != 1 && reduce != 2 && reduce != 4 && reduce != 8) {
        PyBuffer_Release(&data);
        return PyErr_Format(PyExc_ValueError, "decode reduces by 1, 2, 4 or 8, not %d", reduce);
    }
    struct jpeg_decompress_struct cinfo;
    Watch watch = {.pub = {.progress_monitor = count_scans}};
    Failure failure;
    /* Set after setjmp and read after a longjmp: volatile, so the value
     * is not one cached in a register at setjmp time. */
    PyObject *volatile pixels = NULL;
    PyObject *volatile exif = NULL;
    PyObject *result = NULL;
    init_failure(&failure, (j_common_ptr)&cinfo, HEADER);
    jpeg_create_decompress(&cinfo);
    if (setjmp(failure.escape)) {
        PyErr_SetString(Error, failure.text);
        goto done;
    }
    cinfo.progress = &watch.pub;
    read_header(&cinfo, &data);
    int channels = output_channels(&cinfo, &failure);
    if (channels < 0) {
        PyErr_SetString(Error, failure.text);
        goto done;
    }
    /* The caller's size limit, before libjpeg allocates anything for pixels. */
    PyObject *ok = PyObject_CallFunction(check, "IIi", cinfo.image_width, cinfo.image_height,
                                         channels);
    if (ok == NULL) goto done;
    Py_DECREF(ok);
    exif = exif_body(&cinfo);
    if (exif == NULL) goto done;
    /* 1/2, 1/4 or 1/8 scale: libjpeg-turbo's reduced IDCTs (4x4, 2x2, 1x1 of
     * each 8x8 block), what Pillow's draft asks for. Only the IDCT and what
     * follows it get cheaper: every coefficient is still entropy-decoded,
     * and a multi-scan file still keeps all of them (the budget below). */
    cinfo.scale_num = 1;
    cinfo.scale_denom = (unsigned int)reduce;
    uint64_t budget = coefficient_bytes(&cinfo) + MEMORY_SLACK;
    cinfo.mem->max_memory_to_use = budget < LONG_MAX ? (long)budget : LONG_MAX;
    jpeg_start_decompress(&cinfo); /* a multi-scan file's scans are all read here */
    const char *gap = progression_gap(&cinfo, failure.ran_out);
    if (gap != NULL) fail((j_common_ptr)&cinfo, gap);
    failure.stage = PIXELS;
    size_t stride = (size_t)cinfo.output_width * (size_t)cinfo.output_components;
    if ((uint64_t)stride * cinfo.output_height > SIZE_MAX / 2) {
        PyErr_NoMemory(); /* only when the caller's check lets 4 GB through on wasm32 */
        goto done;
    }
    pixels = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(stride * cinfo.output_height));
    if (pixels == NULL) goto done;
    unsigned char *out = (unsigned char *)PyBytes_AsString(pixels);
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = out + stride * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo); /* reads up to EOI: a broken tail is an error too */
    result = Py_BuildValue("IIiOO", cinfo.output_width, cinfo.output_height, channels, pixels,
                           exif);
done:
    Py_XDECREF(pixels);
    Py_XDECREF(exif);
    jpeg_destroy_decompress(&cinfo);
    PyBuffer_Release(&data);
    return result;
}

/* The compressed bytes, in a buffer that doubles as it fills. (jpeg_mem_dest
 * would do, but after an error its latest buffer is out of the caller's
 * reach: it leaks.) */
typedef struct {
    struct jpeg_destination_mgr pub;
    JOCTET *buffer;
    size_t size;
} Sink;

static void sink_start(j_compress_ptr cinfo) { (void)cinfo; }
static void sink_end(j_compress_ptr cinfo) { (void)cinfo; }

/* Called when the buffer is full (whatever free_in_buffer says). */
static boolean sink_grow(j_compress_ptr cinfo) {
    Sink *sink = (Sink *)cinfo->dest;
    JOCTET *bigger = PyMem_Realloc(sink->buffer, 2 * sink->size);
    if (bigger == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    sink->pub.next_output_byte = bigger + sink->size;
    sink->pub.free_in_buffer = sink->size;
    sink->buffer = bigger;
    sink->size *= 2;
    return TRUE;
}

static PyObject *encode(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"", "", "", "", "", "progressive", "arithmetic", NULL};
    Py_buffer data;
    unsigned int width, height;
    int channels, quality, progressive = 0, arithmetic = 0;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*IIii|$pp:encode", keywords, &data, &width,
                                     &height, &channels, &quality, &progressive, &arithmetic))
        return NULL;
    struct jpeg_compress_struct cinfo;
    Failure failure;
    Sink sink = {.pub = {.init_destination = sink_start, .empty_output_buffer = sink_grow,
                         .term_destination = sink_end}};
    PyObject *result = NULL;
    init_failure(&failure, (j_common_ptr)&cinfo, ENCODING);
    jpeg_create_compress(&cinfo);
    if ((channels != 1 && channels != 3) || quality < 1 || quality > 100) {
        PyErr_Format(PyExc_ValueError, "encode takes 1 or 3 channels and quality 1-100, not %d "
                     "and %d", channels, quality);
        goto done;
    }
    if ((size_t)data.len != (size_t)width * height * (size_t)channels || width == 0 ||
        height == 0) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not %ux%u pixels of %d channels",
                     data.len, width, height, channels);
        goto done;
    }
    /* A start of about a tenth of the pixels: typical JPEGs need no growing. */
    sink.size = (size_t)data.len / 8 + 4096;
    sink.buffer = PyMem_Malloc(sink.size);
    if (sink.buffer == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    sink.pub.next_output_byte = sink.buffer;
    sink.pub.free_in_buffer = sink.size;
    if (setjmp(failure.escape)) {
        PyErr_SetString(Error, failure.text);
        goto done;
    }
    cinfo.dest = &sink.pub;
    cinfo.image_width = width;
    cinfo.image_height = height;
    cinfo.input_components = channels;
    cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo); /* YCbCr 4:2:0 for colour, as Pillow */
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (progressive) jpeg_simple_progression(&cinfo);
    cinfo.arith_code = arithmetic ? TRUE : FALSE;
    jpeg_start_compress(&cinfo, TRUE);
    size_t stride = (size_t)width * (size_t)channels;
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)data.buf + stride * cinfo.next_scanline;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    result = PyBytes_FromStringAndSize((const char *)sink.buffer,
                                       (Py_ssize_t)(sink.size - sink.pub.free_in_buffer));
done:
    jpeg_destroy_compress(&cinfo);
    PyMem_Free(sink.buffer);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"probe", probe, METH_VARARGS,
     "probe(data) -> (width, height, channels, exif): the header, without decoding"},
    {"decode", decode, METH_VARARGS,
     "decode(data, check, reduce=1) -> (width, height, channels, pixels, exif) at 1/reduce "
     "scale (1, 2, 4 or 8); check(width, height, channels) is called with the header's size "
     "before any pixel memory is allocated"},
    {"encode", (PyCFunction)(void (*)(void))encode, METH_VARARGS | METH_KEYWORDS,
     "encode(pixels, width, height, channels, quality, *, progressive=False, arithmetic=False) "
     "-> the JPEG file's bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "wasinn._jpeg_codec", "JPEG decoding and encoding (libjpeg-turbo).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jpeg_codec(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Error = PyErr_NewExceptionWithDoc(
        "wasinn._jpeg_codec.Error",
        "The bytes are not a JPEG this module decodes; the message says why, in words that "
        "follow the file's name (\"truncated: ...\", \"corrupt: ...\").",
        PyExc_ValueError, NULL);
    if (Error == NULL || PyModule_AddObjectRef(m, "Error", Error) < 0) {
        Py_XDECREF(Error);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
