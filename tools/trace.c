/* How the analysis commands read a trace (common.h, "tool_trace"): opening it (a pipe copied to
 * a temporary file first), walking its threads one after another, item by item or function
 * records in bulk, reporting the end; and walking the threads in parallel
 * (tool_trace_parallel).
 *
 * The parallel walk. Each thread of the trace is a unit of work; up to as many worker threads
 * as the machine has processors (SLEDTRACE_JOBS=N says how many; 1: none but the calling
 * thread) take the units in order from a shared counter, each with a clone of the trace's
 * cursor (stf_cursor_clone: its own reader of the file, nothing shared), and call the
 * command's walk for each, which keeps its results apart per unit. When all are done, the
 * calling thread goes through the units in the trace's order: it prints the warnings a unit's
 * walk met (kept per unit: the first MAX_KEPT and a count), then stops at the first unit that
 * failed, else hands the unit to the command's merge. The output thus depends neither on the
 * number of workers nor on timing: warnings come out in the order, and as many as, a walk on
 * one thread prints, and merge sees the units in that order. The calling thread is a worker
 * too, and the only one that shows progress (the bytes all workers have decoded).
 * Synchronisation: the unit counter and the progress counter are relaxed atomics (nothing is
 * published through them: the counter only hands out numbers, the progress is a display); the
 * units' results are read after pthread_join, which orders every worker's writes before. */
#include "common.h"

#include "seek.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A parallel walk's shared state (see the top). */
struct par {
    struct tool_trace *t;
    tool_walk_fn walk;
    void *arg;
    size_t units;
    atomic_size_t next;          /* the next unit to take */
    atomic_uint_least64_t bytes; /* decoded by all workers, for progress */
    struct unit *u;
    atomic_uint_least64_t removed; /* the workers' tool_trace_removed (1/256 tick), read after
                                    * pthread_join: relaxed */
};

enum { MAX_KEPT = 10 };

struct unit {
    int rc;
    char err[256];
    uint64_t err_off;
    struct {
        uint64_t off;
        char msg[256];
    } kept[MAX_KEPT];
    size_t nkept;
    uint64_t warnings;
};

/* Progress: every PROGRESS_EVERY items. A part of a parallel walk adds the bytes its cursor
 * decoded since the last time to the shared count; only the calling thread's part shows it. */
static void progress(struct tool_trace *t)
{
    struct stf_reader_stats st;
    if (!t->par) {
        if (t->prog.on) {
            stf_cursor_stats(t->c, &st);
            tool_progress_set(&t->prog, t->items ? t->n : st.bytes);
        }
        return;
    }
    struct par *p = t->par;
    stf_cursor_stats(t->c, &st);
    uint64_t all =
        atomic_fetch_add_explicit(&p->bytes, st.bytes - t->par_bytes, memory_order_relaxed) +
        (st.bytes - t->par_bytes);
    t->par_bytes = st.bytes;
    if (t->par_main && p->t->prog.on)
        tool_progress_set(&p->t->prog, all);
}

const char *tool_seekable(const char *path, char *buf, size_t len, int *fd)
{
    *fd = -1;
    const char *src = strcmp(path, "-") == 0 ? "/dev/stdin" : path;
    struct stat st;
    bool known = stat(src, &st) == 0;
    if (known && S_ISREG(st.st_mode))
        return src;
    if (known && S_ISDIR(st.st_mode)) {
        tool_err("%s: %s", path, strerror(EISDIR));
        return NULL;
    }
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        tool_err("%s: %s", path, strerror(errno));
        return NULL;
    }
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s/sledtrace-input.XXXXXX", dir);
    int out = mkostemp(tmpl, O_CLOEXEC);
    if (out < 0) {
        tool_err("%s: cannot make a temporary copy in %s: %s", path, dir, strerror(errno));
        close(in);
        return NULL;
    }
    unlink(tmpl);
    static char chunk[1 << 16];
    bool ok = true;
    for (;;) {
        ssize_t k = read(in, chunk, sizeof chunk);
        if (k == 0)
            break;
        if (k < 0) {
            if (errno == EINTR)
                continue;
            tool_err("%s: %s", path, strerror(errno));
            close(in);
            close(out);
            return NULL;
        }
        for (ssize_t done = 0; ok && done < k;) {
            ssize_t w = write(out, chunk + done, (size_t)(k - done));
            if (w > 0)
                done += w;
            else if (w == 0 || errno != EINTR)
                ok = false;
        }
        if (!ok)
            break;
    }
    int e = errno;
    close(in);
    if (!ok) {
        tool_err("%s: cannot make a temporary copy in %s: %s", path, dir, strerror(e));
        close(out);
        return NULL;
    }
    *fd = out;
    snprintf(buf, len, "/proc/self/fd/%d", out);
    return buf;
}

