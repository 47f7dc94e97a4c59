/* _sledtrace: the C half of the Python module sledtrace (__init__.py beside it is the other half,
 * and the user-facing one).
 *
 * Why C and not ctypes: calls() must follow account's stack rule, whose one implementation is
 * tools/callstack.c (cs_feed), and columnar export must not make a Python object per record.
 * So this module links the format library (reader, cursor, sidecar) and the tools' walker, and
 * fills columns in C.
 *
 * Objects:
 *   _Trace    an opened trace: its own cursor (thread list, time base, columns), the sidecar's
 *             names, the lenient-mode warnings seen so far, and the thread order of the tools
 *             (main threads, tid == pid, first; then first-seen order).
 *   Cursor    one thread's items; its own stf_cursor, so one block in memory per cursor.
 *   Calls     an iterator of closed calls: items are fed to cs_feed thread after thread, as
 *             account feeds them (function records and loss markers), and the frames it closes
 *             wait in a small queue (one exit can close many frames) until they are yielded.
 *   _Column   a typed buffer filled in C (buffer protocol: memoryview, numpy.frombuffer).
 *   Item, Call  struct sequences (named tuples made in C).
 *
 * Corrected times: calls() and _call_columns() read the thread's items through the tools' virtual
 * clock (tools/vclock.h) unless raw_times, as account does: start_tsc is then on that clock,
 * ticks and self_ticks are signed (a call shorter than its correction is below zero; the sums
 * stay exact), duration and self in ns are clamped at 0. Items (cursors, item_columns) are
 * always the records as recorded.
 *
 * Time: tsc is the counter as recorded; ns is the time since the trace's time base (the
 * earliest first timestamp over all threads, as the tools show times) at the header's cycle
 * frequency, converted as account converts (tool_ticks_to_ns, rounded to the nearest), and
 * signed (an item before the base has a negative ns). Durations in ns are converted per call;
 * sums of ticks converted once (ticks_to_ns) are what account prints. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "callargs.h"
#include "callstack.h"
#include "seek.h"
#include "window.h"
#include "names.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- kinds ------------------------------------------------------------------------------- */

/* Kind codes, as the `kind` column holds them; KIND_NAMES is sledtrace.KINDS. */
enum {
    K_ENTER,
    K_EXIT,
    K_TAIL_EXIT,
    K_ENTER_ARGS,
    K_CPU_CHANGE,
    K_TSC_WRAP,
    K_WALLTIME,
    K_CUSTOM_EVENT,
    K_LOSS,
    K_TYPED_EVENT,
    K_CALL_ARG,
    K_NEW_BUFFER,
    K_END_OF_BUFFER,
    K_PID,
    K_BUFFER_EXTENTS,
    K_UNKNOWN,
    K_COUNT
};
static const char *const KIND_NAMES[K_COUNT] = {
    "enter",         "exit",         "tail-exit",      "enter-args",  "cpu-change", "tsc-wrap",
    "walltime",      "custom-event", "loss",           "typed-event", "call-arg",   "new-buffer",
    "end-of-buffer", "pid",          "buffer-extents", "unknown"};
static PyObject *kind_str[K_COUNT];

static int kind_code(const struct stf_item *it, uint64_t *lost)
{
    switch (it->kind) {
    case STF_K_FUNCTION:
        return it->action <= STF_ENTER_ARGS ? K_ENTER + it->action : K_UNKNOWN;
    case STF_M_NEW_CPU:
        return K_CPU_CHANGE;
    case STF_M_TSC_WRAP:
        return K_TSC_WRAP;
    case STF_M_WALLTIME:
        return K_WALLTIME;
    case STF_M_CUSTOM_EVENT:
        return stf_decode_loss(it->payload, it->payload_len, lost) ? K_LOSS : K_CUSTOM_EVENT;
    case STF_M_TYPED_EVENT:
        return K_TYPED_EVENT;
    case STF_M_CALL_ARG:
        return K_CALL_ARG;
    case STF_M_NEW_BUFFER:
        return K_NEW_BUFFER;
    case STF_M_END_OF_BUFFER:
        return K_END_OF_BUFFER;
    case STF_M_PID:
        return K_PID;
    case STF_M_BUFFER_EXTENTS:
        return K_BUFFER_EXTENTS;
    default:
        return K_UNKNOWN;
    }
}

/* ---- errors ------------------------------------------------------------------------------ */

static PyObject *TraceError; /* sledtrace.TraceError, a subclass of OSError */

/* Raise TraceError(msg) with attributes path and offset (None when the error is not about a
 * byte of the file). msg is decoded as file names are (a path's bytes that are not UTF-8 stay
 * surrogate escapes). */
static void raise_trace_error(const char *msg, PyObject *path, const uint64_t *offset)
{
    PyObject *e = PyObject_CallFunction(TraceError, "N", PyUnicode_DecodeFSDefault(msg));
    if (!e)
        return;
    PyObject *off = offset ? PyLong_FromUnsignedLongLong(*offset) : Py_NewRef(Py_None);
    if (!off || PyObject_SetAttrString(e, "path", path ? path : Py_None) != 0 ||
        PyObject_SetAttrString(e, "offset", off) != 0) {
        Py_XDECREF(off);
        Py_DECREF(e);
        return;
    }
    Py_DECREF(off);
    PyErr_SetObject(TraceError, e);
    Py_DECREF(e);
}

/* An open failure: err is "PATH: offset N: reason" or "PATH: reason". */
static void raise_open_error(const char *err, PyObject *path, const char *cpath)
{
    size_t n = strlen(cpath);
    unsigned long long off;
    if (strncmp(err, cpath, n) == 0 && sscanf(err + n, ": offset %llu:", &off) == 1) {
        uint64_t o = off;
        raise_trace_error(err, path, &o);
    } else {
        raise_trace_error(err, path, NULL);
    }
}

/* ---- _Trace ------------------------------------------------------------------------------ */

typedef struct {
    PyObject ob_base;     /* PyObject_HEAD */
    struct stf_cursor *c; /* NULL once closed */
    struct stf_syms *syms;
    PyObject *path; /* str */
    char *cpath;
    int flags;
    uint64_t freq, base;
    size_t nthreads;
    size_t *order;      /* cursor thread indices, main threads first */
    PyObject *names;    /* func id -> str */
    PyObject *warnings; /* list of "PATH: offset N: message" */
    PyObject *warn_seen;
    /* corrected times (tools/vclock.h): the calibration and its block, and whether calls()
     * corrects (raw_times=False and the trace has one) */
    struct stf_calib calib;
    bool has_calib, corrected;
    uint64_t calib_block;
} TraceObject;

static PyTypeObject TraceType, CursorType, CallsType, ColumnType;
static PyTypeObject *ItemType, *CallType;

static int64_t rel_ns(const TraceObject *t, uint64_t tsc)
{
    if (tsc >= t->base) {
        uint64_t v = tool_ticks_to_ns(tsc - t->base, t->freq);
        return v > INT64_MAX ? INT64_MAX : (int64_t)v;
    }
    uint64_t v = tool_ticks_to_ns(t->base - tsc, t->freq);
    return v > INT64_MAX ? -INT64_MAX : -(int64_t)v;
}

