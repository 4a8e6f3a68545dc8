/* wasinn._png_codec: PNG files read and written by libspng (Debian's 0.7.3,
 * see tools/c_libraries.toml), for wasinn/_image/png.py.
 *
 * Decoding gives 8 bits per sample, the way wasinn.image documents (and
 * Pillow does): 16-bit samples keep their high byte, 1/2/4-bit gray is
 * scaled to 0..255, palette images become RGB, or RGBA when the file has a
 * tRNS chunk (indices past the palette read as opaque black), gray+alpha
 * stays two channels, and a tRNS colour key on gray or RGB is not applied.
 * libspng parses the chunks, checks every CRC, inflates and unfilters; it is
 * asked for the rows as the file stores them (SPNG_FMT_RAW, one scanline of
 * one Adam7 pass at a time), and this file converts each to 8 bits and puts
 * its pixels in place. Its own conversions are not used: they cannot give
 * gray+alpha or 16-bit gray as 8 bits without widening to RGBA first.
 *
 * Before libspng sees a file, read_header checks its signature and walks the
 * chunk headers up to the first IDAT (IHDR's CRC included), so that probe
 * needs no decoder and errors in the header say exactly what is wrong.
 * libspng's errors only say what kind of problem it met (a CRC, the end of
 * the data, a filter type); `explain` walks the chunks again to say where,
 * on the error path only.
 *
 * Errors raise ValueError whose message is what the file is, to follow its
 * name: "is truncated inside its IDAT chunk", "is corrupt: ...". Memory:
 * libspng and its zlib allocate through PyMem (tracemalloc sees them); a
 * decode holds its output, a scanline and libspng's two, zlib's window, and
 * at most CACHE_LIMIT of ancillary chunks (text, ICC profile, EXIF).
 */
/* build_ext: link libspng */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <spng.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

/* What libspng may keep of ancillary chunks: one inflated chunk (zTXt, iTXt,
   iCCP; Pillow refuses text that inflates past 1 MB too), and all of them. */
#define CHUNK_LIMIT (1 << 20)
#define CACHE_LIMIT (4 << 20)
/* PNG's largest width, height and chunk length. */
#define PNG_MAX 0x7fffffffu