int tool_trace_open(struct tool_trace *t, const char *path, const char *syms_opt, const char *what,
                    bool streams_stdout)
{
    *t = (struct tool_trace){.path = path, .spool = -1, .end = SIZE_MAX};
    char err[512];
    const char *src = tool_seekable(path, t->src, sizeof t->src, &t->spool);
    if (!src)
        return EXIT_BAD_TRACE;
    if (src != t->src) /* path itself, or "/dev/stdin" for "-" */
        snprintf(t->src, sizeof t->src, "%s", src == path ? "" : src);
    int rc = stf_cursor_open_warn(&t->c, src, STF_READ_LENIENT, tool_warn_cb, (void *)path, err,
                                  sizeof err);
    if (rc != STF_OK) {
        size_t n = strlen(src);
        bool named = strncmp(err, src, n) == 0; /* name the file the user gave */
        tool_err("%s%s", named ? path : "", named ? err + n : err);
        tool_trace_close(t);
        return EXIT_BAD_TRACE;
    }
    bool ok;
    t->syms = tool_load_syms(path, syms_opt, &ok);
    if (!ok) {
        tool_trace_close(t);
        return EXIT_BAD_TRACE;
    }
    t->freq = stf_cursor_header(t->c)->cycle_freq;
    t->calib_block = UINT64_MAX;
    t->has_calib = vclock_find(src, &t->calib, &t->calib_block) == 1;
    vclock_init(&t->vc, t->has_calib && !tool_raw_times ? &t->calib : NULL);
    struct stf_reader_stats st;
    stf_cursor_stats(t->c, &st);
    tool_progress_init(&t->prog, st.file_size, what, streams_stdout);
    return EXIT_OK;
}

/* --tid N naming no thread of the trace: an error, not an empty answer. */
enum { NO_SUCH_TID = -100 };

static bool has_tid(struct tool_trace *t)
{
    for (size_t i = 0; i < stf_cursor_threads(t->c); i++) {
        int32_t tid;
        if (stf_cursor_select(t->c, i, NULL, &tid, NULL) == STF_OK && tid == t->tid)
            return true;
    }
    return false;
}

/* "1234, 1235, ... (N threads)" into buf: the trace's thread ids, for the --tid error. */
static void list_tids(struct tool_trace *t, char *buf, size_t len)
{
    size_t n = stf_cursor_threads(t->c), used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 16 < len; i++) {
        int32_t tid;
        if (stf_cursor_select(t->c, i, NULL, &tid, NULL) != STF_OK)
            break;
        if (i == 8 && n > 9) {
            used += (size_t)snprintf(buf + used, len - used, ", ... (%zu threads)", n);
            break;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%" PRId32, i ? ", " : "", tid);
    }
}

/* The order tool_trace_next walks the threads in, made once: main threads (tid == pid) first,
 * then the order the trace gives (a stable split). */
static int make_order(struct tool_trace *t)
{
    if (t->order || stf_cursor_threads(t->c) == 0)
        return STF_OK;
    size_t n = stf_cursor_threads(t->c), k = 0;
    t->order = malloc(n * sizeof *t->order);
    if (!t->order)
        return STF_ERR_NOMEM;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            int32_t pid = 0, tid = 0;
            stf_cursor_select(t->c, i, &pid, &tid, NULL);
            if ((tid == pid) == (pass == 0))
                t->order[k++] = i;
        }
    return STF_OK;
}

enum { PROGRESS_EVERY = 4096 };

static int pf_next(struct tool_trace *t, struct stf_item *it);
static size_t pf_funcs(struct tool_trace *t, struct stf_func *out, size_t max,
                       const struct stf_func **run);

