/* sledtrace run and live (issue 13.4): the runtime's settings as options, checked before the
 * program starts; every trace of the run listed (fork children's included, other runs' not);
 * --report; live prints the call tree and leaves nothing behind. */
#include <criterion/criterion.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

/* A bad value is a usage error (exit 2, one line) and the program never starts. */
static void check_refused(const char *opt, const char *want)
{
    char work[PATH_MAX], marker[PATH_MAX + 16];
    e2e_workdir(work, sizeof work);
    snprintf(marker, sizeof marker, "%s/started", work);
    struct e2e_run r;
    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' run -o '%s/out' %s -- touch '%s'", work, opt, marker);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 2, "%s: status %#x", opt, r.status);
    cr_assert_str_eq(r.err, want, "%s", opt);
    cr_assert_neq(access(marker, F_OK), 0, "%s: the program ran", opt);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

Test(run, settings_are_checked_before_the_program_starts)
{
    check_refused("--policy lossles",
                  "sledtrace: run: --policy must be one of lossless, discard, flight, not "
                  "'lossles'\n");
    check_refused("--clock=rdtsc",
                  "sledtrace: run: --clock must be one of auto, tsc, monotonic, not 'rdtsc'\n");
    check_refused("--buffer-kb 2",
                  "sledtrace: run: --buffer-kb must be an integer from 4 to 16384, not '2'\n");
    check_refused("--buffers=9999",
                  "sledtrace: run: --buffers must be an integer from 2 to 4096, not '9999'\n");
    check_refused("--flush-ms 0",
                  "sledtrace: run: --flush-ms must be an integer from 1 to 60000, not '0'\n");
    check_refused("--max-size 1Q", "sledtrace: run: --max-size must be a size (bytes, or with K, "
                                   "M, G, T; 0: no cap), not '1Q'\n");
    check_refused("--log verbose",
                  "sledtrace: run: --log must be one of error, warn, info, debug, not 'verbose'\n");
    check_refused("--filter", "sledtrace: run: --filter needs a value\n");
    check_refused("--frobnicate",
                  "sledtrace: run: unknown option '--frobnicate' (see 'sledtrace run --help')\n");
}

/* forkprog: the parent's trace and its fork child's, both listed (the program's first), with
 * the settings applied (--filter fib: main is left out; 8 KiB buffers); a trace of another run
 * already in the directory is not listed; --report=1 shows each trace's top function. */
Test(run, lists_every_trace_of_the_run_and_reports)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], want[4 * PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run first, r;
    /* Another run's trace in the same directory. */
    e2e_run_sh(work, &first, "'" E2E_SLEDTRACE "' run -o '%s' -- '%s' 3", out, BIN("fib-pie-nort"));
    cr_assert_eq(first.status, 0, "%s", first.err);
    e2e_run_sh(work, &r,
               "'" E2E_SLEDTRACE "' run -o '%s' --filter fib --buffer-kb 8 --report=1 -- '%s'", out,
               BIN("forkprog-pie-nort"));
    cr_assert_eq(r.status, 0, "%s", r.err);
    int child = -1;
    const char *f = strstr(r.out, "forked ");
    cr_assert(f && sscanf(f, "forked %d", &child) == 1, "%s", r.out);
    /* The run's pid is the program's: the first listed trace. */
    const char *first_line = strstr(r.err, "sledtrace: trace written to ");
    cr_assert_not_null(first_line, "%s", r.err);
    int parent = -1;
    const char *dot = strstr(first_line, "forkprog-pie-nort.");
    cr_assert(dot && sscanf(dot, "forkprog-pie-nort.%d.fdr", &parent) == 1, "%s", r.err);
    snprintf(want, sizeof want,
             "sledtrace: trace written to %s/sledtrace.forkprog-pie-nort.%d.fdr\n"
             "sledtrace: trace written to %s/sledtrace.forkprog-pie-nort.%d.fdr\n"
             "\nsledtrace: %s/sledtrace.forkprog-pie-nort.%d.fdr: top 1 functions by self time\n",
             out, parent, out, child, out, parent);
    cr_assert(strncmp(r.err, want, strlen(want)) == 0, "stderr:\n%s\nwant at its start:\n%s", r.err,
              want);
    cr_assert_eq(e2e_count_lines(r.err, "sledtrace: trace written to "), 2, "%s", r.err);
    cr_assert_eq(e2e_count_lines(r.err, "# functions: "), 2, "one report per trace:\n%s", r.err);
    /* --filter reached the runtime: main is not in the parent's trace; 8 KiB blocks. */
    snprintf(trace, sizeof trace, "%s/sledtrace.forkprog-pie-nort.%d.fdr", out, parent);
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    cr_assert_str_empty(tr->error, "%s", tr->error);
    for (int i = 0; i < tr->nfuncs; i++)
        cr_assert_str_neq(tr->f[i].name, "main", "main was traced despite --filter fib");
    cr_assert_gt(tr->blocks, 3, "%ld blocks: --buffer-kb 8 not applied", tr->blocks);
    free(tr);
    e2e_run_free(&first);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* live: the program's output, then its call tree; the temporary directory is gone. */
Test(run, live_prints_the_call_tree_and_leaves_nothing)
{
    char work[PATH_MAX], tmp[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(tmp, sizeof tmp, "%s/tmp", work);
    cr_assert_eq(mkdir(tmp, 0700), 0);
    struct e2e_run r;
    e2e_run_sh(work, &r, "env TMPDIR='%s' '" E2E_SLEDTRACE "' live --filter fib -- '%s' 3", tmp,
               BIN("fib-pie-nort"));
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strncmp(r.out, "fib(3) = 2\n", 11) == 0, "%s", r.out);
    cr_assert_eq(e2e_count_lines(r.out, "# shown: 6 of 6 calls"), 1, "%s",
                 r.out); /* fib x 5, the set-up */
    cr_assert_eq(e2e_dir_entries(tmp), 0, "live left files behind");
    cr_assert_str_empty(r.err, "%s", r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* 13.5: the sidecar records the command line (quoted as a shell would need it), how the
 * process ended, and every traced thread's name as the program set it; info and replay show
 * them. namesprog.c says which thread has which name. */
static void check_process_lines(const char *how, const char *want_exit, int want_status)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX], want[1024];
    const char *bin = BIN("namesprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {
        .prog = bin, .argv1 = how, .preload = 1, .outdir = out, .pre_exec = e2e_no_core};
    struct e2e_run t, info, rep;
    e2e_run(work, &s, &t);
    cr_assert_eq(t.status, want_status, "status %#x: %s", t.status, t.err);
    long tid[3];
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof key, "tid %d ", i);
        const char *p = strstr(t.out, key);
        cr_assert(p && sscanf(p + strlen(key), "%ld", &tid[i]) == 1, "%s", t.out);
    }
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_trace_path(syms, sizeof syms, out, bin, t.pid, "syms");
    char *text = e2e_slurp(syms, NULL);
    cr_assert_not_null(text);
    snprintf(want, sizeof want, "\ncmd\t%s %s\n", bin, how);
    cr_assert_not_null(strstr(text, want), "no '%s' in:\n%s", want, text);
    cr_assert_not_null(strstr(text, want_exit), "no '%s' in the sidecar", want_exit);
    const char *names[] = {"w0-prctl", "w1-setname", "namesprog"};
    for (int i = 0; i < 3; i++) {
        snprintf(want, sizeof want, "\nthread\t%d\t%ld\t%s\n", (int)t.pid, tid[i], names[i]);
        cr_assert_not_null(strstr(text, want), "no '%s' in the sidecar", want);
    }
    snprintf(want, sizeof want, "\nthread\t%d\t%d\tboss\n", (int)t.pid, (int)t.pid);
    cr_assert_not_null(strstr(text, want), "no main thread line in the sidecar");
    free(text);

    e2e_run_sh(work, &info, "'" E2E_SLEDTRACE "' info '%s'", trace);
    cr_assert_eq(info.status, 0, "%s", info.err);
    snprintf(want, sizeof want, "command:       %s %s\n", bin, how);
    cr_assert_not_null(strstr(info.out, want), "%s", info.out);
    /* main first in the thread table, with its name */
    const char *table = strstr(info.out, "  name\n");
    cr_assert_not_null(table, "%s", info.out);
    snprintf(want, sizeof want, "%d", (int)t.pid);
    cr_assert(strncmp(table + 7 + strspn(table + 7, " "), want, strlen(want)) == 0,
              "main thread not first:\n%s", info.out);
    e2e_run_sh(work, &rep, "'" E2E_SLEDTRACE "' replay '%s'", trace);
    cr_assert_eq(rep.status, 0, "%s", rep.err);
    snprintf(want, sizeof want, "# thread %d: boss\n", (int)t.pid);
    cr_assert(strncmp(rep.out, want, strlen(want)) == 0, "replay begins:\n%.300s", rep.out);
    snprintf(want, sizeof want, "\n# thread %ld: w1-setname\n", tid[1]);
    cr_assert_not_null(strstr(rep.out, want), "%s", rep.out);
    e2e_run_free(&t);
    e2e_run_free(&info);
    e2e_run_free(&rep);
    e2e_rmtree(work);
}