/* Lenient-mode warnings of every cursor of the trace, each once, in the order met. */
static void warn_cb(void *ctx, uint64_t offset, const char *msg)
{
    TraceObject *t = ctx;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *s =
        PyUnicode_FromFormat("%U: offset %llu: %s", t->path, (unsigned long long)offset, msg);
    if (s) {
        int seen = PySet_Contains(t->warn_seen, s);
        if (seen == 0 && PySet_Add(t->warn_seen, s) == 0)
            PyList_Append(t->warnings, s);
        Py_DECREF(s);
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

static struct stf_cursor *open_cursor(TraceObject *t)
{
    struct stf_cursor *c = NULL;
    char err[1024] = "";
    int rc = stf_cursor_open_warn(&c, t->cpath, t->flags, warn_cb, t, err, sizeof err);
    if (rc != STF_OK) {
        if (c)
            stf_cursor_close(c);
        if (!PyErr_Occurred())
            raise_open_error(err, t->path, t->cpath);
        return NULL;
    }
    return c;
}

static int check_open(TraceObject *t)
{
    if (t->c)
        return 0;
    PyErr_SetString(PyExc_ValueError, "I/O operation on a closed trace");
    return -1;
}

/* An error of cursor c, as "PATH: offset N: reason". */
static void raise_cursor_error(TraceObject *t, struct stf_cursor *c, int rc)
{
    uint64_t off = 0;
    const char *m = stf_cursor_error(c, &off);
    if (!m || !*m)
        m = stf_strerror(rc);
    char buf[1024];
    if (rc == STF_ERR_IO || rc == STF_ERR_NOMEM) {
        snprintf(buf, sizeof buf, "%s: %s", t->cpath, m);
        raise_trace_error(buf, t->path, NULL);
    } else {
        snprintf(buf, sizeof buf, "%s: offset %" PRIu64 ": %s", t->cpath, off, m);
        raise_trace_error(buf, t->path, &off);
    }
}

/* Name of function id (cached): the sidecar's symbol as it is (mangled), a tracer
 * pseudo-function's name, or "#id". */
static PyObject *func_name(TraceObject *t, uint32_t id)
{
    PyObject *key = PyLong_FromUnsignedLong(id);
    if (!key)
        return NULL;
    PyObject *v = PyDict_GetItemWithError(t->names, key);
    if (v || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(v);
    }
    char buf[32];
    const char *s = stf_syms_name(t->syms, id, buf, sizeof buf);
    v = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
    if (v && PyDict_SetItem(t->names, key, v) != 0)
        Py_CLEAR(v);
    Py_DECREF(key);
    return v;
}

static int Trace_init(TraceObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"path", "syms", "strict", "raw_times", NULL};
    PyObject *path = NULL, *syms = Py_None;
    int strict = 0, raw = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|Opp:Trace", kwlist, PyUnicode_FSDecoder, &path,
                                     &syms, &strict, &raw))
        return -1;
    if (self->path) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_RuntimeError, "Trace is already initialised");
        return -1;
    }
    self->path = path;
    PyObject *bytes = PyUnicode_EncodeFSDefault(path);
    if (!bytes)
        return -1;
    self->cpath = strdup(PyBytes_AS_STRING(bytes));
    Py_DECREF(bytes);
    self->names = PyDict_New();
    self->warnings = PyList_New(0);
    self->warn_seen = PySet_New(NULL);
    if (!self->cpath || !self->names || !self->warnings || !self->warn_seen) {
        PyErr_NoMemory();
        return -1;
    }
    self->flags = strict ? STF_READ_STRICT : STF_READ_LENIENT;
    self->c = open_cursor(self);
    if (!self->c)
        return -1;
    self->freq = stf_cursor_header(self->c)->cycle_freq;
    self->calib_block = UINT64_MAX;
    self->has_calib = vclock_find(self->cpath, &self->calib, &self->calib_block) == 1;
    self->corrected = self->has_calib && !raw;

    /* The sidecar: the one given must load; the one beside the trace may be missing. */
    PyObject *spath = NULL;
    char *cs = NULL;
    if (syms != Py_None) {
        if (!PyUnicode_FSConverter(syms, &spath))
            return -1;
    } else {
        cs = stf_syms_path_for(self->cpath);
        if (!cs) {
            PyErr_NoMemory();
            return -1;
        }
    }
    const char *sp = spath ? PyBytes_AS_STRING(spath) : cs;
    char err[1024] = "";
    int rc = stf_syms_load(&self->syms, sp, err, sizeof err);
    if (rc != STF_OK) {
        self->syms = NULL;
        if (spath || !(rc == STF_ERR_IO && errno == ENOENT)) {
            if (!err[0])
                snprintf(err, sizeof err, "%s: %s", sp, stf_strerror(rc));
            PyObject *p = PyUnicode_DecodeFSDefault(sp);
            raise_trace_error(err, p, NULL);
            Py_XDECREF(p);
            Py_XDECREF(spath);
            free(cs);
            return -1;
        }
    }
    Py_XDECREF(spath);
    free(cs);

    /* Thread order: main threads first, then the trace's (as the tools list them). */
    self->nthreads = stf_cursor_threads(self->c);
    self->order = calloc(self->nthreads ? self->nthreads : 1, sizeof *self->order);
    if (!self->order) {
        PyErr_NoMemory();
        return -1;
    }
    size_t k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < self->nthreads; i++) {
            int32_t pid = 0, tid = 0;
            stf_cursor_select(self->c, i, &pid, &tid, NULL);
            if ((tid == pid) == (pass == 0))
                self->order[k++] = i;
        }

    /* Time base: the earliest first timestamp of any thread (tool_trace_base's rule). */
    uint64_t base = UINT64_MAX;
    for (size_t i = 0; i < self->nthreads; i++) {
        if (stf_cursor_select(self->c, i, NULL, NULL, NULL) != STF_OK)
            break;
        struct stf_item it;
        while ((rc = stf_cursor_next(self->c, &it)) == STF_OK)
            if (it.block != self->calib_block &&
                (it.kind == STF_M_NEW_CPU || it.kind == STF_M_TSC_WRAP ||
                 it.kind == STF_K_FUNCTION)) {
                if (it.tsc < base)
                    base = it.tsc;
                break;
            }
        if (rc < 0) {
            raise_cursor_error(self, self->c, rc);
            return -1;
        }
    }
    self->base = base == UINT64_MAX ? 0 : base;
    return PyErr_Occurred() ? -1 : 0;
}

static void Trace_dealloc(TraceObject *self)
{
    if (self->c)
        stf_cursor_close(self->c);
    stf_syms_free(self->syms);
    free(self->cpath);
    free(self->order);
    Py_XDECREF(self->path);
    Py_XDECREF(self->names);
    Py_XDECREF(self->warnings);
    Py_XDECREF(self->warn_seen);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Trace_close(TraceObject *self, PyObject *unused)
{
    (void)unused;
    if (self->c)
        stf_cursor_close(self->c);
    self->c = NULL;
    Py_RETURN_NONE;
}

/* _threads() -> [(index, pid, tid, name or None)] in the tools' order. */
static PyObject *Trace_threads(TraceObject *self, PyObject *unused)
{
    (void)unused;
    if (check_open(self) != 0)
        return NULL;
    PyObject *l = PyList_New((Py_ssize_t)self->nthreads);
    if (!l)
        return NULL;
    for (size_t k = 0; k < self->nthreads; k++) {
        int32_t pid = 0, tid = 0;
        int rc = stf_cursor_select(self->c, self->order[k], &pid, &tid, NULL);
        if (rc != STF_OK) {
            raise_cursor_error(self, self->c, rc);
            Py_DECREF(l);
            return NULL;
        }
        const char *nm = stf_syms_thread_name(self->syms, pid, tid);
        PyObject *name = nm ? PyUnicode_DecodeUTF8(nm, (Py_ssize_t)strlen(nm), "surrogateescape")
                            : Py_NewRef(Py_None);
        PyObject *tup =
            name ? Py_BuildValue("(niiN)", (Py_ssize_t)self->order[k], (int)pid, (int)tid, name)
                 : NULL;
        if (!tup) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)k, tup);
    }
    return l;
}

