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
 * (box_score's sums over the map are numpy's: prob[rows, cols][mask].mean().)
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

/* ------------------------------------------------------------ minAreaRect */

/* A value rounded to float32, kept as a double (numpy's float32). Every step below
   mirrors the Python it replaced operation for operation (in double, rounded
   where that rounded), so the bits are the same as before on each target. */
#define F(x) ((double)(float)(x))
#define PI 3.141592653589793

typedef struct {
    long x, y;
} ipt;

static int same(const ipt *a, const ipt *b) { return a->x == b->x && a->y == b->y; }

/* The points of a Python sequence of (x, y) integer pairs; NULL with an
   exception set on failure (n = 0 gives a valid pointer). */
static ipt *parse_points(PyObject *seq, Py_ssize_t *n) {
    *n = PySequence_Size(seq);
    if (*n < 0)
        return NULL;
    ipt *pts = malloc((size_t)(*n ? *n : 1) * sizeof *pts);
    if (!pts) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *item = PySequence_GetItem(seq, i);
        if (!item)
            goto fail;
        int ok = PyArg_ParseTuple(item, "ll:points", &pts[i].x, &pts[i].y);
        Py_DECREF(item);
        if (!ok)
            goto fail;
    }
    return pts;
fail:
    free(pts);
    return NULL;
}

static const ipt *sort_pts;

static int by_xy_index(const void *a, const void *b) {
    Py_ssize_t i = *(const Py_ssize_t *)a, j = *(const Py_ssize_t *)b;
    const ipt *p = &sort_pts[i], *q = &sort_pts[j];
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    if (p->y != q->y)
        return p->y < q->y ? -1 : 1;
    return (i > j) - (i < j);
}

static int sign(long long v) { return (v > 0) - (v < 0); }

/* One monotone chain of OpenCV's Sklansky_ (integer version): the stack of
   indices into pts (sorted by x, then y) from start to end, into `stack`
   (room for the points + 3); returns its length. */
static Py_ssize_t sklansky(const ipt *pts, Py_ssize_t start, Py_ssize_t end, int nsign, int sign2,
                           Py_ssize_t *stack) {
    Py_ssize_t incr = end > start ? 1 : -1;
    if (start == end || same(&pts[start], &pts[end])) {
        stack[0] = start;
        return 1;
    }
    Py_ssize_t pprev = start, pcur = start + incr, pnext = start + 2 * incr, top = 3;
    stack[0] = pprev;
    stack[1] = pcur;
    stack[2] = pnext;
    end += incr;
    while (pnext != end) {
        if (same(&pts[pcur], &pts[pnext])) {
            pnext += incr;
            stack[top - 1] = pnext;
            continue;
        }
        long long cx = pts[pcur].x, cy = pts[pcur].y, nx = pts[pnext].x, ny = pts[pnext].y;
        long long by = ny - cy;
        if (sign(by) != nsign) {
            long long ax = cx - pts[pprev].x, ay = cy - pts[pprev].y, bx = nx - cx;
            long long convexity = ay * bx - ax * by;
            if (sign(convexity) == sign2 && (ax != 0 || ay != 0)) {
                pprev = pcur;
                pcur = pnext;
                pnext += incr;
                stack[top++] = pnext;
            } else if (pprev == start) {
                pcur = pnext;
                stack[1] = pcur;
                pnext += incr;
                stack[2] = pnext;
            } else {
                /* Only reached with 4 or more on the stack (stack[0] is start). */
                stack[top - 2] = pnext;
                pcur = pprev;
                pprev = stack[top - 4];
                top--;
            }
        } else {
            pnext += incr;
            stack[top - 1] = pnext;
        }
    }
    return top - 1;
}

/* OpenCV's last step of convexHull: when the vertices' input indices increase
   (or decrease) around the hull, start at the smallest (largest). In place. */