/* A record at tsc (as handed out) of a window's walk, the correction before it acc: the
 * window's share of the correction, and the walk's end after the first function record past the
 * window (the walker ignores the rest of the thread: callstack.h, "Windows"). */
static void win_note(struct tool_trace *t, uint64_t tsc, uint64_t acc, bool func)
{
    if (tsc > t->win_to) {
        t->over = t->over || func;
        return;
    }
    if (!t->win_in && tsc >= t->win_from) {
        t->win_in = true;
        t->acc_from = acc;
    }
    if (t->win_in)
        t->acc_to = t->vc.acc;
}

/* A window's walk of the thread just selected starts at its checkpoint (seek.h), if it has one:
 * the cursor moved to the checkpoint's block, the clock set as it was there, and the frames then
 * open to hand out first (synth_item). */
static void seek_thread(struct tool_trace *t)
{
    t->over = t->win_in = false;
    t->nsf = t->isf = 0;
    size_t block;
    uint64_t acc;
    uint8_t prev;
    const struct tool_seek_frame *f;
    size_t nf;
    if (!t->seek || !tool_seek_find(t->seek, t->cur_pid, t->cur_tid, t->win_from, t->vc.on, &block,
                                    &acc, &prev, &f, &nf))
        return;
    if (stf_cursor_goto(t->c, block) != STF_OK)
        return;
    if (t->vc.on) {
        t->vc.acc = acc;
        t->vc.prev = prev;
    }
    t->sf = f;
    t->nsf = nf;
    t->sf_step = 0;
    /* before the window: the walker moves its stack unseen (callstack.h, "Windows") */
    t->sf_tsc = t->win_from - 1;
}

/* The next of the open frames at the checkpoint: an entry, then its arguments. */
static void synth_item(struct tool_trace *t, struct stf_item *it)
{
    const struct tool_seek_frame *f = &t->sf[t->isf];
    *it = (struct stf_item){.pid = t->cur_pid, .tid = t->cur_tid, .tsc = t->sf_tsc};
    if (t->sf_step == 0) {
        it->kind = STF_K_FUNCTION;
        it->func_id = f->id;
        it->action = f->nargs ? STF_ENTER_ARGS : STF_ENTER;
    } else {
        it->kind = STF_M_CALL_ARG;
        it->value = t->sf_step == 1 ? f->arg : 0;
    }
    if (++t->sf_step > f->nargs) {
        t->sf_step = 0;
        t->isf++;
    }
}

/* The walk itself (tool_trace_next and tool_trace_funcs without prefetching). */
static int walk_next(struct tool_trace *t, struct stf_item *it)
{
    if (t->one && !t->tid_checked) {
        t->tid_checked = true;
        if (!has_tid(t))
            return NO_SUCH_TID;
    }
    if (!t->order) {
        int rc = make_order(t);
        if (rc != STF_OK)
            return rc;
    }
    for (;;) {
        if (!t->started) {
            if (t->thread >= stf_cursor_threads(t->c) || t->thread >= t->end)
                return STF_END;
            int rc = stf_cursor_select(t->c, t->order[t->thread], &t->cur_pid, &t->cur_tid, NULL);
            if (rc != STF_OK)
                return rc;
            if (t->one && t->cur_tid != t->tid) {
                t->thread++; /* another thread's: not even decoded */
                continue;
            }
            t->started = true;
            vclock_thread(&t->vc);
            if (t->win)
                seek_thread(t);
        }
        if (t->isf < t->nsf) {
            synth_item(t, it);
            return STF_OK;
        }
        int rc = t->over ? STF_END : stf_cursor_next(t->c, it);
        if (rc == STF_OK && it->block == t->calib_block)
            continue; /* the runtime's, before the program ran (vclock_find) */
        if (rc == STF_OK) {
            uint64_t acc = t->vc.acc;
            vclock_item(&t->vc, it);
            if (t->win)
                win_note(t, it->tsc, acc, it->kind == STF_K_FUNCTION);
            if (++t->n % PROGRESS_EVERY == 0)
                progress(t);
            return STF_OK;
        }
        if (rc != STF_END)
            return rc;
        t->over = false;
        t->removed += !t->win ? t->vc.acc : t->win_in ? t->acc_to - t->acc_from : 0;
        t->started = false;
        t->thread++;
    }
}

