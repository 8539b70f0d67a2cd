/* The OJSP dispatch loop of tasks/ojsp/simulator.py, compiled.
 *
 * Same semantics, step for step, as the Python loop in simulator.py (which stays as the
 * fallback when this module is not built): one heap key est * J + j per unfinished job,
 * refreshed lazily; the decision time t is the smallest est; the candidates are the next
 * operations with est == t in job-index order, handed to the heuristic as a fresh
 * float64 array of their rows of the candidate table, with t as a Python int; the first
 * argmax starts at t and the other candidates on other machines are offered again at t.
 * One decision per operation; `choices` records or replays them (fastcheck.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "fastcheck.h"

#define COLUMNS 6

/* a binary min-heap of int64 keys */
typedef struct {
    npy_int64 *keys;
    npy_intp size;
} Heap;

static void heap_push(Heap *h, npy_int64 key)
{
    npy_intp i = h->size++;
    while (i > 0) {
        npy_intp parent = (i - 1) / 2;
        if (h->keys[parent] <= key)
            break;
        h->keys[i] = h->keys[parent];
        i = parent;
    }
    h->keys[i] = key;
}

static npy_int64 heap_pop(Heap *h)
{
    npy_int64 top = h->keys[0];
    npy_int64 last = h->keys[--h->size];
    npy_intp i = 0, n = h->size;
    for (;;) {
        npy_intp child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && h->keys[child + 1] < h->keys[child])
            child += 1;
        if (h->keys[child] >= last)
            break;
        h->keys[i] = h->keys[child];
        i = child;
    }
    if (n > 0)
        h->keys[i] = last;
    return top;
}

static int contiguous(PyArrayObject *a, int type, int ndim)
{
    return PyArray_TYPE(a) == type && PyArray_NDIM(a) == ndim && PyArray_IS_C_CONTIGUOUS(a);
}

/* The heuristic's choice at time t among the n operations `ops` (their rows of the table);
 * -1 with an exception set when it fails. */
static Py_ssize_t heuristic_choice(PyObject *priority, PyObject *check, const double *table, const npy_intp *ops,
                                   npy_intp n, npy_int64 t)
{
    npy_intp dims[2] = {n, COLUMNS};
    PyArrayObject *rows = (PyArrayObject *)PyArray_SimpleNew(2, dims, NPY_FLOAT64);
    if (rows == NULL)
        return -1;
    double *r = (double *)PyArray_DATA(rows);
    for (npy_intp i = 0; i < n; i++)
        memcpy(r + i * COLUMNS, table + ops[i] * COLUMNS, COLUMNS * sizeof(double));
    PyObject *time_obj = PyLong_FromLongLong((long long)t);
    if (time_obj == NULL) {
        Py_DECREF(rows);
        return -1;
    }
    PyObject *scores = PyObject_CallFunctionObjArgs(priority, time_obj, (PyObject *)rows, NULL);
    Py_DECREF(time_obj);
    Py_DECREF(rows);
    if (scores == NULL)
        return -1;
    Py_ssize_t choice = fast_choose(scores, n, check);
    Py_DECREF(scores);
    return choice;
}

/* dispatch(machines, durations, release, table, start, priority, check, choices=None) -> makespan
 * machines, durations: int64 (J, M); release: int64 (J,); table: float64 (J * M, 6);
 * start: int64 (J * M,), written in place. */
