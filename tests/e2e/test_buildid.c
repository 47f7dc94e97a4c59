/* Build ids (issue 12, point 4): the runtime records each traced object's GNU build id in the
 * sidecar ('b' lines), exactly as `readelf -n` shows it; an object linked without one gets no
 * line. `sledtrace info` lists them; `--syms BINARY`, in every command that takes it, refuses
 * a binary whose build id is not the traced executable's (one line naming both ids and the
 * sidecar, exit 1) unless `--force-syms` is given, and compares nothing when the trace has no
 * sidecar or its sidecar records no build id. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

/* The build id `readelf -n` gives for the file at path, or "" when it shows none. */
static void readelf_build_id(const char *work, const char *path, char *buf, size_t len)
{
    struct e2e_run r;
    e2e_run_sh(work, &r, "'" E2E_READELF "' -n '%s'", path);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "readelf -n %s: %s", path, r.err);
    const char *p = strstr(r.out, "Build ID: ");
    buf[0] = '\0';
    if (p) {
        p += strlen("Build ID: ");
        snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
    }
    e2e_run_free(&r);
}

/* The hex of the sidecar's line "b<TAB>objid<TAB>hex", or "" when it has none. */
static void sidecar_build_id(const char *syms, unsigned objid, char *buf, size_t len)
{
    char *text = e2e_slurp(syms, NULL);
    cr_assert_not_null(text, "no sidecar %s", syms);
    char key[32];
    snprintf(key, sizeof key, "\nb\t%u\t", objid);
    const char *p = strstr(text, key);
    buf[0] = '\0';
    if (p) {
        p += strlen(key);
        snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
        cr_assert_null(strstr(p, key), "two build ids for object %u in %s", objid, syms);
    }
    free(text);
}

/* Runs bin traced (with arg, if any) in a new work directory; its trace and sidecar paths. */
static void traced_run(const char *bin, const char *arg, char *work, char *trace, char *syms)
{
    char out[PATH_MAX];
    e2e_workdir(work, PATH_MAX);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = arg, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s: status %#x: %s", bin,
              t.status, t.err);
    e2e_trace_path(trace, PATH_MAX, out, bin, t.pid, "fdr");
    e2e_trace_path(syms, PATH_MAX, out, bin, t.pid, "syms");
    e2e_run_free(&t);
}

Test(build_id, sidecar_records_each_objects_build_id)
{
    char work[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX], want[256], got[256];
    /* the executable, a library linked in (object 1) and one dlopen'd (object 2) */
    const char *files[] = {BIN("shlibprog"), BIN("libsla.so"), BIN("libslb.so")};
    traced_run(files[0], files[2], work, trace, syms);
    for (unsigned i = 0; i < 3; i++) {
        readelf_build_id(work, files[i], want, sizeof want);
        cr_assert_eq(strlen(want), 40, "%s: readelf shows no SHA-1 build id", files[i]);
        sidecar_build_id(syms, i, got, sizeof got);
        cr_assert_str_eq(got, want, "object %u (%s)", i, files[i]);
    }
    e2e_rmtree(work);
}

Test(build_id, none_recorded_for_a_binary_without_one)
{
    char work[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX], id[256];
    traced_run(BIN("fib-noid"), NULL, work, trace, syms);
    readelf_build_id(work, BIN("fib-noid"), id, sizeof id);
    cr_assert_str_eq(id, "", "fib-noid has a build id");
    char *text = e2e_slurp(syms, NULL);
    cr_assert_not_null(text);
    cr_assert_null(strstr(text, "\nb\t"), "a build id line in:\n%s", text);
    cr_assert_not_null(strstr(text, "\nf\t0\t"), "no functions in:\n%s", text);
    free(text);
    e2e_rmtree(work);
}

