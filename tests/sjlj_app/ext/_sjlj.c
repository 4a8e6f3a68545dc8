/* build_ext: sjlj */
/* _sjlj: setjmp/longjmp in a C extension module, natively and in the guest
 * (tests/sjlj_app; README: "C extension modules", setjmp/longjmp).
 *
 * dive() calls setjmp, then descends a recursive chain of calls made through
 * a function pointer; at depth fail_at the chain longjmps back to dive(),
 * either directly or from a qsort() comparator (so the jump leaves through
 * frames of libc, code compiled without the setjmp/longjmp lowering, as
 * libjpeg's error_exit does). With nested, a frame half-way down holds a
 * setjmp of its own that the jump must pass by. dive() frees what it
 * allocated and raises ValueError; nothing is left behind, so the next call
 * works. The comment on the first line makes tools/build_ext.py build the
 * guest's copy with setjmp/longjmp (the native one uses glibc's).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <setjmp.h>
#include <stdlib.h>

#define MAX_DEPTH 5000L
#define SORTED 64

struct dive {
    jmp_buf env;
    long depth;     /* how deep the chain goes */
    long fail_at;   /* where it longjmps (-1: never) */
    long guard_at;  /* where a frame with its own setjmp sits (-1: none) */
    int code;       /* longjmp's value */
    int by_qsort;   /* longjmp from a qsort comparator */
    long compares;  /* comparisons made by that qsort */
    long reached;   /* the deepest depth the chain reached */
    int keys[SORTED];
};

/* qsort's comparator has no context argument; the guest has no threads and
 * the GIL is held natively. */
static struct dive *current;

static long descend(struct dive *d, long depth);
static long guard(struct dive *d, long depth);
/* Calls through a volatile pointer: clang can neither inline the chain nor
 * turn the recursion into a loop, so every depth is a real frame. */
static long (*volatile step)(struct dive *, long) = descend;
static long (*volatile guarded)(struct dive *, long) = guard;

static int compare(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    if (++current->compares == 10)
        longjmp(current->env, current->code);
    return (x > y) - (x < y);
}

static long descend(struct dive *d, long depth) {
    volatile long here = depth; /* a frame with something on the stack */
    d->reached = depth;
    if (depth == d->fail_at) {
        if (!d->by_qsort)
            longjmp(d->env, d->code);
        for (int i = 0; i < SORTED; i++)
            d->keys[i] = (i * 37) % SORTED;
        current = d;
        qsort(d->keys, SORTED, sizeof d->keys[0], compare);
        return -1; /* not reached: the comparator jumps */
    }
    if (depth == d->depth)
        return depth;
    if (depth + 1 == d->guard_at)
        return guarded(d, depth + 1) + here;
    return step(d, depth + 1) + here;
}

/* A frame with a setjmp of its own: the outer jump passes it by. */
static long guard(struct dive *d, long depth) {
    jmp_buf mine;
    if (setjmp(mine))
        return -1000000; /* never: nobody jumps to this buffer */
    return descend(d, depth);
}

/* dive(depth, fail_at, code, by_qsort, nested) -> 0 + 1 + ... + depth, or
 * ValueError("longjmp from depth D with value V") when fail_at is in 0..depth. */
static PyObject *dive(PyObject *self, PyObject *args) {
    long depth, fail_at;
    int code, by_qsort, nested;
    (void)self;
    if (!PyArg_ParseTuple(args, "llipp:dive", &depth, &fail_at, &code, &by_qsort, &nested))
        return NULL;
    if (depth < 0 || depth > MAX_DEPTH) {
        PyErr_Format(PyExc_ValueError, "depth must be 0 to %ld, not %ld", MAX_DEPTH, depth);
        return NULL;
    }
    /* On the heap: what the chain writes is defined after the jump. */
    struct dive *d = PyMem_Calloc(1, sizeof *d);
    if (d == NULL)
        return PyErr_NoMemory();
    d->depth = depth;
    d->fail_at = fail_at;
    d->guard_at = nested && depth > 1 ? depth / 2 : -1;
    d->code = code;
    d->by_qsort = by_qsort;
    int jumped = setjmp(d->env);
    if (jumped) {
        long reached = d->reached;
        PyMem_Free(d);
        current = NULL;
        return PyErr_Format(PyExc_ValueError, "longjmp from depth %ld with value %d", reached,
                            jumped);
    }
    long sum = step(d, 0);
    PyMem_Free(d);
    return PyLong_FromLong(sum);
}

static PyMethodDef methods[] = {
    {"dive", dive, METH_VARARGS, "dive(depth, fail_at, code, by_qsort, nested) -> int"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sjlj", "setjmp/longjmp out of deep call chains (tests/sjlj_app).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sjlj(void) { return PyModule_Create(&module); }
