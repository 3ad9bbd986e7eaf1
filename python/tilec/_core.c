/*
 * _core.c — the compiled hot path of the Python package (tilec._core), on CPython's limited
 * API (Py_LIMITED_API 3.11: one abi3 module for 3.11 and every later Python).
 *
 * A reduction the package has planned once is served here: the tensor's description is read
 * (torch: dtype, device, shape, strides, data_ptr, torch's current raw stream; CuPy: the
 * same from its ndarray; numpy: the buffer protocol), the arguments are made a key, the key
 * is looked up in a hash table of plans, the outputs are made by the tensor's own library,
 * and tilec_reduce is called with the GIL released. Whatever is not that — the first call
 * of a key, an argument of a spelling the key does not know, out= other than one dense
 * tensor, a host array that must be copied first, an error to explain — goes to the
 * package's Python (python/tilec/__init__.py), which checks, plans and raises as it always
 * has; its plan is then kept here. So the two paths give one answer, and the Python one
 * stays the fallback where this module is not built (docs/python.md, "The compiled core").
 *
 * The library is not linked: the package hands over the addresses of the calls ctypes bound
 * (bind()), so both paths use the one libtilec the package loaded.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tilec.h"

/* ---- what bind() hands over -------------------------------------------------------- */

static tilec_status (*f_reduce)(tilec_ctx *, const tilec_reduce_desc *, const void *, void *);
static tilec_status (*f_alloc)(tilec_ctx *, size_t, void **);
static tilec_status (*f_free)(tilec_ctx *, void *);
static tilec_status (*f_upload)(tilec_ctx *, void *, const void *, size_t);
static tilec_status (*f_download)(tilec_ctx *, void *, const void *, size_t);
static tilec_status (*f_sync)(tilec_ctx *);
static PyObject *py_plan; /* _core_plan(x, kind, req, backend): (ctx, handle, desc address, ...) */
static PyObject *py_fail; /* _core_fail(ctx, status, what): raises the package's error */
static PyObject *zero;    /* 0: numpy's ddof when a spelling is given none */
static unsigned long long hits, misses;

/* profile(True): where the served calls' host time goes, in phases (the evidence of
 * docs/gpu-python.md); off, a branch a call */
enum { PH_READ, PH_LOOKUP, PH_OUTPUTS, PH_LOCK, PH_REDUCE, PH_RETURN, PHASES };
static const char *phase_names[PHASES] = {"read the tensor and the arguments", "find the plan",
                                          "make or check the outputs", "take the context's lock",
                                          "tilec_reduce (GIL released)", "unlock and return"};
static int profiling;
static double phase_ns[PHASES];
static unsigned long long profiled;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
static _Thread_local double mark_at; /* each thread's last mark (the GIL is held at each) */
static void mark(int phase) {
    if (!profiling) return;
    double t = now_ns();
    if (phase >= 0) phase_ns[phase] += t - mark_at;
    mark_at = t;
}

/* ---- the array libraries, found in sys.modules once they are imported ----------------- */

enum { K_NONE, K_TORCH, K_CUPY, K_NUMPY };

static PyObject *torch_tensor, *torch_stream, *torch_empty_like; /* torch.Tensor,
                                          torch._C._cuda_getCurrentRawStream, torch.empty_like */
static PyObject *cupy_ndarray, *cupy_stream, *cupy_device; /* cupy.ndarray, get_current_stream, runtime.getDevice */
static PyObject *np_ndarray, *np_empty, *np_dtype, *torch_dtype, *os_environ; /* np_dtype: numpy.dtype,
                                          torch_dtype: torch.dtype (the dtype= objects a key holds) */
static PyObject *canon; /* str arguments (dtype="float64"), one object per value: keys by identity */
static PyObject *s_dtype, *s_shape, *s_strides, *s_device, *s_data, *s_ptr, *s_id, *s_new_empty, *s_get_device,
    *s_stride, *s_data_ptr, *s_is_contiguous, *s_acquire, *s_release; /* names, interned once */

/* attr of a module in sys.modules ("a.b.c"), a new reference or NULL (no error set) */
static PyObject *module_attr(const char *mod, const char *path) {
    PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
    PyObject *m = PyDict_GetItemString(mods, mod);
    if (!m) return NULL;
    Py_INCREF(m);
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *part = buf, *dot; part; part = dot) {
        dot = strchr(part, '.');
        if (dot) *dot++ = '\0';
        PyObject *next = PyObject_GetAttrString(m, part);
        Py_DECREF(m);
        if (!next) {
            PyErr_Clear();
            return NULL;
        }
        m = next;
    }
    return m;
}

static int is_a(PyObject *x, PyObject *type) {
    return type && (Py_TYPE(x) == (PyTypeObject *)type || PyType_IsSubtype(Py_TYPE(x), (PyTypeObject *)type));
}

static int kind_of(PyObject *x) {
    if (!torch_tensor && (torch_tensor = module_attr("torch", "Tensor"))) {
        torch_stream = module_attr("torch", "_C._cuda_getCurrentRawStream");
        torch_empty_like = module_attr("torch", "empty_like");
    }
    /* the exact types: a subclass's outputs are its own (new_empty's), and the package's */
    if (!torch_dtype && torch_tensor) torch_dtype = module_attr("torch", "dtype");
    if (torch_tensor && Py_TYPE(x) == (PyTypeObject *)torch_tensor) return torch_stream && torch_empty_like ? K_TORCH : K_NONE;
    if (!cupy_ndarray && (cupy_ndarray = module_attr("cupy", "ndarray"))) {
        cupy_stream = module_attr("cupy", "cuda.get_current_stream");
        cupy_device = module_attr("cupy", "cuda.runtime.getDevice");
    }
    if (cupy_ndarray && Py_TYPE(x) == (PyTypeObject *)cupy_ndarray) return cupy_stream && cupy_device ? K_CUPY : K_NONE;
    if (!np_ndarray && (np_ndarray = module_attr("numpy", "ndarray"))) {
        np_empty = module_attr("numpy", "empty");
        np_dtype = module_attr("numpy", "dtype");
    }
    if (np_ndarray && Py_TYPE(x) == (PyTypeObject *)np_ndarray) return np_empty ? K_NUMPY : K_NONE;
    return K_NONE;
}

/* ---- the plans: a hash table of keys made of the call's canonical arguments ----------- */

/* Everything a plan depends on, as the package was asked to plan it: fast() keys only
 * arguments whose value cannot change or lie (exact ints, bools and tuples of ints, exact
 * strs, dtype objects), and hands the package the values it keyed, never the caller's
 * objects, so a plan is found only by what it was planned for. Objects are compared by
 * identity, each held by the key (a reference of its own: the key outlives any borrowed
 * one) and by the entry, so its address is not reused: an equal object that is not the
 * same one just misses, and the package plans it. Zeroed before it is filled, so padding
 * compares equal. */