Test(run, sidecar_records_command_exit_and_thread_names)
{
    check_process_lines("alpha", "\nexit\tstatus\t3\n", 3 << 8);
}

Test(run, sidecar_records_a_fatal_signal)
{
    check_process_lines("crash", "\nexit\tsignal\t11\n", SIGSEGV);
}

/* 13.4: an analysis command given no TRACE takes the newest trace of $SLEDTRACE_OUTPUT (else of
 * the current directory) and says which; with none there, it says so (exit 2). */
Test(run, no_trace_argument_takes_the_newest)
{
    char work[PATH_MAX], out[PATH_MAX], want[2 * PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run a, b, r, none;
    e2e_run_sh(work, &none, "env SLEDTRACE_OUTPUT='%s' '" E2E_SLEDTRACE "' account", work);
    cr_assert(WIFEXITED(none.status) && WEXITSTATUS(none.status) == 2, "%#x", none.status);
    snprintf(want, sizeof want,
             "sledtrace: account: no TRACE given, and no sledtrace.*.fdr in %s (see 'sledtrace "
             "account --help')\n",
             work);
    cr_assert_str_eq(none.err, want);
    e2e_run_sh(work, &a, "'" E2E_SLEDTRACE "' run -o '%s' -- '%s' 3", out, BIN("fib-pie-nort"));
    struct timespec pause = {0, 20 * 1000 * 1000}; /* distinct modification times */
    nanosleep(&pause, NULL);
    e2e_run_sh(work, &b, "'" E2E_SLEDTRACE "' run -o '%s' -- '%s' 4", out, BIN("fib-pie-nort"));
    cr_assert(a.status == 0 && b.status == 0, "%s%s", a.err, b.err);
    e2e_run_sh(work, &r, "env SLEDTRACE_OUTPUT='%s' '" E2E_SLEDTRACE "' replay", out);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *second = strstr(b.err, "sledtrace: trace written to ");
    cr_assert_not_null(second);
    char path[PATH_MAX];
    cr_assert_eq(sscanf(second, "sledtrace: trace written to %s", path), 1);
    snprintf(want, sizeof want,
             "sledtrace: replay: no TRACE given; using %s, the newest trace in %s\n", path, out);
    cr_assert(strncmp(r.err, want, strlen(want)) == 0, "stderr:\n%s\nwant:\n%s", r.err, want);
    cr_assert_not_null(strstr(r.out, "# shown: 11 of 11 calls"),
                       "fib(4): 9 calls, main, set-up:\n%s", r.out);
    e2e_run_free(&none);
    e2e_run_free(&a);
    e2e_run_free(&b);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* 16.2: sledtrace_flush() writes everything every thread recorded before it returns: after it
 * the program dies of SIGKILL (nothing is completed at exit) with a one-minute flush period,
 * and both threads' calls are all in the trace, exactly. Under the flight policy as well. */
static void check_flush(const char *policy)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], pol[64];
    const char *bin = BIN("flushprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(pol, sizeof pol, "SLEDTRACE_POLICY=%s", policy);
    struct e2e_spec s = {.prog = bin,
                         .preload = 1,
                         .outdir = out,
                         .pre_exec = e2e_no_core,
                         .env = {"SLEDTRACE_FLUSH_MS=60000", pol}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFSIGNALED(t.status) && WTERMSIG(t.status) == SIGKILL, "status %#x: %s", t.status,
              t.err);
    cr_assert_not_null(strstr(t.out, "flush 0\n"), "%s", t.out);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    cr_assert_str_empty(tr->error, "%s", tr->error);
    long fib = 0;
    for (int i = 0; i < tr->nfuncs; i++)
        if (strcmp(tr->f[i].name, "fib") == 0)
            fib = tr->f[i].enter;
    cr_assert_eq(fib, e.f[0].count, "%s: %ld fib calls in the trace, the program made %ld", policy,
                 fib, e.f[0].count);
    cr_assert_eq(tr->ntids, 2, "%s: %d threads", policy, tr->ntids);
    free(tr);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(run, flush_then_sigkill_keeps_every_call)
{
    check_flush("lossless");
}

Test(run, flush_under_the_flight_policy)
{
    check_flush("flight");
}

/* 14.2: SLEDTRACE_MIN_DURATION (run --min-duration). A call shorter than the threshold leaves no
 * records but is counted: account's counts stay exact for every function, with the elided
 * calls in their own column; the trace is balanced, strict-valid and accepted by llvm-xray. */
static long csv_field_of(const char *csv, const char *fn, int col)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s,", fn);
    const char *p = strstr(csv, key);
    cr_assert_not_null(p, "no row for %s:\n%s", fn, csv);
    p += strlen(key); /* at column 2 */
    for (int i = 2; i < col; i++) {
        p = strchr(p, ',');
        cr_assert_not_null(p);
        p++;
    }
    return strtol(p, NULL, 10);
}

/* 23.10: a preloaded library that makes libc's clock_gettime run ten times too fast
 * (scaleclock.c, as libfaketime x10 does) made the runtime calibrate the TSC ten times too
 * low, so every traced time came out ten times too long (a 200 us call at 2 ms). The
 * calibration now reads CLOCK_MONOTONIC_RAW from the vDSO or the system call. durprog's slow()
 * spins 200 us by CLOCK_MONOTONIC, which the stand-in leaves alone. */
Test(run, interposed_clock_does_not_scale_the_times)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], pre[2 * PATH_MAX + 16], dir[PATH_MAX + 32];
    const char *bin = BIN("durprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s:%s", E2E_SCALECLOCK, E2E_PRELOAD);
    snprintf(dir, sizeof dir, "SLEDTRACE_OUTPUT=%s", out);
    mkdir(out, 0700);
    struct e2e_spec s = {.prog = bin, .env = {pre, dir}};
    struct e2e_run t, a;
    e2e_run(work, &s, &t);
    cr_assert_eq(t.status, 0, "%s", t.err);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_run_sh(work, &a, "'" E2E_SLEDTRACE "' account --format csv '%s'", trace);
    cr_assert_eq(a.status, 0, "%s", a.err);
    long median = csv_field_of(a.out, "slow", 10); /* median_ns */
    cr_assert(median >= 180000 && median <= 1000000, "slow's median %ld ns, not about 200 us",
              median);
    e2e_run_free(&t);
    e2e_run_free(&a);
    e2e_rmtree(work);
}