static size_t walk_funcs(struct tool_trace *t, struct stf_func *out, size_t max)
{
    if (!t->started || t->over || t->isf < t->nsf)
        return 0;
    size_t n = stf_cursor_funcs(t->c, out, max);
    if (!t->win) {
        vclock_funcs(&t->vc, out, n);
    } else {
        for (size_t i = 0; i < n; i++) { /* vclock_funcs, one at a time: the window's edges */
            uint64_t acc = t->vc.acc;
            if (t->vc.on)
                out[i].tsc = vclock_func(&t->vc, out[i].tsc, out[i].id, out[i].action);
            win_note(t, out[i].tsc, acc, true);
        }
    }
    if ((t->n + n) / PROGRESS_EVERY != t->n / PROGRESS_EVERY)
        progress(t);
    t->n += n;
    return n;
}

int tool_trace_next(struct tool_trace *t, struct stf_item *it)
{
    return t->pf ? pf_next(t, it) : walk_next(t, it);
}

size_t tool_trace_funcs(struct tool_trace *t, struct stf_func *out, size_t max)
{
    return t->pf ? pf_funcs(t, out, max, NULL) : walk_funcs(t, out, max);
}

size_t tool_trace_run(struct tool_trace *t, struct stf_func *buf, size_t max,
                      const struct stf_func **run)
{
    *run = buf;
    return t->pf ? pf_funcs(t, buf, max, run) : walk_funcs(t, buf, max);
}

const char *tool_trace_source(const struct tool_trace *t)
{
    return t->src[0] ? t->src : t->path;
}

uint64_t tool_trace_base(struct tool_trace *t)
{
    uint64_t base = UINT64_MAX;
    for (size_t i = 0; i < stf_cursor_threads(t->c); i++) {
        if (stf_cursor_select(t->c, i, NULL, NULL, NULL) != STF_OK)
            break;
        struct stf_item it;
        while (stf_cursor_next(t->c, &it) == STF_OK) {
            if (it.block == t->calib_block)
                continue;
            if (it.kind == STF_M_NEW_CPU || it.kind == STF_M_TSC_WRAP ||
                it.kind == STF_K_FUNCTION) {
                if (it.tsc < base)
                    base = it.tsc;
                break;
            }
        }
    }
    t->started = false;
    t->thread = 0;
    return base == UINT64_MAX ? 0 : base;
}

uint64_t tool_trace_extent(struct tool_trace *t, uint64_t *items)
{
    uint64_t last = 0, n = 0;
    if (t->seek) { /* counted when the index was made */
        tool_seek_extent(t->seek, &n, &last);
        t->items = n;
        t->prog.total = n;
        *items = n;
        return last;
    }
    for (size_t i = 0; i < stf_cursor_threads(t->c); i++) {
        if (stf_cursor_select(t->c, i, NULL, NULL, NULL) != STF_OK)
            break;
        struct stf_item it;
        struct stf_func fn[512];
        for (;;) {
            size_t k = stf_cursor_funcs(t->c, fn, sizeof fn / sizeof fn[0]);
            for (size_t j = 0; j < k; j++)
                if (fn[j].tsc > last)
                    last = fn[j].tsc;
            n += k;
            if (k)
                continue;
            if (stf_cursor_next(t->c, &it) != STF_OK)
                break;
            n++;
            switch (it.kind) {
            case STF_K_FUNCTION:
            case STF_M_NEW_CPU:
            case STF_M_TSC_WRAP:
            case STF_M_CUSTOM_EVENT:
            case STF_M_TYPED_EVENT:
                if (it.tsc > last)
                    last = it.tsc;
                break;
            default:
                break;
            }
        }
    }
    t->started = false;
    t->thread = 0;
    t->items = n;
    t->prog.total = n;
    *items = n;
    return last;
}

static void pf_stop(struct tool_trace *t);

int tool_trace_end(struct tool_trace *t, int rc)
{
    pf_stop(t);
    tool_progress_done(&t->prog);
    int status = EXIT_OK;
    if (rc == NO_SUCH_TID) {
        char tids[256];
        list_tids(t, tids, sizeof tids);
        tool_err("%s: no thread %" PRId32 " in this trace (its threads: %s)", t->path, t->tid,
                 tids[0] ? tids : "none");
        status = EXIT_BAD_TRACE;
    } else if (rc < 0 && t->err[0]) { /* a parallel walk's (tool_trace_parallel) */
        status = tool_report_error(t->path, rc, t->err, t->err_off);
    } else if (rc < 0) {
        uint64_t off = 0;
        const char *msg = stf_cursor_error(t->c, &off);
        status = tool_report_error(t->path, rc, msg, off);
    }
    tool_warn_summary(t->path);
    return status;
}