static PyObject *Trace_name(TraceObject *self, PyObject *arg)
{
    unsigned long id = PyLong_AsUnsignedLong(arg);
    if (id == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    if (id > STF_MAX_FUNC_ID) {
        PyErr_Format(PyExc_ValueError, "function id %lu is out of range", id);
        return NULL;
    }
    return func_name(self, (uint32_t)id);
}

static PyObject *Trace_ticks_to_ns(TraceObject *self, PyObject *arg)
{
    unsigned long long v = PyLong_AsUnsignedLongLong(arg);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromUnsignedLongLong(tool_ticks_to_ns(v, self->freq));
}

static PyObject *Trace_get_path(TraceObject *self, void *c)
{
    (void)c;
    return Py_NewRef(self->path);
}
static PyObject *Trace_get_freq(TraceObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(self->freq);
}
static PyObject *Trace_get_base(TraceObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(self->base);
}
static PyObject *Trace_get_warnings(TraceObject *self, void *c)
{
    (void)c;
    return PyList_GetSlice(self->warnings, 0, PyList_GET_SIZE(self->warnings));
}
static PyObject *Trace_get_closed(TraceObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->c == NULL);
}
static PyObject *Trace_get_command(TraceObject *self, void *c)
{
    (void)c;
    const char *s = stf_syms_command(self->syms);
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}
static PyObject *Trace_get_version(TraceObject *self, void *c)
{
    (void)c;
    if (check_open(self) != 0)
        return NULL;
    return PyLong_FromLong(stf_cursor_header(self->c)->version);
}

/* ---- Item -------------------------------------------------------------------------------- */

static PyStructSequence_Field item_fields[] = {
    {"kind", "enter, exit, tail-exit, enter-args, cpu-change, tsc-wrap, walltime, custom-event, "
             "loss, typed-event, call-arg (sledtrace.KINDS)"},
    {"ns", "time in ns since the trace's time base (Trace.base_tsc); None while the thread has "
           "no timestamp yet (tsc 0: a block's first records)"},
    {"tsc", "the counter as recorded (ticks)"},
    {"func_id", "function id (function records), else None"},
    {"name", "the function's name from the sidecar, as it is (mangled), else None"},
    {"pid", "process id"},
    {"tid", "thread id"},
    {"cpu", "CPU the thread was on"},
    {"lost", "events dropped at a loss marker, else None"},
    {"payload", "bytes of a custom or typed event (a loss marker's too), else None"},
    {"event_type", "type of a typed event, else None"},
    {"arg", "the argument of a call-arg item, else None"},
    {"walltime", "(seconds, microseconds) of a walltime item, else None"},
    {"offset", "byte offset of the record in the file"},
    {NULL, NULL}};
static PyStructSequence_Desc item_desc = {
    "sledtrace.Item", "One record of a thread (a cursor's item).", item_fields, 14};

/* Fills the struct sequence o with the n values v (each a new reference, or NULL where making
 * it failed: an exception is set); o, or NULL (o released) when any of them is missing. */
static PyObject *fill_seq(PyObject *o, PyObject **v, int n)
{
    bool ok = true;
    for (int i = 0; i < n; i++) {
        if (!v[i])
            ok = false;
        PyStructSequence_SET_ITEM(o, i, v[i] ? v[i] : Py_NewRef(Py_None));
    }
    if (!ok) {
        Py_DECREF(o);
        return NULL;
    }
    return o;
}

static PyObject *make_item(TraceObject *t, const struct stf_item *it)
{
    uint64_t lost = 0;
    int k = kind_code(it, &lost);
    PyObject *o = PyStructSequence_New(ItemType);
    if (!o)
        return NULL;
    PyObject *v[14];
    v[0] = Py_NewRef(kind_str[k]);
    v[1] = it->tsc ? PyLong_FromLongLong(rel_ns(t, it->tsc)) : Py_NewRef(Py_None);
    v[2] = PyLong_FromUnsignedLongLong(it->tsc);
    bool fn = it->kind == STF_K_FUNCTION;
    v[3] = fn ? PyLong_FromUnsignedLong(it->func_id) : Py_NewRef(Py_None);
    v[4] = fn ? func_name(t, it->func_id) : Py_NewRef(Py_None);
    v[5] = PyLong_FromLong(it->pid);
    v[6] = PyLong_FromLong(it->tid);
    v[7] = PyLong_FromLong(it->cpu);
    v[8] = k == K_LOSS ? PyLong_FromUnsignedLongLong(lost) : Py_NewRef(Py_None);
    bool ev = it->kind == STF_M_CUSTOM_EVENT || it->kind == STF_M_TYPED_EVENT;
    v[9] = ev ? PyBytes_FromStringAndSize((const char *)it->payload, (Py_ssize_t)it->payload_len)
              : Py_NewRef(Py_None);
    v[10] = it->kind == STF_M_TYPED_EVENT ? PyLong_FromLong(it->event_type) : Py_NewRef(Py_None);
    v[11] =
        it->kind == STF_M_CALL_ARG ? PyLong_FromUnsignedLongLong(it->value) : Py_NewRef(Py_None);
    v[12] = it->kind == STF_M_WALLTIME
                ? Py_BuildValue("(LI)", (long long)it->wall_sec, (unsigned)it->wall_usec)
                : Py_NewRef(Py_None);
    v[13] = PyLong_FromUnsignedLongLong(it->offset);
    return fill_seq(o, v, 14);
}

/* ---- Cursor ------------------------------------------------------------------------------ */

typedef struct {
    PyObject ob_base; /* PyObject_HEAD */
    TraceObject *t;
    struct stf_cursor *c;
    Py_ssize_t index; /* the cursor's thread number (first-seen order) */
    int32_t pid, tid;
} CursorObject;

/* _Trace.cursor(index): a new cursor on thread `index` (the stf cursor's numbering). */
static PyObject *Trace_cursor(TraceObject *self, PyObject *arg)
{
    Py_ssize_t i = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (check_open(self) != 0)
        return NULL;
    if (i < 0 || (size_t)i >= self->nthreads) {
        PyErr_Format(PyExc_IndexError, "no thread %zd (the trace has %zu)", i, self->nthreads);
        return NULL;
    }
    CursorObject *cu = PyObject_New(CursorObject, &CursorType);
    if (!cu)
        return NULL;
    cu->t = (TraceObject *)Py_NewRef(self);
    cu->index = i;
    cu->c = open_cursor(self);
    if (!cu->c) {
        Py_DECREF(cu);
        return NULL;
    }
    int rc = stf_cursor_select(cu->c, (size_t)i, &cu->pid, &cu->tid, NULL);
    if (rc != STF_OK) {
        raise_cursor_error(self, cu->c, rc);
        Py_DECREF(cu);
        return NULL;
    }
    return (PyObject *)cu;
}

