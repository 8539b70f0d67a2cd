/* The OBP packing loop of tasks/obp/simulator.py, compiled.
 *
 * Same semantics, step for step, as the Python loop in simulator.py (which stays as the
 * fallback when this module is not built): n pre-allocated bins; for every item the
 * heuristic is called with the item (the numpy scalar iterating the items array gives)
 * and a fresh int64 array of the residual capacities of every bin that fits it, in bin
 * index order; the first argmax wins. While the used bins form a prefix the array is the
 * fitting used bins followed by the untouched ones, otherwise all bins are scanned.
 * Results the fast check cannot accept go to the Python check (which raises the reason).
 * One decision per item; `choices` records or replays them (fastcheck.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "fastcheck.h"

/* The heuristic's choice for item i among `size` candidates: the fitting bins `fit[0..k)`
 * then `size - k` untouched ones; -1 with an exception set when it fails. */
static Py_ssize_t heuristic_choice(PyObject *priority, PyObject *check, PyArrayObject *items_arr, npy_intp i,
                                   const npy_int64 *residual, const npy_intp *fit, npy_intp k,
                                   const npy_int64 *untouched, npy_intp size)
{
    PyArrayObject *candidates = (PyArrayObject *)PyArray_SimpleNew(1, &size, NPY_INT64);
    if (candidates == NULL)
        return -1;
    npy_int64 *c = (npy_int64 *)PyArray_DATA(candidates);
    for (npy_intp t = 0; t < k; t++)
        c[t] = residual[fit[t]];
    if (size > k)
        memcpy(c + k, untouched, (size_t)(size - k) * sizeof(npy_int64));
    const npy_int64 *items = (const npy_int64 *)PyArray_DATA(items_arr);
    PyObject *item_obj = PyArray_Scalar((void *)&items[i], PyArray_DESCR(items_arr), (PyObject *)items_arr);
    if (item_obj == NULL) {
        Py_DECREF(candidates);
        return -1;
    }
    PyObject *scores = PyObject_CallFunctionObjArgs(priority, item_obj, (PyObject *)candidates, NULL);
    Py_DECREF(item_obj);
    Py_DECREF(candidates);
    if (scores == NULL)
        return -1;
    Py_ssize_t choice = fast_choose(scores, size, check);
    Py_DECREF(scores);
    return choice;
}

/* pack(items, residual, priority, check, choices=None): pack in place into `residual` (int64, all C). */
static PyObject *pack(PyObject *self, PyObject *args)
{
    PyArrayObject *items_arr, *residual_arr;
    PyObject *priority, *check, *choices_obj = NULL;
    Choices choices;
    if (!PyArg_ParseTuple(args, "O!O!OO|O", &PyArray_Type, &items_arr, &PyArray_Type, &residual_arr, &priority, &check,
                          &choices_obj) ||
        choices_open(&choices, priority, choices_obj) < 0)
        return NULL;
    if (PyArray_NDIM(items_arr) != 1 || PyArray_TYPE(items_arr) != NPY_INT64 || !PyArray_IS_C_CONTIGUOUS(items_arr) ||
        PyArray_NDIM(residual_arr) != 1 || PyArray_TYPE(residual_arr) != NPY_INT64 ||
        !PyArray_IS_C_CONTIGUOUS(residual_arr) || !PyArray_ISWRITEABLE(residual_arr)) {
        PyErr_SetString(PyExc_TypeError, "pack needs contiguous 1-D int64 items and a writable int64 residual");
        return NULL;
    }
    const npy_int64 *items = (const npy_int64 *)PyArray_DATA(items_arr);
    npy_int64 *residual = (npy_int64 *)PyArray_DATA(residual_arr);
    const npy_intp count = PyArray_DIM(items_arr, 0);
    const npy_intp n = PyArray_DIM(residual_arr, 0);
    const npy_int64 capacity = n ? residual[0] : 0;
    npy_intp *fit = PyMem_Malloc((n ? n : 1) * sizeof(npy_intp));
    npy_int64 *untouched = PyMem_Malloc((n ? n : 1) * sizeof(npy_int64)); /* n copies of C */
    if (fit == NULL || untouched == NULL) {
        PyMem_Free(fit);
        PyMem_Free(untouched);
        return PyErr_NoMemory();
    }
    for (npy_intp t = 0; t < n; t++)
        untouched[t] = capacity;
    npy_intp used = 0;
    int prefix = 1, stopped = 0;
    PyObject *failure = NULL;

    for (npy_intp i = 0; i < count; i++) {
        if (choices_full(&choices)) {
            stopped = 1;
            break;
        }
        const npy_int64 item = items[i];
        npy_intp k = 0, size;
        if (prefix) {
            for (npy_intp j = 0; j < used; j++)
                if (residual[j] >= item)
                    fit[k++] = j;
            size = k + (n - used);
        } else {
            for (npy_intp j = 0; j < n; j++)
                if (residual[j] >= item)
                    fit[k++] = j;
            size = k;
        }
        Py_ssize_t choice = choices.replay ? choices_next(&choices, size)
                                           : heuristic_choice(priority, check, items_arr, i, residual, fit, k,
                                                              untouched, size);
        if (choice < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "the check returned a negative index");
            failure = Py_None;
            break;
        }
        choices_keep(&choices, choice);
        npy_intp target;
        if (!prefix || choice < k) {
            target = fit[choice];
        } else {
            target = used + (choice - k);
            if (choice == k)
                used += 1;
            else
                prefix = 0;
        }
        residual[target] -= item;
    }
    PyMem_Free(fit);
    PyMem_Free(untouched);
    if (failure != NULL)
        return NULL;
    Py_INCREF(Py_None);
    return choices_return(&choices, stopped, Py_None);
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_VARARGS,
     "pack(items, residual, priority, check, choices=None): the OBP loop, in place; with choices"
     " (None, decisions made), or -1 when the recording stopped at its limit."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpack", "The compiled OBP packing loop.", -1, methods};

PyMODINIT_FUNC PyInit__fastpack(void)
{
    import_array();
    return PyModule_Create(&module);
}