void tool_trace_close(struct tool_trace *t)
{
    pf_stop(t);
    if (t->par) { /* a part of a parallel walk: its cursor only is its own */
        stf_cursor_close(t->c);
        t->c = NULL;
        return;
    }
    free(t->order);
    t->order = NULL;
    tool_seek_free(t->seek);
    t->seek = NULL;
    stf_cursor_close(t->c);
    stf_syms_free(t->syms);
    if (t->spool >= 0)
        close(t->spool);
    t->c = NULL;
    t->syms = NULL;
    t->spool = -1;
}

/* ---- parallel walk -------------------------------------------------------------------------- */

static void keep_warning(void *ctx, uint64_t off, const char *msg)
{
    struct unit *u = *(struct unit **)ctx;
    if (u->nkept < MAX_KEPT) {
        u->kept[u->nkept].off = off;
        snprintf(u->kept[u->nkept].msg, sizeof u->kept[u->nkept].msg, "%s", msg);
        u->nkept++;
    }
    u->warnings++;
}

struct worker {
    struct par *p;
    struct stf_cursor *c; /* the worker's own clone, or the trace's cursor (calling thread) */
    bool main;
    struct unit *cur; /* the unit whose warnings the cursor's go to */
};

static void *work(void *arg)
{
    struct worker *w = arg;
    struct par *p = w->p;
    stf_cursor_set_warn(w->c, keep_warning, &w->cur);
    struct tool_trace sub = {.path = p->t->path,
                             .c = w->c,
                             .syms = p->t->syms,
                             .freq = p->t->freq,
                             .order = p->t->order,
                             .spool = -1,
                             .par = p,
                             .par_main = w->main,
                             .calib = p->t->calib,
                             .has_calib = p->t->has_calib,
                             .calib_block = p->t->calib_block,
                             .vc = p->t->vc,
                             .win = p->t->win,
                             .win_from = p->t->win_from,
                             .win_to = p->t->win_to,
                             .seek = p->t->seek};
    struct stf_reader_stats st;
    stf_cursor_stats(w->c, &st);
    sub.par_bytes = st.bytes;
    for (;;) {
        size_t k = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (k >= p->units)
            break;
        struct unit *u = &p->u[k];
        w->cur = u;
        sub.thread = k;
        sub.end = k + 1;
        sub.started = false;
        sub.removed = 0;
        u->rc = p->walk(p->arg, k, &sub);
        atomic_fetch_add_explicit(&p->removed, sub.removed, memory_order_relaxed);
        if (u->rc < 0) {
            const char *m = stf_cursor_error(w->c, &u->err_off);
            snprintf(u->err, sizeof u->err, "%s", m && *m ? m : stf_strerror(u->rc));
        }
    }
    return NULL;
}

static size_t jobs_wanted(void)
{
    const char *e = getenv("SLEDTRACE_JOBS");
    uint64_t n;
    if (e && tool_parse_u64(e, &n) && n >= 1)
        return n > 256 ? 256 : (size_t)n;
    /* the processors this process may run on (taskset, cgroup cpusets), not all online */
    cpu_set_t set;
    long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                            : sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 1 ? (size_t)cpus : 1;
}

