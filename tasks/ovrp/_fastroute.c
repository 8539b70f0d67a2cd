/* The OVRP insertion loop of tasks/ovrp/simulator.py, compiled.
 *
 * Same semantics, step for step and bit for bit, as the Python loop in simulator.py
 * (which stays as the fallback when this module is not built): the routes are kept
 * edge by edge, grouped by route in position order; for every arriving customer that
 * fits some route the heuristic gets a fresh float64 features array (6) and a fresh
 * float64 candidates array (one row per feasible (route, position) insertion, 8
 * columns) and the first argmax is inserted; a customer that fits no route opens an
 * overflow route depot -> customer -> depot without a decision. Every float is
 * computed with the same operations, in the same order, as the numpy code, so the
 * arrays and the routes are identical. Results the fast check cannot accept go to the
 * Python check (which raises the reason). One decision per customer that fits some route;
 * `choices` records or replays them (fastcheck.h). A replay builds no arrays and skips the
 * columns only the heuristic sees (the other edges' insertion costs, the nearest stops).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "fastcheck.h"

/* a * b + c must stay two roundings, as in numpy */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define COLUMNS 8
#define FEATURES 6

/* numpy.minimum on one element: NaN propagates, ties keep the first */
static inline double nan_minimum(double a, double b)
{
    return (a <= b || a != a) ? a : b;
}

/* The common result, a well-behaved float64 array of `count` scores, checked by a plain scan:
 * the first maximum, as numpy's argmax; -2 when the scan cannot decide (a NaN, a non-finite
 * winner, another dtype or shape), and the general check runs instead. */
static Py_ssize_t scan_choose(PyObject *scores, Py_ssize_t count)
{
    if (!PyArray_CheckExact(scores))
        return -2;
    PyArrayObject *a = (PyArrayObject *)scores;
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != count || count < 1 || PyArray_TYPE(a) != NPY_FLOAT64 ||
        !PyArray_ISALIGNED(a) || !PyArray_ISNOTSWAPPED(a))
        return -2;
    const char *p = PyArray_BYTES(a);
    const npy_intp stride = PyArray_STRIDE(a, 0);
    double best = *(const double *)p;
    Py_ssize_t index = 0;
    if (best != best)
        return -2;
    for (Py_ssize_t i = 1; i < count; i++) {
        double v = *(const double *)(p + i * stride);
        if (v > best) {
            best = v;
            index = i;
        } else if (v != v) {
            return -2;
        }
    }
    return isfinite(best) ? index : -2;
}

static int contiguous(PyArrayObject *a, int type, int ndim)
{
    return PyArray_NDIM(a) == ndim && PyArray_TYPE(a) == type && PyArray_IS_C_CONTIGUOUS(a);
}

typedef struct {
    /* per edge, grouped by route in position order */
    npy_intp *from, *to, *route, *position;
    double *length, *delta;
    npy_intp *keep; /* the edges offered in this decision */
    /* per route */
    double *load, *size, *projected, *free_share, *residual, *route_len, *nearest;
    npy_int64 *res, *count;
} State;

static void state_free(State *s)
{
    PyMem_Free(s->from);
    PyMem_Free(s->to);
    PyMem_Free(s->route);
    PyMem_Free(s->position);
    PyMem_Free(s->length);
    PyMem_Free(s->delta);
    PyMem_Free(s->keep);
    PyMem_Free(s->load);
    PyMem_Free(s->size);
    PyMem_Free(s->projected);
    PyMem_Free(s->free_share);
    PyMem_Free(s->residual);
    PyMem_Free(s->route_len);
    PyMem_Free(s->nearest);
    PyMem_Free(s->res);
    PyMem_Free(s->count);
}

static int state_alloc(State *s, npy_intp max_edges, npy_intp max_routes, npy_intp nodes)
{
    memset(s, 0, sizeof(*s));
    size_t e = (size_t)max_edges, r = (size_t)max_routes;
    if ((size_t)nodes != 0 && r > (size_t)PY_SSIZE_T_MAX / sizeof(double) / (size_t)nodes)
        return -1;
    s->from = PyMem_Malloc(e * sizeof(npy_intp));
    s->to = PyMem_Malloc(e * sizeof(npy_intp));
    s->route = PyMem_Malloc(e * sizeof(npy_intp));
    s->position = PyMem_Malloc(e * sizeof(npy_intp));
    s->length = PyMem_Malloc(e * sizeof(double));
    s->delta = PyMem_Malloc(e * sizeof(double));
    s->keep = PyMem_Malloc(e * sizeof(npy_intp));
    s->load = PyMem_Malloc(r * sizeof(double));
    s->size = PyMem_Malloc(r * sizeof(double));
    s->projected = PyMem_Malloc(r * sizeof(double));
    s->free_share = PyMem_Malloc(r * sizeof(double));
    s->residual = PyMem_Malloc(r * sizeof(double));
    s->route_len = PyMem_Malloc(r * sizeof(double));
    s->nearest = PyMem_Malloc(r * (size_t)nodes * sizeof(double));
    s->res = PyMem_Malloc(r * sizeof(npy_int64));
    s->count = PyMem_Malloc(r * sizeof(npy_int64));
    if (!s->from || !s->to || !s->route || !s->position || !s->length || !s->delta || !s->keep || !s->load ||
        !s->size || !s->projected || !s->free_share || !s->residual || !s->route_len || !s->nearest || !s->res ||
        !s->count)
        return -1;
    return 0;
}