static int ascending_rotation(Py_ssize_t *hull, Py_ssize_t n) {
    if (n < 3)
        return 0;
    Py_ssize_t lo = 0, hi = 0, lt = 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        Py_ssize_t idx = hull[i];
        lt += hull[i - 1] < idx;
        if (1 < lt && lt <= i - 2)
            break;
        if (idx < hull[lo])
            lo = i;
        if (idx > hull[hi])
            hi = i;
    }
    Py_ssize_t dist = hi > lo ? hi - lo : lo - hi;
    if ((dist == 1 || dist == n - 1) && (lt <= 1 || lt >= n - 2)) {
        int ascending = (hi + 1) % n == lo;
        Py_ssize_t first = ascending ? lo : hi;
        if (first > 0) {
            Py_ssize_t *rotated = malloc((size_t)n * sizeof *rotated);
            if (!rotated) {
                PyErr_NoMemory();
                return -1;
            }
            for (Py_ssize_t k = 0; k < n; k++)
                rotated[k] = hull[(first + k) % n];
            int monotone = 1;
            for (Py_ssize_t k = 0; k + 1 < n; k++)
                if (ascending != (rotated[k] < rotated[k + 1])) {
                    monotone = 0;
                    break;
                }
            if (monotone)
                memcpy(hull, rotated, (size_t)n * sizeof *hull);
            free(rotated);
        }
    }
    return 0;
}

/* cv2.convexHull(points, clockwise) for integer points: indices into points
   of the hull's vertices, into `hull` (room for 4 * n + 12); returns their count,
   or -1 with an exception set. */
