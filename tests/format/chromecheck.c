/* See chromecheck.h. */
#include "chromecheck.h"

#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ev {
    double ts, dur;  /* as written */
    double beg, end; /* as the viewer computes them */
    size_t idx;      /* file order */
};

struct evs {
    int32_t pid, tid;
    struct ev *e;
    size_t n, cap;
};

struct cc_thread *cc_thread_of(struct cc_result *r, int32_t pid, int32_t tid)
{
    for (size_t i = 0; i < r->nt; i++)
        if (r->t[i].pid == pid && r->t[i].tid == tid)
            return &r->t[i];
    cr_assert_lt(r->nt, sizeof r->t / sizeof r->t[0], "too many threads");
    struct cc_thread *t = &r->t[r->nt++];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->tid = tid;
    return t;
}

/* The number after "key": in line (before its end), parsed with strtod. */
static double field(const char *line, const char *end, const char *key)
{
    const char *p = strstr(line, key);
    cr_assert(p && p < end, "no %s in %.*s", key, (int)(end - line), line);
    char *stop;
    double v = strtod(p + strlen(key), &stop);
    cr_assert(stop != p + strlen(key), "%s is not a number in %.*s", key, (int)(end - line), line);
    return v;
}

static int by_start(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->beg != y->beg)
        return x->beg < y->beg ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One thread's events, with the ends computed one way; counts calls per depth into out. */
static void check_thread(struct evs *t, bool rebased, struct cc_thread *out)
{
    const char *how = rebased ? "(ts - first) + dur" : "ts + dur";
    double first = t->e[0].ts;
    for (size_t i = 1; i < t->n; i++)
        if (t->e[i].ts < first)
            first = t->e[i].ts;
    double *v = malloc(2 * t->n * sizeof *v);
    cr_assert(v);
    for (size_t i = 0; i < t->n; i++) {
        struct ev *e = &t->e[i];
        e->beg = rebased ? e->ts - first : e->ts;
        e->end = e->beg + e->dur;
        cr_assert(e->end > e->beg, "thread %d: call at ts %.17g dur %.17g ends at %.17g (%s)",
                  t->tid, e->ts, e->dur, e->end, how);
        v[2 * i] = e->beg;
        v[2 * i + 1] = e->end;
    }
    qsort(v, 2 * t->n, sizeof *v, by_value);
    for (size_t i = 1; i < 2 * t->n; i++)
        cr_assert(v[i] != v[i - 1], "thread %d: two starts/ends at %.17g (%s)", t->tid, v[i], how);
    free(v);

    qsort(t->e, t->n, sizeof *t->e, by_start);
    struct ev **st = malloc(t->n * sizeof *st);
    cr_assert(st);
    size_t sp = 0;
    memset(out, 0, sizeof *out);
    out->pid = t->pid;
    out->tid = t->tid;
    for (size_t i = 0; i < t->n; i++) {
        struct ev *e = &t->e[i];
        while (sp && e->beg >= st[sp - 1]->end)
            sp--; /* e starts at or after the end of the call on top: that one is over */
        if (sp)
            cr_assert(e->end <= st[sp - 1]->end,
                      "thread %d: call [ts %.17g, dur %.17g] ends at %.17g after its parent "
                      "[ts %.17g, dur %.17g] at %.17g (%s)",
                      t->tid, e->ts, e->dur, e->end, st[sp - 1]->ts, st[sp - 1]->dur,
                      st[sp - 1]->end, how);
        out->depth[sp < CC_DEPTHS ? sp : CC_DEPTHS - 1]++;
        out->calls++;
        st[sp++] = e;
    }
    free(st);
}