typedef struct key {
    int kind, op, nan, rank, naxes; /* naxes -1: axis None */
    int axis_int;                   /* axis given as an int, not a tuple of one */
    int axes[TILEC_MAX_RANK];       /* as given (negative from the end) */
    int keepdims, has_corr, device, backend;
    int64_t corr;
    int64_t shape[TILEC_MAX_RANK], strides[TILEC_MAX_RANK];
    PyObject *dtype, *out_dtype, *index_dtype; /* x's dtype; dtype= and index_dtype= (NULL: None);
                                                  each a reference the key owns */
} key;

static void key_release(key *k) {
    Py_CLEAR(k->dtype);
    Py_CLEAR(k->out_dtype);
    Py_CLEAR(k->index_dtype);
}

typedef struct entry {
    key k;
    uint64_t hash;
    tilec_reduce_desc desc;
    int64_t strides[TILEC_MAX_RANK], corr;
    tilec_ctx *ctx;
    PyObject *ctx_obj, *lock, *plan;   /* the package's context, its lock, its plan (kept alive) */
    int nout, visible;                 /* outputs written (1, 2); returned: bit 0 out, bit 1 out2 */
    PyObject *oshape, *args;           /* the outputs' shape, and (shape,) */
    PyObject *odt[2], *okw[2];         /* their dtypes (the library's objects), {dtype: ...} */
    PyObject *tmpl[2];                 /* torch: one element expanded to the output's shape, whose
                                          empty_like is a new dense output (torch's cheapest
                                          allocation from Python: no shape or dtype to parse) */
    size_t obytes[2];
    int64_t oelems;                    /* elements of each output */
    int uses, dead;                    /* calls running it (the GIL released); dropped from the table */
    struct entry *next;
} entry;

enum { BUCKETS = 2048, MAX_ENTRIES = 1024 }; /* as many plans as the package keeps a context */
static entry *table[BUCKETS];
static int nentries;

static void entry_free(entry *e) {
    Py_XDECREF(e->k.dtype);
    Py_XDECREF(e->k.out_dtype);
    Py_XDECREF(e->k.index_dtype);
    Py_XDECREF(e->ctx_obj);
    Py_XDECREF(e->lock);
    Py_XDECREF(e->plan);
    Py_XDECREF(e->oshape);
    Py_XDECREF(e->args);
    for (int i = 0; i < 2; i++) {
        Py_XDECREF(e->odt[i]);
        Py_XDECREF(e->okw[i]);
        Py_XDECREF(e->tmpl[i]);
    }
    PyMem_Free(e);
}

/* Forgets every plan; one a call is running (in another thread, the GIL released) is freed
 * when that call ends. */
static void table_clear(void) {
    /* the table is emptied before anything is freed: freeing drops references, which may
     * run a finalizer that calls back into this module (and clears or fills the table) */
    entry *all = NULL;
    for (int b = 0; b < BUCKETS; b++)
        for (entry *e = table[b], *next; e; e = next) {
            next = e->next;
            e->next = all;
            all = e;
        }
    memset(table, 0, sizeof table);
    nentries = 0;
    for (entry *e = all, *next; e; e = next) {
        next = e->next;
        if (e->uses) e->dead = 1;
        else entry_free(e);
    }
}