static Py_ssize_t convex_hull_of(const ipt *points, Py_ssize_t total, int clockwise,
                                 Py_ssize_t *hull) {
    if (total == 0)
        return 0;
    Py_ssize_t count = -1, n = 0;
    Py_ssize_t *order = malloc((size_t)total * sizeof *order);
    ipt *pts = malloc((size_t)total * sizeof *pts);
    Py_ssize_t *chains = malloc((size_t)4 * (size_t)(total + 3) * sizeof *chains);
    Py_ssize_t *low = NULL, *high = NULL;
    if (!order || !pts || !chains) {
        PyErr_NoMemory();
        goto done;
    }
    /* The points Sklansky's chains run over, in x order: per x only the first
       point with the lowest y and the first with the highest y (the bucket
       sort of recent OpenCV versions for integer points, used when the x
       range is at most 4 times the point count and at most 100,000); else
       all of them, sorted by x, y and index. */
    long lo_x = points[0].x, hi_x = points[0].x;
    for (Py_ssize_t i = 1; i < total; i++) {
        if (points[i].x < lo_x)
            lo_x = points[i].x;
        if (points[i].x > hi_x)
            hi_x = points[i].x;
    }
    long long span = (long long)hi_x - lo_x + 1;
    Py_ssize_t m = 0;
    if (span > 4 * (long long)total || span > 100000) {
        for (Py_ssize_t i = 0; i < total; i++)
            order[i] = i;
        sort_pts = points;
        qsort(order, (size_t)total, sizeof *order, by_xy_index);
        m = total;
    } else {
        low = malloc((size_t)span * sizeof *low);
        high = malloc((size_t)span * sizeof *high);
        if (!low || !high) {
            PyErr_NoMemory();
            goto done;
        }
        for (long long b = 0; b < span; b++)
            low[b] = high[b] = -1;
        for (Py_ssize_t i = 0; i < total; i++) {
            long long b = points[i].x - lo_x;
            if (low[b] < 0 || points[i].y < points[low[b]].y)
                low[b] = i;
            if (high[b] < 0 || points[i].y > points[high[b]].y)
                high[b] = i;
        }
        for (long long b = 0; b < span; b++)
            if (low[b] >= 0) {
                order[m++] = low[b];
                if (high[b] != low[b])
                    order[m++] = high[b];
            }
    }
    for (Py_ssize_t i = 0; i < m; i++)
        pts[i] = points[order[i]];
    Py_ssize_t miny = 0, maxy = 0;
    for (Py_ssize_t i = 1; i < m; i++) {
        if (pts[miny].y > pts[i].y)
            miny = i;
        if (pts[maxy].y < pts[i].y)
            maxy = i;
    }
    if (same(&pts[0], &pts[m - 1])) {
        hull[0] = order[0];
        count = 1;
        goto done;
    }
    Py_ssize_t *tl = chains, *tr = chains + (total + 3), *bl = chains + 2 * (total + 3),
               *br = chains + 3 * (total + 3);
    Py_ssize_t ntl = sklansky(pts, 0, maxy, -1, 1, tl);
    Py_ssize_t ntr = sklansky(pts, m - 1, maxy, -1, -1, tr);
    if (!clockwise) {
        Py_ssize_t *t = tl, nt = ntl;
        tl = tr, ntl = ntr, tr = t, ntr = nt;
    }
    for (Py_ssize_t k = 0; k < ntl - 1; k++)
        hull[n++] = order[tl[k]];
    for (Py_ssize_t k = ntr - 1; k >= 1; k--)
        hull[n++] = order[tr[k]];
    Py_ssize_t stop = ntr > 2 ? tr[1] : ntl > 2 ? tl[ntl - 2] : -1;
    Py_ssize_t nbl = sklansky(pts, 0, miny, 1, -1, bl);
    Py_ssize_t nbr = sklansky(pts, m - 1, miny, 1, 1, br);
    if (clockwise) {
        Py_ssize_t *t = bl, nt = nbl;
        bl = br, nbl = nbr, br = t, nbr = nt;
    }
    if (stop >= 0) {
        Py_ssize_t check = nbl > 2 ? bl[1] : nbl + nbr > 2 ? br[2 - nbl] : -1;
        if (check == stop || (check >= 0 && same(&pts[check], &pts[stop]))) {
            /* all points on one line: the lower chain mirrors the upper one */
            if (nbl > 2)
                nbl = 2;
            if (nbr > 2)
                nbr = 2;
        }
    }
    for (Py_ssize_t k = 0; k < nbl - 1; k++)
        hull[n++] = order[bl[k]];
    for (Py_ssize_t k = nbr - 1; k >= 1; k--)
        hull[n++] = order[br[k]];
    if (ascending_rotation(hull, n) < 0)
        goto done;
    count = n;
done:
    free(order);
    free(pts);
    free(chains);
    free(low);
    free(high);
    return count;
}

static PyObject *convex_hull(PyObject *self, PyObject *args) {
    PyObject *seq, *result = NULL;
    int clockwise = 1;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "O|p:convex_hull", &seq, &clockwise))
        return NULL;
    ipt *points = parse_points(seq, &n);
    if (!points)
        return NULL;
    Py_ssize_t *hull = malloc((size_t)(4 * n + 12) * sizeof *hull);
    if (!hull) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count = convex_hull_of(points, n, clockwise, hull);
    if (count < 0)
        goto done;
    result = PyList_New(count);
    for (Py_ssize_t k = 0; result && k < count; k++) {
        PyObject *xy = Py_BuildValue("(ll)", points[hull[k]].x, points[hull[k]].y);
        if (!xy) {
            Py_CLEAR(result);
            break;
        }
        PyList_SetItem(result, k, xy);
    }
done:
    free(points);
    free(hull);
    return result;
}

/* OpenCV's rotatingCalipers (CALIPERS_MINAREARECT) over the hull (xs, ys, n
   > 2): a corner and the two side vectors of the smallest rectangle; a later
   rectangle of equal area wins. out = px, py, ax, ay, bx, by. */
