/* The clock fallback: SLEDTRACE_CLOCK=monotonic makes the runtime timestamp in CLOCK_MONOTONIC
 * nanoseconds, as it does by itself on a machine without an invariant TSC: the header says
 * 1e9 Hz and no TSC bits, counts stay exact, the trace's span fits inside the run's own wall
 * time, and `sledtrace info` names the clock. */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

Test(clock, monotonic_fallback)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = BIN("fib-pie-nort"),
                         .argv1 = "20",
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_CLOCK=monotonic"}};
    struct e2e_run t;
    uint64_t t0 = now_ns();
    e2e_run(work, &s, &t);
    uint64_t t1 = now_ns();
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    e2e_trace_path(trace, sizeof trace, out, BIN("fib-pie-nort"), t.pid, "fdr");

    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "monotonic");

    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK);
    const struct stf_header *h = stf_reader_header(r);
    cr_assert_eq(h->cycle_freq, 1000000000u);
    cr_assert_eq(h->bits, 0u);
    struct stf_item it;
    uint64_t first = 0, last = 0;
    while (stf_reader_next(r, &it) == STF_OK)
        if (it.kind == STF_K_FUNCTION) {
            if (!first)
                first = it.tsc;
            last = it.tsc;
        }
    stf_reader_close(r);
    /* Timestamps are this machine's CLOCK_MONOTONIC: the traced span lies inside the run. */
    cr_assert(first >= t0 && last <= t1 && last > first,
              "trace span [%" PRIu64 ", %" PRIu64 "] outside the run [%" PRIu64 ", %" PRIu64 "]",
              first, last, t0, t1);

    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd,
             "%s info '%s' | grep -q '^clock: *nanoseconds of a clock, not a TSC (1e9 Hz: "
             "sledtrace.s CLOCK_MONOTONIC'",
             E2E_SLEDTRACE, trace);
    cr_assert_eq(system(cmd), 0, "sledtrace info does not name the clock");
    e2e_run_free(&t);
    e2e_rmtree(work);
}