static uint64_t key_hash(const key *k) {
    uint64_t h = 1469598103934665603ull, w; /* FNV-1a over 8-byte words */
    _Static_assert(sizeof(key) % 8 == 0, "the key is hashed in 8-byte words");
    for (size_t i = 0; i < sizeof *k; i += 8) {
        memcpy(&w, (const char *)k + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static entry *lookup(const key *k, uint64_t h) {
    for (entry *e = table[h % BUCKETS]; e; e = e->next)
        if (e->hash == h && memcmp(&e->k, k, sizeof *k) == 0) return e;
    return NULL;
}

/* ---- reading arguments: -1 with no error set means "not a case for the fast path" ------ */

static int as_i64(PyObject *o, int64_t *v) {
    if (!o || !PyLong_CheckExact(o)) return -1; /* a subclass (bool too) is the package's: its
                                                   value may not be what __index__ says */
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *v = x;
    return 0;
}

/* an int tuple (torch.Size, a stride tuple) into v[], at most TILEC_MAX_RANK */
static int read_ints(PyObject *t, int64_t *v, int *n) {
    if (!t || !PyTuple_Check(t)) return -1;
    Py_ssize_t len = PyTuple_Size(t);
    if (len > TILEC_MAX_RANK) return -1;
    for (Py_ssize_t i = 0; i < len; i++)
        if (as_i64(PyTuple_GetItem(t, i), &v[i])) return -1;
    *n = (int)len;
    return 0;
}

/* axis: None, an int or a tuple of ints, exactly those types (a subclass's __iter__ or
 * __index__ may say other axes than its items: the package's, which asks them) */
static int read_axis(PyObject *axis, key *k) {
    if (!axis || axis == Py_None) {
        k->naxes = -1;
        return 0;
    }
    int64_t v[TILEC_MAX_RANK];
    if (PyLong_CheckExact(axis)) {
        if (as_i64(axis, &v[0]) || v[0] < -TILEC_MAX_RANK || v[0] >= TILEC_MAX_RANK) return -1;
        k->naxes = 1;
        k->axis_int = 1;
        k->axes[0] = (int)v[0];
        return 0;
    }
    int n;
    if (!PyTuple_CheckExact(axis) || read_ints(axis, v, &n) || n == 0) return -1;
    for (int i = 0; i < n; i++) {
        if (v[i] < -TILEC_MAX_RANK || v[i] >= TILEC_MAX_RANK) return -1;
        k->axes[i] = (int)v[i];
    }
    k->naxes = n;
    return 0;
}

/* the key's axes as the object the package plans: None, an int or a tuple of ints */
static PyObject *key_axis(const key *k) {
    if (k->naxes < 0) Py_RETURN_NONE;
    if (k->naxes == 1 && k->axis_int) return PyLong_FromLong(k->axes[0]);
    PyObject *t = PyTuple_New(k->naxes);
    for (int i = 0; t && i < k->naxes; i++) {
        PyObject *v = PyLong_FromLong(k->axes[i]);
        if (!v) Py_CLEAR(t);
        else PyTuple_SetItem(t, i, v);
    }
    return t;
}

/* o.method(): looked up and called without a bound method made in between */
static PyObject *call0(PyObject *o, PyObject *method) { return PyObject_CallMethodObjArgs(o, method, NULL); }

/* What one call reads of its tensor, beside the key. */
typedef struct tensor {
    uintptr_t ptr;
    void *stream;
    Py_buffer view; /* numpy: held until the call ends */
    int has_view;
} tensor;

/* the GPU tensors: the key's kind, dtype, device, shape and strides; the pointer and stream */
static int read_torch(PyObject *x, key *k, tensor *t) {
    PyObject *o = call0(x, s_get_device);
    int64_t dev;
    int bad = as_i64(o, &dev);
    Py_XDECREF(o);
    if (bad || dev < 0) return -1; /* a CPU tensor: through numpy, in the package */
    k->device = (int)dev;
    int n, m;
    o = PyObject_GetAttr(x, s_shape);
    bad = read_ints(o, k->shape, &n);
    Py_XDECREF(o);
    if (bad) return -1;
    o = call0(x, s_stride);
    bad = read_ints(o, k->strides, &m);
    Py_XDECREF(o);
    if (bad || m != n) return -1;
    k->rank = n;
    k->dtype = PyObject_GetAttr(x, s_dtype); /* a new reference, dropped by the caller */
    if (!k->dtype) return -1;
    o = call0(x, s_data_ptr);
    int64_t p;
    bad = as_i64(o, &p);
    Py_XDECREF(o);
    if (bad) return -1;
    t->ptr = (uintptr_t)p;
    o = PyObject_CallFunction(torch_stream, "i", k->device);
    int64_t s;
    bad = as_i64(o, &s);
    Py_XDECREF(o);
    if (bad) return -1;
    t->stream = (void *)(uintptr_t)s;
    return 0;
}

static int read_cupy(PyObject *x, key *k, tensor *t) {
    PyObject *dev = PyObject_GetAttr(x, s_device), *o = dev ? PyObject_GetAttr(dev, s_id) : NULL;
    int64_t d, cur;
    int bad = as_i64(o, &d);
    Py_XDECREF(dev);
    Py_XDECREF(o);
    o = PyObject_CallNoArgs(cupy_device); /* outputs are made on the current device: x's only */
    bad |= as_i64(o, &cur);
    Py_XDECREF(o);
    if (bad || d != cur) return -1;
    k->device = (int)d;
    k->dtype = PyObject_GetAttr(x, s_dtype);
    if (!k->dtype) return -1;
    PyObject *isz = PyObject_GetAttrString(k->dtype, "itemsize");
    int64_t item;
    bad = as_i64(isz, &item);
    Py_XDECREF(isz);
    int n, m;
    o = PyObject_GetAttr(x, s_shape);
    bad |= read_ints(o, k->shape, &n);
    Py_XDECREF(o);
    o = PyObject_GetAttr(x, s_strides);
    bad |= read_ints(o, k->strides, &m);
    Py_XDECREF(o);
    if (bad || m != n || item <= 0) return -1;
    for (int i = 0; i < n; i++) {
        if (k->strides[i] % item) return -1;
        k->strides[i] /= item;
    }
    k->rank = n;
    PyObject *mem = PyObject_GetAttr(x, s_data), *ptr = mem ? PyObject_GetAttr(mem, s_ptr) : NULL;
    int64_t p;
    bad = as_i64(ptr, &p);
    Py_XDECREF(mem);
    Py_XDECREF(ptr);
    if (bad) return -1;
    t->ptr = (uintptr_t)p;
    o = PyObject_CallNoArgs(cupy_stream);
    PyObject *sp = o ? PyObject_GetAttr(o, s_ptr) : NULL;
    int64_t s;
    bad = as_i64(sp, &s);
    Py_XDECREF(o);
    Py_XDECREF(sp);
    if (bad) return -1;
    t->stream = (void *)(uintptr_t)s;
    return 0;
}

/* numpy: the buffer protocol (any strides, whole elements; 0-d arrays are the package's) */
static int read_numpy(PyObject *x, key *k, tensor *t) {
    if (PyObject_GetBuffer(x, &t->view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return -1;
    }
    t->has_view = 1;
    Py_buffer *v = &t->view;
    if (v->ndim < 1 || v->ndim > TILEC_MAX_RANK || v->itemsize <= 0) return -1;
    for (int i = 0; i < v->ndim; i++) {
        if (v->strides[i] % v->itemsize) return -1;
        k->shape[i] = v->shape[i];
        k->strides[i] = v->strides[i] / v->itemsize;
    }
    k->rank = v->ndim;
    k->dtype = PyObject_GetAttr(x, s_dtype);
    if (!k->dtype) return -1;
    t->ptr = (uintptr_t)v->buf;
    /* where host arrays run: TILEC_BACKEND, read from os.environ as the package reads it */
    if (!os_environ && !(os_environ = module_attr("os", "environ"))) return -1;
    PyObject *env = PyObject_CallMethod(os_environ, "get", "s", "TILEC_BACKEND");
    const char *b = env && PyUnicode_Check(env) ? PyUnicode_AsUTF8AndSize(env, NULL) : NULL;
    static const char *names[] = {"auto", "cuda", "hip", "sim"};
    k->backend = -1;
    if (env == Py_None || (b && !*b)) k->backend = 0;
    for (int i = 0; b && i < 4 && k->backend < 0; i++)
        if (strcmp(b, names[i]) == 0) k->backend = i;
    Py_XDECREF(env);
    return k->backend < 0 ? -1 : 0;
}

/* ---- a plan made by the package, kept ------------------------------------------------ */

static int take_obj(PyObject *seq, Py_ssize_t i, PyObject **out) {
    PyObject *o = PySequence_GetItem(seq, i);
    *out = o;
    return o ? 0 : -1;
}

/* _core_plan's answer: (ctx, handle, lock, plan, desc address, nout, visible, oshape,
 * dtype 1, dtype 2, bytes 1, bytes 2), or None when the call is not one to keep. Returns
 * the new entry, NULL with an error set, or NULL with none for "not kept". */
static entry *keep_plan(const key *k, uint64_t h, PyObject *ans) {
    if (ans == Py_None) return NULL;
    entry *e = PyMem_Calloc(1, sizeof *e);
    if (!e) {
        PyErr_NoMemory();
        return NULL;
    }
    e->k = *k;
    Py_XINCREF(e->k.dtype);
    Py_XINCREF(e->k.out_dtype);
    Py_XINCREF(e->k.index_dtype);
    e->hash = h;
    PyObject *handle = NULL, *addr = NULL, *o = NULL;
    int64_t v = 0, vis = 0;
    int bad = take_obj(ans, 0, &e->ctx_obj) || take_obj(ans, 1, &handle) || take_obj(ans, 2, &e->lock) ||
              take_obj(ans, 3, &e->plan) || take_obj(ans, 4, &addr) || take_obj(ans, 7, &e->oshape) ||
              take_obj(ans, 8, &e->odt[0]) || take_obj(ans, 9, &e->odt[1]);
    if (!bad && !(bad = as_i64(handle, &v))) e->ctx = (tilec_ctx *)(uintptr_t)v;
    if (!bad && !(bad = as_i64(addr, &v))) memcpy(&e->desc, (const void *)(uintptr_t)v, sizeof e->desc);
    for (int i = 5; i <= 11 && !bad; i++) {
        if (i >= 7 && i <= 9) continue;
        bad = take_obj(ans, i, &o) || as_i64(o, &v);
        Py_CLEAR(o);
        if (i == 5) e->nout = (int)v;
        if (i == 6) vis = v;
        if (i >= 10) e->obytes[i - 10] = (size_t)v;
    }
    Py_XDECREF(handle);
    Py_XDECREF(addr);
    if (!bad) e->visible = (int)vis;
    if (!bad && e->desc.strides) { /* the package's arrays stay the package's: a copy of our own */
        memcpy(e->strides, e->desc.strides, sizeof(int64_t) * (size_t)e->desc.rank);
        e->desc.strides = e->strides;
    }
    if (!bad && e->desc.correction) {
        e->corr = *e->desc.correction;
        e->desc.correction = &e->corr;
    }
    e->desc.stream = NULL;
    e->desc.out2 = NULL;
    if (!bad && (e->nout < 1 || e->nout > 2)) bad = 1;
    e->oelems = 1;
    for (Py_ssize_t i = 0; !bad && PyTuple_Check(e->oshape) && i < PyTuple_Size(e->oshape); i++) {
        int64_t extent;
        bad = as_i64(PyTuple_GetItem(e->oshape, i), &extent);
        e->oelems *= extent;
    }
    if (!bad && PyTuple_Check(e->oshape)) e->args = PyTuple_Pack(1, e->oshape);
    for (int i = 0; i < e->nout && !bad && e->args; i++) {
        e->okw[i] = PyDict_New();
        bad = !e->okw[i] || PyDict_SetItem(e->okw[i], s_dtype, e->odt[i]) < 0;
    }
    if (bad || !e->args || e->nout < 1 || e->nout > 2) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tilec._core: the package's plan is not one this module reads");
        entry_free(e);
        return NULL;
    }
    if (nentries >= MAX_ENTRIES) table_clear();
    e->next = table[h % BUCKETS];
    table[h % BUCKETS] = e;
    nentries++;
    return e;
}

/* ---- running a kept plan --------------------------------------------------------------- */

static int lock(entry *e) {
    PyObject *r = call0(e->lock, s_acquire);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static void unlock(entry *e) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb); /* an error being raised stays the one raised */
    PyObject *r = call0(e->lock, s_release);
    Py_XDECREF(r);
    if (!r) PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* raises the package's error for a failed status (the context's diagnostics with it) */
static void fail(entry *e, tilec_status st, const char *what) {
    PyObject *fn = Py_NewRef(py_fail); /* bind() may replace it meanwhile */
    PyObject *r = PyObject_CallFunction(fn, "OisO", e->ctx_obj, (int)st, what, e->plan);
    Py_DECREF(fn);
    Py_XDECREF(r);
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, what);
}

static PyObject *returned(entry *e, PyObject *o1, PyObject *o2) {
    if (e->visible == 3) return PyTuple_Pack(2, o1, o2);
    PyObject *r = e->visible == 2 ? o2 : o1;
    Py_INCREF(r);
    return r;
}

static PyObject *launch(entry *e, uintptr_t in, void *stream, uintptr_t o1, uintptr_t o2, const char *what) {
    tilec_status st;
    tilec_reduce_desc d = e->desc; /* the call's own: the entry is shared */
    d.stream = stream;
    d.out2 = (void *)o2;
    Py_BEGIN_ALLOW_THREADS
    st = f_reduce(e->ctx, &d, (const void *)in, (void *)o1);
    Py_END_ALLOW_THREADS
    if (st) {
        fail(e, st, what);
        return NULL;
    }
    Py_RETURN_NONE;
}

static int64_t ptr_of(PyObject *o, int kind) {
    int64_t p = -1;
    if (kind == K_TORCH) {
        PyObject *r = call0(o, s_data_ptr);
        if (as_i64(r, &p)) p = -1;
        Py_XDECREF(r);
    } else {
        PyObject *mem = PyObject_GetAttr(o, s_data), *r = mem ? PyObject_GetAttr(mem, s_ptr) : NULL;
        if (as_i64(r, &p)) p = -1;
        Py_XDECREF(mem);
        Py_XDECREF(r);
    }
    if (p < 0) PyErr_Clear();
    return p;
}

/* out= of one dense tensor of exactly the input's library's type (a subclass's shape,
 * strides or pointer may be its own), shape, dtype and device: else -1 (the package checks
 * it and says what is wrong) */
static int64_t fast_out(entry *e, PyObject *out, int kind, int device) {
    if (e->nout != 1 || Py_TYPE(out) != (PyTypeObject *)(kind == K_TORCH ? torch_tensor : cupy_ndarray)) return -1;
    PyObject *shape = PyObject_GetAttr(out, s_shape), *dt = PyObject_GetAttr(out, s_dtype);
    int64_t have[TILEC_MAX_RANK], want;
    int dims = 0, ok = shape && dt && dt == e->odt[0] && !read_ints(shape, have, &dims) && dims == (int)PyTuple_Size(e->oshape);
    for (int i = 0; ok && i < dims; i++) ok = !as_i64(PyTuple_GetItem(e->oshape, i), &want) && want == have[i];
    Py_XDECREF(shape);
    Py_XDECREF(dt);
    /* its strides the dense row-major ones, every dim's (the package's rule: a size-1 dim's
     * stride too), unless it has one element or none */
    int64_t st[TILEC_MAX_RANK], n = 1, dv = -1;
    int rank = 0;
    if (ok) {
        PyObject *strides = kind == K_TORCH ? call0(out, s_stride) : PyObject_GetAttr(out, s_strides);
        ok = !read_ints(strides, st, &rank) && rank == (int)PyTuple_Size(e->oshape);
        Py_XDECREF(strides);
    }
    if (ok) {
        int64_t item = kind == K_TORCH || !e->oelems ? 1 : (int64_t)e->obytes[0] / e->oelems;
        for (int i = rank - 1; i >= 0 && ok; i--) {
            int64_t extent;
            ok = !as_i64(PyTuple_GetItem(e->oshape, i), &extent);
            if (ok && e->oelems > 1 && st[i] != n * item) ok = 0;
            n *= extent;
        }
    }
    if (ok && kind == K_TORCH) {
        PyObject *d = call0(out, s_get_device);
        ok = !as_i64(d, &dv) && dv == device;
        Py_XDECREF(d);
    } else if (ok) {
        PyObject *dev = PyObject_GetAttr(out, s_device), *id = dev ? PyObject_GetAttr(dev, s_id) : NULL;
        ok = !as_i64(id, &dv) && dv == device;
        Py_XDECREF(dev);
        Py_XDECREF(id);
    }
    if (!ok) {
        PyErr_Clear();
        return -1;
    }
    return ptr_of(out, kind);
}

/* torch: the entry's first output, made by x.new_empty(shape, dtype=...), and its template
 * for the next ones, kept when torch.empty_like of it is the same dense shape and dtype */
static PyObject *torch_output(entry *e, PyObject *x, int i) {
    PyObject *m = PyObject_GetAttr(x, s_new_empty);
    PyObject *o = m ? PyObject_Call(m, e->args, e->okw[i]) : NULL;
    Py_XDECREF(m);
    if (!o) return NULL;
    PyObject *empty = PyTuple_New(0), *args = empty ? PyTuple_Pack(1, empty) : NULL, *one = NULL, *tmpl = NULL, *y = NULL;
    m = args ? PyObject_GetAttr(x, s_new_empty) : NULL;
    if (m) one = PyObject_Call(m, args, e->okw[i]); /* x.new_empty((), dtype=...) */
    Py_XDECREF(m);
    m = one ? PyObject_GetAttrString(one, "expand") : NULL;
    if (m) tmpl = PyObject_Call(m, e->args, NULL); /* .expand(shape) */
    Py_XDECREF(m);
    if (tmpl) y = PyObject_CallFunctionObjArgs(torch_empty_like, tmpl, NULL);
    PyObject *shape = y ? PyObject_GetAttr(y, s_shape) : NULL, *dt = y ? PyObject_GetAttr(y, s_dtype) : NULL;
    PyObject *dense = y ? call0(y, s_is_contiguous) : NULL;
    if (shape && dt == e->odt[i] && dense == Py_True && PyObject_RichCompareBool(shape, e->oshape, Py_EQ) == 1)
        e->tmpl[i] = Py_NewRef(tmpl);
    PyErr_Clear(); /* no template: new_empty each time */
    Py_XDECREF(empty);
    Py_XDECREF(args);
    Py_XDECREF(one);
    Py_XDECREF(tmpl);
    Py_XDECREF(y);
    Py_XDECREF(shape);
    Py_XDECREF(dt);
    Py_XDECREF(dense);
    return o;
}

static PyObject *run_gpu(entry *e, PyObject *x, int kind, tensor *t, PyObject *out) {
    PyObject *o[2] = {NULL, NULL}, *r = NULL;
    int64_t p[2] = {0, 0};
    if (out) {
        if ((p[0] = fast_out(e, out, kind, e->k.device)) < 0) return NULL; /* no error: the package */
        o[0] = out;
        Py_INCREF(out);
    } else {
        for (int i = 0; i < e->nout; i++) {
            if (kind == K_TORCH) {
                o[i] = e->tmpl[i] ? PyObject_CallFunctionObjArgs(torch_empty_like, e->tmpl[i], NULL) : torch_output(e, x, i);
            } else {
                o[i] = PyObject_CallFunctionObjArgs(cupy_ndarray, e->oshape, e->odt[i], NULL);
            }
            if (!o[i] || (p[i] = ptr_of(o[i], kind)) < 0) goto done;
        }
    }
    mark(PH_OUTPUTS);
    if (lock(e)) goto done;
    mark(PH_LOCK);
    PyObject *ok = launch(e, t->ptr, t->stream, (uintptr_t)p[0], (uintptr_t)p[1], "reduce");
    mark(PH_REDUCE);
    unlock(e);
    if (ok) {
        Py_DECREF(ok);
        r = out ? (Py_INCREF(out), out) : returned(e, o[0], o[1]);
    }
done:
    if (!r && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tilec._core: an output has no device pointer");
    Py_XDECREF(o[0]);
    Py_XDECREF(o[1]);
    return r;
}

/* a numpy array: the bytes its view spans copied to the context's memory once, reduced
 * there with the view's strides, the outputs copied back (the package's _reduce_host) */
static PyObject *run_host(entry *e, tensor *t) {
    Py_buffer *v = &t->view;
    int64_t n = 1, lo = 0, hi = v->itemsize;
    for (int i = 0; i < v->ndim; i++) n *= v->shape[i];
    for (int i = 0; i < v->ndim && n; i++) {
        int64_t reach = (int64_t)v->strides[i] * (v->shape[i] - 1);
        if (reach < 0) lo += reach;
        else hi += reach;
    }
    if (!n) lo = hi = 0;
    PyObject *o[2] = {NULL, NULL}, *r = NULL;
    Py_buffer ob[2];
    int held[2] = {0, 0};
    for (int i = 0; i < e->nout; i++) {
        o[i] = PyObject_CallFunctionObjArgs(np_empty, e->oshape, e->odt[i], NULL);
        if (!o[i] || PyObject_GetBuffer(o[i], &ob[i], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) goto done;
        held[i] = 1;
    }
    if (lock(e)) goto done;
    void *base = NULL, *dev[2] = {NULL, NULL};
    tilec_status st;
    char alloc_what[64]; /* the package's words for each step (_Blocks.alloc, _reduce_host) */
    snprintf(alloc_what, sizeof alloc_what, "allocating %lld bytes", (long long)(hi - lo));
    const char *what = alloc_what;
    Py_BEGIN_ALLOW_THREADS
    st = f_alloc(e->ctx, (size_t)(hi - lo > 0 ? hi - lo : 1), &base);
    if (!st && n) what = "uploading the input", st = f_upload(e->ctx, base, (const char *)t->ptr + lo, (size_t)(hi - lo));
    for (int i = 0; i < e->nout && !st; i++) {
        snprintf(alloc_what, sizeof alloc_what, "allocating %zu bytes", e->obytes[i]);
        what = alloc_what;
        st = f_alloc(e->ctx, e->obytes[i] ? e->obytes[i] : 1, &dev[i]);
    }
    tilec_reduce_desc d = e->desc; /* the call's own: the entry is shared */
    d.out2 = dev[1];
    if (!st) what = "reduce", st = f_reduce(e->ctx, &d, (char *)base - lo, dev[0]);
    if (!st) what = "waiting for the device", st = f_sync(e->ctx);
    for (int i = 0; i < e->nout && !st; i++)
        if (e->obytes[i]) what = "downloading the output", st = f_download(e->ctx, ob[i].buf, dev[i], e->obytes[i]);
    Py_END_ALLOW_THREADS
    if (st) fail(e, st, what); /* before the frees: each call starts the diagnostics anew */
    for (int i = 0; i < 2; i++)
        if (dev[i]) f_free(e->ctx, dev[i]);
    if (base) f_free(e->ctx, base);
    unlock(e);
    if (!st) r = returned(e, o[0], o[1]);
done:
    for (int i = 0; i < 2; i++) {
        if (held[i]) PyBuffer_Release(&ob[i]);
        Py_XDECREF(o[i]);
    }
    return r;
}

/* ---- the callable: a spelling (tilec.sum) or reduce's request ------------------------- */

typedef struct {
    PyObject_HEAD
    int op, nan, corrects; /* op and nan as the library numbers them; corrects: var, std */
    PyObject *slow;        /* the package's function for everything else */
} reducer;

/* One call's arguments as fast() reads them (NULL: not given), each held by the caller for
 * the whole call: reducer_call takes a reference to each, reducer_run's are its argument
 * tuple's. */
typedef struct request {
    PyObject *x, *axis, *dtype, *out, *index_dtype, *keepdims, *backend, *corr;
} request;

/* An exact str argument as the first object of its value seen (so "float64" made anew each
 * call finds its plan): a new reference, or NULL with an error set (no memory). Up to 256
 * values are kept, then forgotten; the reference returned is the caller's, so a later
 * call's forgetting (this thread's next argument, another thread's) frees nothing it holds. */
static PyObject *canonical(PyObject *o) {
    if (!canon && !(canon = PyDict_New())) return NULL;
    PyObject *c = PyDict_GetItemWithError(canon, o); /* borrowed: a reference taken at once */
    if (c) return Py_NewRef(c);
    if (PyErr_Occurred()) return NULL;
    if (PyDict_Size(canon) >= 256) PyDict_Clear(canon);
    return PyDict_SetItem(canon, o, o) < 0 ? NULL : Py_NewRef(o);
}

/* dtype= or index_dtype= as the key holds it: *slot a new reference (NULL for None) and 0,
 * for the objects whose meaning cannot change between calls — an exact str (made
 * canonical), a numpy dtype, a torch dtype, a type that is not a class made in Python
 * (np.float64, float: static types, which nothing can change); -1 (an error set only on no
 * memory) for anything else, which the package takes at every call: a str subclass's
 * __eq__ and __hash__, an object's dtype attribute or a class's may say another dtype on
 * the next call than the one planned. */
static int key_object(PyObject *o, PyObject **slot) {
    *slot = NULL;
    if (!o || o == Py_None) return 0;
    if (PyUnicode_CheckExact(o)) return (*slot = canonical(o)) ? 0 : -1;
    if (is_a(o, np_dtype) || (torch_dtype && Py_TYPE(o) == (PyTypeObject *)torch_dtype) ||
        (PyType_Check(o) && !(PyType_GetFlags((PyTypeObject *)o) & Py_TPFLAGS_HEAPTYPE))) {
        *slot = Py_NewRef(o);
        return 0;
    }
    return -1;
}

/* The package plans a key it has not seen: the request built from the key (the values
 * keyed, not the caller's objects), its answer kept. Returns the entry, or NULL: with an
 * error set (the package's for wrong arguments), or with none when the package keeps
 * the call to itself. */
static entry *plan(const key *k, uint64_t h, PyObject *x) {
    static const char *kinds[] = {"", "torch", "cupy", "numpy"};
    PyObject *planner = py_plan ? Py_NewRef(py_plan) : NULL; /* bind() may replace it meanwhile */
    PyObject *axis = key_axis(k), *corr = k->has_corr ? PyLong_FromLongLong(k->corr) : Py_NewRef(Py_None);
    PyObject *req = planner && axis && corr
                        ? Py_BuildValue("(iOOOiOO)", k->op, axis, k->keepdims ? Py_True : Py_False,
                                        k->out_dtype ? k->out_dtype : Py_None, k->nan, corr,
                                        k->index_dtype ? k->index_dtype : Py_None)
                        : NULL;
    PyObject *ans = req ? PyObject_CallFunction(planner, "OsO", x, kinds[k->kind], req) : NULL;
    Py_XDECREF(planner);
    Py_XDECREF(axis);
    Py_XDECREF(corr);
    Py_XDECREF(req);
    if (!ans) return NULL;
    entry *e = keep_plan(k, h, ans);
    if (e) e->uses++; /* before anything is dropped: a finalizer may clear the table */
    Py_DECREF(ans);
    return e;
}

static PyObject *fast(reducer *self, request *q) {
    if (q->backend && q->backend != Py_None) return NULL;
    if (q->keepdims && q->keepdims != Py_True && q->keepdims != Py_False) return NULL;
    key k;
    memset(&k, 0, sizeof k);
    k.op = self->op;
    k.nan = self->nan;
    k.keepdims = q->keepdims == Py_True;
    if (read_axis(q->axis, &k)) return NULL;
    if (q->corr && q->corr != Py_None) {
        if (as_i64(q->corr, &k.corr)) return NULL;
        k.has_corr = 1;
    }
    k.kind = kind_of(q->x); /* first: it finds numpy's and torch's dtype types */
    if (k.kind == K_NONE) return NULL;
    if (q->out && q->out != Py_None && k.kind == K_NUMPY) return NULL;
    PyObject *r = NULL;
    tensor t;
    memset(&t, 0, sizeof t);
    if (key_object(q->dtype, &k.out_dtype) || key_object(q->index_dtype, &k.index_dtype)) goto done;
    int bad = k.kind == K_TORCH ? read_torch(q->x, &k, &t) : k.kind == K_CUPY ? read_cupy(q->x, &k, &t)
                                                                           : read_numpy(q->x, &k, &t);
    if (bad) {
        PyErr_Clear();
        goto done;
    }
    mark(PH_READ);
    uint64_t h = key_hash(&k);
    entry *e = lookup(&k, h);
    if (e) e->uses++; /* held while the call runs (the table may be cleared meanwhile) */
    else {
        misses++;
        if (!(e = plan(&k, h, q->x))) goto done;
    }
    PyObject *out = q->out && q->out != Py_None ? q->out : NULL;
    mark(PH_LOOKUP);
    r = k.kind == K_NUMPY ? run_host(e, &t) : run_gpu(e, q->x, k.kind, &t, out);
    if (r) hits++;
    if (--e->uses == 0 && e->dead) entry_free(e);
done:
    if (t.has_view) PyBuffer_Release(&t.view);
    key_release(&k);
    if (r && profiling) {
        mark(PH_RETURN);
        profiled++;
    }
    return r;
}

/* NULL with no error: the package's slow path takes the call as it was made */
static PyObject *slow(reducer *self, PyObject *args, PyObject *kw) {
    if (PyErr_Occurred()) return NULL;
    PyObject *fn = Py_NewRef(self->slow), *r = PyObject_Call(fn, args, kw); /* __init__ may replace it meanwhile */
    Py_DECREF(fn);
    return r;
}

static int ready(reducer *self) {
    if (!self->slow) {
        PyErr_SetString(PyExc_TypeError, "tilec._core.Reducer: made without __init__(op, nan, corrects, fallback)");
        return 0;
    }
    if (!py_plan || !f_reduce) {
        PyErr_SetString(PyExc_RuntimeError, "tilec._core: called before bind() (import tilec binds it)");
        return 0;
    }
    return 1;
}

/* The names this module reads of a spelling's keywords; a keyword of any other name (a typo,
 * nan=, a name with a NUL inside, a str subclass) sends the call to the package, which says
 * what is wrong. */
enum { KW_AXIS, KW_DIM, KW_KEEPDIMS, KW_KEEPDIM, KW_DTYPE, KW_OUT, KW_INDEX_DTYPE, KW_BACKEND, KW_DDOF, KW_CORRECTION, KWS };
static const char *kw_names[KWS] = {"axis", "dim", "keepdims", "keepdim", "dtype", "out", "index_dtype", "backend", "ddof", "correction"};

static int kw_index(PyObject *name) {
    if (!PyUnicode_CheckExact(name)) return -1;
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(name, &len);
    if (!s) { /* a lone surrogate: no name of ours, and the package's TypeError, not this */
        PyErr_Clear();
        return -1;
    }
    for (int i = 0; i < KWS; i++)
        if ((size_t)len == strlen(kw_names[i]) && memcmp(s, kw_names[i], (size_t)len) == 0) return i;
    return -1;
}

/* tilec.sum(x, axis=None, *, dtype=None, out=None, keepdims=False, **kw): kw of the fast path
 * are dim, keepdim, index_dtype, backend and (var, std) ddof or correction. The request holds
 * a reference to each argument it reads: a keyword dict may be the caller's own (a
 * functools.partial's), changed by another thread while the package plans. */
static PyObject *reducer_call(PyObject *o, PyObject *args, PyObject *kw) {
    reducer *self = (reducer *)o;
    if (!ready(self)) return NULL;
    mark(-1);
    Py_ssize_t na = PyTuple_Size(args);
    if (na < 1 || na > 2) return slow(self, args, kw);
    PyObject *v[KWS] = {NULL};
    if (na > 1) v[KW_AXIS] = PyTuple_GetItem(args, 1);
    if (kw) {
        PyObject *name, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kw, &pos, &name, &value)) {
            int i = kw_index(name);
            if (i < 0 || v[i] || ((i == KW_DDOF || i == KW_CORRECTION) && (!self->corrects || v[KW_DDOF] || v[KW_CORRECTION])))
                return slow(self, args, kw); /* nan=, an unknown name, two of one: the package says */
            v[i] = value;
        }
    }
    request q = {0};
    q.x = PyTuple_GetItem(args, 0);
    q.axis = v[KW_AXIS];
    if (v[KW_DIM] && v[KW_DIM] != Py_None) {
        if (q.axis && q.axis != Py_None) return slow(self, args, kw);
        q.axis = v[KW_DIM];
    }
    q.keepdims = v[KW_KEEPDIMS];
    if (v[KW_KEEPDIM] && v[KW_KEEPDIM] != Py_None) {
        if (q.keepdims) return slow(self, args, kw);
        q.keepdims = v[KW_KEEPDIM];
    }
    q.dtype = v[KW_DTYPE] ? v[KW_DTYPE] : Py_None;
    q.index_dtype = v[KW_INDEX_DTYPE] ? v[KW_INDEX_DTYPE] : Py_None;
    q.out = v[KW_OUT];
    q.backend = v[KW_BACKEND];
    PyObject *ddof = v[KW_DDOF] ? v[KW_DDOF] : v[KW_CORRECTION];
    if (self->corrects) q.corr = ddof && ddof != Py_None ? ddof : zero; /* numpy's ddof=0 */
    PyObject **held[] = {&q.x, &q.axis, &q.keepdims, &q.dtype, &q.index_dtype, &q.out, &q.backend, &q.corr};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) Py_XINCREF(*held[i]);
    PyObject *r = fast(self, &q);
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) Py_XDECREF(*held[i]);
    return r ? r : slow(self, args, kw);
}