/* The result: (routes as lists of customers, route lengths, overflow route count). */
static PyObject *result_of(const State *s, npy_intp num_edges, npy_intp num_routes, npy_intp vehicles)
{
    PyObject *tours = PyList_New(num_routes);
    PyObject *lengths = PyList_New(num_routes);
    if (tours == NULL || lengths == NULL)
        goto fail;
    for (npy_intp r = 0; r < num_routes; r++) {
        PyObject *tour = PyList_New(0);
        PyObject *length = PyFloat_FromDouble(s->route_len[r]);
        if (tour == NULL || length == NULL) {
            Py_XDECREF(tour);
            Py_XDECREF(length);
            goto fail;
        }
        PyList_SET_ITEM(tours, r, tour);
        PyList_SET_ITEM(lengths, r, length);
    }
    for (npy_intp e = 0; e < num_edges; e++) {
        if (s->to[e] == 0)
            continue;
        PyObject *customer = PyLong_FromSsize_t(s->to[e] - 1);
        if (customer == NULL)
            goto fail;
        int failed = PyList_Append(PyList_GET_ITEM(tours, s->route[e]), customer);
        Py_DECREF(customer);
        if (failed)
            goto fail;
    }
    return Py_BuildValue("NNn", tours, lengths, num_routes - vehicles);
fail:
    Py_XDECREF(tours);
    Py_XDECREF(lengths);
    return NULL;
}

/* The heuristic's choice among the `rows` insertions `s->keep` of `node`, given the customer's
 * features; -1 with an exception set when it fails. */
static Py_ssize_t heuristic_choice(PyObject *priority, PyObject *check, const State *s, npy_intp rows,
                                   npy_intp nodes, npy_intp node, double inv_ref, const double *feature)
{
    npy_intp shape[2] = {rows, COLUMNS};
    PyArrayObject *candidates = (PyArrayObject *)PyArray_SimpleNew(2, shape, NPY_FLOAT64);
    if (candidates == NULL)
        return -1;
    double *out = (double *)PyArray_DATA(candidates);
    for (npy_intp k = 0; k < rows; k++, out += COLUMNS) {
        const npy_intp e = s->keep[k], r = s->route[e];
        const double delta = s->delta[e];
        out[0] = (double)r;
        out[1] = (double)s->position[e];
        out[2] = delta;
        out[3] = s->residual[r];
        out[4] = s->load[r];
        out[5] = s->size[r];
        out[6] = s->nearest[r * nodes + node];
        out[7] = s->projected[r] + delta * inv_ref;
    }
    npy_intp fshape[1] = {FEATURES};
    PyArrayObject *features = (PyArrayObject *)PyArray_SimpleNew(1, fshape, NPY_FLOAT64);
    if (features == NULL) {
        Py_DECREF(candidates);
        return -1;
    }
    memcpy(PyArray_DATA(features), feature, FEATURES * sizeof(double));

    PyObject *scores = PyObject_CallFunctionObjArgs(priority, (PyObject *)features, (PyObject *)candidates, NULL);
    Py_DECREF(features);
    Py_DECREF(candidates);
    if (scores == NULL)
        return -1;
    Py_ssize_t choice = scan_choose(scores, rows);
    if (choice == -2)
        choice = fast_choose(scores, rows, check);
    Py_DECREF(scores);
    return choice;
}

/* route(dist, coords, demands, order, capacity, vehicles, inv_q, inv_n, inv_ref, priority, check, choices=None):
 * the routing of one instance, or None (before any call of the heuristic) when an order
 * entry is out of range or a demand is below 1, which the Python loop handles. */