int tool_trace_parallel(struct tool_trace *t, tool_walk_fn walk, tool_merge_fn merge, void *arg)
{
    size_t threads = stf_cursor_threads(t->c);
    size_t jobs = jobs_wanted();
    int rc = make_order(t);
    if (rc != STF_OK)
        return rc;
    if (t->one || threads < 2 || jobs < 2) {
        /* one unit: the whole walk, on this thread, as tool_trace_next gives it (decoded on
         * another, when there is one: tool_trace_prefetch) */
        t->thread = 0;
        t->started = false;
        tool_trace_prefetch(t);
        rc = walk(arg, 0, t);
        if (rc != STF_END)
            return rc;
        rc = merge(arg, 0);
        return rc ? rc : STF_END;
    }
    if (jobs > threads)
        jobs = threads;
    struct par p = {.t = t, .walk = walk, .arg = arg, .units = threads};
    atomic_init(&p.next, 0);
    atomic_init(&p.bytes, 0);
    atomic_init(&p.removed, 0);
    p.u = calloc(threads, sizeof *p.u);
    struct worker *w = calloc(jobs, sizeof *w);
    pthread_t *tids = calloc(jobs, sizeof *tids);
    bool *running = calloc(jobs, sizeof *running);
    if (!p.u || !w || !tids || !running) {
        free(p.u);
        free(w);
        free(tids);
        free(running);
        return STF_ERR_NOMEM;
    }
    tool_progress_set(&t->prog, 0);
    for (size_t j = 0; j < jobs; j++) {
        w[j] = (struct worker){.p = &p, .c = t->c, .main = j == 0};
        if (j == 0 || stf_cursor_clone(&w[j].c, t->c) != STF_OK) {
            w[j].c = NULL;
            continue; /* the calling thread, or no clone: fewer workers */
        }
        running[j] = pthread_create(&tids[j], NULL, work, &w[j]) == 0;
    }
    w[0].c = t->c;
    work(&w[0]);
    for (size_t j = 1; j < jobs; j++) {
        if (running[j])
            pthread_join(tids[j], NULL); /* orders the worker's writes before what follows */
        stf_cursor_close(w[j].c);        /* one never started left its units to the others */
    }
    t->removed += atomic_load_explicit(&p.removed, memory_order_relaxed);
    stf_cursor_set_warn(t->c, tool_warn_cb, (void *)t->path);
    rc = STF_END;
    for (size_t k = 0; k < threads && rc == STF_END; k++) {
        struct unit *u = &p.u[k];
        for (size_t i = 0; i < u->nkept; i++)
            tool_warn_cb((void *)t->path, u->kept[i].off, u->kept[i].msg);
        tool_warn_more(u->warnings - u->nkept);
        if (u->rc < 0) {
            snprintf(t->err, sizeof t->err, "%s", u->err);
            t->err_off = u->err_off;
        }
        if (u->rc != STF_END)
            rc = u->rc;
        else if ((rc = merge(arg, k)) == 0)
            rc = STF_END;
    }
    free(p.u);
    free(w);
    free(tids);
    free(running);
    return rc;
}

/* ---- prefetch: decoding on a thread of its own ---------------------------------------------- */
/* A walk of one thread of the trace (or of --tid) keeps one processor busy; the decoding can
 * run ahead on another. The decoding thread walks the cursor as walk_next and walk_funcs do
 * and fills chunks: entries (a run of function records, an item with its payload copied, a
 * warning, the end with its status) in the order the walk met them, runs of function records
 * in an array. The calling thread takes the chunks in order and gives their entries out as
 * tool_trace_next / tool_trace_funcs, printing each warning where the walk met it, so its
 * output is what the walk without prefetching gives. PF_CHUNKS chunks of bounded size (an
 * arena grows to the largest payload): memory does not grow with the trace. Handing a chunk
 * over takes the mutex; a side that finds no chunk waits on the condition variable. */
enum { PF_CHUNKS = 3, PF_FUNCS = 32768, PF_ENTRIES = 1024, PF_ARENA = 16384 };
enum { E_FUNCS, E_ITEM, E_WARN, E_END };

struct pf_entry {
    int type;
    int rc;             /* E_END */
    uint32_t n;         /* E_FUNCS: records */
    int32_t pid, tid;   /* E_FUNCS */
    size_t pay;         /* E_ITEM: payload, E_WARN: message, at this offset of the arena */
    uint64_t off;       /* E_WARN */
    struct stf_item it; /* E_ITEM */
};

struct pf_chunk {
    struct pf_entry *e;
    size_t ne, cape;
    struct stf_func f[PF_FUNCS];
    size_t nf;
    char *arena;
    size_t alen, capa;
    uint64_t bytes; /* the cursor's bytes read when the chunk was handed over (progress) */
    bool nomem;
};