Test(run, min_duration_counts_what_it_does_not_record)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("durprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {
        .prog = bin, .preload = 1, .outdir = out, .env = {"SLEDTRACE_MIN_DURATION=20us"}};
    struct e2e_run t, a, v;
    e2e_run(work, &s, &t);
    cr_assert_eq(t.status, 0, "%s", t.err);
    cr_assert_str_empty(t.err, "%s", t.err);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_run_sh(work, &a, "'" E2E_SLEDTRACE "' account --format csv '%s'", trace);
    cr_assert_eq(a.status, 0, "%s", a.err);
    /* approx: the trace records the tracer's cost (calibration), so the times are corrected */
    static const char header[] = "function,id,count,total_ns,share_pct,self_ns,mean_ns,"
                                 "selfcall_ns,min_ns,median_ns,p90_ns,p99_ns,max_ns,unfinished,"
                                 "elided,elided_ns,approx\n";
    cr_assert(strncmp(a.out, header, strlen(header)) == 0, "%s", a.out);
    /* columns: 3 count, 4 total_ns, 7 mean_ns, 15 elided, 16 elided_ns */
    cr_assert_eq(csv_field_of(a.out, "outer", 3), 2000);
    cr_assert_eq(csv_field_of(a.out, "slow", 3), 2000);
    cr_assert_eq(csv_field_of(a.out, "quick", 3), 10000, "quick's count must stay exact");
    cr_assert_eq(csv_field_of(a.out, "outer", 15), 0, "a 200 us call was elided");
    cr_assert_eq(csv_field_of(a.out, "slow", 15), 0, "a 200 us call was elided");
    long elided = csv_field_of(a.out, "quick", 15);
    cr_assert_gt(elided, 5000, "only %ld of 10000 quick calls elided", elided);
    /* quick (a leaf) is in total with its elided calls, and its mean is of the recorded calls
     * only: the rest of total over the rest of count (within the ns roundings) */
    long rec_ns = csv_field_of(a.out, "quick", 4) - csv_field_of(a.out, "quick", 16);
    long mean = csv_field_of(a.out, "quick", 7), want = rec_ns / (10000 - elided);
    cr_assert(mean >= want - 1 && mean <= want + 1, "quick's mean %ld ns, not %ld ns", mean, want);
    cr_assert_not_null(strstr(a.err, "calls shorter than the runtime's SLEDTRACE_MIN_DURATION "
                                     "were counted, not recorded: count and total include them; "
                                     "self, mean, self/call, min, median, p90, p99 and max are "
                                     "of the recorded calls only\n"),
                       "%s", a.err);
    /* the records left are balanced and valid */
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    cr_assert_str_empty(tr->error, "%s", tr->error);
    cr_assert_eq(tr->unbalanced, 0);
    free(tr);
    e2e_run_sh(work, &v, "'" E2E_LLVM_XRAY "' fdr-dump --verify '%s'", trace);
    cr_assert(WIFEXITED(v.status) && WEXITSTATUS(v.status) == 0, "%s", v.err);
    e2e_run_free(&t);
    e2e_run_free(&a);
    e2e_run_free(&v);
    e2e_rmtree(work);
}

