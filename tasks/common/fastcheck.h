/* The decision check shared by the compiled simulator loops (the _fast modules of each task).
 *
 * The twin of tasks.common.errors.choose after the heuristic returned: a numeric 1-D
 * array of the right length has its first argmax taken here (a float winner must be
 * finite); anything else goes to the Python check, which raises the one-line reason
 * (or returns the index for the forms it accepts, such as lists).
 * Include after <numpy/arrayobject.h>.
 */
#ifndef RAISE_FASTCHECK_H
#define RAISE_FASTCHECK_H

#include <math.h>

/* The chosen index of `scores` among `count` candidates, or -1 with an exception set. */
static Py_ssize_t fast_choose(PyObject *scores, Py_ssize_t count, PyObject *check)
{
    if (PyArray_CheckExact(scores)) {
        PyArrayObject *a = (PyArrayObject *)scores;
        char kind = PyArray_DESCR(a)->kind;
        if (PyArray_NDIM(a) == 1 && PyArray_DIM(a, 0) == count && (kind == 'f' || kind == 'i' || kind == 'u')) {
            PyObject *arg = PyArray_ArgMax(a, 0, NULL);
            if (arg == NULL)
                return -1;
            npy_intp index = PyArray_PyIntAsIntp(arg); /* a 0-d array */
            Py_DECREF(arg);
            if (index < 0)
                return -1;
            if (kind != 'f')
                return index;
            PyObject *value = PyArray_GETITEM(a, PyArray_GETPTR1(a, index));
            if (value == NULL)
                return -1;
            double chosen = PyFloat_AsDouble(value);
            Py_DECREF(value);
            if (chosen == -1.0 && PyErr_Occurred())
                return -1;
            if (isfinite(chosen))
                return index;
            /* NaN or inf won the argmax: the Python check raises with the reason */
        }
    }
    PyObject *result = PyObject_CallFunction(check, "On", scores, count);
    if (result == NULL)
        return -1;
    Py_ssize_t index = PyLong_AsSsize_t(result);
    Py_DECREF(result);
    return index;
}

#endif