struct pf {
    struct tool_trace pt; /* the decoding thread's walk (the cursor is t's) */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct pf_chunk ch[PF_CHUNKS];
    size_t head, tail; /* chunks handed over, chunks given back (under mu) */
    bool stop;         /* the calling thread wants no more (under mu) */
    struct pf_chunk *fill;
    /* the calling thread's position: chunk cur (NULL: none yet), entry ei, records taken of a
     * run of function records, records taken of the chunk's array */
    struct pf_chunk *cur;
    size_t ei, taken, fi;
};

static struct pf_entry *pf_add(struct pf_chunk *c)
{
    if (c->ne == c->cape) {
        size_t cap = c->cape;
        struct pf_entry *n = tool_grow(c->e, &cap, sizeof *n, PF_ENTRIES);
        if (!n) {
            c->nomem = true;
            return NULL;
        }
        c->e = n;
        c->cape = cap;
    }
    memset(&c->e[c->ne], 0, sizeof c->e[c->ne]);
    return &c->e[c->ne++];
}

/* n bytes of src into the arena; its offset, or SIZE_MAX when out of memory. */
static size_t pf_keep(struct pf_chunk *c, const void *src, size_t n)
{
    if (c->alen + n > c->capa) {
        size_t cap = c->capa ? c->capa : PF_ARENA;
        while (cap < c->alen + n)
            cap *= 2;
        char *a = realloc(c->arena, cap);
        if (!a) {
            c->nomem = true;
            return SIZE_MAX;
        }
        c->arena = a;
        c->capa = cap;
    }
    if (n)
        memcpy(c->arena + c->alen, src, n);
    c->alen += n;
    return c->alen - n;
}

static void pf_warn(void *ctx, uint64_t off, const char *msg)
{
    struct pf *p = ctx;
    struct pf_entry *e = pf_add(p->fill);
    size_t at = pf_keep(p->fill, msg, strlen(msg) + 1);
    if (e && at != SIZE_MAX) {
        e->type = E_WARN;
        e->off = off;
        e->pay = at;
    } else if (e) {
        p->fill->ne--;
    }
}