/* 14.2: on a fib-like workload a 1 us threshold makes the trace at least 10 times smaller, and
 * fib's count is still exact. */
Test(run, min_duration_shrinks_a_fib_trace)
{
    char work[PATH_MAX];
    const char *bin = BIN("durprog");
    e2e_workdir(work, sizeof work);
    long size[2], count[2];
    for (int k = 0; k < 2; k++) {
        char out[PATH_MAX], trace[PATH_MAX];
        snprintf(out, sizeof out, "%s/out%d", work, k);
        struct e2e_spec s = {.prog = bin,
                             .argv1 = "fib",
                             .preload = 1,
                             .outdir = out,
                             .env = {k ? "SLEDTRACE_MIN_DURATION=1us" : NULL}};
        struct e2e_run t, a;
        e2e_run(work, &s, &t);
        cr_assert_eq(t.status, 0, "%s", t.err);
        e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
        struct stat st;
        cr_assert_eq(stat(trace, &st), 0);
        size[k] = (long)st.st_size;
        e2e_run_sh(work, &a, "'" E2E_SLEDTRACE "' account --format csv '%s'", trace);
        count[k] = csv_field_of(a.out, "fib", 3);
        cr_assert_eq(count[k], 57313, "threshold %d: %s", k, a.out); /* fib(22): 2 F(23) - 1 */
        e2e_run_free(&t);
        e2e_run_free(&a);
    }
    cr_assert_geq(size[0], 10 * size[1], "%ld bytes without the threshold, %ld with", size[0],
                  size[1]);
    e2e_rmtree(work);
}