static PyObject *route(PyObject *self, PyObject *args)
{
    PyArrayObject *dist_arr, *coords_arr, *demands_arr, *order_arr;
    long long capacity_ll;
    Py_ssize_t vehicles;
    double inv_q, inv_n, inv_ref;
    PyObject *priority, *check, *choices_obj = NULL;
    Choices choices;
    if (!PyArg_ParseTuple(args, "O!O!O!O!LndddOO|O", &PyArray_Type, &dist_arr, &PyArray_Type, &coords_arr,
                          &PyArray_Type, &demands_arr, &PyArray_Type, &order_arr, &capacity_ll, &vehicles, &inv_q,
                          &inv_n, &inv_ref, &priority, &check, &choices_obj) ||
        choices_open(&choices, priority, choices_obj) < 0)
        return NULL;
    if (!contiguous(dist_arr, NPY_FLOAT64, 2) || !contiguous(coords_arr, NPY_FLOAT64, 2) ||
        !contiguous(demands_arr, NPY_INT64, 1) || !contiguous(order_arr, NPY_INT64, 1)) {
        PyErr_SetString(PyExc_TypeError, "route needs contiguous float64 dist and coords, int64 demands and order");
        return NULL;
    }
    const npy_intp n = PyArray_DIM(demands_arr, 0);
    const npy_intp nodes = n + 1;
    const npy_intp steps = PyArray_DIM(order_arr, 0);
    if (n < 1 || vehicles < 1 || vehicles > PY_SSIZE_T_MAX / 4 - 2 * n || PyArray_DIM(dist_arr, 0) != nodes ||
        PyArray_DIM(dist_arr, 1) != nodes || PyArray_DIM(coords_arr, 0) != n || PyArray_DIM(coords_arr, 1) != 2 ||
        steps > n) {
        PyErr_SetString(PyExc_ValueError, "route got inconsistent shapes or no vehicles");
        return NULL;
    }
    const double *dist = (const double *)PyArray_DATA(dist_arr);
    const double *coords = (const double *)PyArray_DATA(coords_arr);
    const npy_int64 *demand_of = (const npy_int64 *)PyArray_DATA(demands_arr);
    const npy_int64 *order = (const npy_int64 *)PyArray_DATA(order_arr);
    /* unusual instances (an index out of range, a demand below 1) are left to the Python loop */
    for (npy_intp i = 0; i < steps; i++)
        if (order[i] < 0 || order[i] >= n)
            Py_RETURN_NONE;
    for (npy_intp i = 0; i < n; i++)
        if (demand_of[i] < 1)
            Py_RETURN_NONE;
    const npy_int64 capacity = (npy_int64)capacity_ll;

    const npy_intp max_routes = vehicles + n;
    const npy_intp max_edges = n + max_routes;
    State s;
    if (state_alloc(&s, max_edges, max_routes, nodes) < 0) {
        state_free(&s);
        return PyErr_NoMemory();
    }
    /* V empty tours: one depot -> depot edge each */
    for (npy_intp r = 0; r < vehicles; r++) {
        s.from[r] = s.to[r] = 0;
        s.route[r] = r;
        s.position[r] = 0;
        s.length[r] = 0.0;
        s.count[r] = 1;
        s.res[r] = capacity;
        s.route_len[r] = 0.0;
        s.load[r] = s.size[r] = s.projected[r] = 0.0;
        s.free_share[r] = (double)capacity * inv_q;
        memcpy(s.nearest + r * nodes, dist, (size_t)nodes * sizeof(double));
    }
    npy_intp num_edges = vehicles, num_routes = vehicles;
    npy_int64 free = (npy_int64)vehicles * capacity, seen = 0;
    int ok = 1, stopped = 0;
    const int replay = choices.replay; /* no heuristic: the columns only it sees are not kept */

    for (npy_intp step = 0; step < steps; step++) {
        const npy_intp c = (npy_intp)order[step];
        const npy_intp node = c + 1;
        const npy_int64 d = demand_of[c];
        seen += d;
        const double *row = dist + node * nodes;
        npy_int64 most = s.res[0], least = s.res[0];
        for (npy_intp r = 1; r < num_routes; r++) {
            if (s.res[r] > most)
                most = s.res[r];
            if (s.res[r] < least)
                least = s.res[r];
        }
        if (d > most) {
            /* overflow rule: a new tour for this customer, no decision */
            const npy_intp r = num_routes, e = num_edges;
            if (r >= max_routes || e + 2 > max_edges) {
                PyErr_SetString(PyExc_RuntimeError, "route ran out of preallocated routes");
                ok = 0;
                break;
            }
            s.from[e] = 0;
            s.to[e] = node;
            s.from[e + 1] = node;
            s.to[e + 1] = 0;
            s.route[e] = s.route[e + 1] = r;
            s.position[e] = 0;
            s.position[e + 1] = 1;
            s.length[e] = s.length[e + 1] = row[0];
            s.res[r] = capacity - d;
            s.route_len[r] = 2.0 * row[0];
            s.count[r] = 2;
            s.load[r] = (double)d * inv_q;
            s.size[r] = inv_n;
            s.projected[r] = s.route_len[r] * inv_ref;
            s.free_share[r] = (double)(capacity - d) * inv_q;
            double *reach = s.nearest + r * nodes;
            if (!replay)
                for (npy_intp v = 0; v < nodes; v++)
                    reach[v] = nan_minimum(dist[v], row[v]);
            num_routes += 1;
            num_edges += 2;
            free += capacity - d;
            continue;
        }

        if (choices_full(&choices)) {
            stopped = 1;
            break;
        }
        const npy_intp E = num_edges, R = num_routes;
        const double demand_share = (double)d * inv_q;
        if (!replay) {
            for (npy_intp e = 0; e < E; e++) {
                double delta = row[s.from[e]] + row[s.to[e]];
                s.delta[e] = delta - s.length[e];
            }
        }
        for (npy_intp r = 0; r < R; r++)
            s.residual[r] = s.free_share[r] - demand_share;
        npy_intp rows = 0;
        if (d > least) {
            for (npy_intp e = 0; e < E; e++)
                if (s.residual[s.route[e]] >= 0)
                    s.keep[rows++] = e;
        } else {
            for (npy_intp e = 0; e < E; e++)
                s.keep[rows++] = e;
        }
        if (seen == 0) {
            PyErr_SetString(PyExc_ZeroDivisionError, "division by zero");
            ok = 0;
            break;
        }

        Py_ssize_t choice;
        if (replay) {
            choice = choices_next(&choices, rows);
        } else {
            const double feature[FEATURES] = {coords[2 * c], coords[2 * c + 1], demand_share, dist[node],
                                              (double)step * inv_n, (double)free / (double)seen};
            choice = heuristic_choice(priority, check, &s, rows, nodes, node, inv_ref, feature);
        }
        if (choice < 0 || choice >= rows) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "the check returned an index out of range");
            ok = 0;
            break;
        }
        choices_keep(&choices, choice);

        const npy_intp e = s.keep[choice];
        if (replay) { /* the one insertion cost it needs */
            double delta = row[s.from[e]] + row[s.to[e]];
            s.delta[e] = delta - s.length[e];
        }
        const npy_intp a = s.from[e], b = s.to[e], r = s.route[e], position = s.position[e];
        if (E + 1 > max_edges) {
            PyErr_SetString(PyExc_RuntimeError, "route ran out of preallocated edges");
            ok = 0;
            break;
        }
        /* edge (a, b) becomes (a, node), (node, b); later edges move one slot right, and the
         * route's later edges (positions position+1 .. count-1) one position up */
        const npy_intp end = e + (npy_intp)s.count[r] - position + 1;
        const size_t moved = (size_t)(E - (e + 1));
        memmove(s.from + e + 2, s.from + e + 1, moved * sizeof(npy_intp));
        memmove(s.to + e + 2, s.to + e + 1, moved * sizeof(npy_intp));
        memmove(s.route + e + 2, s.route + e + 1, moved * sizeof(npy_intp));
        memmove(s.position + e + 2, s.position + e + 1, moved * sizeof(npy_intp));
        memmove(s.length + e + 2, s.length + e + 1, moved * sizeof(double));
        for (npy_intp k = e + 2; k < end && k <= E; k++)
            s.position[k] += 1;
        s.to[e] = node;
        s.from[e + 1] = node;
        s.to[e + 1] = b;
        s.route[e + 1] = r;
        s.position[e + 1] = position + 1;
        s.length[e] = row[a];
        s.length[e + 1] = row[b];
        s.count[r] += 1;
        s.res[r] -= d;
        s.route_len[r] += s.delta[e];
        s.load[r] = (double)(capacity - s.res[r]) * inv_q;
        s.size[r] = (double)(s.count[r] - 1) * inv_n;
        s.projected[r] = s.route_len[r] * inv_ref;
        s.free_share[r] = (double)s.res[r] * inv_q;
        double *reach = s.nearest + r * nodes;
        if (!replay)
            for (npy_intp v = 0; v < nodes; v++)
                reach[v] = nan_minimum(reach[v], row[v]);
        num_edges += 1;
        free -= d;
    }

    PyObject *result = NULL;
    if (ok && stopped) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (ok) {
        result = result_of(&s, num_edges, num_routes, vehicles);
    }
    state_free(&s);
    return choices_return(&choices, stopped, result);
}

static PyMethodDef methods[] = {
    {"route", route, METH_VARARGS,
     "route(dist, coords, demands, order, capacity, vehicles, inv_q, inv_n, inv_ref, priority, check, choices=None)"
     " -> (routes, route lengths, overflow routes), or None for an instance it leaves to the Python loop; with"
     " choices (that result, decisions made), or -1 when the recording stopped at its limit."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastroute", "The compiled OVRP insertion loop.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__fastroute(void)
{
    import_array();
    return PyModule_Create(&module);
}
