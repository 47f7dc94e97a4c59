/* ucontext coroutines (issue 23, item 12): coroprog.c switches between main's context and three
 * coroutines with swapcontext, setcontext, getcontext and a coroutine function returning to its
 * uc_link. The runtime records each switch (STF_TYPED_CONTEXT); the tools keep one call stack
 * per context.
 *
 * Checked, exactly:
 *  - the trace itself, read strictly here with one stack per context as the events say: 26
 *    switches (22 swapcontext, 2 setcontext, 2 returns to uc_link, no correction) among 4
 *    contexts, each event's `from` the context running, every exit the innermost call of its
 *    context, every stack empty at the end, each function's calls as the program counts them;
 *  - `sledtrace account`: every count, no repair, unmatched exit or unfinished frame;
 *  - `sledtrace stack --by count`: the call tree, stack by stack (no function of one context is
 *    a callee of another's: before the runtime recorded switches, co_a sat under
 *    scheduler;resume and 12 exits were repairs);
 *  - `sledtrace replay`: a "-- context N --" line where each context resumes, nothing repaired;
 *  - `sledtrace convert --format chrome`: each coroutine a track of its own (tid INT32_MAX - N),
 *    every track's calls nesting as viewers read them (chromecheck.c), calls per depth;
 *  - `sledtrace dump --verify` and llvm-xray 14 (fdr-dump --verify, convert, account -k) read
 *    the trace. llvm-xray knows one stack per thread: its account counts are not checked.
 *
 * meson passes E2E_DIR, E2E_PRELOAD, E2E_SLEDTRACE and E2E_LLVM_XRAY. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "chromecheck.h"
#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

enum { MAX_CTX = 8, MAX_DEPTH = 64 };

/* What the trace says, read with one stack per context. */
struct coro_read {
    uint64_t ids[MAX_CTX];
    uint32_t st[MAX_CTX][MAX_DEPTH];
    size_t depth[MAX_CTX];
    size_t nctx;
    long switches, how[5];
    struct {
        char name[64];
        long enter, exit;
    } f[32];
    int nf;
    char error[256];
};

static size_t ctx_slot(struct coro_read *c, uint64_t id)
{
    for (size_t i = 0; i < c->nctx; i++)
        if (c->ids[i] == id)
            return i;
    cr_assert_lt(c->nctx, MAX_CTX, "more than %d contexts", MAX_CTX);
    c->ids[c->nctx] = id;
    return c->nctx++;
}

static void read_coro(const char *trace, struct coro_read *c)
{
    memset(c, 0, sizeof *c);
    char *sp = stf_syms_path_for(trace);
    struct stf_syms *syms = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&syms, sp, err, sizeof err), STF_OK, "%s", err);
    free(sp);
    struct stf_reader *r = NULL;
    int rc = stf_reader_open(&r, trace, STF_READ_STRICT);
    cr_assert_eq(rc, STF_OK);
    size_t cur = SIZE_MAX; /* the thread's first context: named by the first switch's `from` */
    uint32_t pre[MAX_DEPTH];
    size_t npre = 0;
    struct stf_item it;
    while ((rc = stf_reader_next(r, &it)) == STF_OK) {
        uint64_t to, from;
        uint32_t how;
        if (it.kind == STF_M_TYPED_EVENT &&
            stf_decode_context(it.event_type, it.payload, it.payload_len, &to, &from, &how)) {
            c->switches++;
            cr_assert(how >= 1 && how <= 4, "switch kind %u", how);
            c->how[how]++;
            size_t f = ctx_slot(c, from);
            if (cur == SIZE_MAX) {
                memcpy(c->st[f], pre, npre * sizeof *pre);
                c->depth[f] = npre;
            } else if (f != cur && !c->error[0]) {
                snprintf(c->error, sizeof c->error,
                         "offset %llu: switch from %llu, but %llu is running",
                         (unsigned long long)it.offset, (unsigned long long)from,
                         (unsigned long long)c->ids[cur]);
            }
            cur = ctx_slot(c, to);
            continue;
        }
        if (it.kind != STF_K_FUNCTION || stf_tracer_name(it.func_id))
            continue;
        char buf[32];
        const char *name = stf_syms_name(syms, it.func_id, buf, sizeof buf);
        int fi = 0;
        while (fi < c->nf && strcmp(c->f[fi].name, name) != 0)
            fi++;
        if (fi == c->nf) {
            cr_assert_lt(c->nf, 32);
            snprintf(c->f[c->nf++].name, sizeof c->f[0].name, "%s", name);
        }
        uint32_t *st = cur == SIZE_MAX ? pre : c->st[cur];
        size_t *n = cur == SIZE_MAX ? &npre : &c->depth[cur];
        if (it.action == STF_ENTER || it.action == STF_ENTER_ARGS) {
            c->f[fi].enter++;
            cr_assert_lt(*n, MAX_DEPTH);
            st[(*n)++] = it.func_id;
        } else {
            c->f[fi].exit++;
            if ((*n == 0 || st[*n - 1] != it.func_id) && !c->error[0])
                snprintf(c->error, sizeof c->error,
                         "offset %llu: exit of %s, not the innermost call of its context",
                         (unsigned long long)it.offset, name);
            if (*n)
                (*n)--;
        }
    }
    cr_assert_eq(rc, STF_END, "%s", stf_reader_error(r, NULL));
    stf_reader_close(r);
    stf_syms_free(syms);
}