static void Cursor_dealloc(CursorObject *self)
{
    if (self->c)
        stf_cursor_close(self->c);
    Py_XDECREF(self->t);
    PyObject_Free(self);
}

static PyObject *cursor_step(CursorObject *self, bool forward)
{
    struct stf_item it;
    int rc = forward ? stf_cursor_next(self->c, &it) : stf_cursor_prev(self->c, &it);
    if (rc == STF_END)
        Py_RETURN_NONE;
    if (rc != STF_OK) {
        raise_cursor_error(self->t, self->c, rc);
        return NULL;
    }
    return make_item(self->t, &it);
}

static PyObject *Cursor_next(CursorObject *self, PyObject *unused)
{
    (void)unused;
    return cursor_step(self, true);
}
static PyObject *Cursor_prev(CursorObject *self, PyObject *unused)
{
    (void)unused;
    return cursor_step(self, false);
}
static PyObject *Cursor_iternext(CursorObject *self)
{
    PyObject *o = cursor_step(self, true);
    if (o == Py_None) {
        Py_DECREF(o);
        return NULL; /* StopIteration */
    }
    return o;
}

/* The smallest TSC whose ns is >= ns (the conversion is monotonic). */
static uint64_t tsc_at(const TraceObject *t, long long ns)
{
    long double g = (long double)t->base;
    if (t->freq == 0 || t->freq == 1000000000)
        g += (long double)ns;
    else
        g += (long double)ns * (long double)t->freq / 1e9L;
    uint64_t x = g <= 0 ? 0 : g >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)g;
    while (x > 0 && rel_ns(t, x - 1) >= ns)
        x--;
    while (x < UINT64_MAX && rel_ns(t, x) < ns)
        x++;
    return x;
}

static PyObject *Cursor_seek(CursorObject *self, PyObject *arg)
{
    long long ns = PyLong_AsLongLong(arg);
    if (ns == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromUnsignedLongLong(stf_cursor_seek(self->c, tsc_at(self->t, ns)));
}

static PyObject *Cursor_seek_tsc(CursorObject *self, PyObject *arg)
{
    unsigned long long tsc = PyLong_AsUnsignedLongLong(arg);
    if (tsc == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromUnsignedLongLong(stf_cursor_seek(self->c, tsc));
}

static PyObject *Cursor_rewind(CursorObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"to_end", NULL};
    int to_end = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:rewind", kwlist, &to_end))
        return NULL;
    stf_cursor_rewind(self->c, to_end);
    Py_RETURN_NONE;
}

static PyObject *Cursor_get_pid(CursorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->pid);
}
static PyObject *Cursor_get_tid(CursorObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->tid);
}

/* ---- Calls ------------------------------------------------------------------------------- */

static PyStructSequence_Field call_fields[] = {
    {"pid", "process id"},
    {"tid", "thread id"},
    {"depth", "open frames below the call when it closed (0: top level)"},
    {"func_id", "function id"},
    {"name", "the function's name from the sidecar, as it is (mangled)"},
    {"start", "entry time in ns since the trace's time base"},
    {"duration", "entry to exit in ns, callees included"},
    {"self", "duration minus the durations of the calls it made, in ns"},
    {"start_tsc", "entry time in ticks, as recorded"},
    {"ticks", "duration in ticks"},
    {"self_ticks", "self time in ticks"},
    {"nested", "True when a call of the same function encloses it (recursion): account's total "
               "counts only the calls with nested False"},
    {"repaired", "closed by the exit of a function below it (a stack repair), not its own"},
    {"clipped", "with calls(start=, end=): 'start', 'end' or 'both' when the call crosses the "
                "window's edge(s) (start, duration and self are then the window's part), else "
                "None"},
    {"args", "the arguments it recorded (SLEDTRACE_ARGS): a tuple of ints (the integer argument "
             "registers, at most six), a str for an argument recorded as a string (None for NULL, "
             "the int address when unreadable); () when none"},
    {"retval", "its return value as recorded (rax, an int), or None"},
    {NULL, NULL}};
static PyStructSequence_Desc call_desc = {"sledtrace.Call", "One closed call (Trace.calls()).",
                                          call_fields, 16};

struct closed {
    int32_t pid, tid;
    uint32_t depth, id;
    uint64_t start, dur, self;
    bool nested, repaired;
    uint8_t clip;     /* CS_CLIP_START | CS_CLIP_END */
    PyObject *args;   /* a new reference, or NULL: () */
    PyObject *retval; /* a new reference, or NULL: None */
    /* the same raw, for call_columns: argument registers recorded (at most six kept), rax */
    uint8_t nargs;
    bool has_ret;
    uint64_t v[CS_MAX_ARGS], ret;
};

typedef struct {
    PyObject ob_base; /* PyObject_HEAD */
    TraceObject *t;
    struct stf_cursor *c;
    struct callstack cs;
    struct vclock vc; /* corrected times (t->corrected) */
    size_t pos;       /* next thread in t->order */
    bool started;     /* a thread is selected */
    bool one;         /* only thread id tid */
    int32_t tid;
    struct closed *q; /* closed calls not yet handed out: q[head..n) */
    size_t head, n, cap;
    /* A window (calls(start=, end=)): each thread from its checkpoint (tools/seek.h; seek NULL:
     * from its start) and up to its first function record past win_to (over), as trace.c's
     * walk for the commands. */
    bool win, over;
    uint64_t win_from, win_to;
    struct tool_seek *seek;
} CallsObject;

/* The call's recorded arguments and return value as Python objects (Call.args, Call.retval): 0,
 * or -1 with an exception set. */
static int call_args(const struct cs_close *c, PyObject **args, PyObject **retval)
{
    *args = *retval = NULL;
    if (c->ret && !(*retval = PyLong_FromUnsignedLongLong(c->ret[0])))
        return -1;
    if (!c->f->nargs)
        return 0;
    struct tool_callargs a;
    tool_callargs_of(&a, c->t, c->depth, c->f, c->ret); /* raw values: Python keeps its own */
    unsigned n = a.nargs < CS_MAX_ARGS ? a.nargs : CS_MAX_ARGS;
    if (!(*args = PyTuple_New(n)))
        return -1;
    for (unsigned k = 0; k < n; k++) {
        PyObject *v;
        unsigned fl = a.s[k].flags;
        if (!a.s[k].have)
            v = PyLong_FromUnsignedLongLong(a.v[k]);
        else if (fl & STF_ARGSTR_NULL)
            v = Py_NewRef(Py_None);
        else if ((fl & (STF_ARGSTR_FAULT | STF_ARGSTR_SKIPPED)) && a.s[k].n == 0)
            v = PyLong_FromUnsignedLongLong(a.v[k]);
        else
            v = PyUnicode_DecodeUTF8((const char *)a.s[k].b, (Py_ssize_t)a.s[k].n,
                                     "backslashreplace");
        if (!v)
            return -1;
        PyTuple_SET_ITEM(*args, k, v);
    }
    return 0;
}