static int calipers(const double *xs, const double *ys, Py_ssize_t n, double out[6]) {
    int status = -1;
    double *buf = malloc((size_t)n * 8 * sizeof *buf);
    Py_ssize_t *steps = malloc((size_t)n * 3 * sizeof *steps);
    if (!buf || !steps) {
        PyErr_NoMemory();
        goto done;
    }
    double *vx = buf, *vy = buf + n, *inv = buf + 2 * n, *base_a = buf + 3 * n,
           *base_b = buf + 4 * n, *area = buf + 5 * n, *width = buf + 6 * n, *height = buf + 7 * n;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = i + 1 < n ? i + 1 : 0;
        vx[i] = F(xs[j] - xs[i]);
        vy[i] = F(ys[j] - ys[i]);
        inv[i] = F(1.0 / sqrt(vx[i] * vx[i] + vy[i] * vy[i]));
    }
    double orientation = 0.0, ax = vx[n - 1], ay = vy[n - 1];
    for (Py_ssize_t i = 0; i < n; i++) {
        double bx = vx[i], by = vy[i];
        double convexity = ax * by - ay * bx;
        if (convexity != 0) {
            orientation = convexity > 0 ? 1.0 : -1.0;
            break;
        }
        ax = bx;
        ay = by;
    }
    if (orientation == 0) {
        PyErr_SetString(PyExc_ValueError, "the hull has no area");
        goto done;
    }
    /* bottom, right, top, left: the first vertex with the extreme coordinate */
    Py_ssize_t seq[4] = {0, 0, 0, 0};
    double biggest = 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (ys[i] < ys[seq[0]])
            seq[0] = i;
        if (xs[i] > xs[seq[1]])
            seq[1] = i;
        if (ys[i] > ys[seq[2]])
            seq[2] = i;
        if (xs[i] < xs[seq[3]])
            seq[3] = i;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fabs(vx[i]) > biggest)
            biggest = fabs(vx[i]);
        if (fabs(vy[i]) > biggest)
            biggest = fabs(vy[i]);
    }
    int exact = biggest < 4096; /* products below 2**24: float32 is exact */
    for (Py_ssize_t step = 0; step < n; step++) {
        /* The caliper side that turns least before meeting its next edge: the
           four edge vectors rotated into one frame, compared by cross product
           (OpenCV's firstVecIsRight, in float32). */
        Py_ssize_t k0 = seq[0], k1 = seq[1], k2 = seq[2], k3 = seq[3];
        double cand[4][2] = {
            {vx[k0], vy[k0]}, {vy[k1], -vx[k1]}, {-vx[k2], -vy[k2]}, {-vy[k3], vx[k3]}};
        int main = 0;
        double bx = cand[0][0], by = cand[0][1];
        for (int i = 1; i < 4; i++) {
            double px = cand[i][0], py = cand[i][1];
            int right = exact ? py * bx - px * by < 0 : F(F(py * bx) + F(-px * by)) < 0;
            if (right) {
                main = i;
                bx = px;
                by = py;
            }
        }
        Py_ssize_t k = seq[main];
        seq[main] = k + 1 < n ? k + 1 : 0;
        double lx = F(vx[k] * inv[k]), ly = F(vy[k] * inv[k]), a, b;
        if (main == 0)
            a = lx, b = ly;
        else if (main == 1)
            a = ly, b = -lx;
        else if (main == 2)
            a = -lx, b = -ly;
        else
            a = -ly, b = lx;
        base_a[step] = a;
        base_b[step] = b;
        double wx = F(xs[seq[1]] - xs[seq[3]]), wy = F(ys[seq[1]] - ys[seq[3]]); /* left to right */
        double hx = F(xs[seq[2]] - xs[seq[0]]), hy = F(ys[seq[2]] - ys[seq[0]]); /* bottom to top */
        width[step] = F(F(wx * a) + F(wy * b));
        height[step] = F(F(-hx * b) + F(hy * a));
        area[step] = F(width[step] * height[step]);
        steps[3 * step] = seq[3]; /* left */
        steps[3 * step + 1] = seq[0]; /* bottom */
    }
    double smallest = area[0];
    for (Py_ssize_t k = 1; k < n; k++)
        if (area[k] < smallest)
            smallest = area[k];
    Py_ssize_t best = 0;
    for (Py_ssize_t k = 0; k < n; k++)
        if (area[k] <= smallest) /* `area <= minarea`: the last wins */
            best = k;
    Py_ssize_t left_i = steps[3 * best], bottom_i = steps[3 * best + 1];
    double a1 = base_a[best], b1 = base_b[best], wd = width[best], ht = height[best];
    double a2 = -b1, b2 = a1;
    double c1 = F(F(a1 * xs[left_i]) + F(ys[left_i] * b1));
    double c2 = F(F(a2 * xs[bottom_i]) + F(ys[bottom_i] * b2));
    double idet = F(1.0 / F(F(a1 * b2) - F(a2 * b1)));
    out[0] = F(F(F(c1 * b2) - F(c2 * b1)) * idet);
    out[1] = F(F(F(a1 * c2) - F(a2 * c1)) * idet);
    out[2] = F(a1 * wd);
    out[3] = F(b1 * wd);
    out[4] = F(a2 * ht);
    out[5] = F(b2 * ht);
    status = 0;