/* reducer.run(x, axis, keepdims, dtype, correction, index_dtype, out, backend, fn, fn_args):
 * tilec.reduce's request, its names already resolved; fn(*fn_args) the package's call */
static PyObject *reducer_run(PyObject *o, PyObject *args) {
    reducer *self = (reducer *)o;
    request q = {0};
    PyObject *fn, *again;
    if (!ready(self)) return NULL;
    mark(-1);
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &q.x, &q.axis, &q.keepdims, &q.dtype, &q.corr, &q.index_dtype, &q.out,
                          &q.backend, &fn, &again))
        return NULL;
    PyObject *r = fast(self, &q);
    if (r || PyErr_Occurred()) return r;
    return PyObject_CallObject(fn, again);
}

static int reducer_init(PyObject *o, PyObject *args, PyObject *kw) {
    reducer *self = (reducer *)o;
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "iipO", &self->op, &self->nan, &self->corrects, &fn)) return -1;
    PyObject *old = self->slow; /* dropped after the new one is in place: its finalizer may call self */
    self->slow = Py_NewRef(fn);
    Py_XDECREF(old);
    return 0;
}

/* The fallback may hold the reducer (a spelling's function reaches the module that holds
 * the spelling): the collector sees that reference, and breaks such a cycle. */
static int reducer_traverse(PyObject *o, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(o)); /* a heap type's instances hold their type */
    Py_VISIT(((reducer *)o)->slow);
    return 0;
}