static int on_close(void *ctx, const struct cs_close *c)
{
    CallsObject *k = ctx;
    if (k->n == k->cap) {
        struct closed *q = tool_grow(k->q, &k->cap, sizeof *q, 16);
        if (!q)
            return -1;
        k->q = q;
    }
    k->q[k->n++] = (struct closed){
        .pid = c->t->pid,
        .tid = c->t->tid,
        .depth = (uint32_t)c->depth,
        .id = c->f->id,
        .start = c->f->start,
        .dur = c->dur,
        .self = c->self,
        .nested = c->f->same_below != 0,
        .repaired = c->repaired,
        .clip = c->clip,
    };
    struct closed *q = &k->q[k->n - 1];
    if (c->f->nargs || c->ret) {
        q->nargs = (uint8_t)(c->f->nargs < CS_MAX_ARGS ? c->f->nargs : CS_MAX_ARGS);
        for (unsigned i = 0; i < q->nargs; i++)
            q->v[i] = cs_arg(c->t, c->depth, i);
        q->has_ret = c->ret != NULL;
        q->ret = c->ret ? c->ret[0] : 0;
    }
    if ((c->f->nargs || c->ret) &&
        call_args(c, &k->q[k->n - 1].args, &k->q[k->n - 1].retval) != 0) {
        Py_CLEAR(k->q[k->n - 1].args);
        Py_CLEAR(k->q[k->n - 1].retval);
        k->n--;
        return -1;
    }
    return 0;
}

static const struct cs_ops calls_ops = {.close = on_close};

static CallsObject *calls_new(TraceObject *t, PyObject *tid)
{
    if (check_open(t) != 0)
        return NULL;
    long v = 0;
    if (tid != Py_None) {
        v = PyLong_AsLong(tid);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        if (v < INT32_MIN || v > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "tid out of range");
            return NULL;
        }
    }
    CallsObject *k = PyObject_New(CallsObject, &CallsType);
    if (!k)
        return NULL;
    k->t = (TraceObject *)Py_NewRef(t);
    memset(&k->cs, 0, sizeof k->cs);
    k->cs.nesting = true; /* for same_below (nested) */
    k->cs.signed_dur = t->corrected;
    vclock_init(&k->vc, t->corrected ? &t->calib : NULL);
    k->pos = 0;
    k->started = false;
    k->one = tid != Py_None;
    k->tid = (int32_t)v;
    k->q = NULL;
    k->head = k->n = k->cap = 0;
    k->win = k->over = false;
    k->seek = NULL;
    k->c = open_cursor(t);
    if (!k->c) {
        Py_DECREF(k);
        return NULL;
    }
    return k;
}

static void Calls_dealloc(CallsObject *self)
{
    if (self->c)
        stf_cursor_close(self->c);
    tool_seek_free(self->seek);
    cs_free(&self->cs);
    for (size_t i = self->head; i < self->n; i++) { /* not handed out */
        Py_XDECREF(self->q[i].args);
        Py_XDECREF(self->q[i].retval);
    }
    free(self->q);
    Py_XDECREF(self->t);
    PyObject_Free(self);
}

/* A window's walk of thread (pid, tid), just selected, starts at its checkpoint if it has one:
 * the frames open there are fed first, just before the window (trace.c's seek_thread). 0, or
 * -1 with an exception set. */
static int seek_thread(CallsObject *k, int32_t pid, int32_t tid)
{
    size_t block, nf;
    uint64_t acc;
    uint8_t prev;
    const struct tool_seek_frame *f;
    if (!tool_seek_find(k->seek, pid, tid, k->win_from, k->t->corrected, &block, &acc, &prev, &f,
                        &nf) ||
        stf_cursor_goto(k->c, block) != STF_OK)
        return 0;
    if (k->t->corrected) {
        k->vc.acc = acc;
        k->vc.prev = prev;
    }
    for (size_t i = 0; i < nf; i++)
        for (uint32_t a = 0; a <= f[i].nargs; a++) {
            struct stf_item it = {.pid = pid, .tid = tid, .tsc = k->win_from - 1};
            if (a == 0) {
                it.kind = STF_K_FUNCTION;
                it.func_id = f[i].id;
                it.action = f[i].nargs ? STF_ENTER_ARGS : STF_ENTER;
            } else {
                it.kind = STF_M_CALL_ARG;
                it.value = a == 1 ? f[i].arg : 0;
            }
            if (cs_feed(&k->cs, &it, &calls_ops, k) != 0) {
                PyErr_NoMemory();
                return -1;
            }
        }
    return 0;
}