/* 10.1 with 12.5: a filter pattern that matches nothing is said by the program the user ran,
 * not again by each of its descendants (they keep the environment, not the user's intent):
 * spawnprog starts the fib program, both traced, both without a function called `nosuch`. */
Test(run, descendants_keep_quiet_about_filters)
{
    char work[PATH_MAX];
    e2e_workdir(work, sizeof work);
    struct e2e_run r;
    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' run -o '%s/out' --filter 'fib,nosuch' -- '%s' '%s'",
               work, BIN("spawnprog-pie-nort"), BIN("fib-pie-nort"));
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(e2e_count_lines(r.err, "sledtrace: warning: SLEDTRACE_FILTER: 'nosuch'"), 1,
                 "stderr:\n%s", r.err);
    cr_assert_eq(e2e_count_lines(r.err, "sledtrace: trace written to "), 2, "stderr:\n%s", r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* 15.1: sledtrace diff. Two builds of diffprog: the new one makes slowed() three times slower
 * and adds added(); steady() is the same. Exactly those two are flagged, with one run per side
 * and with five per side run under a CPU hog (noise: the runs' spreads decide). */
static char *diff_csv(const char *work, const char *args)
{
    struct e2e_run r;
    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' diff --format csv %s", args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_empty(r.err, "%s", r.err);
    char *out = strdup(r.out);
    e2e_run_free(&r);
    return out;
}

static void check_flags(const char *csv)
{
    /* function,flag,old_calls,new_calls,... */
    cr_assert_not_null(strstr(csv, "\nslowed,slower,100,100,"), "%s", csv);
    cr_assert_not_null(strstr(csv, "\nadded,new,0,100,"), "%s", csv);
    cr_assert_not_null(strstr(csv, "\nsteady,,100,100,"), "%s", csv);
    int rows = e2e_nlines(csv) - 1;
    cr_assert_eq(rows, 3, "%d rows:\n%s", rows, csv);
    /* largest change first: slowed()'s median call grows by ~16 us, added()'s is ~2 us */
    cr_assert_eq(strncmp(strchr(csv, '\n') + 1, "slowed,", 7), 0, "%s", csv);
    /* every figure of both sides follows: slowed()'s median call is three times the work */
    const char *row = strstr(csv, "\nslowed,") + 1;
    double f[22];
    int n = 0;
    for (const char *p = strchr(row, ',') + 1; n < 22; n++) {
        f[n] = strtod(p, NULL);
        p = strpbrk(p, ",\n");
        if (!p || *p == '\n') {
            n++;
            break;
        }
        p++;
    }
    cr_assert_eq(n, 21, "%d figures after the name:\n%s", n, csv);
    /* the last two: the noise floor (above 0: the clock has a resolution) and not within it */
    cr_assert(f[19] > 0 && f[20] == 0, "noise floor %.0f, within %.0f:\n%s", f[19], f[20], csv);
    double ratio = f[16] / f[15]; /* new_median / old_median (f[0] is the flag) */
    cr_assert(ratio > 2 && ratio < 4, "median ratio %.2f:\n%s", ratio, csv);
}

Test(run, diff_flags_exactly_what_changed)
{
    char work[PATH_MAX], args[8 * PATH_MAX];
    e2e_workdir(work, sizeof work);
    enum { RUNS = 5 };
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < RUNS; i++) {
            struct e2e_run r;
            /* a CPU hog beside every run after the first of each side */
            e2e_run_sh(work, &r,
                       "sh -c '%s \"$0\" run -o \"$1\" -- \"$2\" >/dev/null; s=$?; %s exit $s' "
                       "'" E2E_SLEDTRACE "' '%s/%s' '%s'",
                       i ? "(while :; do :; done) & h=$!;" : "", i ? "kill $h;" : "", work,
                       side ? "new" : "old", side ? BIN("diffprog-new") : BIN("diffprog-old"));
            cr_assert_eq(r.status, 0, "%s", r.err);
            e2e_run_free(&r);
        }
    /* one run per side, the first of each: no spread to tell noise by, so the key is the
     * median call, which one preempted call of steady() cannot move (its total it can) */
    snprintf(args, sizeof args,
             "--sort median $(ls '%s'/old/*.fdr | head -1) $(ls '%s'/new/*.fdr | head -1)", work,
             work);
    char *one = diff_csv(work, args);
    check_flags(one);
    free(one);
    /* five runs per side, four beside a hog: the spread of the runs' medians tells noise */
    snprintf(args, sizeof args, "--sort median --old '%s'/old/*.fdr --new '%s'/new/*.fdr", work,
             work);
    char *many = diff_csv(work, args);
    check_flags(many);
    free(many);
    e2e_rmtree(work);
}

/* 15.2: stack --diff and flamegraph --diff on one run of each build of diffprog: by count the
 * figures are exact (added() is the one stack that changed); by time slowed() grew. */
Test(run, stack_and_flamegraph_diff)
{
    char work[PATH_MAX];
    e2e_workdir(work, sizeof work);
    struct e2e_run r;
    for (int side = 0; side < 2; side++) {
        e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' run -o '%s/%s' -- '%s' >/dev/null", work,
                   side ? "new" : "old", side ? BIN("diffprog-new") : BIN("diffprog-old"));
        cr_assert_eq(r.status, 0, "%s", r.err);
        e2e_run_free(&r);
    }
    const char *pair = "$(ls \"$0\"/old/*.fdr) $(ls \"$0\"/new/*.fdr)";
    e2e_run_sh(work, &r,
               "sh -c '\"$1\" stack --by count --format folded --diff %s' '%s' '" E2E_SLEDTRACE "'",
               pair, work);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.out,
                     "[sledtrace] thread set-up 1 1\nadded 0 100\nslowed 100 100\n"
                     "steady 100 100\n",
                     "%s", r.out);
    cr_assert_eq(e2e_count_lines(r.err, "# stacks: 4, total weight: old 201 calls, new 301 calls"),
                 1, "%s", r.err);
    e2e_run_free(&r);
    /* by time: one row per stack of either trace (one run each: no timing is asserted, a
     * preempted run can make any of them slower) */
    e2e_run_sh(work, &r, "sh -c '\"$1\" stack --diff %s' '%s' '" E2E_SLEDTRACE "'", pair, work);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(e2e_nlines(r.out), 6, "%s", r.out);
    cr_assert_eq(e2e_count_lines(r.out, "# stacks: 4, total weight: old "), 1, "%s", r.out);
    cr_assert_not_null(strstr(r.out, "       new  added\n"), "%s", r.out);
    e2e_run_free(&r);
    /* the differential flame graph by count: added() full red, every other frame white */
    e2e_run_sh(work, &r,
               "sh -c '\"$1\" flamegraph --by count -o \"$0\"/d.svg --diff %s' '%s' '" E2E_SLEDTRACE
               "'",
               pair, work);
    cr_assert_eq(r.status, 0, "%s", r.err);
    e2e_run_free(&r);
    char svg_path[PATH_MAX + 8];
    snprintf(svg_path, sizeof svg_path, "%s/d.svg", work);
    char *svg = e2e_slurp(svg_path, NULL);
    cr_assert_not_null(svg);
    cr_assert_not_null(strstr(svg, "data-c=\"rgb(255,55,55)\" data-n=\"added\""), "%s", svg);
    cr_assert_not_null(strstr(svg, "<title>added (100 calls, 33.22%; self 0 -&gt; 100, +100)"),
                       "%s", svg);
    cr_assert_not_null(strstr(svg, "data-c=\"rgb(255,255,255)\" data-n=\"slowed\""), "%s", svg);
    cr_assert_not_null(strstr(svg, "data-c=\"rgb(255,255,255)\" data-n=\"steady\""), "%s", svg);
    cr_assert_not_null(strstr(svg, "Differential flame graph (calls)"), "%s", svg);
    free(svg);
    /* --diff takes whole traces */
    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' stack --diff x.fdr --tid 1 y.fdr");
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 2, "%s", r.err);
    cr_assert_eq(e2e_count_lines(r.err, "sledtrace: stack: --diff compares whole traces"), 1, "%s",
                 r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* A SIGTERM sent to `sledtrace run` reaches the program: the run waits for it and exits 143
 * (128 + 15), and no program is left running. Before: the run died alone and the program ran
 * on without it (seen: the top test's 20000-round program kept a CPU busy for 30 s after its
 * test had ended). The signal is sent once the program is seen running. */
Test(run, sigterm_reaches_the_program)
{
    char work[PATH_MAX], script[PATH_MAX + 16];
    e2e_workdir(work, sizeof work);
    snprintf(script, sizeof script, "%s/term.sh", work);
    FILE *f = fopen(script, "w");
    cr_assert_not_null(f);
    /* alive: a process whose command line is "sleep 31.7" exists (from /proc: no procps) */
    fprintf(f,
            "alive() {\n"
            "  for c in /proc/[0-9]*/cmdline; do\n"
            "    [ \"$(tr '\\0' ' ' <\"$c\" 2>/dev/null)\" = 'sleep 31.7 ' ] && return 0\n"
            "  done\n"
            "  return 1\n"
            "}\n"
            "'%s' run -o '%s/out' -- sleep 31.7 2>/dev/null & run=$!\n"
            "i=0; while ! alive && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done\n"
            "sleep 0.1; kill $run; wait $run; echo status=$?\n"
            "sleep 0.2; if alive; then echo left; else echo gone; fi\n",
            E2E_SLEDTRACE, work);
    fclose(f);
    struct e2e_run r;
    e2e_run_sh(work, &r, "sh '%s'", script);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %#x: %s", r.status, r.err);
    cr_assert_str_eq(r.out, "status=143\ngone\n", "%s", r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* 27.5: the elided table holds 256 functions a thread; when it is full its counts go into the
 * trace and it is emptied (hot.c, spill_elided). 600 tiny functions called 2000 times each in a
 * row: every count exact and the trace over 100 times smaller than without the threshold (was
 * 1.7 times: the functions past the 256th were recorded in full). The 600 called in turn (each
 * spill then holds calls of count 1): counts exact, the trace valid for both readers, and no
 * larger than without the threshold by more than a tenth. */
Test(run, min_duration_past_256_functions)
{
    char work[PATH_MAX];
    const char *bin = BIN("manyshort");
    e2e_workdir(work, sizeof work);
    const char *modes[] = {"seq", "mixed"};
    long size[2][2];
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 2; k++) {
            char out[PATH_MAX], trace[PATH_MAX];
            snprintf(out, sizeof out, "%s/out-%s-%d", work, modes[m], k);
            struct e2e_spec s = {.prog = bin,
                                 .argv1 = modes[m],
                                 .preload = 1,
                                 .outdir = out,
                                 .env = {k ? "SLEDTRACE_MIN_DURATION=1us" : NULL}};
            struct e2e_run t, a, v;
            e2e_run(work, &s, &t);
            cr_assert_eq(t.status, 0, "%s", t.err);
            cr_assert_str_empty(t.err, "%s", t.err);
            e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
            struct stat st;
            cr_assert_eq(stat(trace, &st), 0);
            size[m][k] = (long)st.st_size;
            e2e_run_sh(work, &a,
                       "'" E2E_SLEDTRACE "' account --format csv '%s' 2>/dev/null | awk -F, "
                       "'NR > 1 && $1 ~ /^f[0-9]+$/ && $3 == 2000 { n++ } END { print n + 0 }'",
                       trace);
            cr_assert_str_eq(a.out, "600\n", "%s %d: functions with 2000 calls: %s", modes[m], k,
                             a.out);
            e2e_run_sh(work, &v,
                       "'" E2E_SLEDTRACE "' dump --verify '%s' >/dev/null && '" E2E_LLVM_XRAY
                       "' fdr-dump --verify '%s' >/dev/null",
                       trace, trace);
            cr_assert(WIFEXITED(v.status) && WEXITSTATUS(v.status) == 0, "%s", v.err);
            e2e_run_free(&t);
            e2e_run_free(&a);
            e2e_run_free(&v);
        }
    cr_assert_geq(size[0][0], 100 * size[0][1], "in a row: %ld bytes without, %ld with", size[0][0],
                  size[0][1]);
    cr_assert_leq(size[1][1], size[1][0] + size[1][0] / 10, "in turn: %ld bytes without, %ld with",
                  size[1][0], size[1][1]);
    e2e_rmtree(work);
}

/* 27.6: processes that start together share the disk. In a 48 MiB tmpfs of its own (a mount
 * namespace: skipped where one cannot be made), four processes each writing 19 MiB of trace
 * start at once. With the default budget each stops writing when the disk's free space falls
 * to half of what it was when it started, so together they never fill it (before: each capped
 * itself at half the free space it saw, 24 MiB, and the four filled the disk, printed "No space
 * left" lines and left empty files): more than 4 MiB stay free. Under `sledtrace run` the run
 * has one budget (SLEDTRACE_DISK_FLOOR, half of what was free when it started): more than
 * 23 MiB stay free. Either way every process exits 0 with an empty stderr, every trace left is
 * whole (dump --verify; a loss marker ends a cut one), and no file is left empty. */
static void share_the_disk(bool run, long min_free_kb)
{
    char work[PATH_MAX];
    e2e_workdir(work, sizeof work);
    char four[PATH_MAX * 2], start[PATH_MAX * 4];
    snprintf(four, sizeof four, "for i in 1 2 3 4; do %s >/dev/null 2>%s/err$i & done; wait",
             BIN("manyshort"), work);
    if (run) /* sledtrace run's own lines (the traces it found) are not the processes' */
        snprintf(start, sizeof start, "%s run -o $d/out -- sh -c \"%s\" 2>/dev/null", E2E_SLEDTRACE,
                 four);
    else
        snprintf(start, sizeof start, "LD_PRELOAD=%s SLEDTRACE_OUTPUT=$d/out sh -c \"%s\"",
                 E2E_PRELOAD, four);
    struct e2e_run r;
    e2e_run_sh(work, &r,
               "unshare -m sh -c '\n"
               "d=%s/disk; mkdir -p $d && mount -t tmpfs -o size=48m tmpfs $d 2>/dev/null || "
               "{ echo SKIP; exit 0; }\n"
               "%s\n"
               "cat %s/err1 %s/err2 %s/err3 %s/err4\n"
               "echo files $(ls $d/out | wc -l) empty $(find $d/out -size 0 | wc -l)\n"
               "echo used $(du -sk $d | cut -f1) free $(df -k --output=avail $d | tail -1)\n"
               "for t in $d/out/*.fdr; do %s dump --verify $t >/dev/null || echo BAD $t; done\n'",
               work, start, work, work, work, work, E2E_SLEDTRACE);
    if (strncmp(r.out, "SKIP", 4) == 0) {
        e2e_run_free(&r);
        e2e_rmtree(work);
        cr_skip_test("no mount namespace with a tmpfs here");
    }
    cr_assert_eq(r.status, 0, "%s\n%s", r.out, r.err);
    long files = -1, empty = -1, used = -1, freek = -1;
    const char *f = strstr(r.out, "files ");
    cr_assert(f && sscanf(f, "files %ld empty %ld\nused %ld free %ld", &files, &empty, &used,
                          &freek) == 4,
              "%s", r.out);
    cr_assert_eq(strncmp(r.out, "files ", 6), 0, "a process wrote to stderr:\n%s", r.out);
    cr_assert_eq(empty, 0, "%s", r.out);
    cr_assert_eq(files % 2, 0, "a trace without its sidecar or the reverse:\n%s", r.out);
    cr_assert_geq(files, 2, "%s", r.out);
    cr_assert_geq(freek, min_free_kb, "the disk was filled past its floor: %s", r.out);
    cr_assert_null(strstr(r.out, "BAD"), "%s", r.out);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

Test(run, processes_started_together_share_the_disk)
{
    share_the_disk(false, 4 * 1024);
}

Test(run, a_run_has_one_disk_budget)
{
    share_the_disk(true, 23 * 1024);
}

/* 28.8: a program that cannot be started is said once, by the child that tried: no "no trace
 * found" after it; exit status 127 as a shell's. */
Test(run, a_program_that_cannot_start_is_said_once)
{
    char work[PATH_MAX];
    e2e_workdir(work, sizeof work);
    struct e2e_run r;
    /* (through sh -c: e2e_run takes a 127 for its own exec's failure) */
    e2e_run_sh(work, &r, "sh -c \"cd '%s' && '" E2E_SLEDTRACE "' run -- ./nope; echo status \\$?\"",
               work);
    cr_assert_str_eq(r.out, "status 127\n");
    cr_assert_str_eq(r.err, "sledtrace: ./nope: No such file or directory\n");
    e2e_run_free(&r);
    e2e_rmtree(work);
}