static long calls_of(const struct coro_read *c, const char *name)
{
    for (int i = 0; i < c->nf; i++)
        if (strcmp(c->f[i].name, name) == 0) {
            cr_assert_eq(c->f[i].enter, c->f[i].exit, "%s: %ld enters, %ld exits", name,
                         c->f[i].enter, c->f[i].exit);
            return c->f[i].enter;
        }
    return 0;
}

/* "sledtrace CMD TRACE ARGS" must succeed; its stdout (caller frees with e2e_run_free). */
static void tool(const char *work, struct e2e_run *r, const char *trace, const char *cmd,
                 const char *args)
{
    e2e_run_sh(work, r, "'" E2E_SLEDTRACE "' %s '%s' %s", cmd, trace, args);
    cr_assert(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "sledtrace %s %s: %#x\n%s%s",
              cmd, args, r->status, r->out, r->err);
}

/* The stacks `stack --by count` prints, but the tracer's own, must be exactly these. */
static const struct {
    long calls;
    const char *stack;
} want_stacks[] = {
    {12, "scheduler;resume"},
    {10, "co_b;b_inner;b_leaf"},
    {5, "co_a;a_work"},
    {5, "co_a;a_yield"},
    {5, "co_b;b_inner"},
    {1, "co_a"},
    {1, "co_b"},
    {1, "co_c"},
    {1, "co_c;c_work"},
    {1, "detour"},
    {1, "detour;d_work"},
    {1, "scheduler"},
};

static void check_stacks(const char *out)
{
    enum { N = sizeof want_stacks / sizeof want_stacks[0] };
    int seen[N] = {0}, lines = 0;
    for (const char *p = out; p && *p;) {
        const char *nl = strchr(p, '\n');
        char line[512];
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        p = nl ? nl + 1 : NULL;
        char self[32], pct[32], stack[400];
        long calls;
        if (line[0] == '#' || sscanf(line, "%31s %ld %31s %399s", self, &calls, pct, stack) != 4 ||
            strstr(stack, "[sledtrace]"))
            continue;
        lines++;
        int k = 0;
        while (k < N && strcmp(want_stacks[k].stack, stack) != 0)
            k++;
        cr_assert_lt(k, N, "unexpected stack '%s' (%ld calls) in:\n%s", stack, calls, out);
        cr_assert_eq(calls, want_stacks[k].calls, "%s: %ld calls, expected %ld\n%s", stack, calls,
                     want_stacks[k].calls, out);
        seen[k]++;
    }
    for (int k = 0; k < N; k++)
        cr_assert_eq(seen[k], 1, "stack %s seen %d times in:\n%s", want_stacks[k].stack, seen[k],
                     out);
    cr_assert_eq(lines, N);
}

/* account --format csv: the count column of function name. */
static long csv_count(const char *csv, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = csv; p && *p;) {
        if (strncmp(p, name, n) == 0 && p[n] == ',')
            return atol(strchr(p + n + 1, ',') + 1); /* function,id,count */
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return -1;
}