static PyObject *dispatch(PyObject *self, PyObject *args)
{
    PyArrayObject *machines_arr, *durations_arr, *release_arr, *table_arr, *start_arr;
    PyObject *priority, *check, *choices_obj = NULL;
    Choices choices;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OO|O", &PyArray_Type, &machines_arr, &PyArray_Type, &durations_arr,
                          &PyArray_Type, &release_arr, &PyArray_Type, &table_arr, &PyArray_Type, &start_arr,
                          &priority, &check, &choices_obj) ||
        choices_open(&choices, priority, choices_obj) < 0)
        return NULL;
    if (!contiguous(machines_arr, NPY_INT64, 2) || !contiguous(durations_arr, NPY_INT64, 2) ||
        !contiguous(release_arr, NPY_INT64, 1) || !contiguous(table_arr, NPY_FLOAT64, 2) ||
        !contiguous(start_arr, NPY_INT64, 1) || !PyArray_ISWRITEABLE(start_arr)) {
        PyErr_SetString(PyExc_TypeError, "dispatch needs contiguous int64 machines, durations, release, start "
                                         "and a float64 table");
        return NULL;
    }
    const npy_intp J = PyArray_DIM(durations_arr, 0), M = PyArray_DIM(durations_arr, 1);
    if (PyArray_DIM(machines_arr, 0) != J || PyArray_DIM(machines_arr, 1) != M || PyArray_DIM(release_arr, 0) != J ||
        PyArray_DIM(table_arr, 0) != J * M || PyArray_DIM(table_arr, 1) != COLUMNS || PyArray_DIM(start_arr, 0) != J * M) {
        PyErr_SetString(PyExc_ValueError, "dispatch: inconsistent array shapes");
        return NULL;
    }
    if (J == 0 || M == 0)
        return choices_return(&choices, 0, PyLong_FromLong(0));
    const npy_int64 *op_machine = (const npy_int64 *)PyArray_DATA(machines_arr);
    const npy_int64 *op_duration = (const npy_int64 *)PyArray_DATA(durations_arr);
    const npy_int64 *release = (const npy_int64 *)PyArray_DATA(release_arr);
    const double *table = (const double *)PyArray_DATA(table_arr);
    npy_int64 *start = (npy_int64 *)PyArray_DATA(start_arr);
    for (npy_intp op = 0; op < J * M; op++)
        if (op_machine[op] < 0 || op_machine[op] >= M) {
            PyErr_SetString(PyExc_ValueError, "dispatch: a machine id outside 0..M-1");
            return NULL;
        }

    npy_int64 *job_ready = PyMem_Malloc(J * sizeof(npy_int64));
    npy_intp *next_op = PyMem_Malloc(J * sizeof(npy_intp));
    npy_int64 *machine_free = PyMem_Calloc(M, sizeof(npy_int64));
    npy_int64 *keys = PyMem_Malloc((J + 1) * sizeof(npy_int64));
    npy_intp *ops = PyMem_Malloc((J + 1) * sizeof(npy_intp));
    if (!job_ready || !next_op || !machine_free || !keys || !ops) {
        PyMem_Free(job_ready);
        PyMem_Free(next_op);
        PyMem_Free(machine_free);
        PyMem_Free(keys);
        PyMem_Free(ops);
        return PyErr_NoMemory();
    }
    Heap heap = {keys, 0};
    for (npy_intp j = 0; j < J; j++) {
        job_ready[j] = release[j];
        next_op[j] = j * M;
        heap_push(&heap, release[j] * J + j); /* est = r_j while every machine is free */
    }
    npy_int64 makespan = 0;
    int failed = 0, stopped = 0;

    while (heap.size > 0 && !failed && !stopped) {
        /* the decision time t: the smallest est, refreshing stale keys on the way */
        npy_int64 key, est;
        npy_intp j, op;
        for (;;) {
            key = heap_pop(&heap);
            j = (npy_intp)(key % J);
            op = next_op[j];
            est = job_ready[j];
            npy_int64 free = machine_free[op_machine[op]];
            if (free > est)
                est = free;
            if (est * J + j == key)
                break;
            heap_push(&heap, est * J + j);
        }
        const npy_int64 t = est;
        const npy_int64 bound = (t + 1) * J; /* keys below it have est == t */
        npy_intp n = 0;
        ops[n++] = op;
        while (heap.size > 0 && heap.keys[0] < bound) {
            j = (npy_intp)(heap_pop(&heap) % J);
            op = next_op[j];
            est = job_ready[j];
            npy_int64 free = machine_free[op_machine[op]];
            if (free > est)
                est = free;
            if (est == t)
                ops[n++] = op;
            else
                heap_push(&heap, est * J + j);
        }

        while (n > 0) {
            if (choices_full(&choices)) {
                stopped = 1;
                break;
            }
            Py_ssize_t choice = choices.replay ? choices_next(&choices, n)
                                               : heuristic_choice(priority, check, table, ops, n, t);
            if (choice < 0 || choice >= n) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "the check returned an index out of range");
                failed = 1;
                break;
            }
            choices_keep(&choices, choice);
            op = ops[choice];
            const npy_int64 m = op_machine[op];
            const npy_int64 end = t + op_duration[op];
            start[op] = t;
            machine_free[m] = end;
            j = op / M;
            if ((op + 1) % M != 0) { /* the job's following operation */
                next_op[j] = op + 1;
                job_ready[j] = end;
                npy_int64 free = machine_free[op_machine[op + 1]];
                heap_push(&heap, (end > free ? end : free) * J + j);
            } else if (end > makespan) {
                makespan = end;
            }
            if (n == 1)
                break;
            /* candidates on the same machine now wait until `end`; the others stay at t */
            npy_intp rest = 0;
            for (npy_intp i = 0; i < n; i++) {
                npy_intp other = ops[i];
                if (op_machine[other] == m) {
                    if (other != op)
                        heap_push(&heap, end * J + other / M);
                } else {
                    ops[rest++] = other;
                }
            }
            n = rest;
        }
    }
    PyMem_Free(job_ready);
    PyMem_Free(next_op);
    PyMem_Free(machine_free);
    PyMem_Free(keys);
    PyMem_Free(ops);
    if (failed)
        return NULL;
    return choices_return(&choices, stopped, PyLong_FromLongLong((long long)makespan));
}

static PyMethodDef methods[] = {
    {"dispatch", dispatch, METH_VARARGS,
     "dispatch(machines, durations, release, table, start, priority, check, choices=None) -> makespan; start"
     " filled in place; with choices (makespan, decisions made), or -1 when the recording stopped at its limit."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastdispatch", "The compiled OJSP dispatch loop.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__fastdispatch(void)
{
    import_array();
    return PyModule_Create(&module);
}