/* The next closed call: 1 (in *out), 0 at the end, -1 with an exception set. */
static int calls_next(CallsObject *k, struct closed *out)
{
    while (k->head == k->n) {
        k->head = k->n = 0;
        if (!k->started) {
            int32_t pid = 0, tid = 0;
            for (;;) {
                if (k->pos >= k->t->nthreads)
                    return 0;
                int rc = stf_cursor_select(k->c, k->t->order[k->pos], &pid, &tid, NULL);
                if (rc != STF_OK) {
                    raise_cursor_error(k->t, k->c, rc);
                    return -1;
                }
                if (!k->one || tid == k->tid)
                    break;
                k->pos++;
            }
            k->started = true;
            vclock_thread(&k->vc);
            k->over = false;
            if (k->seek && seek_thread(k, pid, tid) != 0)
                return -1;
        }
        struct stf_item it;
        int rc = k->over ? STF_END : stf_cursor_next(k->c, &it);
        if (rc == STF_OK && it.block == k->t->calib_block)
            continue; /* the runtime's calibration, before the program ran */
        if (rc == STF_OK)
            vclock_item(&k->vc, &it);
        if (rc == STF_OK && k->win && it.kind == STF_K_FUNCTION && it.tsc > k->win_to)
            k->over = true; /* the walker ignores the rest of the thread */
        if (rc == STF_END) {
            k->started = false;
            k->pos++;
            continue;
        }
        if (rc != STF_OK) {
            raise_cursor_error(k->t, k->c, rc);
            return -1;
        }
        /* What account feeds: function records, loss markers and context switches; and the
         * arguments and return values (Call.args, Call.retval). */
        uint64_t lost;
        if (it.kind != STF_K_FUNCTION && it.kind != STF_M_CALL_ARG &&
            !(it.kind == STF_M_CUSTOM_EVENT &&
              stf_decode_loss(it.payload, it.payload_len, &lost)) &&
            !(it.kind == STF_M_TYPED_EVENT &&
              (it.event_type == STF_TYPED_CONTEXT || it.event_type == STF_TYPED_ARGSTR ||
               it.event_type == STF_TYPED_RETVAL)))
            continue;
        if (cs_feed(&k->cs, &it, &calls_ops, k) != 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    *out = k->q[k->head++];
    return 1;
}

static PyObject *Calls_iternext(CallsObject *self)
{
    struct closed c;
    int r = calls_next(self, &c);
    if (r <= 0)
        return NULL;
    TraceObject *t = self->t;
    PyObject *o = PyStructSequence_New(CallType);
    if (!o)
        return NULL;
    PyObject *clip = Py_NewRef(Py_None);
    if (c.clip) {
        Py_DECREF(clip);
        clip = PyUnicode_FromString((c.clip & CS_CLIP_START) && (c.clip & CS_CLIP_END) ? "both"
                                    : (c.clip & CS_CLIP_START)                         ? "start"
                                                                                       : "end");
    }
    PyObject *v[16] = {
        PyLong_FromLong(c.pid),
        PyLong_FromLong(c.tid),
        PyLong_FromUnsignedLong(c.depth),
        PyLong_FromUnsignedLong(c.id),
        func_name(t, c.id),
        PyLong_FromLongLong(rel_ns(t, c.start)),
        PyLong_FromUnsignedLongLong(tool_ticks_to_ns(cs_ticks(c.dur), t->freq)),
        PyLong_FromUnsignedLongLong(tool_ticks_to_ns(cs_ticks(c.self), t->freq)),
        PyLong_FromUnsignedLongLong(c.start),
        PyLong_FromLongLong((long long)c.dur),
        PyLong_FromLongLong((long long)c.self),
        PyBool_FromLong(c.nested),
        PyBool_FromLong(c.repaired),
        clip,
        c.args ? c.args : PyTuple_New(0),
        c.retval ? c.retval : Py_NewRef(Py_None),
    };
    return fill_seq(o, v, 16);
}

static PyObject *Calls_get_stats(CallsObject *self, void *c)
{
    (void)c;
    return Py_BuildValue("{sKsKsKsKsKsK}", "calls", (unsigned long long)self->cs.calls, "repairs",
                         (unsigned long long)self->cs.repairs, "unmatched",
                         (unsigned long long)self->cs.unmatched, "gaps",
                         (unsigned long long)self->cs.gaps, "gap_events",
                         (unsigned long long)self->cs.gap_events, "open_frames",
                         (unsigned long long)cs_open_frames(&self->cs));
}

/* calls(tid=None, start=None, end=None): start and end in ns since the time base (as
 * Call.start), either or both; the walker's window (callstack.h: calls crossing an edge are
 * clipped to it and marked). */
static PyObject *Trace_calls(TraceObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"tid", "start", "end", NULL};
    PyObject *tid = Py_None, *start = Py_None, *end = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO:calls", kwlist, &tid, &start, &end))
        return NULL;
    struct tool_window w = {0};
    PyObject *lim[2] = {start, end};
    for (int i = 0; i < 2; i++) {
        if (lim[i] == Py_None)
            continue;
        long long v = PyLong_AsLongLong(lim[i]);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        if (v < 0) {
            PyErr_SetString(PyExc_ValueError, "start and end are ns since the time base, >= 0");
            return NULL;
        }
        if (i == 0) {
            w.has_from = true;
            w.from_ns = (uint64_t)v;
        } else {
            w.has_to = true;
            w.to_ns = (uint64_t)v;
        }
    }
    CallsObject *k = calls_new(self, tid);
    if (k && (w.has_from || w.has_to)) {
        uint64_t from, to;
        tool_window_ticks(&w, self->base, self->freq, &from, &to);
        cs_set_window(&k->cs, from, to);
        k->win = true;
        k->win_from = from;
        k->win_to = to;
        if (from > 0) { /* what tool_seek_open reads of a trace */
            struct tool_trace tr = {.path = self->cpath,
                                    .c = k->c,
                                    .spool = -1,
                                    .calib = self->calib,
                                    .has_calib = self->has_calib,
                                    .calib_block = self->calib_block};
            k->seek = tool_seek_open(&tr);
        }
    }
    return (PyObject *)k;
}

/* ---- columns ----------------------------------------------------------------------------- */

/* A typed column filled in C, exported read-only through the buffer protocol (format, shape
 * and strides set, so memoryview and numpy see its type). */
typedef struct {
    PyObject ob_base; /* PyObject_HEAD */
    char *data;
    Py_ssize_t n, itemsize;
    const char *format;
} ColumnObject;

static void Column_dealloc(ColumnObject *self)
{
    free(self->data);
    PyObject_Free(self);
}

static int Column_getbuffer(ColumnObject *self, Py_buffer *view, int flags)
{
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "a column is read-only");
        view->obj = NULL;
        return -1;
    }
    view->obj = Py_NewRef(self);
    view->buf = self->data ? self->data : (void *)"";
    view->len = self->n * self->itemsize;
    view->readonly = 1;
    view->itemsize = self->itemsize;
    view->format = (flags & PyBUF_FORMAT) ? (char *)self->format : NULL;
    view->ndim = 1;
    view->shape = (flags & PyBUF_ND) ? &self->n : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? &self->itemsize : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyObject *Column_get_format(ColumnObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->format);
}

static Py_ssize_t Column_len(ColumnObject *self)
{
    return self->n;
}

struct colb {
    const char *name, *format;
    size_t isz;
    char *p;
    size_t n, cap;
};

static int colb_push(struct colb *b, const void *v)
{
    if (b->n == b->cap) {
        char *p = tool_grow(b->p, &b->cap, b->isz, 1024);
        if (!p)
            return -1;
        b->p = p;
    }
    memcpy(b->p + b->n * b->isz, v, b->isz);
    b->n++;
    return 0;
}

/* The columns as a dict name -> _Column (the buffers move into the columns); frees them. */
static PyObject *columns_dict(struct colb *cols, size_t ncols)
{
    PyObject *d = PyDict_New();
    for (size_t i = 0; i < ncols; i++) {
        ColumnObject *c = d ? PyObject_New(ColumnObject, &ColumnType) : NULL;
        if (c) {
            c->data = cols[i].p;
            c->n = (Py_ssize_t)cols[i].n;
            c->itemsize = (Py_ssize_t)cols[i].isz;
            c->format = cols[i].format;
            cols[i].p = NULL;
            if (PyDict_SetItemString(d, cols[i].name, (PyObject *)c) != 0)
                Py_CLEAR(d);
            Py_DECREF(c);
        } else {
            Py_CLEAR(d);
        }
        free(cols[i].p);
        cols[i].p = NULL;
    }
    return d;
}

static void cols_free(struct colb *cols, size_t ncols)
{
    for (size_t i = 0; i < ncols; i++)
        free(cols[i].p);
}

/* _item_columns(index=None): every item of thread `index` (the cursor's numbering), or of all
 * threads in the tools' order, as columns kind (code into KINDS), ns, tsc, func_id (0 for
 * items that are not function records), pid, tid, cpu. */