Test(coro, one_stack_per_context, .timeout = 60)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *bin = BIN("coroprog");
    struct e2e_run r;
    e2e_run(work, &(struct e2e_spec){.prog = bin, .preload = 1, .outdir = out}, &r);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "coroprog: %#x\n%s", r.status,
              r.err);
    struct e2e_expect e;
    e2e_parse_expect(r.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, r.pid, "fdr");
    e2e_run_free(&r);

    struct coro_read *c = malloc(sizeof *c);
    cr_assert_not_null(c);
    read_coro(trace, c);
    cr_assert_str_empty(c->error, "%s", c->error);
    cr_assert_eq(c->switches, 26);
    cr_assert_eq(c->how[STF_CTX_SWAP], 22);
    cr_assert_eq(c->how[STF_CTX_SET], 2);
    cr_assert_eq(c->how[STF_CTX_RETURN], 2);
    cr_assert_eq(c->how[STF_CTX_RESUME], 0);
    cr_assert_eq(c->nctx, 4);
    for (size_t i = 0; i < c->nctx; i++)
        cr_assert_eq(c->depth[i], 0, "context %llu: %zu frames open at the end",
                     (unsigned long long)c->ids[i], c->depth[i]);
    for (int i = 0; i < e.nfuncs; i++)
        cr_assert_eq(calls_of(c, e.f[i].name), e.f[i].count, "%s: %ld calls in the trace, %ld made",
                     e.f[i].name, calls_of(c, e.f[i].name), e.f[i].count);
    cr_assert_eq(c->nf, e.nfuncs);
    free(c);

    tool(work, &r, trace, "account", "--format csv 2>&1");
    for (int i = 0; i < e.nfuncs; i++)
        cr_assert_eq(csv_count(r.out, e.f[i].name), e.f[i].count, "account: %s\n%s", e.f[i].name,
                     r.out);
    cr_assert(strstr(r.out, "stack repairs: 0, unmatched exits: 0, unfinished frames: 0"), "%s",
              r.out);
    e2e_run_free(&r);

    tool(work, &r, trace, "stack", "--by count");
    check_stacks(r.out);
    e2e_run_free(&r);

    tool(work, &r, trace, "replay", "");
    for (int k = 1; k <= 4; k++) {
        char line[32];
        snprintf(line, sizeof line, "-- context %d --\n", k);
        cr_assert(strstr(r.out, line), "replay shows no '%s':\n%s", line, r.out);
    }
    cr_assert_not(strstr(r.out, "[repaired]"), "%s", r.out);
    cr_assert(strstr(r.out, "stack repairs: 0, unmatched exits: 0, unfinished frames: 0"), "%s",
              r.out);
    e2e_run_free(&r);

    char json[PATH_MAX + 16];
    snprintf(json, sizeof json, "%s/coro.json", work);
    char args[PATH_MAX + 64];
    snprintf(args, sizeof args, "--format chrome -o '%s'", json);
    tool(work, &r, trace, "convert", args);
    e2e_run_free(&r);
    struct cc_result got, want = {0};
    cc_check(json, &got);
    /* main's track (the thread's): set-up, scheduler, detour at depth 0; resume, d_work 1 */
    struct cc_thread *t = cc_thread_of(&want, got.t[0].pid, got.t[0].pid);
    t->calls = 16, t->depth[0] = 3, t->depth[1] = 13;
    t = cc_thread_of(&want, got.t[0].pid, INT32_MAX - 1); /* A: co_a; a_work, a_yield */
    t->calls = 11, t->depth[0] = 1, t->depth[1] = 10;
    t = cc_thread_of(&want, got.t[0].pid, INT32_MAX - 2); /* B: co_b; b_inner; b_leaf */
    t->calls = 16, t->depth[0] = 1, t->depth[1] = 5, t->depth[2] = 10;
    t = cc_thread_of(&want, got.t[0].pid, INT32_MAX - 3); /* C: co_c; c_work */
    t->calls = 2, t->depth[0] = 1, t->depth[1] = 1;
    cc_expect("coroprog", &got, &want);

    tool(work, &r, trace, "dump", "--verify");
    cr_assert_eq(strncmp(r.out, "OK: ", 4), 0, "%s", r.out);
    e2e_run_free(&r);

    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' fdr-dump --verify '%s'", trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "llvm-xray fdr-dump: %s", r.err);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' convert -m '%s' --output-format=yaml '%s'", bin,
               trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "llvm-xray convert: %s", r.err);
    long funcs = 0, typed = 0;
    for (const char *p = r.out; (p = strstr(p, "kind: ")) != NULL; p++) {
        funcs += strncmp(p, "kind: function-", 15) == 0;
        typed += strncmp(p, "kind: typed-event", 17) == 0;
    }
    /* 44 calls and the runtime's thread set-up; the calibration and the 26 switches */
    cr_assert_eq(funcs, 2 * 45, "llvm-xray convert: %ld function records\n%s", funcs, r.out);
    cr_assert_eq(typed, 27, "llvm-xray convert: %ld typed events\n%s", typed, r.out);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' account -k -m '%s' '%s'", bin, trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "llvm-xray account -k: %s", r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);
}