/* `sledtrace ARGS...` run through the shell in work (words of args are split by it). */
static void tool(const char *work, struct e2e_run *r, const char *args)
{
    e2e_run_sh(work, r, "'" E2E_SLEDTRACE "' %s", args);
    cr_assert(WIFEXITED(r->status), "sledtrace %s: status %#x", args, r->status);
}

Test(build_id, info_lists_objects_and_build_ids)
{
    char work[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX], args[PATH_MAX + 16];
    const char *files[] = {BIN("shlibprog"), BIN("libsla.so"), BIN("libslb.so")};
    traced_run(files[0], files[2], work, trace, syms);
    char want[4096] = "objects:       3 (id, build id, path)\n";
    for (unsigned i = 0; i < 3; i++) {
        char id[256];
        readelf_build_id(work, files[i], id, sizeof id);
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "   %u  %s  %s\n", i, id, files[i]);
    }
    snprintf(args, sizeof args, "info '%s'", trace);
    struct e2e_run r;
    tool(work, &r, args);
    cr_assert_eq(WEXITSTATUS(r.status), 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, want), "no\n%s\nin:\n%s", want, r.out);
    e2e_run_free(&r);
    e2e_rmtree(work);

    /* an executable linked without a build id */
    traced_run(BIN("fib-noid"), "5", work, trace, syms);
    snprintf(want, sizeof want,
             "objects:       1 (id, build id, path)\n   0  (none recorded)  %s\n", BIN("fib-noid"));
    snprintf(args, sizeof args, "info '%s'", trace);
    tool(work, &r, args);
    cr_assert_eq(WEXITSTATUS(r.status), 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, want), "no\n%s\nin:\n%s", want, r.out);
    e2e_run_free(&r);

    /* no sidecar at all */
    cr_assert_eq(unlink(syms), 0);
    tool(work, &r, args);
    cr_assert_eq(WEXITSTATUS(r.status), 0, "%s", r.err);
    snprintf(want, sizeof want, "objects:       - (no symbols file %s)\n", syms);
    cr_assert_not_null(strstr(r.out, want), "no\n%s\nin:\n%s", want, r.out);
    cr_assert_str_empty(r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* Every command that takes --syms, with what else it needs. */
static const char *const syms_commands[] = {
    "account", "replay", "stack", "flamegraph -o /dev/null", "graph", "convert --format chrome",
    "dump",
};

/* --syms with another instrumented binary (mix, for a trace of fib): refused by every command
 * with one line naming the binary, both build ids and the sidecar; --force-syms uses it with
 * that line as a warning. */
Test(build_id, syms_binary_of_another_build_is_refused)
{
    char work[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX], args[PATH_MAX * 2];
    char fib_id[256], mix_id[256], want[2048];
    const char *other = BIN("mix-pie-nort");
    traced_run(BIN("fib-pie-nort"), "5", work, trace, syms);
    readelf_build_id(work, BIN("fib-pie-nort"), fib_id, sizeof fib_id);
    readelf_build_id(work, other, mix_id, sizeof mix_id);
    cr_assert_eq(strlen(fib_id), 40);
    cr_assert_eq(strlen(mix_id), 40);
    cr_assert_str_neq(fib_id, mix_id);
    snprintf(want, sizeof want,
             "sledtrace: %s: build id %s differs from the traced executable's %s (recorded in "
             "%s); its names would be wrong (--force-syms uses them anyway)\n",
             other, mix_id, fib_id, syms);
    for (size_t i = 0; i < sizeof syms_commands / sizeof syms_commands[0]; i++) {
        struct e2e_run r;
        snprintf(args, sizeof args, "%s '%s' --syms '%s'", syms_commands[i], trace, other);
        tool(work, &r, args);
        cr_assert_eq(WEXITSTATUS(r.status), 1, "%s: exit %d: %s", args, WEXITSTATUS(r.status),
                     r.err);
        cr_assert_str_eq(r.err, want, "%s", args);
        cr_assert_str_empty(r.out, "%s", args);
        e2e_run_free(&r);

        /* --force-syms, before or after --syms, makes it a warning */
        snprintf(args, sizeof args, "%s '%s' --force-syms --syms='%s'", syms_commands[i], trace,
                 other);
        tool(work, &r, args);
        cr_assert_eq(WEXITSTATUS(r.status), 0, "%s: exit %d: %s", args, WEXITSTATUS(r.status),
                     r.err);
        char warn[2048];
        snprintf(warn, sizeof warn,
                 "sledtrace: warning: %s: build id %s differs from the traced executable's %s "
                 "(recorded in %s); using its names anyway (--force-syms)\n",
                 other, mix_id, fib_id, syms);
        /* first on stderr: some commands write their summary there too */
        cr_assert(strncmp(r.err, warn, strlen(warn)) == 0, "%s: stderr:\n%s", args, r.err);
        cr_assert_null(strstr(r.err + strlen(warn), "sledtrace:"), "%s: stderr:\n%s", args, r.err);
        e2e_run_free(&r);
    }

    /* the binary that was traced: names, silently, as the sidecar gives them */
    struct e2e_run a, b;
    snprintf(args, sizeof args, "replay '%s' --syms '%s'", trace, BIN("fib-pie-nort"));
    tool(work, &a, args);
    cr_assert_eq(WEXITSTATUS(a.status), 0, "%s", a.err);
    cr_assert_str_empty(a.err);
    snprintf(args, sizeof args, "replay '%s'", trace);
    tool(work, &b, args);
    cr_assert_str_eq(a.out, b.out);
    cr_assert_not_null(strstr(a.out, " fib {\n"), "%s", a.out);
    e2e_run_free(&a);
    e2e_run_free(&b);
    e2e_rmtree(work);
}

/* A binary without a build id for a trace whose executable had one: refused as well. */
Test(build_id, syms_binary_without_build_id_is_refused)
{
    char work[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX], args[PATH_MAX * 2];
    char fib_id[256], want[2048];
    traced_run(BIN("fib-pie-nort"), "5", work, trace, syms);
    readelf_build_id(work, BIN("fib-pie-nort"), fib_id, sizeof fib_id);
    snprintf(want, sizeof want,
             "sledtrace: %s: no build id, but the traced executable had %s (recorded in %s); its "
             "names would be wrong (--force-syms uses them anyway)\n",
             BIN("fib-noid"), fib_id, syms);
    snprintf(args, sizeof args, "account '%s' --syms '%s'", trace, BIN("fib-noid"));
    struct e2e_run r;
    tool(work, &r, args);
    cr_assert_eq(WEXITSTATUS(r.status), 1, "%s", r.err);
    cr_assert_str_eq(r.err, want);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

/* Nothing to compare: the trace's executable had no build id, or the trace has no sidecar (as
 * compiler-rt's traces, which is what --syms BINARY is for): the binary is used, silently. */
Test(build_id, nothing_to_compare_is_silent)
{
    char work[PATH_MAX], trace[PATH_MAX], syms[PATH_MAX], args[PATH_MAX * 2];
    traced_run(BIN("fib-noid"), "5", work, trace, syms);
    struct e2e_run r;
    snprintf(args, sizeof args, "replay '%s' --syms '%s'", trace, BIN("mix-pie-nort"));
    tool(work, &r, args);
    cr_assert_eq(WEXITSTATUS(r.status), 0, "%s", r.err);
    cr_assert_str_empty(r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);

    traced_run(BIN("fib-pie-nort"), "5", work, trace, syms);
    cr_assert_eq(unlink(syms), 0);
    snprintf(args, sizeof args, "replay '%s' --syms '%s'", trace, BIN("mix-pie-nort"));
    tool(work, &r, args);
    cr_assert_eq(WEXITSTATUS(r.status), 0, "%s", r.err);
    cr_assert_str_empty(r.err);
    e2e_run_free(&r);
    e2e_rmtree(work);
}
