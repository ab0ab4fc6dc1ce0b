/* The indices of tf.SparseTensors for one-level lists laid out batch by batch and column by
 * column (see beam_tensorize/tf/_chunks.py, _sparse_layout): for row splits [groups][rows + 1]
 * (each group's from 0), writes [row, position] of every value, group after group, into an
 * int64 buffer of [values][2], and each group's longest list. Optional: without it, numpy does the same (slower). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *fill_indices(PyObject *self, PyObject *args) {
    Py_buffer splits, out, widths;
    Py_ssize_t rows;
    if (!PyArg_ParseTuple(args, "y*w*nw*", &splits, &out, &rows, &widths)) return NULL;
    PyObject *result = NULL;
    const Py_ssize_t width = rows + 1;
    if (rows < 0 || splits.len % ((Py_ssize_t)sizeof(int64_t) * width) || out.len % (2 * sizeof(int64_t)) ||
        widths.len != splits.len / width) {
        PyErr_SetString(PyExc_ValueError, "fill_indices: buffers of the wrong size");
        goto done;
    }
    const int64_t *s = (const int64_t *)splits.buf;
    int64_t *o = (int64_t *)out.buf;
    int64_t *longest = (int64_t *)widths.buf;
    const Py_ssize_t groups = splits.len / ((Py_ssize_t)sizeof(int64_t) * width);
    const Py_ssize_t capacity = out.len / (2 * (Py_ssize_t)sizeof(int64_t));
    const char *error = NULL;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t written = 0;
    for (Py_ssize_t g = 0; g < groups && !error; g++, s += width) {
        if (s[0] != 0 || s[rows] < 0 || s[rows] > capacity - written) {
            error = "fill_indices: splits not from 0, or more values than room";
            break;
        }
        int64_t most = 0;
        for (Py_ssize_t r = 0; r < rows; r++) {
            const int64_t n = s[r + 1] - s[r];
            if (n < 0) {
                error = "fill_indices: decreasing splits";
                break;
            }
            if (n > most) most = n;
            for (int64_t p = 0; p < n; p++) {
                o[0] = r;
                o[1] = p;
                o += 2;
            }
            written += n;
        }
        longest[g] = most;
    }
    if (!error && written != capacity) error = "fill_indices: fewer values than room";
    Py_END_ALLOW_THREADS
    if (error) {
        PyErr_SetString(PyExc_ValueError, error);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&splits);
    PyBuffer_Release(&out);
    PyBuffer_Release(&widths);
    return result;
}

static PyMethodDef methods[] = {
    {"fill_indices", fill_indices, METH_VARARGS,
     "fill_indices(splits, out, rows, widths): [row, position] of every value of one-level lists "
     "whose row splits are `splits` ([groups][rows + 1] int64, each group's from 0), group after "
     "group, into `out` ([values][2] int64); each group's longest list into `widths` ([groups] int64)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sparseindex", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sparseindex(void) { return PyModule_Create(&module); }
