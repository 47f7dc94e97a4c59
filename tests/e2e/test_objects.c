/* Loaded objects as the runtime tells them apart (issue 23, items 1, 6 and 14): plugins that
 * several threads load and unload at once, more instrumented libraries than ids packed as
 * (object << 24) can number, and a debugger's breakpoint on a sled. */
#include "e2e.h"
#include "progs.h"
#include "stf.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIN(name) E2E_DIR "/" name

/* n copies of libslb.so in work, named libpNN.so: distinct files (own inodes) with the same
 * functions. Their paths, space-separated, go to list. */
static void copies(const char *work, int n, char *list, size_t len)
{
    size_t size;
    char *lib = e2e_slurp(BIN("libslb.so"), &size);
    cr_assert_not_null(lib);
    list[0] = '\0';
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/libp%02d.so", work, i);
        FILE *f = fopen(path, "w");
        cr_assert(f && fwrite(lib, 1, size, f) == size && fclose(f) == 0, "%s", path);
        snprintf(list + strlen(list), len - strlen(list), "%s%s", i ? " " : "", path);
    }
    free(lib);
}

/* Runs prog with the arguments in args (a shell word list) under the preload. */
static void run_with(const char *work, const char *out, const char *prog, const char *args,
                     struct e2e_run *t)
{
    e2e_run_sh(work, t, "env LD_PRELOAD=%s SLEDTRACE_OUTPUT=%s %s %s", E2E_PRELOAD, out, prog,
               args);
}

/* The trace of the only process that wrote one in out. */
static void only_trace(const char *out, char *path, size_t len)
{
    struct e2e_run t;
    char work[PATH_MAX];
    e2e_workdir(work, sizeof work);
    e2e_run_sh(work, &t, "ls %s/*.fdr", out);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0 && e2e_nlines(t.out) == 1,
              "one trace expected in %s: %s", out, t.out);
    snprintf(path, len, "%.*s", (int)strcspn(t.out, "\n"), t.out);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Issue 23.1: 8 threads dlopen, call and dlclose 4 plugins (150 rounds each), so that one
 * thread's dlclose unmaps a plugin that another's dlopen maps again at the same address before
 * the runtime's next scan. Before: that fresh copy was taken for the patched one and its calls
 * went untraced (hundreds of 213,600 calls lost, every run). Every call now counts, 3 runs. */
Test(objects, plugins_loaded_and_unloaded_by_eight_threads)
{
    for (int run = 0; run < 3; run++) {
        char work[PATH_MAX], out[PATH_MAX], list[PATH_MAX * 4], trace[PATH_MAX];
        e2e_workdir(work, sizeof work);
        snprintf(out, sizeof out, "%s/out", work);
        copies(work, 4, list, sizeof list);
        struct e2e_run t;
        run_with(work, out, BIN("plugrace"), list, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "run %d: status %#x: %s", run,
                  t.status, t.err);
        cr_assert_str_empty(t.err, "run %d: %s", run, t.err);
        only_trace(out, trace, sizeof trace);
        e2e_check_printed(trace, t.out, "plugrace");
        e2e_run_free(&t);
        e2e_rmtree(work);
    }
}

/* Issue 23.1: the same with a thread that switches tracing off and on meanwhile. Before: a
 * switch wrote sled heads into a fresh, unpatched copy of a plugin: SIGSEGV, 16 of 16 runs.
 * Switches now touch only the images the runtime patched, listed by the dynamic linker while
 * they are written. 4 runs: exit 0, nothing on stderr, a trace every reader takes. */
Test(objects, switches_while_threads_reload_plugins)
{
    for (int run = 0; run < 4; run++) {
        char work[PATH_MAX], out[PATH_MAX], list[PATH_MAX * 4], trace[PATH_MAX];
        e2e_workdir(work, sizeof work);
        snprintf(out, sizeof out, "%s/out", work);
        copies(work, 4, list, sizeof list);
        char args[sizeof list + 16];
        snprintf(args, sizeof args, "toggle %s", list);
        struct e2e_run t;
        run_with(work, out, BIN("plugrace"), args, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "run %d: status %#x: %s", run,
                  t.status, t.err);
        cr_assert_str_empty(t.err, "run %d: %s", run, t.err);
        only_trace(out, trace, sizeof trace);
        struct e2e_run v;
        e2e_run_sh(work, &v, "%s dump --verify %s", E2E_SLEDTRACE, trace);
        cr_assert(WIFEXITED(v.status) && WEXITSTATUS(v.status) == 0, "run %d: %s%s", run, v.out,
                  v.err);
        e2e_run_free(&v);
        e2e_run_free(&t);
        e2e_rmtree(work);
    }
}