static int reducer_clear(PyObject *o) {
    Py_CLEAR(((reducer *)o)->slow);
    return 0;
}

static void reducer_dealloc(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    PyObject_GC_UnTrack(o);
    reducer_clear(o);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(o);
    Py_DECREF(tp);
}

/* A reducer read as an attribute of a class is itself, as a builtin function is: so
 * inspect and help() take a spelling for a routine, and show its __text_signature__ (the
 * package sets each spelling's) */
static PyObject *reducer_get(PyObject *self, PyObject *obj, PyObject *type) { return Py_NewRef(self); }

static PyMethodDef reducer_methods[] = {
    {"run", reducer_run, METH_VARARGS,
     "run($self, x, axis, keepdims, dtype, correction, index_dtype, out, backend, fn, args, /)\n--\n\n"
     "tilec.reduce's request, its names already resolved: run here when planned before, else fn(*args)."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot reducer_slots[] = {
    {Py_tp_doc, "Reducer(op, nan, corrects, fallback)\n--\n\n"
                "A reduction of one op and NaN rule (the library's numbers; corrects: it takes ddof), "
                "run here when planned before, else by fallback, the package's function with the same "
                "arguments."},
    {Py_tp_descr_get, reducer_get},
    {Py_tp_init, reducer_init},
    {Py_tp_call, reducer_call},
    {Py_tp_dealloc, reducer_dealloc},
    {Py_tp_traverse, reducer_traverse},
    {Py_tp_clear, reducer_clear},
    {Py_tp_methods, reducer_methods},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL}};

static PyType_Spec reducer_spec = {"tilec._core.Reducer", sizeof(reducer), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
                                   reducer_slots};

/* ---- module functions ---------------------------------------------------------------- */

/* bind(addresses, plan, fail): the calls of the library the package loaded, by address
 * (reduce, mem_alloc, mem_free, mem_upload, mem_download, synchronize) */
static PyObject *bind(PyObject *m, PyObject *args) {
    unsigned long long a[6];
    PyObject *plan, *fn;
    if (!PyArg_ParseTuple(args, "(KKKKKK)OO", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &plan, &fn)) return NULL;
    for (int i = 0; i < 6; i++)
        if (!a[i]) return PyErr_Format(PyExc_ValueError, "tilec._core.bind: address %d is NULL", i);
    f_reduce = (tilec_status(*)(tilec_ctx *, const tilec_reduce_desc *, const void *, void *))(uintptr_t)a[0];
    f_alloc = (tilec_status(*)(tilec_ctx *, size_t, void **))(uintptr_t)a[1];
    f_free = (tilec_status(*)(tilec_ctx *, void *))(uintptr_t)a[2];
    f_upload = (tilec_status(*)(tilec_ctx *, void *, const void *, size_t))(uintptr_t)a[3];
    f_download = (tilec_status(*)(tilec_ctx *, void *, const void *, size_t))(uintptr_t)a[4];
    f_sync = (tilec_status(*)(tilec_ctx *))(uintptr_t)a[5];
    PyObject *old_plan = py_plan, *old_fail = py_fail;
    py_plan = Py_NewRef(plan);
    py_fail = Py_NewRef(fn);
    Py_XDECREF(old_plan);
    Py_XDECREF(old_fail);
    table_clear();
    Py_RETURN_NONE;
}

static PyObject *clear(PyObject *m, PyObject *unused) {
    table_clear();
    Py_RETURN_NONE;
}

static PyObject *stats(PyObject *m, PyObject *unused) { return Py_BuildValue("(KKi)", hits, misses, nentries); }

/* profile(on): starts (True) or stops (False) timing the phases of served calls, from zero;
 * profile() (or None): {phase: mean ns a served call} and the count, since it started */
static PyObject *profile(PyObject *m, PyObject *args) {
    PyObject *arg = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &arg)) return NULL;
    int on = arg == Py_None ? -1 : PyObject_IsTrue(arg);
    if (arg != Py_None && on < 0) return NULL;
    if (on >= 0) {
        profiling = on;
        memset(phase_ns, 0, sizeof phase_ns);
        profiled = 0;
        Py_RETURN_NONE;
    }
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < PHASES; i++) {
        PyObject *v = PyFloat_FromDouble(profiled ? phase_ns[i] / (double)profiled : 0.0);
        if (!v || PyDict_SetItemString(d, phase_names[i], v) < 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    PyObject *r = d ? Py_BuildValue("(NK)", d, profiled) : NULL;
    return r;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind($module, addresses, plan, fail, /)\n--\n\n"
     "The calls of the library the package loaded, by address: (reduce, mem_alloc, mem_free, mem_upload, "
     "mem_download, synchronize); plan and fail, the package's planner and error. Forgets every kept plan."},
    {"clear", clear, METH_NOARGS, "clear($module, /)\n--\n\nForgets every kept plan."},
    {"profile", profile, METH_VARARGS,
     "profile($module, on=None, /)\n--\n\n"
     "profile(True) starts (from zero) and profile(False) stops timing the phases of served calls; "
     "profile() gives ({phase: mean ns a call}, calls) since it started."},
    {"stats", stats, METH_NOARGS,
     "stats($module, /)\n--\n\n(calls this module ran, keys it sent to the package to plan, plans kept)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tilec._core",
                                    "tilec's compiled hot path (docs/python.md, \"The compiled core\").", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *type = PyType_FromSpec(&reducer_spec);
    int bad = !type || PyModule_AddObjectRef(m, "Reducer", type) < 0;
    Py_XDECREF(type);
    if (bad || (!zero && !(zero = PyLong_FromLong(0)))) goto fail;
    struct {
        PyObject **s;
        const char *v;
    } names[] = {{&s_dtype, "dtype"}, {&s_shape, "shape"}, {&s_strides, "strides"}, {&s_device, "device"},
                 {&s_data, "data"},   {&s_ptr, "ptr"},     {&s_id, "id"},           {&s_new_empty, "new_empty"},
                 {&s_get_device, "get_device"}, {&s_stride, "stride"}, {&s_data_ptr, "data_ptr"},
                 {&s_is_contiguous, "is_contiguous"}, {&s_acquire, "acquire"}, {&s_release, "release"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!*names[i].s && !(*names[i].s = PyUnicode_InternFromString(names[i].v))) goto fail; /* once a process */
    PyObject *abi = PyUnicode_FromFormat("%d.%d", TILEC_VERSION_MAJOR, TILEC_VERSION_MINOR);
    bad = !abi || PyModule_AddObjectRef(m, "ABI", abi) < 0;
    Py_XDECREF(abi);
    if (bad || PyModule_AddIntConstant(m, "LIMITED_API", Py_LIMITED_API) < 0 ||
        PyModule_AddIntConstant(m, "DESC_SIZE", (long)sizeof(tilec_reduce_desc)) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