static void *pf_produce(void *arg)
{
    struct pf *p = arg;
    bool ended = false;
    for (size_t k = 0; !ended; k++) {
        pthread_mutex_lock(&p->mu);
        while (!p->stop && k - p->tail >= PF_CHUNKS)
            pthread_cond_wait(&p->cv, &p->mu);
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        struct pf_chunk *c = &p->ch[k % PF_CHUNKS];
        c->ne = c->nf = c->alen = 0;
        c->nomem = false;
        p->fill = c;
        while (!ended && c->nf < PF_FUNCS && c->ne < PF_ENTRIES && c->alen < PF_ARENA) {
            size_t n = walk_funcs(&p->pt, c->f + c->nf, PF_FUNCS - c->nf);
            struct pf_entry *e = pf_add(c);
            if (!e)
                break;
            if (n) {
                *e = (struct pf_entry){
                    .type = E_FUNCS, .n = (uint32_t)n, .pid = p->pt.cur_pid, .tid = p->pt.cur_tid};
                c->nf += n;
                continue;
            }
            c->ne--; /* not a run: the warnings the next call gives go before its item */
            struct stf_item it;
            int rc = walk_next(&p->pt, &it);
            if (!(e = pf_add(c)))
                break;
            if (rc != STF_OK) {
                *e = (struct pf_entry){.type = E_END, .rc = rc};
                ended = true;
                break;
            }
            size_t at = pf_keep(c, it.payload, it.payload_len);
            if (at == SIZE_MAX)
                break;
            e->type = E_ITEM;
            e->it = it;
            e->pay = at;
        }
        if (c->nomem && !ended) { /* out of memory: the walk ends here, as a reading error */
            c->ne = 0;
            struct pf_entry *e = pf_add(c);
            if (e)
                *e = (struct pf_entry){.type = E_END, .rc = STF_ERR_NOMEM};
            ended = true;
        }
        struct stf_reader_stats st;
        stf_cursor_stats(p->pt.c, &st);
        c->bytes = st.bytes;
        pthread_mutex_lock(&p->mu);
        p->head = k + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* The calling thread's current entry (moving to the next chunk when one is used up). */
static struct pf_entry *pf_entry(struct tool_trace *t)
{
    struct pf *p = t->pf;
    if (p->cur && p->ei < p->cur->ne)
        return &p->cur->e[p->ei];
    pthread_mutex_lock(&p->mu);
    if (p->cur) { /* used up: give it back */
        p->tail++;
        pthread_cond_broadcast(&p->cv);
    }
    while (p->head == p->tail)
        pthread_cond_wait(&p->cv, &p->mu);
    p->cur = &p->ch[p->tail % PF_CHUNKS];
    pthread_mutex_unlock(&p->mu);
    p->ei = p->taken = p->fi = 0;
    tool_progress_set(&t->prog, t->items ? t->n : p->cur->bytes);
    return p->cur->ne ? &p->cur->e[0] : pf_entry(t);
}

/* With run, the records are not copied: *run points at them in the chunk (valid until the
 * next call). */
static size_t pf_funcs(struct tool_trace *t, struct stf_func *out, size_t max,
                       const struct stf_func **run)
{
    struct pf *p = t->pf;
    for (;;) {
        struct pf_entry *e = pf_entry(t);
        if (e->type == E_WARN) {
            tool_warn_cb((void *)t->path, e->off, p->cur->arena + e->pay);
            p->ei++;
            continue;
        }
        if (e->type != E_FUNCS)
            return 0;
        size_t n = e->n - p->taken < max ? e->n - p->taken : max;
        if (run)
            *run = p->cur->f + p->fi;
        else
            memcpy(out, p->cur->f + p->fi, n * sizeof *out);
        p->fi += n;
        p->taken += n;
        if (p->taken == e->n) {
            p->ei++;
            p->taken = 0;
        }
        t->cur_pid = e->pid;
        t->cur_tid = e->tid;
        t->n += n;
        return n;
    }
}

static int pf_next(struct tool_trace *t, struct stf_item *it)
{
    struct pf *p = t->pf;
    for (;;) {
        struct pf_entry *e = pf_entry(t);
        switch (e->type) {
        case E_WARN:
            tool_warn_cb((void *)t->path, e->off, p->cur->arena + e->pay);
            p->ei++;
            continue;
        case E_END:
            return e->rc;
        case E_FUNCS: { /* asked for as an item: the fields a function record's walk uses */
            const struct stf_func *f = &p->cur->f[p->fi++];
            *it = (struct stf_item){.kind = STF_K_FUNCTION,
                                    .pid = e->pid,
                                    .tid = e->tid,
                                    .tsc = f->tsc,
                                    .func_id = f->id,
                                    .action = f->action};
            if (++p->taken == e->n) {
                p->ei++;
                p->taken = 0;
            }
            t->cur_pid = e->pid;
            t->cur_tid = e->tid;
            t->n++;
            return STF_OK;
        }
        default:
            *it = e->it;
            it->payload = it->payload_len ? (const uint8_t *)p->cur->arena + e->pay : NULL;
            p->ei++;
            t->cur_pid = it->pid;
            t->cur_tid = it->tid;
            t->n++;
            return STF_OK;
        }
    }
}

void tool_trace_prefetch(struct tool_trace *t)
{
    if (t->pf || t->par || jobs_wanted() < 2)
        return;
    struct pf *p = calloc(1, sizeof *p);
    if (!p)
        return; /* no prefetching: the walk is the same */
    p->pt = *t;
    p->pt.prog.on = false; /* the calling thread shows progress */
    if (!t->order && make_order(t) != STF_OK) {
        free(p);
        return;
    }
    p->pt.order = t->order;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    stf_cursor_set_warn(t->c, pf_warn, p);
    if (pthread_create(&p->th, NULL, pf_produce, p) != 0) {
        stf_cursor_set_warn(t->c, tool_warn_cb, (void *)t->path);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return;
    }
    t->pf = p;
}

/* Ends the decoding thread (where it is) and takes back the cursor. */
static void pf_stop(struct tool_trace *t)
{
    struct pf *p = t->pf;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL); /* orders the thread's last writes (the cursor) before ours */
    t->tid_checked = p->pt.tid_checked;
    t->removed += p->pt.removed;
    stf_cursor_set_warn(t->c, tool_warn_cb, (void *)t->path);
    for (size_t i = 0; i < PF_CHUNKS; i++) {
        free(p->ch[i].e);
        free(p->ch[i].arena);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
    t->pf = NULL;
}