/* Issue 23.14: 20 instrumented plugins loaded at once. Before: from the 16th on they were left
 * untraced ("more than 15 instrumented libraries"). Each has its own object now (the 15th on
 * with a range of ids given by the sidecar's 'r' line): account's rows of b_entry, one per
 * plugin, each name the plugin by its id, with the count the program made through it. */
Test(objects, twenty_plugins_each_under_its_own_object)
{
    enum { N = 20 };
    char work[PATH_MAX], out[PATH_MAX], list[PATH_MAX * N], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    copies(work, N, list, sizeof list);
    struct e2e_run t;
    run_with(work, out, BIN("manyplug"), list, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    cr_assert_str_empty(t.err, "%s", t.err);
    cr_assert_eq(e2e_count_lines(t.out, "plugin "), N, "%s", t.out);
    only_trace(out, trace, sizeof trace);

    char *sp = stf_syms_path_for(trace), err[512];
    struct stf_syms *syms = NULL;
    cr_assert_eq(stf_syms_load(&syms, sp, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_syms_objects(syms), N + 1, "objects: the executable and %d plugins", N);
    struct e2e_run a;
    e2e_run_sh(work, &a, "%s account --format csv --sort id %s", E2E_SLEDTRACE, trace);
    cr_assert(WIFEXITED(a.status) && WEXITSTATUS(a.status) == 0, "%s", a.err);
    int seen[N] = {0}, fibs = 0;
    for (char *line = strtok(a.out, "\n"); line; line = strtok(NULL, "\n")) {
        char name[64];
        unsigned long id;
        long count;
        if (sscanf(line, "%63[^,],%lu,%ld", name, &id, &count) != 3)
            continue;
        uint32_t objid, fid;
        stf_syms_split(syms, (uint32_t)id, &objid, &fid);
        const char *path = stf_syms_object(syms, objid);
        const char *lib = path ? strrchr(path, '/') : NULL;
        int k;
        if (strcmp(name, "b_fib") == 0)
            fibs++;
        if (!lib || sscanf(lib, "/libp%d.so", &k) != 1 || k < 0 || k >= N)
            continue;
        if (strcmp(name, "b_entry") == 0) {
            cr_expect_eq(count, k + 1, "plugin %d (id %lu): %ld calls of b_entry, expected %d", k,
                         id, count, k + 1);
            seen[k]++;
        } else if (strcmp(name, "b_fib") == 0) {
            cr_expect_eq(count, (k + 1) * fib_calls(5), "plugin %d: %ld calls of b_fib", k, count);
        }
    }
    for (int k = 0; k < N; k++)
        cr_expect_eq(seen[k], 1, "plugin %d: %d rows of b_entry", k, seen[k]);
    cr_expect_eq(fibs, N, "rows of b_fib: %d", fibs);
    e2e_run_free(&a);
    stf_syms_free(syms);
    free(sp);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Runs prog with argv1 under the preload: exit 0, stderr exactly `err` (a line, or "" for
 * none), and the exact counts the program prints. */
static void run_exact(const char *prog, const char *argv1, const char *err)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = prog, .argv1 = argv1, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s: status %#x: %s", prog,
              t.status, t.err);
    cr_assert_str_eq(t.err, err, "%s: stderr:\n%s", prog, t.err);
    e2e_trace_path(trace, sizeof trace, out, prog, t.pid, "fdr");
    e2e_check_printed(trace, t.out, prog);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Issue 23.6: a breakpoint set before the runtime starts (bpprog.c "before"). Before: the
 * function was left untraced with a message only at the info level. Now one warning names the
 * cause, and the other function's count is exact. */
Test(objects, breakpoint_before_start_is_said)
{
    run_exact(BIN("bpprog"), "before",
              "sledtrace: warning: " BIN("bpprog") ": 1 function left untraced (a debugger's "
                                                   "breakpoint (int3) on its sled): bp_target\n");
}

/* Issue 23.6: gdb's `break *func` on a patched sled, then a switch (bpprog.c "after"). Before:
 * sledtrace_unpatch wrote its head over the int3, and the byte the debugger put back made
 * garbage code: SIGSEGV. The switch now leaves that function alone (it stays traced, as it
 * was) and says so once. */
Test(objects, switch_leaves_a_breakpoint_alone)
{
    run_exact(BIN("bpprog"), "after",
              "sledtrace: warning: 1 function whose sled someone else changed (a debugger's "
              "breakpoint?) left as it is, no longer switched on or off\n");
}

/* Issue 23.11: a library loaded with dlmopen into a new link-map namespace. Before: never
 * patched, silently (dl_iterate_phdr lists only its caller's namespace). Both copies of
 * libslb.so, the dlopen'd one and the dlmopen'd one, are traced, exactly. */
Test(objects, library_in_another_link_map_namespace)
{
    run_exact(BIN("dlmprog"), BIN("libslb.so"), "");
}
