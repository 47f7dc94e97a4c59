/* Shared objects: functions of a library loaded at start-up and of one dlopen'd (and dlclose'd)
 * later are traced with ids per object that the sidecar names; every count is exact. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

Test(shlib, linked_and_dlopened)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("shlibprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = BIN("libslb.so"), .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "shared objects");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* clang >= 20 -fxray-shared: the library calls __xray_register_dso and reads __xray:: handler
 * pointers; sledtrace provides them, so it loads into a program without compiler-rt, and traces
 * it like any other library. */
Test(shlib, xray_shared_library_without_compiler_rt)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("xsharedprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = BIN("libxs.so"), .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.out);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "-fxray-shared library");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* An executable without sleds is traced through its instrumented libraries: plugprog loads
 * none before it dlopens libslb.so from main while a second thread runs (tracing starts inside
 * that dlopen; until then nothing is instrumented, which is said only at SLEDTRACE_LOG=info);
 * plugprog-linked is linked with libsla.so (tracing starts at start-up). stderr empty for both. Counts exact, and the sidecar names the executable as object 0, with no functions. */
static void uninstrumented_host(const char *name)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX];
    char bin[PATH_MAX];
    snprintf(bin, sizeof bin, "%s/%s", E2E_DIR, name);
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = BIN("libslb.so"), .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s: status %#x: %s", name,
              t.status, t.err);
    cr_assert_str_empty(t.err, "%s: stderr:\n%s", name, t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, name);
    e2e_trace_path(syms, sizeof syms, out, bin, t.pid, "syms");
    FILE *f = fopen(syms, "r");
    cr_assert_not_null(f, "%s", syms);
    char line[PATH_MAX + 64], want[PATH_MAX + 64];
    cr_assert_not_null(fgets(line, sizeof line, f));
    do /* the first object line (run, cmd lines come before it) */
        cr_assert_not_null(fgets(line, sizeof line, f));
    while (strncmp(line, "o\t", 2) != 0);
    snprintf(want, sizeof want, "o\t0\t0x0\t%s\n", bin);
    cr_assert_str_eq(line, want, "%s: object 0 of the sidecar", name);
    while (fgets(line, sizeof line, f))
        cr_assert(strncmp(line, "f\t0\t", 4) != 0, "%s: a function of object 0: %s", name, line);
    fclose(f);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(shlib, uninstrumented_host_dlopens_a_plugin)
{
    uninstrumented_host("plugprog");
}

Test(shlib, uninstrumented_host_linked_with_a_library)
{
    uninstrumented_host("plugprog-linked");
}

/* Every process LD_PRELOAD reaches pays for what the runtime maps: one without sleds does not
 * map Capstone, which comes with the first object that has a map, here a plugin dlopen'd from
 * main (the dynamic linker's own account, LD_DEBUG=files). Neither maps libelf or its libz:
 * maps are read without them (patcher/map.c; loading them was about 105 us of every traced
 * process's start-up). */
Test(shlib, capstone_is_loaded_only_for_an_object_with_sleds_libelf_never)
{
    char work[PATH_MAX], out[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *progs[] = {BIN("plain-pie"), BIN("plugprog")};
    for (int i = 0; i < 2; i++) {
        struct e2e_spec s = {.prog = progs[i],
                             .argv1 = i ? BIN("libslb.so") : NULL,
                             .preload = 1,
                             .outdir = out,
                             .env = {"LD_DEBUG=files"}};
        struct e2e_run t;
        e2e_run(work, &s, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s: %s", progs[i], t.err);
        cr_assert_null(strstr(t.err, "file=libelf.so.1"), "%s:\n%s", progs[i], t.err);
        cr_assert_null(strstr(t.err, "file=libz.so.1"), "%s:\n%s", progs[i], t.err);
        cr_assert_eq(strstr(t.err, "file=libcapstone") != NULL, i, "%s:\n%s", progs[i], t.err);
        e2e_run_free(&t);
        e2e_rmtree(out);
    }
    e2e_rmtree(work);
}

/* Issue 9.5: a plugin dlclose'd and dlopen'd again (usually at the same address) is a new image:
 * it is proven and patched again, under its old object number. reloadprog.c does 20 rounds of
 * dlopen, calls, sledtrace_unpatch/patch, calls, dlclose. Before: only the first round was
 * traced, and the switches wrote sled heads into the unpatched reloaded code (SIGSEGV, 3 of 3). */
Test(shlib, plugin_reloaded_in_a_loop)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("reloadprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = BIN("libslb.so"), .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    cr_assert_str_empty(t.err, "%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "reloadprog");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Issue 9.13: a plugin whose constructor starts a thread running the plugin's traced code, loaded
 * and unloaded 32 times per run: dlopen patches the plugin while that thread executes the pages
 * being rewritten (writable, not executable, meanwhile). Before: SIGSEGV in 37 of 40 runs; the
 * thread now waits for the rewrite (its fault is recognised even once the rewrite is over). */
Test(shlib, plugin_constructor_thread_runs_while_patched)
{
    for (int i = 0; i < 5; i++) {
        char work[PATH_MAX], out[PATH_MAX];
        e2e_workdir(work, sizeof work);
        snprintf(out, sizeof out, "%s/out", work);
        struct e2e_spec s = {
            .prog = BIN("ctorprog"), .argv1 = BIN("libctor.so"), .preload = 1, .outdir = out};
        struct e2e_run t;
        e2e_run(work, &s, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "run %d: status %#x: %s", i,
                  t.status, t.err);
        cr_assert_str_eq(t.out, "rounds 32\n");
        cr_assert_str_empty(t.err, "%s", t.err);
        e2e_run_free(&t);
        e2e_rmtree(work);
    }
}