static const unsigned char SIGNATURE[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
/* Adam7: first column and column step of each pass (libspng's row_info gives the row). */
static const uint32_t ADAM7_X0[7] = {0, 4, 0, 2, 0, 1, 0};
static const uint32_t ADAM7_DX[7] = {8, 8, 4, 4, 2, 2, 1};
static const uint32_t ADAM7_Y0[7] = {0, 0, 4, 0, 2, 0, 1};
static const uint32_t ADAM7_DY[7] = {8, 8, 8, 4, 4, 2, 2};

/* ------------------------------------------------------------ memory */

/* libspng's allocator (and so zlib's inside it): PyMem, which the GIL we
   hold allows, so that tracemalloc counts a decode's memory. */
static void *mem_malloc(size_t size) { return PyMem_Malloc(size); }
static void *mem_realloc(void *p, size_t size) { return PyMem_Realloc(p, size); }
static void *mem_calloc(size_t count, size_t size) { return PyMem_Calloc(count, size); }
static void mem_free(void *p) { PyMem_Free(p); }
static struct spng_alloc ALLOC = {mem_malloc, mem_realloc, mem_calloc, mem_free};

static uint32_t load32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ------------------------------------------------------------ chunks */

struct chunk {
    uint32_t length;
    const unsigned char *type, *body; /* into the file's bytes */
};

enum walk { END, WHOLE, CUT };

/* The chunk at *pos: END when the data ends before its 8-byte header, CUT
   when it ends inside its body or CRC, else WHOLE (and *pos moves past it). */
static enum walk next_chunk(const unsigned char *d, size_t n, size_t *pos, struct chunk *c) {
    if (n - *pos < 8)
        return END;
    c->length = load32(d + *pos);
    c->type = d + *pos + 4;
    c->body = d + *pos + 8;
    if (c->length > PNG_MAX || n - *pos - 8 < (size_t)c->length + 4)
        return CUT;
    *pos += 12 + (size_t)c->length;
    return WHOLE;
}

static int is_type(const struct chunk *c, const char *type) { return memcmp(c->type, type, 4) == 0; }

static int crc_ok(const struct chunk *c) {
    uLong crc = crc32(crc32(0, c->type, 4), c->body, c->length);
    return crc == load32(c->body + c->length);
}

/* A chunk type for a message: its letters, anything else as ?. */
static const char *type_name(const struct chunk *c, char out[5]) {
    for (int i = 0; i < 4; i++) {
        unsigned char ch = c->type[i];
        out[i] = (char)((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ? ch : '?');
    }
    out[4] = 0;
    return out;
}

static PyObject *bad(const char *format, ...) {
    va_list args;
    va_start(args, format);
    PyErr_FormatV(PyExc_ValueError, format, args);
    va_end(args);
    return NULL;
}

/* ------------------------------------------------------------ header */

struct header {
    uint32_t width, height;
    int depth, colour, interlace;
    int samples, channels; /* per pixel: stored, and decoded */
    const unsigned char *plte, *trns; /* the first PLTE and tRNS bodies, or NULL */
    uint32_t plte_length, trns_length;
};

static const struct {
    int colour, samples;
    const char *name, *depths;
    unsigned depth_mask; /* bit d: d-bit samples allowed */
} COLOURS[] = {
    {0, 1, "grayscale", "1, 2, 4, 8, 16", 0x10116},
    {2, 3, "RGB", "8, 16", 0x10100},
    {3, 1, "palette", "1, 2, 4, 8", 0x116},
    {4, 2, "grayscale+alpha", "8, 16", 0x10100},
    {6, 4, "RGBA", "8, 16", 0x10100},
};

/* IHDR's fields, checked: 0, or -1 with ValueError. */
static int check_ihdr(const unsigned char *b, struct header *h) {
    h->width = load32(b);
    h->height = load32(b + 4);
    h->depth = b[8];
    h->colour = b[9];
    h->interlace = b[12];
    size_t k = 0;
    while (k < sizeof COLOURS / sizeof COLOURS[0] && COLOURS[k].colour != h->colour)
        k++;
    if (k == sizeof COLOURS / sizeof COLOURS[0]) {
        bad("is corrupt: PNG colour type %d does not exist", h->colour);
        return -1;
    }
    if (h->depth > 16 || !(COLOURS[k].depth_mask >> h->depth & 1)) {
        bad("is corrupt: a %s PNG cannot have %d-bit samples (only %s)", COLOURS[k].name,
            h->depth, COLOURS[k].depths);
        return -1;
    }
    if (b[10] != 0 || b[11] != 0) {
        bad("is corrupt: unknown PNG compression method %d or filter method %d", b[10], b[11]);
        return -1;
    }
    if (h->interlace > 1) {
        bad("is corrupt: unknown PNG interlace method %d", h->interlace);
        return -1;
    }
    if (h->width == 0 || h->height == 0 || h->width > PNG_MAX || h->height > PNG_MAX) {
        bad("is corrupt: its size is %lux%lu", (unsigned long)h->width, (unsigned long)h->height);
        return -1;
    }
    h->samples = COLOURS[k].samples;
    h->channels = h->colour == 3 ? 3 : h->samples; /* 4 for a palette with tRNS: see below */
    return 0;
}

/* Signature, IHDR (its CRC checked: it says how to read the rest) and the
   chunk headers up to the first IDAT, noting PLTE and tRNS: 0, or -1 with
   ValueError. Other CRCs are libspng's to check. */
static int read_header(const unsigned char *d, size_t n, struct header *h) {
    if (n < 8 || memcmp(d, SIGNATURE, 8) != 0) {
        bad("is not a PNG file (no PNG signature)");
        return -1;
    }
    memset(h, 0, sizeof *h);
    size_t pos = 8;
    int seen_ihdr = 0;
    char name[5];
    for (;;) {
        struct chunk c;
        enum walk w = next_chunk(d, n, &pos, &c);
        if (w == END) {
            bad("is truncated: it ends before its IEND chunk");
            return -1;
        }
        if (c.length > PNG_MAX) {
            bad("is corrupt: its '%s' chunk claims %lu bytes", type_name(&c, name),
                (unsigned long)c.length);
            return -1;
        }
        if (seen_ihdr && is_type(&c, "IDAT"))
            break; /* the image data: libspng's (a cut one is reported when decoded) */
        if (w == CUT) {
            bad("is truncated inside its %s chunk", type_name(&c, name));
            return -1;
        }
        if (!seen_ihdr) {
            if (!is_type(&c, "IHDR")) {
                bad("is corrupt: its first chunk is %s, not IHDR", type_name(&c, name));
                return -1;
            }
            if (c.length != 13) {
                bad("is corrupt: IHDR is %lu bytes, not 13", (unsigned long)c.length);
                return -1;
            }
            if (!crc_ok(&c)) {
                bad("is corrupt: the IHDR chunk fails its CRC check");
                return -1;
            }
            if (check_ihdr(c.body, h) < 0)
                return -1;
            seen_ihdr = 1;
        } else if (is_type(&c, "IHDR")) {
            bad("is corrupt: it has two IHDR chunks");
            return -1;
        } else if (is_type(&c, "PLTE") && !h->plte) {
            if (c.length == 0 || c.length % 3 || c.length > 768) {
                bad("is corrupt: PLTE is %lu bytes", (unsigned long)c.length);
                return -1;
            }
            h->plte = c.body;
            h->plte_length = c.length;
        } else if (is_type(&c, "tRNS") && !h->trns) {
            h->trns = c.body;
            h->trns_length = c.length;
        } else if (is_type(&c, "IEND")) {
            bad("is corrupt: it has no IDAT chunk (no image data)");
            return -1;
        } else if (!(c.type[0] & 0x20) && !is_type(&c, "PLTE")) {
            /* bit 5 of the first letter clear: a critical chunk */
            bad("has a critical chunk '%s' this decoder does not know", type_name(&c, name));
            return -1;
        }
    }
    if (h->colour == 3) {
        if (!h->plte) {
            bad("is corrupt: a palette PNG without a PLTE chunk");
            return -1;
        }
        if (h->trns)
            h->channels = 4;
    }
    return 0;
}

/* ------------------------------------------------------------ errors */

/* The width and height of each pass (all 0 but pass 0's when not interlaced). */
static void pass_sizes(const struct header *h, uint32_t w[7], uint32_t ht[7]) {
    for (int p = 0; p < 7; p++) {
        if (!h->interlace) {
            w[p] = p ? 0 : h->width;
            ht[p] = p ? 0 : h->height;
            continue;
        }
        w[p] = h->width > ADAM7_X0[p] ? (h->width - ADAM7_X0[p] + ADAM7_DX[p] - 1) / ADAM7_DX[p] : 0;
        ht[p] = h->height > ADAM7_Y0[p] ? (h->height - ADAM7_Y0[p] + ADAM7_DY[p] - 1) / ADAM7_DY[p] : 0;
        if (!w[p] || !ht[p])
            w[p] = ht[p] = 0;
    }
}

/* Bytes of a scanline of `width` pixels, filter-type byte included. */
static uint64_t scanline_bytes(const struct header *h, uint32_t width) {
    return 1 + ((uint64_t)width * (uint64_t)(h->samples * h->depth) + 7) / 8;
}

/* The first scanline whose filter type is not 0-4 (libspng says only that
   one is): the image data inflated again, up to it. 1 with *pass, *row and
   *kind set, or 0 if it is not found. */
static int find_bad_filter(const unsigned char *d, size_t n, const struct header *h, int *pass,
                           uint32_t *row, int *kind) {
    uint32_t pw[7], ph[7];
    pass_sizes(h, pw, ph);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK)
        return 0;
    unsigned char out[1 << 14];
    uint64_t at = 0, made = 0; /* the next filter byte's offset; bytes inflated */
    size_t pos = 8;
    int p = 0, found = 0;
    uint32_t y = 0;
    while (p < 7 && !ph[p])
        p++;
    while (!found && p < 7) {
        if (z.avail_in == 0) { /* the next IDAT's body */
            struct chunk c;
            enum walk w;
            while ((w = next_chunk(d, n, &pos, &c)) == WHOLE && !is_type(&c, "IDAT"))
                ;
            if (w != WHOLE)
                break;
            z.next_in = (Bytef *)c.body;
            z.avail_in = c.length;
        }
        z.next_out = out;
        z.avail_out = sizeof out;
        int ret = inflate(&z, Z_NO_FLUSH);
        uint64_t start = made;
        made += sizeof out - z.avail_out;
        while (p < 7 && at < made) { /* the filter bytes this piece holds */
            if (out[at - start] > 4) {
                *kind = out[at - start];
                found = 1;
                break;
            }
            at += scanline_bytes(h, pw[p]);
            if (++y == ph[p]) {
                y = 0;
                do
                    p++;
                while (p < 7 && !ph[p]);
            }
        }
        if (ret != Z_OK && !(ret == Z_BUF_ERROR && z.avail_in == 0))
            break;
    }
    inflateEnd(&z);
    *pass = p;
    *row = y;
    return found;
}

/* ValueError for libspng's error `err` met while decoding `d`. */
static PyObject *explain(int err, const unsigned char *d, size_t n, const struct header *h,
                         uint64_t done) {
    char name[5];
    struct chunk c;
    size_t pos = 8;
    enum walk w;
    switch (err) {
    case SPNG_IO_EOF: /* the data ended: where? */
        while ((w = next_chunk(d, n, &pos, &c)) == WHOLE)
            ;
        if (w == CUT)
            return bad("is truncated inside its %s chunk", type_name(&c, name));
        return bad("is truncated: it ends before its IEND chunk");
    case SPNG_ECHUNK_STDLEN:
        while ((w = next_chunk(d, n, &pos, &c)) == WHOLE)
            ;
        if (w == CUT && c.length > PNG_MAX)
            return bad("is corrupt: its '%s' chunk claims %lu bytes", type_name(&c, name),
                       (unsigned long)c.length);
        break;
    case SPNG_ECHUNK_CRC:
        while (next_chunk(d, n, &pos, &c) == WHOLE)
            if (!crc_ok(&c))
                return bad("is corrupt: the %s chunk fails its CRC check", type_name(&c, name));
        break;
    case SPNG_EIDAT_TOO_SHORT: {
        uint32_t pw[7], ph[7];
        uint64_t rows = 0;
        pass_sizes(h, pw, ph);
        for (int p = 0; p < 7; p++)
            rows += ph[p];
        return bad("is truncated: its image data ends after %llu of the %llu %s the header "
                   "implies",
                   (unsigned long long)done, (unsigned long long)rows,
                   h->interlace ? "scanlines (of 7 Adam7 passes)" : "rows");
    }
    case SPNG_EZLIB:
    case SPNG_EIDAT_STREAM:
        return bad("is corrupt: its image data does not decompress (zlib stream error)");
    case SPNG_EFILTER: {
        int pass, kind;
        uint32_t row;
        if (find_bad_filter(d, n, h, &pass, &row, &kind)) {
            if (h->interlace)
                return bad("is corrupt: row %lu of Adam7 pass %d has unknown filter type %d",
                           (unsigned long)row, pass + 1, kind);
            return bad("is corrupt: row %lu has unknown filter type %d", (unsigned long)row,
                       kind);
        }
        break;
    }
    case SPNG_ECHUNK_UNKNOWN_CRITICAL:
        while (next_chunk(d, n, &pos, &c) == WHOLE)
            if (!(c.type[0] & 0x20) && !is_type(&c, "IHDR") && !is_type(&c, "PLTE") &&
                !is_type(&c, "IDAT") && !is_type(&c, "IEND"))
                return bad("has a critical chunk '%s' this decoder does not know",
                           type_name(&c, name));
        break;
    case SPNG_ECHUNK_LIMITS:
        return bad("has more metadata than this decoder keeps: more than 1000 text or other "
                   "ancillary chunks, more than %d MB of them, or one that inflates past %d MB",
                   CACHE_LIMIT >> 20, CHUNK_LIMIT >> 20);
    case SPNG_EOVERFLOW:
        return bad("is too large to decode: a row of %lu pixels does not fit in memory",
                   (unsigned long)h->width);
    case SPNG_EMEM:
        return PyErr_NoMemory();
    }
    return bad("is corrupt: %s (libspng error %d)", spng_strerror(err), err);
}

/* ------------------------------------------------------------ decode */

/* Deflate turns at most 2 bits into 258 bytes. */
#define MAX_DEFLATE_RATIO 1032

/* The bytes of the IDAT chunks (the part of a cut one that is there). */
static uint64_t idat_bytes(const unsigned char *d, size_t n) {
    struct chunk c;
    size_t pos = 8;
    uint64_t total = 0;
    enum walk w;
    while ((w = next_chunk(d, n, &pos, &c)) != END) {
        if (is_type(&c, "IDAT"))
            total += w == WHOLE ? c.length : (uint64_t)(d + n - c.body);
        if (w == CUT)
            break;
    }
    return total;
}

/* The inflated image data the header implies: every scanline of every pass. */
static uint64_t image_data_bytes(const struct header *h) {
    uint32_t pw[7], ph[7];
    uint64_t total = 0;
    pass_sizes(h, pw, ph);
    for (int p = 0; p < 7; p++)
        total += (uint64_t)ph[p] * scanline_bytes(h, pw[p]);
    return total;
}

/* Whether the chunks up to the first IEND, and it, are whole. */
static int reaches_iend(const unsigned char *d, size_t n) {
    struct chunk c;
    size_t pos = 8;
    while (next_chunk(d, n, &pos, &c) == WHOLE)
        if (is_type(&c, "IEND"))
            return 1;
    return 0;
}

/* One scanline as stored (packed samples, 16-bit big-endian) to 8 bits per
   sample, written as pixels `x0`, `x0 + dx`, ... of the output row `out`. */
static void put_scanline(const struct header *h, const unsigned char *tables,
                         const unsigned char *in, uint32_t width, unsigned char *out, uint32_t x0,
                         uint32_t dx) {
    const int ch = h->channels, depth = h->depth;
    unsigned char *px = out + (size_t)x0 * ch;
    const size_t step = (size_t)dx * ch;
    if (depth == 8 && !tables) {
        if (dx == 1) {
            memcpy(px, in, (size_t)width * ch);
            return;
        }
        for (uint32_t i = 0; i < width; i++, px += step, in += ch)
            memcpy(px, in, ch);
        return;
    }
    if (depth == 16) { /* the high byte, first in the file */
        for (uint32_t i = 0; i < width; i++, px += step)
            for (int s = 0; s < ch; s++, in += 2)
                px[s] = in[0];
        return;
    }
    if (depth == 8 && tables && dx == 1 && width > 0) {
        /* 8-bit palette indices to a row of pixels (not interlaced): each
           table entry is 4 bytes, copied whole (one 32-bit load and store in
           the guest); for RGB the next pixel overwrites the 4th byte, and the
           row's last pixel is copied as 3 bytes, so nothing is written past
           the row. Palette PNGs spent 40 % of their decoding time here with
           the general loop below (twice Pillow's time in all). */
        uint32_t i = 0;
        if (ch == 4) {
            for (; i < width; i++)
                memcpy(px + 4 * (size_t)i, tables + 4 * in[i], 4);
            return;
        }
        for (; i + 1 < width; i++)
            memcpy(px + 3 * (size_t)i, tables + 4 * in[i], 4);
        memcpy(px + 3 * (size_t)i, tables + 4 * in[i], 3);
        return;
    }
    /* 1, 2, 4 or 8-bit samples, one per pixel: gray levels or palette indices.
       A palette entry is copied byte by byte: memcpy of a length known only at
       run time is a call per pixel in the guest (palette PNGs decoded 3x slower
       than Pillow with it). */
    const unsigned mask = (1u << depth) - 1, scale = 255 / mask;
    for (uint32_t i = 0; i < width; i++, px += step) {
        unsigned v;
        if (depth == 8) {
            v = in[i];
        } else {
            size_t bit = (size_t)i * depth;
            v = (in[bit >> 3] >> (8 - depth - (bit & 7))) & mask;
        }
        if (tables) {
            const unsigned char *entry = tables + 4 * v;
            px[0] = entry[0];
            px[1] = entry[1];
            px[2] = entry[2];
            if (ch == 4)
                px[3] = entry[3];
        } else {
            px[0] = (unsigned char)(v * scale);
        }
    }
}

/* The palette as 256 RGBA entries: entries past PLTE's end are black, past
   tRNS's end opaque (as in Pillow); tRNS is used as it is, whatever its length. */
static void palette_tables(const struct header *h, unsigned char tables[1024]) {
    memset(tables, 0, 1024);
    for (uint32_t i = 0; i < 256; i++) {
        if (i < h->plte_length / 3)
            memcpy(tables + 4 * i, h->plte + 3 * i, 3);
        tables[4 * i + 3] = h->trns && i < h->trns_length ? h->trns[i] : 255;
    }
}

static PyObject *decode(PyObject *self, PyObject *args) {
    const char *data;
    Py_ssize_t size;
    unsigned long long max_pixels;
    struct header h;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#K:decode", &data, &size, &max_pixels))
        return NULL;
    const unsigned char *d = (const unsigned char *)data;
    const size_t n = (size_t)size;
    if (read_header(d, n, &h) < 0)
        return NULL;
    if ((unsigned long long)h.width * h.height > max_pixels)
        return bad("is %lux%lu pixels, more than the %llu allowed", (unsigned long)h.width,
                   (unsigned long)h.height, max_pixels);
    const uint64_t out_size = (uint64_t)h.width * h.height * (uint64_t)h.channels;
    if (out_size > (uint64_t)(SIZE_MAX >> 1)) /* Py_ssize_t's largest */
        return bad("is too large to decode: %llu bytes of pixels", (unsigned long long)out_size);

    unsigned char tables[1024];
    if (h.colour == 3)
        palette_tables(&h, tables);
    uint64_t done = 0; /* scanlines decoded, over all passes: for messages */
    PyObject *out = NULL;
    unsigned char *line = NULL;
    int err;
    spng_ctx *ctx = spng_ctx_new2(&ALLOC, 0);
    if (!ctx)
        return PyErr_NoMemory();
    /* Every CRC is checked, ancillary chunks' too: a damaged file is refused,
       not partly read (as the pure-Python decoder did; Pillow too refuses a
       bad CRC before the image data). */
    uint32_t side = max_pixels < PNG_MAX ? (uint32_t)max_pixels : PNG_MAX;
    if ((err = spng_set_crc_action(ctx, SPNG_CRC_ERROR, SPNG_CRC_ERROR)) ||
        (err = spng_set_image_limits(ctx, side, side)) ||
        (err = spng_set_chunk_limits(ctx, CHUNK_LIMIT, CACHE_LIMIT)) ||
        (err = spng_set_png_buffer(ctx, d, n)) ||
        (err = spng_decode_image(ctx, NULL, 0, SPNG_FMT_RAW, SPNG_DECODE_PROGRESSIVE)))
        goto fail;
    /* A scanline as stored, of the widest pass (the first row when not interlaced). */
    size_t line_size = (size_t)scanline_bytes(&h, h.width);
    line = PyMem_Malloc(line_size);
    if (!line) {
        PyErr_NoMemory();
        goto done;
    }
    /* Image data too short for what the header implies is truncated, whatever
       it holds: its rows are decoded (for the message) with no pixel memory. */
    unsigned char *pixels = NULL;
    if (idat_bytes(d, n) * MAX_DEFLATE_RATIO >= image_data_bytes(&h)) {
        if (!(out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)out_size)))
            goto done;
        pixels = (unsigned char *)PyBytes_AsString(out);
    }
    const size_t row_bytes = (size_t)h.width * h.channels;
    const int direct = !h.interlace && h.depth == 8 && h.colour != 3; /* stored as decoded */
    uint32_t pw[7], ph[7];
    pass_sizes(&h, pw, ph);
    for (;;) {
        struct spng_row_info ri;
        if ((err = spng_get_row_info(ctx, &ri)))
            break; /* SPNG_EOI: every row is done */
        unsigned char *row = pixels ? pixels + (size_t)ri.row_num * row_bytes : NULL;
        err = spng_decode_scanline(ctx, row && direct ? row : line,
                                   row && direct ? row_bytes : line_size - 1);
        if (err && err != SPNG_EOI)
            goto fail;
        if (row && !direct)
            put_scanline(&h, h.colour == 3 ? tables : NULL, line, pw[ri.pass], row,
                         h.interlace ? ADAM7_X0[ri.pass] : 0, h.interlace ? ADAM7_DX[ri.pass] : 1);
        done++;
        if (err == SPNG_EOI)
            break;
    }
    if (!pixels) { /* not reached while deflate's ratio holds */
        err = SPNG_EIDAT_TOO_SHORT;
        goto fail;
    }
    /* The chunks after the image data, to IEND: their CRCs, and a file that
       ends early is truncated (whatever follows IEND is not read). */
    if ((err = spng_decode_chunks(ctx)))
        goto fail;
    /* libspng takes a file cut inside IEND's CRC for a whole one (its
       SPNG_IO_EOF, -1, is also its "discard this chunk", -SPNG_CRC_DISCARD). */
    if (!reaches_iend(d, n)) {
        err = SPNG_IO_EOF;
        goto fail;
    }
    goto done;