static PyObject *Trace_item_columns(TraceObject *self, PyObject *args)
{
    PyObject *index = Py_None;
    if (!PyArg_ParseTuple(args, "|O:_item_columns", &index))
        return NULL;
    if (check_open(self) != 0)
        return NULL;
    size_t one = SIZE_MAX;
    if (index != Py_None) {
        Py_ssize_t i = PyNumber_AsSsize_t(index, PyExc_OverflowError);
        if (i == -1 && PyErr_Occurred())
            return NULL;
        if (i < 0 || (size_t)i >= self->nthreads) {
            PyErr_Format(PyExc_IndexError, "no thread %zd (the trace has %zu)", i, self->nthreads);
            return NULL;
        }
        one = (size_t)i;
    }
    struct colb cols[] = {
        {"kind", "B", 1, NULL, 0, 0},    {"ns", "q", 8, NULL, 0, 0},  {"tsc", "Q", 8, NULL, 0, 0},
        {"func_id", "I", 4, NULL, 0, 0}, {"pid", "i", 4, NULL, 0, 0}, {"tid", "i", 4, NULL, 0, 0},
        {"cpu", "H", 2, NULL, 0, 0},
    };
    enum { NCOLS = sizeof cols / sizeof cols[0] };
    for (size_t k = 0; k < self->nthreads; k++) {
        size_t ti = self->order[k];
        if (one != SIZE_MAX && ti != one)
            continue;
        int rc = stf_cursor_select(self->c, ti, NULL, NULL, NULL);
        struct stf_item it;
        while (rc == STF_OK && (rc = stf_cursor_next(self->c, &it)) == STF_OK) {
            uint64_t lost;
            uint8_t kind = (uint8_t)kind_code(&it, &lost);
            int64_t ns = it.tsc ? rel_ns(self, it.tsc) : INT64_MIN;
            uint32_t id = it.kind == STF_K_FUNCTION ? it.func_id : 0;
            if (colb_push(&cols[0], &kind) || colb_push(&cols[1], &ns) ||
                colb_push(&cols[2], &it.tsc) || colb_push(&cols[3], &id) ||
                colb_push(&cols[4], &it.pid) || colb_push(&cols[5], &it.tid) ||
                colb_push(&cols[6], &it.cpu)) {
                cols_free(cols, NCOLS);
                return PyErr_NoMemory();
            }
        }
        if (rc < 0) {
            raise_cursor_error(self, self->c, rc);
            cols_free(cols, NCOLS);
            return NULL;
        }
    }
    return columns_dict(cols, NCOLS);
}

/* _call_columns(tid=None): the closed calls as calls() yields them, as columns pid, tid,
 * depth, func_id, start, duration, self (ns), start_tsc, ticks, self_ticks, nested. */
static PyObject *Trace_call_columns(TraceObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"tid", NULL};
    PyObject *tid = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:_call_columns", kwlist, &tid))
        return NULL;
    CallsObject *k = calls_new(self, tid);
    if (!k)
        return NULL;
    struct colb cols[] = {
        {"pid", "i", 4, NULL, 0, 0},
        {"tid", "i", 4, NULL, 0, 0},
        {"depth", "I", 4, NULL, 0, 0},
        {"func_id", "I", 4, NULL, 0, 0},
        {"start", "q", 8, NULL, 0, 0},
        {"duration", "Q", 8, NULL, 0, 0},
        {"self", "Q", 8, NULL, 0, 0},
        {"start_tsc", "Q", 8, NULL, 0, 0},
        {"ticks", "q", 8, NULL, 0, 0},
        {"self_ticks", "q", 8, NULL, 0, 0},
        {"nested", "?", 1, NULL, 0, 0},
        /* SLEDTRACE_ARGS: argument registers recorded, the first six (0 past nargs), rax */
        {"nargs", "B", 1, NULL, 0, 0},
        {"arg1", "Q", 8, NULL, 0, 0},
        {"arg2", "Q", 8, NULL, 0, 0},
        {"arg3", "Q", 8, NULL, 0, 0},
        {"arg4", "Q", 8, NULL, 0, 0},
        {"arg5", "Q", 8, NULL, 0, 0},
        {"arg6", "Q", 8, NULL, 0, 0},
        {"retval", "Q", 8, NULL, 0, 0},
        {"has_retval", "?", 1, NULL, 0, 0},
    };
    enum { NCOLS = sizeof cols / sizeof cols[0] };
    struct closed c;
    int r;
    while ((r = calls_next(k, &c)) == 1) {
        int64_t start = rel_ns(self, c.start);
        uint64_t dur = tool_ticks_to_ns(cs_ticks(c.dur), self->freq);
        uint64_t sf = tool_ticks_to_ns(cs_ticks(c.self), self->freq);
        if (colb_push(&cols[0], &c.pid) || colb_push(&cols[1], &c.tid) ||
            colb_push(&cols[2], &c.depth) || colb_push(&cols[3], &c.id) ||
            colb_push(&cols[4], &start) || colb_push(&cols[5], &dur) || colb_push(&cols[6], &sf) ||
            colb_push(&cols[7], &c.start) || colb_push(&cols[8], &c.dur) ||
            colb_push(&cols[9], &c.self) || colb_push(&cols[10], &c.nested) ||
            colb_push(&cols[11], &c.nargs) || colb_push(&cols[12], &c.v[0]) ||
            colb_push(&cols[13], &c.v[1]) || colb_push(&cols[14], &c.v[2]) ||
            colb_push(&cols[15], &c.v[3]) || colb_push(&cols[16], &c.v[4]) ||
            colb_push(&cols[17], &c.v[5]) || colb_push(&cols[18], &c.ret) ||
            colb_push(&cols[19], &c.has_ret)) {
            Py_XDECREF(c.args);
            Py_XDECREF(c.retval);
            PyErr_NoMemory();
            r = -1;
            break;
        }
        Py_XDECREF(c.args); /* Call objects' only */
        Py_XDECREF(c.retval);
    }
    Py_DECREF(k);
    if (r < 0) {
        cols_free(cols, NCOLS);
        return NULL;
    }
    return columns_dict(cols, NCOLS);
}

/* ---- module ------------------------------------------------------------------------------ */

static PyObject *mod_demangle(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"name", "short", NULL};
    const char *name;
    int shrt = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p:demangle", kwlist, &name, &shrt))
        return NULL;
    tool_names_default(TOOL_NAMES_FULL);
    char *d = tool_demangle(name, NULL);
    if (d && shrt) {
        char *s = tool_short_name(d);
        free(d);
        d = s;
        if (!d)
            return PyErr_NoMemory();
    }
    PyObject *r =
        PyUnicode_DecodeUTF8(d ? d : name, (Py_ssize_t)strlen(d ? d : name), "surrogateescape");
    free(d);
    return r;
}

static PyMethodDef Trace_methods[] = {
    {"close", (PyCFunction)Trace_close, METH_NOARGS,
     "Close the trace (cursors and call iterators already made keep working)."},
    {"_threads", (PyCFunction)Trace_threads, METH_NOARGS, NULL},
    {"_cursor", (PyCFunction)Trace_cursor, METH_O, NULL},
    {"name", (PyCFunction)Trace_name, METH_O,
     "name(func_id): the function's name from the sidecar (mangled), or '#id'."},
    {"ticks_to_ns", (PyCFunction)Trace_ticks_to_ns, METH_O,
     "ticks_to_ns(ticks): ticks at the trace's cycle frequency in ns, rounded as account "
     "rounds."},
    {"calls", (PyCFunction)(void (*)(void))Trace_calls, METH_VARARGS | METH_KEYWORDS,
     "calls(tid=None): iterator of closed calls (sledtrace.Call) by account's stack rule, "
     "thread after thread (main threads first), in the order they close."},
    {"_item_columns", (PyCFunction)Trace_item_columns, METH_VARARGS, NULL},
    {"_call_columns", (PyCFunction)(void (*)(void))Trace_call_columns, METH_VARARGS | METH_KEYWORDS,
     NULL},
    {NULL, NULL, 0, NULL}};

static PyObject *Trace_get_corrected(TraceObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->corrected);
}

/* The calibration: each gap (ns, as a float: fractions matter) and its spread, the clock's step
 * and how it was measured. */