void cc_check(const char *path, struct cc_result *out)
{
    memset(out, 0, sizeof *out);
    char *s = tr_slurp(path);
    struct evs th[16];
    size_t nth = 0;
    size_t idx = 0;
    for (char *l = s; *l;) {
        char *end = strchr(l, '\n');
        if (!end)
            end = l + strlen(l);
        if (*l == '{' && strncmp(l, "{\"traceEvents\"", 14) != 0) {
            out->events++;
            /* Chrome DevTools leaves an event at ts 0 out of the trace's time range */
            double ts = field(l, end, "\"ts\":");
            cr_assert(ts > 0, "event at ts %.17g: %.*s", ts, (int)(end - l), l);
            if (strncmp(l, "{\"ph\":\"X\"", 9) == 0) {
                int32_t pid = (int32_t)field(l, end, "\"pid\":");
                int32_t tid = (int32_t)field(l, end, "\"tid\":");
                struct ev e = {field(l, end, "\"ts\":"), field(l, end, "\"dur\":"), 0, 0, idx++};
                size_t i = 0;
                while (i < nth && !(th[i].pid == pid && th[i].tid == tid))
                    i++;
                if (i == nth) {
                    cr_assert_lt(nth, sizeof th / sizeof th[0]);
                    th[nth++] = (struct evs){.pid = pid, .tid = tid};
                }
                struct evs *t = &th[i];
                if (t->n == t->cap) {
                    t->cap = t->cap ? 2 * t->cap : 256;
                    t->e = realloc(t->e, t->cap * sizeof *t->e);
                    cr_assert(t->e);
                }
                t->e[t->n++] = e;
                double last = e.ts + e.dur;
                if (idx == 1 || e.ts < out->first)
                    out->first = e.ts;
                if (idx == 1 || last > out->last)
                    out->last = last;
            }
        }
        l = *end ? end + 1 : end;
    }
    free(s);
    for (size_t i = 0; i < nth; i++) {
        struct cc_thread plain, rebased;
        check_thread(&th[i], false, &plain);
        check_thread(&th[i], true, &rebased);
        cr_assert(memcmp(plain.depth, rebased.depth, sizeof plain.depth) == 0,
                  "thread %d: the depths differ with the rebased arithmetic", th[i].tid);
        *cc_thread_of(out, plain.pid, plain.tid) = plain;
        free(th[i].e);
    }
}

