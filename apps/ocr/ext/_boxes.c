/* _boxes: the serial loops of the OCR app's box finding (boxes.py), in C.
 *
 * Measured in the component before this module (bench/ocr_bench.py's "boxes"
 * stage and the README's table): tracing the borders of the detector's mask
 * was the largest part of the guest's own work on an image; pure Python had
 * to work from runs found with bytes.find, and a wide one-line image still
 * took over 100 ms of it. Here the same algorithm runs at native speed.
 *
 * find_contours is cv2.findContours(mask, RETR_LIST, CHAIN_APPROX_SIMPLE):
 * OpenCV (5.0, like 4.x) finds borders with Suzuki and Abe's algorithm; a
 * raster scan meets each border once, follows it pixel by pixel, and
 * RETR_LIST returns the borders last met first. Where the scan meets each
 * border is found from runs of set pixels: an outer border starts at the
 * first pixel of each 8-connected component of ones, a hole border just left
 * of the first zero of each 4-connected component of zeros that does not
 * reach the frame (union-find over runs and over the gaps between them).
 * Each border is then followed as OpenCV's icvFetchContourEx does. The
 * result is the same point lists in the same order (tests/test_ocr_boxes.py
 * checks it against cv2 on thousands of random masks and on real maps).
 *
 * span_sum is box_score's inner loop: the sum of a float32 map over spans of
 * pixels, each span added as Python's sum() adds floats (Neumaier's
 * compensated sum, CPython 3.12 and later: the guest's), so the scores, and
 * which boxes pass the threshold, are what they were in pure Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Chain code directions as OpenCV numbers them (y grows downwards): 0 right,
   1 up-right, 2 up, ... 7 down-right. */
/* The padded mask's pixels at most: the mask's bytes exist anyway, so this
   only keeps index arithmetic (flat index * 2 + flag) within 32 bits. */
#define MAX_PADDED ((int64_t)1 << 30)

static const int DX[8] = {1, 1, 0, -1, -1, -1, 0, 1};
static const int DY[8] = {0, -1, -1, -1, 0, 1, 1, 1};

/* A growable array of Py_ssize_t. */
typedef struct {
    Py_ssize_t *v;
    Py_ssize_t n, cap;
} vec;

