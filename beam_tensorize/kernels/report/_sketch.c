/*
 * Native fast path of the run report's NumericSketch (sketches.py): one pass over a batch of
 * numbers instead of numpy's eight (conversion, sum, sum of squares, min, max, bucket codes,
 * their offset, bincount). The numpy path in sketches.py gives the same results.
 *
 *   summarize(values) -> None | (count, minimum, maximum, total, squares, zeros,
 *                               negative_first, negative_counts, positive_first, positive_counts)
 *       values: a C-contiguous buffer of float64, float32, int64 or int32 (format d, f, q/l, i).
 *       None when a value is a NaN or an infinity (the numpy path counts those).
 *       Each value is taken as a float64 (integers rounded as C's conversion does, as numpy's
 *       cast). total and squares: the sums of the values and of their squares, both added in
 *       numpy's pairwise order (blocks of at most 128 in 8 partial sums, halves split at a
 *       multiple of 8), so total is what numpy's sum of the float64 values gives.
 *       Buckets: a value's float64 exponent and top 6 mantissa bits (its bits >> 46, sign
 *       left out: 17 bits), counted per sign. Bucket 0 (zeros, the smallest subnormals) is
 *       counted in `zeros`; every other bucket in *_counts (native int64 bytes: the counts of
 *       buckets *_first to the last one used of that sign; b"" and 0 when none).
 *
 * The counts go to a table kept by the module (2 x 2**17 int64, only the buckets used are read
 * and cleared), so the GIL is held while it runs.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MODULE_VERSION 1
#define BUCKETS (1 << 17)
#define BLOCK 128

static int64_t table[2][BUCKETS];

typedef struct {
    double low, high;
    int64_t zeros;
    int used_low[2], used_high[2];
    int bad; /* a NaN or an infinity */
} State;

/* One block of at most BLOCK values as float64: its pairwise sums (numpy's order), and each
 * value's extremes and bucket. */
static void block(const double *v, Py_ssize_t n, State *s, double *sum, double *squares) {
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = v[i];
        if (!isfinite(x)) {
            s->bad = 1;
            return;
        }
        if (x < s->low) s->low = x;
        if (x > s->high) s->high = x;
        uint64_t bits;
        memcpy(&bits, &x, sizeof(bits));
        int sign = (int)(bits >> 63);
        int bucket = (int)((bits >> 46) & (BUCKETS - 1));
        table[sign][bucket]++; /* bucket 0 (zeros) is taken out at the end */
        if (bucket < s->used_low[sign]) s->used_low[sign] = bucket;
        if (bucket > s->used_high[sign]) s->used_high[sign] = bucket;
    }
    double q[BLOCK];
    for (Py_ssize_t i = 0; i < n; i++) q[i] = v[i] * v[i];
    const double *parts[2] = {v, q};
    double *outs[2] = {sum, squares};
    for (int k = 0; k < 2; k++) {
        const double *a = parts[k];
        double res;
        if (n < 8) {
            res = 0.0;
            for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        } else {
            double r[8];
            for (int j = 0; j < 8; j++) r[j] = a[j];
            Py_ssize_t i;
            for (i = 8; i < n - (n % 8); i += 8)
                for (int j = 0; j < 8; j++) r[j] += a[i + j];
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) res += a[i];
        }
        *outs[k] = res;
    }
}

/* Values [start, start + n) of the input as float64, into `out` (n <= BLOCK). */
static void load(const char *data, char kind, Py_ssize_t start, Py_ssize_t n, double *out) {
    switch (kind) {
    case 'd': memcpy(out, (const double *)data + start, (size_t)n * sizeof(double)); break;
    case 'f': for (Py_ssize_t i = 0; i < n; i++) out[i] = (double)((const float *)data)[start + i]; break;
    case 'q': for (Py_ssize_t i = 0; i < n; i++) out[i] = (double)((const int64_t *)data)[start + i]; break;
    default: for (Py_ssize_t i = 0; i < n; i++) out[i] = (double)((const int32_t *)data)[start + i]; break;
    }
}

