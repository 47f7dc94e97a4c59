/* Buffer policies. With 2 chunks of 4 KiB per thread, fib(22) (57313 calls: 114626 events, plus
 * main's 2) outruns the flush thread:
 *  - discard: the program is unaffected; every event is either in the trace or counted in a loss
 *    marker (recorded + marked == made, exactly); the runtime's warning states the same total;
 *    the file passes strict reading and llvm-xray's verifier.
 *  - lossless (the default): nothing is dropped: no marker, exact counts.
 *  - flight: the trace holds exactly the latest events: the tail of what a lossless run of the
 *    same (deterministic) program records, no more than the ring holds; a dump on the dump
 *    signal writes it even if the process is then killed. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

struct tally {
    uint64_t records, lost, markers;
};

static void tally(const char *trace, struct tally *t)
{
    memset(t, 0, sizeof *t);
    struct stf_reader *r;
    int rc = stf_reader_open(&r, trace, STF_READ_STRICT);
    cr_assert_eq(rc, STF_OK, "%s: %s", trace, stf_reader_error(r, NULL));
    struct stf_item it;
    while ((rc = stf_reader_next(r, &it)) == STF_OK) {
        uint64_t lost;
        if (it.kind == STF_K_FUNCTION && !stf_tracer_name(it.func_id))
            t->records++;
        else if (it.kind == STF_M_CUSTOM_EVENT &&
                 stf_decode_loss(it.payload, it.payload_len, &lost)) {
            t->lost += lost;
            t->markers++;
        }
    }
    uint64_t off;
    cr_assert_eq(rc, STF_END, "%s: offset %" PRIu64 ": %s", trace, (stf_reader_error(r, &off), off),
                 stf_reader_error(r, NULL));
    stf_reader_close(r);
}

static void run_policy(const char *policy, struct e2e_run *t, char *trace, size_t tlen, char *work,
                       size_t wlen)
{
    char out[PATH_MAX], env[64];
    e2e_workdir(work, wlen);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(env, sizeof env, "SLEDTRACE_POLICY=%s", policy);
    struct e2e_spec s = {.prog = BIN("fib-pie-nort"),
                         .argv1 = "22",
                         .preload = 1,
                         .outdir = out,
                         .env = {env, "SLEDTRACE_BUFFERS=2", "SLEDTRACE_BUFFER_KB=4"}};
    e2e_run(work, &s, t);
    cr_assert(WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0, "status %#x", t->status);
    e2e_trace_path(trace, tlen, out, BIN("fib-pie-nort"), t->pid, "fdr");
}

/* Events the program made, from its own counts: two per call. */
static uint64_t events_made(const char *out)
{
    struct e2e_expect e;
    e2e_parse_expect(out, &e);
    uint64_t n = 0;
    for (int i = 0; i < e.nfuncs; i++)
        n += 2 * (uint64_t)e.f[i].count;
    return n;
}

