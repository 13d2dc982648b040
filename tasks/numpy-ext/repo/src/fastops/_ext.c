/* fastops._ext: two small kernels over float64 arrays, written against the numpy C API.
 *
 * The module calls import_array(), so it is tied to the numpy ABI it was compiled against:
 * a build against numpy 1.x refuses to load under numpy 2.x.
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <math.h>
#include <numpy/arrayobject.h>

/* row_norms(X) -> 1-D array of the Euclidean norm of every row of a 2-D array. */
static PyObject *row_norms(PyObject *self, PyObject *args) {
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O", &obj)) return NULL;
    PyArrayObject *x = (PyArrayObject *)PyArray_FROM_OTF(obj, NPY_FLOAT64, NPY_ARRAY_IN_ARRAY);
    if (x == NULL) return NULL;
    if (PyArray_NDIM(x) != 2) {
        Py_DECREF(x);
        PyErr_SetString(PyExc_ValueError, "row_norms expects a 2-D array");
        return NULL;
    }
    npy_intp rows = PyArray_DIM(x, 0), cols = PyArray_DIM(x, 1);
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, &rows, NPY_FLOAT64);
    if (out == NULL) { Py_DECREF(x); return NULL; }
    const double *src = (const double *)PyArray_DATA(x);
    double *dst = (double *)PyArray_DATA(out);
    for (npy_intp i = 0; i < rows; i++) {
        double acc = 0.0;
        for (npy_intp j = 0; j < cols; j++) {
            double v = src[i * cols + j];
            acc += v * v;
        }
        dst[i] = sqrt(acc);
    }
    Py_DECREF(x);
    return (PyObject *)out;
}

/* axpy(a, x, y) -> a * x + y for 1-D arrays of equal length (a new array). */
static PyObject *axpy(PyObject *self, PyObject *args) {
    double a;
    PyObject *xo, *yo;
    if (!PyArg_ParseTuple(args, "dOO", &a, &xo, &yo)) return NULL;
    PyArrayObject *x = (PyArrayObject *)PyArray_FROM_OTF(xo, NPY_FLOAT64, NPY_ARRAY_IN_ARRAY);
    PyArrayObject *y = (PyArrayObject *)PyArray_FROM_OTF(yo, NPY_FLOAT64, NPY_ARRAY_IN_ARRAY);
    if (x == NULL || y == NULL) { Py_XDECREF(x); Py_XDECREF(y); return NULL; }
    if (PyArray_NDIM(x) != 1 || PyArray_NDIM(y) != 1 || PyArray_DIM(x, 0) != PyArray_DIM(y, 0)) {
        Py_DECREF(x); Py_DECREF(y);
        PyErr_SetString(PyExc_ValueError, "axpy expects two 1-D arrays of equal length");
        return NULL;
    }
    npy_intp n = PyArray_DIM(x, 0);
    PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_FLOAT64);
    if (out == NULL) { Py_DECREF(x); Py_DECREF(y); return NULL; }
    const double *xs = (const double *)PyArray_DATA(x), *ys = (const double *)PyArray_DATA(y);
    double *os = (double *)PyArray_DATA(out);
    for (npy_intp i = 0; i < n; i++) os[i] = a * xs[i] + ys[i];
    Py_DECREF(x); Py_DECREF(y);
    return (PyObject *)out;
}

static PyMethodDef methods[] = {
    {"row_norms", row_norms, METH_VARARGS, "Euclidean norm of every row of a 2-D float64 array."},
    {"axpy", axpy, METH_VARARGS, "a * x + y for two 1-D float64 arrays."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ext", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ext(void) {
    import_array();
    return PyModule_Create(&module);
}