fail:
    Py_CLEAR(out);
    explain(err, d, n, &h, done);
done:
    PyMem_Free(line);
    spng_ctx_free(ctx);
    if (!out)
        return NULL;
    return Py_BuildValue("(kkiN)", (unsigned long)h.width, (unsigned long)h.height, h.channels,
                         out);
}

static PyObject *probe(PyObject *self, PyObject *args) {
    const char *data;
    Py_ssize_t size;
    struct header h;
    (void)self;
    if (!PyArg_ParseTuple(args, "y#:probe", &data, &size))
        return NULL;
    if (read_header((const unsigned char *)data, (size_t)size, &h) < 0)
        return NULL;
    return Py_BuildValue("(kki)", (unsigned long)h.width, (unsigned long)h.height, h.channels);
}

/* ------------------------------------------------------------ encode */

static PyObject *encode(PyObject *self, PyObject *args) {
    const char *pixels;
    Py_ssize_t size;
    unsigned long width, height;
    int channels, level;
    static const int COLOUR[5] = {0, SPNG_COLOR_TYPE_GRAYSCALE, SPNG_COLOR_TYPE_GRAYSCALE_ALPHA,
                                  SPNG_COLOR_TYPE_TRUECOLOR, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA};
    (void)self;
    if (!PyArg_ParseTuple(args, "y#kkii:encode", &pixels, &size, &width, &height, &channels,
                          &level))
        return NULL;
    if (channels < 1 || channels > 4 || level < 0 || level > 9)
        return bad("cannot be encoded: %d channels, zlib level %d (1-4 channels, level 0-9)",
                   channels, level);
    if (width == 0 || height == 0 || width > PNG_MAX || height > PNG_MAX ||
        (uint64_t)size != (uint64_t)width * height * (uint64_t)channels)
        return bad("cannot be encoded: %zd bytes are not %lux%lu pixels of %d channels", size,
                   width, height, channels);
    struct spng_ihdr ihdr = {(uint32_t)width, (uint32_t)height, 8, (uint8_t)COLOUR[channels],
                             0, 0, 0};
    spng_ctx *ctx = spng_ctx_new2(&ALLOC, SPNG_CTX_ENCODER);
    if (!ctx)
        return PyErr_NoMemory();
    PyObject *out = NULL;
    void *png = NULL;
    size_t png_size = 0;
    /* Filters and zlib strategy stay libspng's choice (libpng's: adaptive
       filters, none at level 0), as in Pillow, which writes through zlib
       with libpng's heuristics. */
    int err = spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    if (!err)
        err = spng_set_option(ctx, SPNG_IMG_COMPRESSION_LEVEL, level);
    if (!err)
        err = spng_set_ihdr(ctx, &ihdr);
    if (!err)
        err = spng_encode_image(ctx, pixels, (size_t)size, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    if (!err)
        png = spng_get_png_buffer(ctx, &png_size, &err);
    if (err == SPNG_EMEM)
        PyErr_NoMemory();
    else if (err)
        bad("cannot be encoded: %s (libspng error %d)", spng_strerror(err), err);
    else
        out = PyBytes_FromStringAndSize(png, (Py_ssize_t)png_size);
    mem_free(png); /* the buffer is the caller's, from the context's allocator */
    spng_ctx_free(ctx);
    return out;
}

static PyMethodDef methods[] = {
    {"probe", probe, METH_VARARGS,
     "probe(data) -> (width, height, channels) from the chunks before the image data"},
    {"decode", decode, METH_VARARGS,
     "decode(data, max_pixels) -> (width, height, channels, 8-bit interleaved pixels)"},
    {"encode", encode, METH_VARARGS,
     "encode(pixels, width, height, channels, level) -> PNG file bytes (8-bit, zlib level 0-9)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_png_codec", "PNG decoding and encoding by libspng.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__png_codec(void) { return PyModule_Create(&module); }