Test(policy, discard_accounts_for_every_event)
{
    char work[PATH_MAX], trace[PATH_MAX];
    struct e2e_run t;
    struct tally y;
    uint64_t made = 0;
    /* 114628 events through 8 KiB of buffers: the flush thread usually cannot keep up (seen:
     * 19000 to 113000 dropped per run), so the markers are really exercised. Whether it keeps
     * up is the machine's timing: a run that dropped nothing proves nothing, and is repeated
     * (up to 5 runs). */
    for (int attempt = 0; attempt < 5; attempt++) {
        if (attempt) {
            e2e_run_free(&t);
            e2e_rmtree(work);
        }
        run_policy("discard", &t, trace, sizeof trace, work, sizeof work);
        made = events_made(t.out);
        cr_assert_eq(made, 2 * (57313 + 1), "fib(22) and main make %" PRIu64 " events", made);
        tally(trace, &y);
        if (y.markers > 0)
            break;
    }
    cr_assert_gt(y.markers, 0, "nothing was dropped in 5 runs: the test proves nothing");
    cr_assert_eq(y.records + y.lost, made,
                 "recorded %" PRIu64 " + marked lost %" PRIu64 " != %" PRIu64 " made", y.records,
                 y.lost, made);
    if (y.lost) {
        char want[128];
        snprintf(want, sizeof want,
                 "sledtrace: warning: discard policy: %" PRIu64
                 " events dropped; the trace marks each gap\n",
                 y.lost);
        cr_assert_str_eq(t.err, want, "stderr:\n%s", t.err);
    } else {
        cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    }
    char cmd[PATH_MAX * 2];
    /* sledtrace info counts the drops per thread (one thread here) from the markers. */
    snprintf(cmd, sizeof cmd, "%s info '%s' | grep ' events dropped in '", E2E_SLEDTRACE, trace);
    FILE *p = popen(cmd, "r");
    unsigned long long per_thread = 0, gaps = 0;
    int tid = 0;
    cr_assert(
        p && fscanf(p, " tid %d: %llu events dropped in %llu gaps", &tid, &per_thread, &gaps) == 3,
        "no per-thread drops from: %s", cmd);
    pclose(p);
    cr_assert_eq(per_thread, y.lost);
    cr_assert_eq(gaps, y.markers);
    snprintf(cmd, sizeof cmd, "%s fdr-dump --verify '%s' >/dev/null 2>&1", E2E_LLVM_XRAY, trace);
    cr_assert_eq(system(cmd), 0, "llvm-xray fdr-dump --verify rejects %s", trace);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(policy, lossless_drops_nothing)
{
    char work[PATH_MAX], trace[PATH_MAX];
    struct e2e_run t;
    run_policy("lossless", &t, trace, sizeof trace, work, sizeof work);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct tally y;
    tally(trace, &y);
    cr_assert_eq(y.markers, 0);
    cr_assert_eq(y.records, events_made(t.out));
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Function records of a trace as (id, action) pairs. */
struct seq {
    uint32_t *v;
    size_t n;
};

static void read_seq(const char *trace, struct seq *q)
{
    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK, "%s", trace);
    size_t cap = 1024;
    q->v = malloc(cap * sizeof *q->v);
    q->n = 0;
    struct stf_item it;
    int rc;
    while ((rc = stf_reader_next(r, &it)) == STF_OK) {
        if (it.kind != STF_K_FUNCTION || stf_pseudo_name(it.func_id))
            continue; /* the program's records only: the pseudo-calls (the tracer's, waits) */
        if (q->n == cap)
            q->v = realloc(q->v, (cap *= 2) * sizeof *q->v);
        q->v[q->n++] = (it.func_id << 4) | it.action;
    }
    cr_assert_eq(rc, STF_END, "%s: %s", trace, stf_reader_error(r, NULL));
    stf_reader_close(r);
}

/* Records two 4 KiB chunks can hold: (4096 - 80 bytes of block head) / 8 each. */
enum { FLIGHT_CAP = 2 * (4096 - 80) / 8 };

Test(policy, flight_keeps_exactly_the_latest)
{
    char work[PATH_MAX], trace[PATH_MAX];
    struct e2e_run t, l;
    run_policy("lossless", &l, trace, sizeof trace, work, sizeof work);
    struct seq all;
    read_seq(trace, &all);
    e2e_rmtree(work);
    run_policy("flight", &t, trace, sizeof trace, work, sizeof work);
    cr_assert_str_eq(t.out, l.out);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct seq last;
    read_seq(trace, &last);
    cr_assert_gt(last.n, FLIGHT_CAP / 2, "only %zu records kept", last.n);
    cr_assert_leq(last.n, FLIGHT_CAP, "%zu records kept, the ring holds %d", last.n, FLIGHT_CAP);
    cr_assert_lt(last.n, all.n);
    cr_assert_eq(memcmp(last.v, all.v + (all.n - last.n), last.n * sizeof *last.v), 0,
                 "the flight trace is not the tail of the full trace");
    free(all.v);
    free(last.v);
    e2e_run_free(&l);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* fib(n)'s enter/exit sequence, as the program makes it. */
static void fib_actions(long n, uint8_t *a, size_t *k)
{
    a[(*k)++] = STF_ENTER;
    if (n >= 2) {
        fib_actions(n - 1, a, k);
        fib_actions(n - 2, a, k);
    }
    a[(*k)++] = STF_EXIT;
}

Test(policy, flight_dump_signal_then_sigkill)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *bin = BIN("flightprog-pie-nort");
    struct e2e_spec base = {.prog = bin};
    struct e2e_spec traced = {
        .prog = bin,
        .preload = 1,
        .outdir = out,
        .env = {"SLEDTRACE_POLICY=flight", "SLEDTRACE_BUFFERS=2", "SLEDTRACE_BUFFER_KB=4"}};
    struct e2e_run b, t;
    e2e_run(work, &base, &b);
    e2e_run(work, &traced, &t);
    cr_assert(WIFSIGNALED(b.status) && WTERMSIG(b.status) == SIGKILL, "status %#x", b.status);
    cr_assert_eq(t.status, b.status, "status %#x traced, %#x not", t.status, b.status);
    cr_assert_str_eq(t.out, b.out);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct seq q;
    read_seq(trace, &q);
    cr_assert_gt(q.n, FLIGHT_CAP / 2, "only %zu records dumped", q.n);
    cr_assert_leq(q.n, FLIGHT_CAP);
    static uint8_t acts[2 * 8361];
    size_t k = 0;
    fib_actions(18, acts, &k);
    cr_assert_eq(k, sizeof acts);
    for (size_t i = 0; i < q.n; i++)
        cr_assert_eq(q.v[i] & 15, acts[k - q.n + i], "record %zu of the dump", i);
    free(q.v);
    e2e_run_free(&b);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* 10.4: SLEDTRACE_MAX_SIZE. fib(22) makes 114628 events, about 920 KB of trace; with a 64 KiB
 * cap the file stops there (plus the 96-byte marker), the program runs on as untraced, and the
 * marker accounts for every event not written: recorded + marked lost = made, exactly. */
Test(policy, max_size_caps_the_trace_and_counts_the_rest)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = BIN("fib-pie-nort"),
                         .argv1 = "22",
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_MAX_SIZE=64K"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    uint64_t made = events_made(t.out);
    e2e_trace_path(trace, sizeof trace, out, BIN("fib-pie-nort"), t.pid, "fdr");
    struct stat st;
    cr_assert_eq(stat(trace, &st), 0);
    cr_assert_leq(st.st_size, 64 * 1024 + 96, "size %lld", (long long)st.st_size);
    struct tally y;
    tally(trace, &y);
    cr_assert_gt(y.lost, 0);
    cr_assert_eq(y.records + y.lost, made,
                 "recorded %" PRIu64 " + marked lost %" PRIu64 " != %" PRIu64 " made", y.records,
                 y.lost, made);
    cr_assert(strstr(t.err, "reached SLEDTRACE_MAX_SIZE (65536 bytes)") != NULL, "%s", t.err);
    char want[160];
    snprintf(want, sizeof want, "; %" PRIu64 " events after that were not written", y.lost);
    cr_assert(strstr(t.err, want) != NULL, "%s", t.err);
    e2e_run_free(&t);
    e2e_rmtree(work);
}