/* numpy's pairwise summation of [start, start + n), of the values and of their squares. */
static void pairwise(const char *data, char kind, Py_ssize_t start, Py_ssize_t n, State *s, double *sum,
                     double *squares) {
    if (n <= BLOCK) {
        double v[BLOCK];
        load(data, kind, start, n, v);
        block(v, n, s, sum, squares);
        return;
    }
    Py_ssize_t half = n / 2;
    half -= half % 8;
    double sum_a, squares_a, sum_b, squares_b;
    pairwise(data, kind, start, half, s, &sum_a, &squares_a);
    if (s->bad) return;
    pairwise(data, kind, start + half, n - half, s, &sum_b, &squares_b);
    *sum = sum_a + sum_b;
    *squares = squares_a + squares_b;
}

static char kind_of(const char *format, Py_ssize_t itemsize) {
    if (format == NULL) return 0;
    if (*format == '@' || *format == '=' || *format == '<') format++;
    if (format[0] == 0 || format[1] != 0) return 0;
    switch (format[0]) {
    case 'd': return itemsize == 8 ? 'd' : 0;
    case 'f': return itemsize == 4 ? 'f' : 0;
    case 'q': case 'l': return itemsize == 8 ? 'q' : 0;
    case 'i': return itemsize == 4 ? 'i' : 0;
    default: return 0;
    }
}

/* The counts of one sign's buckets from the first to the last one used (bucket 0 into
 * `zeros`), and the table and marks cleared; `keep` 0 clears only. */
static PyObject *counts_of(int sign, State *s, long long *first, int keep) {
    int low = s->used_low[sign], high = s->used_high[sign];
    if (low == 0 && high >= 0) {
        s->zeros += table[sign][0];
        table[sign][0] = 0;
        while (low <= high && !table[sign][low]) low++;
    }
    *first = 0;
    if (low > high) return keep ? PyBytes_FromStringAndSize(NULL, 0) : NULL;
    PyObject *out = NULL;
    if (keep) {
        *first = low;
        out = PyBytes_FromStringAndSize((const char *)&table[sign][low], (Py_ssize_t)(high - low + 1) * 8);
    }
    memset(&table[sign][low], 0, (size_t)(high - low + 1) * 8);
    return out;
}

static PyObject *summarize(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    char kind = kind_of(view.format, view.itemsize);
    if (!kind || view.ndim > 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "summarize() takes a 1-D float64, float32, int64 or int32 buffer");
        return NULL;
    }
    Py_ssize_t n = view.len / view.itemsize;
    State s = {INFINITY, -INFINITY, 0, {BUCKETS, BUCKETS}, {-1, -1}, 0};
    double total = 0.0, squares = 0.0;
    if (n > 0) pairwise((const char *)view.buf, kind, 0, n, &s, &total, &squares);
    PyBuffer_Release(&view);
    long long negative_first, positive_first;
    if (s.bad || n == 0) { /* clear what was counted before the NaN or infinity */
        counts_of(1, &s, &negative_first, 0);
        counts_of(0, &s, &positive_first, 0);
        Py_RETURN_NONE;
    }
    PyObject *negative = counts_of(1, &s, &negative_first, 1);
    PyObject *positive = counts_of(0, &s, &positive_first, 1);
    if (negative == NULL || positive == NULL) {
        Py_XDECREF(negative);
        Py_XDECREF(positive);
        return NULL;
    }
    return Py_BuildValue("(ndddd LLNLN)", n, s.low, s.high, total, squares, (long long)s.zeros, negative_first,
                         negative, positive_first, positive);
}

static PyMethodDef methods[] = {
    {"summarize", summarize, METH_O, "One batch of numbers summarized for a NumericSketch (see the module)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sketch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sketch(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "VERSION", MODULE_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