static int push(vec *a, Py_ssize_t x) {
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 256;
        Py_ssize_t *v = realloc(a->v, (size_t)cap * sizeof *v);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* Union-find: the representative of i's set, halving the path as it goes. */
static Py_ssize_t root(Py_ssize_t *parent, Py_ssize_t i) {
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

/* Merge the sets of a and b; the smaller representative stays, so a set's
   representative is its first member (the order border starts come in). */
static void join(Py_ssize_t *parent, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t ra = root(parent, a), rb = root(parent, b);
    if (ra < rb)
        parent[rb] = ra;
    else if (rb < ra)
        parent[ra] = rb;
}

static int by_key(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

/* Border starts as keys pixel * 2 + is_hole, appended to `starts`, for the
   padded image of `rows` rows. `run_a`/`run_b` are the runs of ones (first
   pixel, first zero after), `row_runs[r]` the index of row r's first run
   (row_runs[rows] = the number of runs). */
static int border_starts(const vec *run_a, const vec *run_b, const Py_ssize_t *row_runs,
                         Py_ssize_t rows, Py_ssize_t stride, vec *starts) {
    Py_ssize_t nruns = run_a->n;
    int interior_gaps = 0, status = -1;
    Py_ssize_t *parent = malloc((size_t)(nruns ? nruns : 1) * sizeof *parent);
    unsigned char *seen = calloc((size_t)(nruns ? nruns : 1), 1);
    vec gparent = {0}, gstart = {0}, prev = {0}, cur = {0};
    if (!parent || !seen) {
        PyErr_NoMemory();
        goto done;
    }
    /* 8-connected components of runs. */
    for (Py_ssize_t k = 0; k < nruns; k++)
        parent[k] = k;
    for (Py_ssize_t r = 1; r < rows; r++) {
        Py_ssize_t i = row_runs[r - 1], iend = row_runs[r];
        Py_ssize_t j = row_runs[r], jend = row_runs[r + 1];
        if (jend - j > 1)
            interior_gaps = 1;
        while (i < iend && j < jend) {
            Py_ssize_t a0 = run_a->v[i] + stride, a1 = run_b->v[i] + stride;
            Py_ssize_t b0 = run_a->v[j], b1 = run_b->v[j];
            if (a0 <= b1 && b0 <= a1) /* overlapping or touching diagonally */
                join(parent, i, j);
            if (a1 < b1)
                i++;
            else
                j++;
        }
    }
    for (Py_ssize_t k = 0; k < nruns; k++) {
        Py_ssize_t top = root(parent, k);
        if (!seen[top]) {
            seen[top] = 1;
            if (push(starts, run_a->v[k] * 2) < 0)
                goto done;
        }
    }
    if (interior_gaps) {
        /* Holes need two runs in one row. Only the gaps between two runs of a
           row can be part of one; gaps reaching the frame (node 0), and
           whatever they touch, are not. Gaps are triples (first col, end col,
           node) in prev/cur. */
        if (push(&gparent, 0) < 0 || push(&gstart, -1) < 0)
            goto done;
        if (push(&prev, 0) < 0 || push(&prev, stride) < 0 || push(&prev, 0) < 0)
            goto done;
        for (Py_ssize_t r = 1; r < rows; r++) {
            Py_ssize_t base = r * stride, first = row_runs[r], end = row_runs[r + 1];
            cur.n = 0;
            if (first == end) {
                if (push(&cur, 0) < 0 || push(&cur, stride) < 0 || push(&cur, 0) < 0)
                    goto done;
            } else {
                if (push(&cur, 0) < 0 || push(&cur, run_a->v[first] - base) < 0 ||
                    push(&cur, 0) < 0)
                    goto done;
                for (Py_ssize_t k = first; k + 1 < end; k++) {
                    Py_ssize_t node = gparent.n;
                    if (push(&gparent, node) < 0 || push(&gstart, run_b->v[k]) < 0 ||
                        push(&cur, run_b->v[k] - base) < 0 ||
                        push(&cur, run_a->v[k + 1] - base) < 0 || push(&cur, node) < 0)
                        goto done;
                }
                if (push(&cur, run_b->v[end - 1] - base) < 0 || push(&cur, stride) < 0 ||
                    push(&cur, 0) < 0)
                    goto done;
            }
            Py_ssize_t i = 0, j = 0;
            while (i < prev.n && j < cur.n) {
                Py_ssize_t a0 = prev.v[i], a1 = prev.v[i + 1];
                Py_ssize_t b0 = cur.v[j], b1 = cur.v[j + 1];
                if (a0 < b1 && b0 < a1) /* sharing a column: 4-connected */
                    join(gparent.v, prev.v[i + 2], cur.v[j + 2]);
                if (a1 < b1)
                    i += 3;
                else
                    j += 3;
            }
            vec t = prev;
            prev = cur;
            cur = t;
        }
        unsigned char *gseen = calloc((size_t)gparent.n, 1);
        if (!gseen) {
            PyErr_NoMemory();
            goto done;
        }
        gseen[0] = 1;
        for (Py_ssize_t k = 1; k < gparent.n; k++) {
            Py_ssize_t top = root(gparent.v, k);
            if (!gseen[top]) {
                gseen[top] = 1;
                if (push(starts, (gstart.v[k] - 1) * 2 + 1) < 0) {
                    free(gseen);
                    goto done;
                }
            }
        }
        free(gseen);
        /* A hole is met at its first zero, one pixel after its start pixel:
           on a tie with an outer border starting there, the outer comes first. */
        qsort(starts->v, (size_t)starts->n, sizeof *starts->v, by_key);
    }
    status = 0;
done:
    free(parent);
    free(seen);
    free(gparent.v);
    free(gstart.v);
    free(prev.v);
    free(cur.v);
    return status;
}

/* The CHAIN_APPROX_SIMPLE points (flat indices) of the border through i0,
   followed as OpenCV's icvFetchContourEx does: search the neighbours
   clockwise for where the border came from, then repeatedly counter-clockwise
   (in y-down terms) for where it goes, keeping each pixel where the direction
   changes, until the first step comes round again. */
static int follow(const unsigned char *image, const Py_ssize_t *deltas, Py_ssize_t i0, int hole,
                  vec *points) {
    int s_end = hole ? 0 : 4, s = s_end;
    Py_ssize_t i1;
    points->n = 0;
    for (;;) {
        s = (s - 1) & 7;
        i1 = i0 + deltas[s];
        if (image[i1] || s == s_end)
            break;
    }
    if (s == s_end) /* a lone pixel */
        return push(points, i0);
    Py_ssize_t i3 = i0, i4;
    int prev_s = s ^ 4;
    for (;;) {
        s++;
        i4 = i3 + deltas[s];
        while (!image[i4]) {
            s++;
            i4 = i3 + deltas[s];
        }
        s &= 7;
        if (s != prev_s) {
            if (push(points, i3) < 0)
                return -1;
            prev_s = s;
        }
        if (i4 == i0 && i3 == i1)
            return 0;
        i3 = i4;
        s = (s + 4) & 7;
    }
}

static PyObject *find_contours(PyObject *self, PyObject *args) {
    Py_buffer mask;
    Py_ssize_t h, w;
    PyObject *limit_obj = Py_None;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nn|O:find_contours", &mask, &h, &w, &limit_obj))
        return NULL;
    PyObject *result = NULL;
    unsigned char *image = NULL;
    Py_ssize_t *row_runs = NULL;
    vec run_a = {0}, run_b = {0}, starts = {0}, points = {0};
    if (h < 0 || w < 0 || ((int64_t)h + 2) * ((int64_t)w + 2) > MAX_PADDED ||
        mask.len != h * w) {
        PyErr_Format(PyExc_ValueError, "the mask has %zd bytes, not %zd x %zd", mask.len, h, w);
        goto done;
    }
    if (h == 0 || w == 0) {
        result = PyList_New(0);
        goto done;
    }
    Py_ssize_t stride = w + 2, rows = h + 2;
    /* The mask with a frame of zeros, as findContours pads it: borders never
       leave the image, and no run of ones crosses from one row into the next.
       Any nonzero byte counts as set. */
    image = calloc((size_t)(rows * stride), 1);
    row_runs = malloc((size_t)(rows + 1) * sizeof *row_runs);
    if (!image || !row_runs) {
        PyErr_NoMemory();
        goto done;
    }
    const unsigned char *src = mask.buf;
    row_runs[0] = 0;
    row_runs[1] = 0;
    for (Py_ssize_t r = 0; r < h; r++) {
        unsigned char *out = image + (r + 1) * stride + 1;
        const unsigned char *in = src + r * w;
        for (Py_ssize_t x = 0; x < w; x++)
            out[x] = in[x] != 0;
        for (Py_ssize_t x = 0; x < w;) {
            if (!out[x]) {
                x++;
                continue;
            }
            Py_ssize_t a = x;
            while (x < w && out[x])
                x++;
            Py_ssize_t base = (r + 1) * stride + 1;
            if (push(&run_a, base + a) < 0 || push(&run_b, base + x) < 0)
                goto done;
        }
        row_runs[r + 2] = run_a.n;
    }
    row_runs[rows] = run_a.n;
    if (border_starts(&run_a, &run_b, row_runs, rows, stride, &starts) < 0)
        goto done;

    Py_ssize_t count = starts.n;
    if (limit_obj != Py_None) {
        Py_ssize_t limit = PyLong_AsSsize_t(limit_obj);
        if (limit == -1 && PyErr_Occurred())
            goto done;
        if (limit < 0) /* a slice's [:limit] */
            limit = count + limit > 0 ? count + limit : 0;
        if (limit < count)
            count = limit;
    }
    Py_ssize_t deltas[16];
    for (int k = 0; k < 16; k++)
        deltas[k] = DX[k & 7] + DY[k & 7] * stride;
    result = PyList_New(count);
    if (!result)
        goto done;
    for (Py_ssize_t c = 0; c < count; c++) {
        Py_ssize_t key = starts.v[starts.n - 1 - c]; /* the last met first */
        if (follow(image, deltas, key >> 1, (int)(key & 1), &points) < 0)
            goto fail;
        PyObject *contour = PyList_New(points.n);
        if (!contour)
            goto fail;
        PyList_SetItem(result, c, contour);
        for (Py_ssize_t k = 0; k < points.n; k++) {
            Py_ssize_t i = points.v[k];
            PyObject *xy = Py_BuildValue("(nn)", i % stride - 1, i / stride - 1);
            if (!xy)
                goto fail;
            PyList_SetItem(contour, k, xy);
        }
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    PyBuffer_Release(&mask);
    free(image);
    free(row_runs);
    free(run_a.v);
    free(run_b.v);
    free(starts.v);
    free(points.v);
    return result;
}

/* One span's sum as Python's sum() of its floats: the first value, then
   Neumaier's compensation for the others, added at the end when finite. */
static double neumaier(const float *v, Py_ssize_t n) {
    if (n <= 0)
        return 0.0;
    double f_result = (double)v[0], c = 0.0;
    for (Py_ssize_t k = 1; k < n; k++) {
        double x = (double)v[k];
        double t = f_result + x;
        if (fabs(f_result) >= fabs(x))
            c += (f_result - t) + x;
        else
            c += (x - t) + f_result;
        f_result = t;
    }
    if (c != 0.0 && isfinite(c))
        f_result += c;
    return f_result;
}

static PyObject *span_sum(PyObject *self, PyObject *args) {
    Py_buffer prob;
    Py_ssize_t w, xmin, ymin;
    PyObject *spans, *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnnO:span_sum", &prob, &w, &xmin, &ymin, &spans))
        return NULL;
    Py_ssize_t values = prob.len / (Py_ssize_t)sizeof(float), rows = PyList_Size(spans);
    const float *p = prob.buf;
    double total = 0.0;
    Py_ssize_t count = 0;
    if (rows < 0)
        goto done;
    if (prob.len % (Py_ssize_t)sizeof(float) || w < 1 || xmin < 0 || ymin < 0) {
        PyErr_SetString(PyExc_ValueError, "span_sum needs float32 values, w >= 1 and xmin, ymin >= 0");
        goto done;
    }
    for (Py_ssize_t y = 0; y < rows; y++) {
        PyObject *row = PyList_GetItem(spans, y);
        Py_ssize_t n = row ? PyList_Size(row) : -1;
        if (n < 0)
            goto done;
        Py_ssize_t at = (ymin + y) * w + xmin;
        for (Py_ssize_t k = 0; k < n; k++) {
            Py_ssize_t x1, x2;
            PyObject *span = PyList_GetItem(row, k);
            if (!span || !PyArg_ParseTuple(span, "nn:span_sum", &x1, &x2))
                goto done;
            if (x1 < 0 || x2 < x1 - 1 || at + x2 >= values) {
                PyErr_Format(PyExc_ValueError, "span (%zd, %zd) of row %zd is outside the map", x1,
                             x2, ymin + y);
                goto done;
            }
            total += neumaier(p + at + x1, x2 - x1 + 1);
            count += x2 - x1 + 1;
        }
    }
    result = Py_BuildValue("(dn)", total, count);
done:
    PyBuffer_Release(&prob);
    return result;
}

static PyMethodDef methods[] = {
    {"span_sum", span_sum, METH_VARARGS,
     "span_sum(prob, w, xmin, ymin, spans) -> (total, count) of prob over the spans"},
    {"find_contours", find_contours, METH_VARARGS,
     "find_contours(mask, h, w, limit=None) -> cv2.findContours(mask, RETR_LIST, "
     "CHAIN_APPROX_SIMPLE) as lists of (x, y)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_boxes", "The OCR app's box finding loops, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__boxes(void) { return PyModule_Create(&module); }
