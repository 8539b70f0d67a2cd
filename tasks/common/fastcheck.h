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

/* Recording and replaying decisions: the loops' optional trailing `choices` argument.
 *
 * A decision is the index of the chosen candidate, one per heuristic call. With choices None
 * the heuristic decides and nothing is kept. With a callable priority and a writable int64
 * array, decision d is also written to choices[d]; when the loop needs decision len(choices)
 * it stops instead, before building the candidates or calling the heuristic (the recording's
 * limit). With priority None the loop calls nothing and builds no candidates: decision d is
 * choices[d], checked against the candidate count. With an array a loop returns
 * (its usual result, the decisions made), or -1 when it stopped at the limit.
 */
typedef struct {
    npy_int64 *data; /* NULL: choices None */
    npy_intp length;
    npy_intp made;
    int replay;
} Choices;

/* Reads the `choices` argument (NULL when not given); 0, or -1 with an exception set. */
static int choices_open(Choices *c, PyObject *priority, PyObject *choices)
{
    c->data = NULL;
    c->length = c->made = 0;
    c->replay = 0;
    if (choices == NULL || choices == Py_None) {
        if (priority == Py_None) {
            PyErr_SetString(PyExc_TypeError, "priority None replays `choices`, which must be given");
            return -1;
        }
        return 0;
    }
    c->replay = priority == Py_None;
    PyArrayObject *a = (PyArrayObject *)choices;
    if (!PyArray_Check(choices) || PyArray_NDIM(a) != 1 || PyArray_TYPE(a) != NPY_INT64 ||
        !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) || !PyArray_ISNOTSWAPPED(a) ||
        (!c->replay && !PyArray_ISWRITEABLE(a))) {
        PyErr_SetString(PyExc_TypeError, "choices must be None or a contiguous 1-D int64 array (writable to record)");
        return -1;
    }
    c->data = (npy_int64 *)PyArray_DATA(a);
    c->length = PyArray_DIM(a, 0);
    return 0;
}

/* Recording: the array is full, so the loop stops before the next decision. */
static inline int choices_full(const Choices *c)
{
    return c->data != NULL && !c->replay && c->made == c->length;
}

/* Recording: keep the decision just made. */
static inline void choices_keep(Choices *c, Py_ssize_t choice)
{
    if (c->data != NULL && !c->replay)
        c->data[c->made++] = (npy_int64)choice;
}

/* Replay: the next decision among `count` candidates, or -1 with IndexError((d, decision, count))
 * set when it is out of range, IndexError((d,)) when the array has none left. */
static Py_ssize_t choices_next(Choices *c, Py_ssize_t count)
{
    PyObject *reason;
    if (c->made >= c->length) {
        reason = Py_BuildValue("(n)", c->made);
    } else {
        npy_int64 choice = c->data[c->made];
        if (choice >= 0 && choice < count) {
            c->made += 1;
            return (Py_ssize_t)choice;
        }
        reason = Py_BuildValue("(nLn)", c->made, (long long)choice, count);
    }
    if (reason != NULL) {
        PyErr_SetObject(PyExc_IndexError, reason);
        Py_DECREF(reason);
    }
    return -1;
}

/* The loop's return value from its usual `result` (a new reference, stolen; NULL passes
 * through): `result` itself without choices, else (result, decisions made), or -1 when
 * the recording stopped at its limit. */
static PyObject *choices_return(const Choices *c, int stopped, PyObject *result)
{
    if (result == NULL || c->data == NULL)
        return result;
    if (stopped) {
        Py_DECREF(result);
        return PyLong_FromLong(-1);
    }
    return Py_BuildValue("Nn", result, c->made);
}

#endif