void cc_expect(const char *what, const struct cc_result *got, const struct cc_result *want)
{
    cr_assert_eq(got->nt, want->nt, "%s: %zu threads with calls, want %zu", what, got->nt,
                 want->nt);
    for (size_t i = 0; i < want->nt; i++) {
        const struct cc_thread *w = &want->t[i], *g = NULL;
        for (size_t j = 0; j < got->nt; j++)
            if (got->t[j].pid == w->pid && got->t[j].tid == w->tid)
                g = &got->t[j];
        cr_assert(g, "%s: no calls of thread %d", what, w->tid);
        cr_assert_eq(g->calls, w->calls, "%s: thread %d: %llu calls, want %llu", what, w->tid,
                     (unsigned long long)g->calls, (unsigned long long)w->calls);
        for (int d = 0; d < CC_DEPTHS; d++)
            cr_assert_eq(g->depth[d], w->depth[d],
                         "%s: thread %d: %llu calls at depth %d, want %llu", what, w->tid,
                         (unsigned long long)g->depth[d], d, (unsigned long long)w->depth[d]);
    }
    if (!want->last)
        return;
    cr_assert(got->first >= want->first - 0.0005 && got->first <= want->first + 0.0005,
              "%s: first call at %.17g us, want %.17g", what, got->first, want->first);
    cr_assert(got->last >= want->last - 0.0005 && got->last <= want->last + 0.005,
              "%s: last call ends at %.17g us, want %.17g", what, got->last, want->last);
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

void cc_rounding_trace(struct tg *g, struct cc_result *want)
{
    static const uint32_t gaps[] = {0, 0, 1, 1, 2, 3, 26, 27, 2596, 25961}; /* ticks */
    const uint64_t base = 1000000000;
    memset(want, 0, sizeof *want);
    tg_init(g, 5, 2596118422ull, 1 << 20);
    uint64_t x = 2439052, first = UINT64_MAX, last = 0;
    for (int t = 0; t < 3; t++) {
        int32_t tid = 101 + t;
        struct cc_thread *w = cc_thread_of(want, 9, tid);
        /* thread 101's block starts at the base; its first call, like the others', comes
         * 6332066 ticks (2439.052 us) later */
        tg_block_begin(g, tid, 9, (uint16_t)t, t ? base + 6332000 + (uint64_t)t : base);
        uint64_t tsc = base + 6332066 + 3 * (uint64_t)t;
        uint32_t st[16];
        size_t d = 0;
        for (int i = 0; i < 400 || d == 0; i++) {
            uint64_t r = lcg(&x);
            tsc += gaps[r % 10];
            if (t == 1 && i == 200) { /* a CPU change: the counter steps back 5000 ticks */
                tsc -= 5000;
                tg_new_cpu(g, 7, tsc);
            }
            if (d == 0 || (d < 12 && (r >> 8) % 2 == 0)) {
                uint32_t id = 1 + (uint32_t)((r >> 12) % 5);
                bool args = (r >> 16) % 7 == 0;
                tg_func(g, id, args ? STF_ENTER_ARGS : STF_ENTER, tsc);
                if (tsc < first)
                    first = tsc;
                if (args)
                    tg_call_arg(g, r);
                w->depth[d]++;
                w->calls++;
                st[d++] = id;
            } else {
                d--;
                tg_func(g, st[d], (r >> 20) % 4 == 0 ? STF_TAIL_EXIT : STF_EXIT, tsc);
            }
            if ((r >> 24) % 29 == 0)
                tg_custom(g, tsc, "ev", 2);
            if (tsc > last)
                last = tsc;
        }
        tg_block_end(g);
    }
    want->first = 1 + (double)((first - base) * 1000000.0L / 2596118422.0L);
    want->last = 1 + (double)((last - base) * 1000000.0L / 2596118422.0L);
}

void cc_shapes_trace(struct tg *g, struct cc_result *want)
{
    memset(want, 0, sizeof *want);
    tg_init(g, 5, 1000000000, 1 << 20);
    /* thread 1: main(1), f(2), #3, #4; the depth of each call in a comment */
    tg_block_begin(g, 1, 5, 0, 1000);
    tg_func(g, 1, STF_ENTER, 1000); /* main 0 */
    tg_func(g, 2, STF_ENTER, 1000); /* f 1: length 0, with a child of length 0 */
    tg_func(g, 3, STF_ENTER, 1000); /* #3 2 */
    tg_func(g, 3, STF_EXIT, 1000);
    tg_func(g, 2, STF_EXIT, 1000);
    tg_func(g, 2, STF_ENTER, 1010); /* f 1 */
    tg_func(g, 2, STF_EXIT, 1020);
    tg_func(g, 2, STF_ENTER, 1020); /* f 1: starts where its sibling ends */
    tg_func(g, 4, STF_ENTER, 1030); /* #4 2: repaired, ends with its parent */
    tg_func(g, 2, STF_EXIT, 1040);
    tg_func(g, 3, STF_ENTER, 1040); /* #3 1: length 0, where its sibling ends */
    tg_func(g, 3, STF_TAIL_EXIT, 1040);
    tg_func(g, 2, STF_ENTER, 1050); /* f 1: the counter steps back 5 ticks inside it */
    tg_new_cpu(g, 1, 1045);
    tg_func(g, 2, STF_EXIT, 1048);
    tg_func(g, 1, STF_EXIT, 1100);
    tg_func(g, 1, STF_ENTER, 1200); /* main 0: open at the end */
    tg_func(g, 2, STF_ENTER, 1300); /* f 1: entered by the thread's last records, */
    tg_func(g, 4, STF_ENTER, 1300); /* #4 2: both of length 0 at main's end */
    tg_block_end(g);
    struct cc_thread *w = cc_thread_of(want, 5, 1);
    w->calls = 11;
    w->depth[0] = 2;
    w->depth[1] = 6;
    w->depth[2] = 3;
    /* thread 2: main and f open at a loss marker (closed at f's enter: f has length 0 at main's
     * end), then #3 enters at that same tick */
    tg_block_begin(g, 2, 5, 2, 2000);
    tg_func(g, 1, STF_ENTER, 2000); /* main 0 */
    tg_func(g, 2, STF_ENTER, 2010); /* f 1 */
    tg_block_end(g);
    tg_block_begin(g, 2, 5, 2, 2010);
    uint8_t loss[STF_LOSS_SIZE];
    stf_encode_loss(loss, 3);
    tg_raw(g, loss, sizeof loss);
    tg_func(g, 3, STF_ENTER, 2010); /* #3 0 */
    tg_func(g, 3, STF_EXIT, 2030);
    tg_block_end(g);
    w = cc_thread_of(want, 5, 2);
    w->calls = 3;
    w->depth[0] = 2;
    w->depth[1] = 1;
    want->first = 1;        /* thread 1's main at the base */
    want->last = 1 + 1.030; /* thread 2's #3 */
}

void cc_span_trace(struct tg *g, struct cc_result *want, uint64_t span)
{
    const uint64_t base = 1000;
    memset(want, 0, sizeof *want);
    tg_init(g, 5, 1000000000, 1 << 20);
    tg_block_begin(g, 1, 5, 0, base);
    tg_func(g, 1, STF_ENTER, base);     /* main 0 */
    tg_func(g, 2, STF_ENTER, base + 1); /* f 1 */
    tg_func(g, 2, STF_EXIT, base + 1);
    tg_func(g, 1, STF_EXIT, base + 2);
    uint64_t t = base + span - 3;
    tg_func(g, 1, STF_ENTER, t); /* main 0 */
    tg_func(g, 2, STF_ENTER, t); /* f 1 */
    tg_func(g, 2, STF_EXIT, t + 1);
    tg_func(g, 2, STF_ENTER, t + 1); /* f 1 */
    tg_func(g, 2, STF_EXIT, t + 2);
    tg_func(g, 1, STF_EXIT, t + 2);
    tg_func(g, 3, STF_ENTER, t + 3); /* #3 0, open at the end */
    tg_block_end(g);
    struct cc_thread *w = cc_thread_of(want, 5, 1);
    w->calls = 6;
    w->depth[0] = 3;
    w->depth[1] = 3;
    want->first = 1;
    want->last = 1 + (double)span / 1000;
}

/* The checked-in real traces: what `sledtrace stack --tid T --format folded --by count` counts per
 * stack (real-lossy: and the two frames open at its loss marker, main and burst), and where their
 * calls start and end (`sledtrace replay`). */
static void real_mt(struct cc_result *w)
{
    static const uint64_t worker[] = {1, 1, 2, 4, 8, 8, 2};
    struct cc_thread *t = cc_thread_of(w, 14223, 14223);
    t->calls = 3;
    t->depth[0] = 1;
    t->depth[1] = 2;
    for (int32_t tid = 14225; tid <= 14226; tid++) {
        t = cc_thread_of(w, 14223, tid);
        t->calls = 26;
        memcpy(t->depth, worker, sizeof worker);
    }
    w->first = 1;
    w->last = 1 + 1486.209;
}

static void real_events(struct cc_result *w)
{
    static const uint64_t main_thread[] = {1, 27, 11, 11, 7};
    struct cc_thread *t = cc_thread_of(w, 31981, 31981);
    t->calls = 57;
    memcpy(t->depth, main_thread, sizeof main_thread);
    t = cc_thread_of(w, 31981, 31983);
    t->calls = 7;
    t->depth[0] = 1;
    t->depth[1] = 6;
    w->first = 1;
    w->last = 1 + 945.621;
}

static void real_lossy(struct cc_result *w)
{
    struct cc_thread *t = cc_thread_of(w, 31991, 31991);
    t->calls = 508;
    t->depth[0] = 6; /* main, 5 x after */
    t->depth[1] = 1; /* burst */
    t->depth[2] = 501;
    w->first = 1;
    w->last = 1 + 50217.356;
}

/* g with the runtime's calibration block after its header (format/stf.h, STF_TYPED_CALIB): every
 * gap 7 ticks, so that the shapes trace's calls of 0 and 10 ns come out below zero once
 * corrected, and the export must still nest them. */
static void add_calibration(struct tg *g)
{
    struct tg c;
    tg_init(&c, 5, 1000000000, 1 << 20);
    tg_block_begin(&c, 1, 5, 0, 900);
    struct stf_calib k = {.version = STF_CALIB_VERSION, .rounds = 9, .calls = 64, .step = 1};
    for (int i = 0; i < STF_GAPS; i++) {
        k.gap[i] = 7 * 256;
        k.spread[i] = 64;
    }
    uint8_t p[STF_CALIB_PAYLOAD];
    stf_encode_calib(p, &k);
    tg_typed(&c, 900, STF_TYPED_CALIB, p, sizeof p);
    tg_block_end(&c);
    size_t n = c.len - STF_HEADER_SIZE;
    uint8_t *b = realloc(g->buf, g->len + n);
    cr_assert(b);
    memmove(b + STF_HEADER_SIZE + n, b + STF_HEADER_SIZE, g->len - STF_HEADER_SIZE);
    memcpy(b + STF_HEADER_SIZE, c.buf + STF_HEADER_SIZE, n);
    g->buf = b;
    g->len += n;
    g->cap = g->len;
    tg_free(&c);
}

char *cc_case(int i, struct cc_result *want, const char **name)
{
    static const char *const names[CC_CASES] = {"rounding",   "shapes",   "30 days",
                                                "2^63 ticks", "real-mt",  "real-events",
                                                "real-lossy", "corrected"};
    cr_assert(i >= 0 && i < CC_CASES);
    *name = names[i];
    memset(want, 0, sizeof *want);
    char *trace = NULL, data[1024];
    const char *path = data;
    if (i < 4 || i == 7) {
        struct tg g;
        if (i == 7) {
            cc_shapes_trace(&g, want);
            add_calibration(&g);
            want->last = 0; /* corrected: the calls end earlier than the raw times say */
        } else if (i == 0)
            cc_rounding_trace(&g, want);
        else if (i == 1)
            cc_shapes_trace(&g, want);
        else if (i == 2)
            cc_span_trace(&g, want, 30 * 86400 * 1000000000ull);
        else {
            cc_span_trace(&g, want, 1ull << 63);
            want->last = 0; /* no range: a coarse grid */
        }
        trace = tr_write_trace(&g, true);
        tg_free(&g);
        path = trace;
    } else {
        const char *dir = getenv("SLEDTRACE_DATA");
        cr_assert(dir && *dir, "SLEDTRACE_DATA not set");
        snprintf(data, sizeof data, "%s/%s.fdr", dir, names[i]);
        if (i == 4)
            real_mt(want);
        else if (i == 5)
            real_events(want);
        else
            real_lossy(want);
    }
    char *json = tg_tmpname(".json");
    const char *argv[] = {tr_bin(), "convert", path, "--format", "chrome", "-o", json, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "%s: convert failed: %s", names[i], r.e);
    tr_out_free(&r);
    if (trace)
        tr_remove_trace(trace);
    return json;
}
