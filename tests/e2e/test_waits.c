/* Waiting shown as waiting (issue 28.1, preload/waits.c): waitprog.c's blocking calls are
 * pseudo-calls "[wait] NAME" in exactly the frames, and exactly as many times, as the program
 * says; calls that cannot block are not recorded; results and errno are libc's; SLEDTRACE_WAITS
 * chooses; a thread cancelled in a wait closes it; a wait that ends on another CPU is marked
 * [migrated]; llvm-xray still reads the trace. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

static void run_prog(const char *arg, const char *env, struct e2e_run *t, char *work, char *trace)
{
    char out[PATH_MAX];
    e2e_workdir(work, PATH_MAX);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {
        .prog = BIN("waitprog"), .argv1 = arg, .preload = 1, .outdir = out, .env = {env}};
    e2e_run(work, &s, t);
    cr_assert(WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0, "status %#x\n%s%s", t->status,
              t->out, t->err);
    cr_assert_eq(t->err_len, 0, "stderr: %s", t->err);
    e2e_trace_path(trace, PATH_MAX, out, BIN("waitprog"), t->pid, "fdr");
}

/* The folded stacks by count ("a;b;c N\n"). */
static char *stacks(const char *work, const char *trace)
{
    struct e2e_run r;
    e2e_run_sh(work, &r, "'%s' stack --by count --format folded '%s' 2>/dev/null", E2E_SLEDTRACE,
               trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
    char *s = r.out;
    r.out = NULL;
    e2e_run_free(&r);
    return s;
}

/* Calls of `leaf` whose caller is `fn` (stacks ending "fn;leaf"; fn NULL: anywhere). */
static long count_under(const char *folded, const char *fn, const char *leaf)
{
    char suffix[256];
    if (fn)
        snprintf(suffix, sizeof suffix, "%s;%s ", fn, leaf);
    else
        snprintf(suffix, sizeof suffix, "%s ", leaf);
    long n = 0;
    for (const char *l = folded; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *sp = memrchr(l, ' ', len);
        if (sp) {
            size_t k = strlen(suffix);
            const char *start = sp + 1 - k;
            if (sp + 1 - l >= (long)k && memcmp(start, suffix, k) == 0 &&
                (start == l || start[-1] == ';'))
                n += strtol(sp + 1, NULL, 10);
        }
        l += len + (e != NULL);
    }
    return n;
}

Test(waits, each_blocking_call_is_a_pseudo_call_of_its_caller, .timeout = 60)
{
    char work[PATH_MAX], trace[PATH_MAX];
    struct e2e_run t;
    run_prog(NULL, NULL, &t, work, trace);
    cr_assert(!strstr(t.out, "FAILED"), "%s", t.out);
    static const char *const oks[] = {"ok poll\n",           "ok read\n",       "ok poll-0\n",
                                      "ok waitpid-nohang\n", "ok read-ebadf\n", "ok waitpid\n",
                                      "ok futex\n"};
    for (size_t i = 0; i < sizeof oks / sizeof oks[0]; i++)
        cr_expect(strstr(t.out, oks[i]), "no '%s' in:\n%s", oks[i], t.out);
    char *folded = stacks(work, trace);
    int lines = 0;
    for (const char *l = t.out; (l = strstr(l, "waits ")) != NULL; l++) {
        char fn[64], name[64];
        long n = 0;
        int k = sscanf(l, "waits %63s %63s %ld", fn, name, &n);
        cr_assert(k >= 2, "%s", l);
        lines++;
        if (strcmp(name, "none") == 0) {
            char pre[80];
            snprintf(pre, sizeof pre, "%s;[wait] ", fn);
            cr_expect(!strstr(folded, pre), "%s made a recorded wait:\n%s", fn, folded);
            continue;
        }
        char leaf[96];
        snprintf(leaf, sizeof leaf, "[wait] %s", name);
        cr_expect_eq(count_under(folded, fn, leaf), n, "%s: %ld '%s' expected:\n%s", fn, n, leaf,
                     folded);
    }
    cr_assert_eq(lines, 16, "%s", t.out);
    /* the runtime's own calls (its flush thread's writes, its locks) are never recorded: every
     * write in the trace is the writer thread's single one */
    cr_expect_eq(count_under(folded, NULL, "[wait] write"), 1, "%s", folded);
    free(folded);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(waits, chosen_by_sledtrace_waits, .timeout = 60)
{
    char work[PATH_MAX], trace[PATH_MAX];
    struct e2e_run t;
    run_prog(NULL, "SLEDTRACE_WAITS=none", &t, work, trace);
    char *folded = stacks(work, trace);
    cr_expect(!strstr(folded, "[wait]"), "%s", folded);
    cr_expect_eq(count_under(folded, NULL, "cond_waiter"), 1, "%s", folded);
    free(folded);
    e2e_run_free(&t);
    e2e_rmtree(work);

    run_prog(NULL, "SLEDTRACE_WAITS=pthread_join,*sleep", &t, work, trace);
    folded = stacks(work, trace);
    cr_expect_eq(count_under(folded, "joins", "[wait] pthread_join"), 4, "%s", folded);
    cr_expect_eq(count_under(folded, "sleeps", "[wait] usleep"), 1, "%s", folded);
    cr_expect_eq(count_under(folded, "sleeps", "[wait] nanosleep"), 1, "%s", folded);
    cr_expect(!strstr(folded, "[wait] read") && !strstr(folded, "[wait] pthread_cond_wait"), "%s",
              folded);
    free(folded);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* A thread cancelled in pthread_cond_wait: the wait closes with its own exit (recorded as the
 * cancellation unwinds), where the frame around it, whose exit sled never runs, is unfinished. */
Test(waits, a_cancelled_wait_closes, .timeout = 60)
{
    char work[PATH_MAX], trace[PATH_MAX];
    struct e2e_run t;
    run_prog("cancel", NULL, &t, work, trace);
    cr_assert(strstr(t.out, "ok cancelled\n"), "%s", t.out);
    struct e2e_run r;
    e2e_run_sh(work, &r, "'%s' replay '%s'", E2E_SLEDTRACE, trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
    const char *w = strstr(r.out, "[wait] pthread_cond_wait");
    /* closed by its own exit: no [unfinished] nor [repaired] (it may have changed CPU) */
    cr_assert(w &&
                  (strncmp(w, "[wait] pthread_cond_wait\n", 25) == 0 ||
                   strncmp(w, "[wait] pthread_cond_wait [migrated]\n", 36) == 0) &&
                  !strstr(w + 1, "[wait] pthread_cond_wait"),
              "one closed wait expected:\n%s", r.out);
    cr_expect(strstr(r.out, "} wait_forever [unfinished]"), "%s", r.out);
    e2e_run_free(&r);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* A nap during which the thread's affinity moves it from CPU 0 to CPU 1: its wait ends with a
 * NewCPUId record, which replay shows as [migrated], and llvm-xray reads. */
Test(waits, a_wait_that_changed_cpu_is_migrated, .timeout = 60)
{
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        cr_skip_test("one CPU: no migration to see");
    char work[PATH_MAX], trace[PATH_MAX];
    struct e2e_run t;
    run_prog("migrate", NULL, &t, work, trace);
    cr_assert(strstr(t.out, "ok moved\n") && strstr(t.out, "napper on cpu 1\n"), "%s", t.out);
    struct e2e_run r;
    e2e_run_sh(work, &r, "'%s' replay '%s'", E2E_SLEDTRACE, trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
    cr_expect(strstr(r.out, "[wait] nanosleep [migrated]\n"), "%s", r.out);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'%s' fdr-dump --verify '%s' && '%s' convert -m '%s' '%s' >/dev/null",
               E2E_LLVM_XRAY, trace, E2E_LLVM_XRAY, BIN("waitprog"), trace);
    cr_expect(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "llvm-xray: %s", r.err);
    e2e_run_free(&r);
    e2e_run_free(&t);
    e2e_rmtree(work);
}
