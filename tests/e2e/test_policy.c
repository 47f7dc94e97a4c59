/* Buffer policies. With 2 chunks of 4 KiB per thread, fib(22) (57313 calls: 114626 events, plus
 * main's 2) outruns the flush thread:
 *  - discard: the program is unaffected; every event is either in the trace or counted in a loss
 *    marker (recorded + marked == made, exactly); the runtime's warning states the same total;
 *    the file passes strict reading and llvm-xray's verifier.
 *  - lossless (the default): nothing is dropped: no marker, exact counts. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
        if (it.kind == STF_K_FUNCTION)
            t->records++;
        else if (it.kind == STF_M_CUSTOM_EVENT &&
                 stf_decode_loss(it.payload, it.payload_len, &lost)) {
            t->lost += lost;
            t->markers++;
        }
    }
    uint64_t off;
    cr_assert_eq(rc, STF_END, "%s: offset %" PRIu64 ": %s", trace,
                 (stf_reader_error(r, &off), off), stf_reader_error(r, NULL));
    stf_reader_close(r);
}

static void run_policy(const char *policy, struct e2e_run *t, char *trace, size_t tlen,
                       char *work, size_t wlen)
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
    run_policy("discard", &t, trace, sizeof trace, work, sizeof work);
    uint64_t made = events_made(t.out);
    cr_assert_eq(made, 2 * (57313 + 1), "fib(22) and main make %" PRIu64 " events", made);
    struct tally y;
    tally(trace, &y);
    /* 114628 events through 8 KiB of buffers: the flush thread cannot keep up (seen: 19000 to
     * 113000 dropped per run), so the markers are really exercised. */
    cr_assert_gt(y.markers, 0, "nothing was dropped: the test proves nothing");
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