done:
    free(buf);
    free(steps);
    return status;
}

static PyObject *min_area_rect(PyObject *self, PyObject *arg) {
    Py_ssize_t total;
    PyObject *result = NULL;
    (void)self;
    ipt *points = parse_points(arg, &total);
    if (!points)
        return NULL;
    Py_ssize_t *hull = malloc((size_t)(4 * total + 12) * sizeof *hull);
    double *xs = malloc((size_t)(4 * total + 12) * sizeof *xs);
    double *ys = malloc((size_t)(4 * total + 12) * sizeof *ys);
    if (!hull || !xs || !ys) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = convex_hull_of(points, total, 0, hull);
    if (n < 0)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        xs[k] = (double)points[hull[k]].x;
        ys[k] = (double)points[hull[k]].y;
    }
    double cx = 0.0, cy = 0.0, width = 0.0, height = 0.0, angle = 0.0;
    if (n > 2) {
        double c[6];
        if (calipers(xs, ys, n, c) < 0)
            goto done;
        double px = c[0], py = c[1], ax = c[2], ay = c[3], bx = c[4], by = c[5];
        cx = F(px + F(F(ax + bx) * 0.5));
        cy = F(py + F(F(ay + by) * 0.5));
        width = F(sqrt(ax * ax + ay * ay));
        height = F(sqrt(bx * bx + by * by));
        angle = atan2(ay, ax);
    } else if (n == 2) {
        cx = F(F(xs[0] + xs[1]) * 0.5);
        cy = F(F(ys[0] + ys[1]) * 0.5);
        double dx = F(xs[1] - xs[0]), dy = F(ys[1] - ys[0]);
        width = F(sqrt(dx * dx + dy * dy));
        angle = atan2(dy, dx);
    } else if (n == 1) {
        cx = xs[0];
        cy = ys[0];
    }
    /* Found by comparison with cv2 5.0: the angle stays in double precision
       and is turned by quarter turns into [-90, 0). */
    while (angle >= 0) {
        angle -= PI / 2;
        double t = width;
        width = height;
        height = t;
    }
    while (angle < -PI / 2) {
        angle += PI / 2;
        double t = width;
        width = height;
        height = t;
    }
    result = Py_BuildValue("((dd)(dd)d)", cx, cy, width, height, F(angle * 180 / PI));
done:
    free(points);
    free(hull);
    free(xs);
    free(ys);
    return result;
}

static PyMethodDef methods[] = {
    {"convex_hull", convex_hull, METH_VARARGS,
     "convex_hull(points, clockwise=True) -> cv2.convexHull's vertices as (x, y)"},
    {"min_area_rect", min_area_rect, METH_O,
     "min_area_rect(points) -> cv2.minAreaRect's ((cx, cy), (width, height), angle)"},
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