static PyObject *Trace_get_calibration(TraceObject *self, void *c)
{
    (void)c;
    if (!self->has_calib)
        Py_RETURN_NONE;
    static const char *const names[STF_GAPS] = {"enter_enter", "enter_exit", "exit_enter",
                                                "exit_exit",   "enter_tail", "tail_enter"};
    double ns = self->freq ? 1e9 / (double)self->freq / 256.0 : 1.0 / 256.0;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    for (int i = 0; i < STF_GAPS; i++) {
        PyObject *pair = Py_BuildValue("(dd)", self->calib.gap[i] * ns, self->calib.spread[i] * ns);
        if (!pair || PyDict_SetItemString(d, names[i], pair) != 0) {
            Py_XDECREF(pair);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(pair);
    }
    PyObject *extra =
        Py_BuildValue("{sIsIsK}", "rounds", self->calib.rounds, "calls", self->calib.calls,
                      "step_ticks", (unsigned long long)self->calib.step);
    if (!extra || PyDict_Update(d, extra) != 0) {
        Py_XDECREF(extra);
        Py_DECREF(d);
        return NULL;
    }
    Py_DECREF(extra);
    return d;
}

static PyGetSetDef Trace_getset[] = {
    {"path", (getter)Trace_get_path, NULL, "the trace's path", NULL},
    {"freq", (getter)Trace_get_freq, NULL, "the header's cycle frequency (ticks per second)", NULL},
    {"base_tsc", (getter)Trace_get_base, NULL, "the counter value that is time 0 (ns = 0)", NULL},
    {"warnings", (getter)Trace_get_warnings, NULL,
     "lenient-mode warnings met so far (file, byte offset, message)", NULL},
    {"closed", (getter)Trace_get_closed, NULL, "True after close()", NULL},
    {"command", (getter)Trace_get_command, NULL, "the traced command line (sidecar) or None", NULL},
    {"version", (getter)Trace_get_version, NULL, "the FDR format version", NULL},
    {"corrected", (getter)Trace_get_corrected, NULL,
     "True when calls() gives corrected times (the tracer's own cost taken out)", NULL},
    {"calibration", (getter)Trace_get_calibration, NULL,
     "the tracer's cost the runtime measured (dict, ns), or None when the trace has none", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject TraceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sledtrace._sledtrace._Trace",
    .tp_basicsize = sizeof(TraceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "An opened trace (the C half of sledtrace.Trace).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Trace_init,
    .tp_dealloc = (destructor)Trace_dealloc,
    .tp_methods = Trace_methods,
    .tp_getset = Trace_getset,
};

static PyMethodDef Cursor_methods[] = {
    {"next", (PyCFunction)Cursor_next, METH_NOARGS,
     "The item after the position (moving over it), or None at the end."},
    {"prev", (PyCFunction)Cursor_prev, METH_NOARGS,
     "The item before the position (moving over it), or None at the start."},
    {"seek", (PyCFunction)Cursor_seek, METH_O,
     "seek(ns): move before the first item whose time is >= ns (an item's time: the largest "
     "timestamp of its thread up to it). Returns the new position (items before it)."},
    {"seek_tsc", (PyCFunction)Cursor_seek_tsc, METH_O, "seek_tsc(tsc): seek by counter value."},
    {"rewind", (PyCFunction)(void (*)(void))Cursor_rewind, METH_VARARGS | METH_KEYWORDS,
     "rewind(to_end=False): move before the first item, or after the last one."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Cursor_getset[] = {
    {"pid", (getter)Cursor_get_pid, NULL, "process id of the thread", NULL},
    {"tid", (getter)Cursor_get_tid, NULL, "thread id", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject CursorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sledtrace.Cursor",
    .tp_basicsize = sizeof(CursorObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A position in one thread's items (Thread.cursor()); iterating walks forward.",
    .tp_dealloc = (destructor)Cursor_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Cursor_iternext,
    .tp_methods = Cursor_methods,
    .tp_getset = Cursor_getset,
};

static PyGetSetDef Calls_getset[] = {
    {"stats", (getter)Calls_get_stats, NULL,
     "the walker's counters so far: calls, repairs, unmatched exits, gaps, gap events, open "
     "frames",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject CallsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sledtrace.Calls",
    .tp_basicsize = sizeof(CallsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Iterator of closed calls (Trace.calls()).",
    .tp_dealloc = (destructor)Calls_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Calls_iternext,
    .tp_getset = Calls_getset,
};

static PyBufferProcs Column_as_buffer = {.bf_getbuffer = (getbufferproc)Column_getbuffer};
static PySequenceMethods Column_as_sequence = {.sq_length = (lenfunc)Column_len};
static PyGetSetDef Column_getset[] = {
    {"format", (getter)Column_get_format, NULL, "struct format of an element", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sledtrace._sledtrace._Column",
    .tp_basicsize = sizeof(ColumnObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read-only typed column (buffer protocol).",
    .tp_dealloc = (destructor)Column_dealloc,
    .tp_as_buffer = &Column_as_buffer,
    .tp_as_sequence = &Column_as_sequence,
    .tp_getset = Column_getset,
};

static PyMethodDef module_methods[] = {
    {"demangle", (PyCFunction)(void (*)(void))mod_demangle, METH_VARARGS | METH_KEYWORDS,
     "demangle(name, short=False): a C++ symbol demangled (short: namespaces and name only, as "
     "account shows it); any other name as it is."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "sledtrace._sledtrace",
    .m_doc = "C half of sledtrace: trace, cursor, calls and columns.", .m_size = -1,
    .m_methods = module_methods};

PyMODINIT_FUNC PyInit__sledtrace(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    for (int i = 0; i < K_COUNT; i++) {
        kind_str[i] = PyUnicode_InternFromString(KIND_NAMES[i]);
        if (!kind_str[i])
            goto fail;
    }
    ItemType = PyStructSequence_NewType(&item_desc);
    CallType = PyStructSequence_NewType(&call_desc);
    if (!ItemType || !CallType)
        goto fail;
    TraceError = PyErr_NewExceptionWithDoc(
        "sledtrace.TraceError",
        "A trace or sidecar that cannot be read: the message names the file and, for bad bytes, "
        "their offset (attributes path and offset).",
        PyExc_OSError, NULL);
    if (!TraceError)
        goto fail;
    PyObject *kinds = PyTuple_New(K_COUNT);
    if (!kinds)
        goto fail;
    for (int i = 0; i < K_COUNT; i++)
        PyTuple_SET_ITEM(kinds, i, Py_NewRef(kind_str[i]));
    if (PyModule_AddObject(m, "KINDS", kinds) != 0) {
        Py_DECREF(kinds);
        goto fail;
    }
    if (PyType_Ready(&TraceType) < 0 || PyType_Ready(&CursorType) < 0 ||
        PyType_Ready(&CallsType) < 0 || PyType_Ready(&ColumnType) < 0)
        goto fail;
    if (PyModule_AddObjectRef(m, "_Trace", (PyObject *)&TraceType) < 0 ||
        PyModule_AddObjectRef(m, "Cursor", (PyObject *)&CursorType) < 0 ||
        PyModule_AddObjectRef(m, "Calls", (PyObject *)&CallsType) < 0 ||
        PyModule_AddObjectRef(m, "_Column", (PyObject *)&ColumnType) < 0 ||
        PyModule_AddObjectRef(m, "Item", (PyObject *)ItemType) < 0 ||
        PyModule_AddObjectRef(m, "Call", (PyObject *)CallType) < 0 ||
        PyModule_AddObjectRef(m, "TraceError", TraceError) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
