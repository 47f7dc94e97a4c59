/* SLEDTRACE_FILTER / SLEDTRACE_EXCLUDE: comma-separated [LIB:]GLOB patterns on function names.
 * A function that is kept has exactly the count the program prints; one left out does not appear
 * in the trace at all (its sleds were never patched). With nothing kept there is no trace. */
#include <criterion/criterion.h>

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

/* Runs mix with `env`; `kept` is a comma-separated list of globs naming what must be in the
 * trace (everything else must be absent), or NULL when no trace may be written. */
static void check_filter(const char *env, const char *kept)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("mix-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out, .env = {env}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    if (!kept) {
        cr_assert_leq(e2e_dir_entries(out), 0, "%s: nothing was kept, yet files were written", env);
        e2e_run_free(&t);
        e2e_rmtree(work);
        return;
    }
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    cr_assert_str_empty(tr.error, "%s", tr.error);
    int nkept = 0;
    for (int i = 0; i < e.nfuncs; i++) {
        char globs[256];
        snprintf(globs, sizeof globs, "%s", kept);
        int keep = 0;
        for (char *g = strtok(globs, ","); g; g = strtok(NULL, ","))
            keep |= fnmatch(g, e.f[i].name, 0) == 0;
        long got = 0;
        for (int j = 0; j < tr.nfuncs; j++)
            if (strcmp(tr.f[j].name, e.f[i].name) == 0)
                got = tr.f[j].enter;
        cr_assert_eq(got, keep ? e.f[i].count : 0, "%s: %s entered %ld times, want %ld", env,
                     e.f[i].name, got, keep ? e.f[i].count : 0L);
        nkept += keep;
    }
    cr_assert_eq(tr.nfuncs, nkept, "%s: %d functions in the trace, %d kept", env, tr.nfuncs, nkept);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(filter, only)
{
    check_filter("SLEDTRACE_FILTER=is_*", "is_even,is_odd");
}
Test(filter, exclude)
{
    check_filter("SLEDTRACE_EXCLUDE=is_*,leaf", "main,chain,tailer,twoexits");
}
Test(filter, qualified_by_program)
{
    check_filter("SLEDTRACE_FILTER=mix-pie-*:chain", "chain");
}
Test(filter, other_library_only)
{
    check_filter("SLEDTRACE_FILTER=libother.so:chain", NULL);
}

/* 14.1: functions a filter leaves out cost nothing at start-up either: they are not proven
 * (the info line counts the functions swept with Capstone: 1 of mix's 7 with is_even; all 7
 * without a filter). */
Test(filter, left_out_functions_are_not_proven)
{
    char work[PATH_MAX], out[PATH_MAX];
    const char *bin = BIN("mix-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    for (int filtered = 0; filtered < 2; filtered++) {
        struct e2e_spec s = {
            .prog = bin,
            .preload = 1,
            .outdir = out,
            .env = {"SLEDTRACE_LOG=info", filtered ? "SLEDTRACE_FILTER=is_even" : NULL}};
        struct e2e_run t;
        e2e_run(work, &s, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
        char want[PATH_MAX + 64];
        snprintf(want, sizeof want,
                 "sledtrace: info: %s: 7 functions (%d proven, %d by the cache), 17 sleds, %d "
                 "patched\n",
                 bin, filtered ? 1 : 7, filtered ? 1 : 0, filtered ? 3 : 17);
        cr_assert_not_null(strstr(t.err, want), "no '%s' in:\n%s", want, t.err);
        e2e_run_free(&t);
        e2e_rmtree(out);
    }
    e2e_rmtree(work);
}

/* 12.5: a pattern that matches no function is said at the default level, once, whatever else
 * matches (a typo must not go unnoticed); the rest is traced as asked. */
Test(filter, pattern_matching_nothing_warns)
{
    char work[PATH_MAX], out[PATH_MAX];
    const char *bin = BIN("mix-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin,
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_FILTER=is_*,is_evn", "SLEDTRACE_EXCLUDE=leaf,lef"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_eq(t.err,
                     "sledtrace: warning: SLEDTRACE_FILTER: 'is_evn' matches no function "
                     "(patterns are shell globs on function names, C++ names demangled or not; "
                     "LIB:GLOB limits one to an object)\n"
                     "sledtrace: warning: SLEDTRACE_EXCLUDE: 'lef' matches no function "
                     "(patterns are shell globs on function names, C++ names demangled or not; "
                     "LIB:GLOB limits one to an object)\n");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* 12.5: C++ patterns on demangled names (cxxfilter.cpp): with or without the parameter list,
 * "::" never taken for the LIB: separator, mangled names still accepted. `want` is the exact
 * account CSV rows (function,count) of the program's functions, in any order. */
static void check_cxx_env(const char *env, const char *const *want)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("cxxfilter"), *filter = env;
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out, .env = {env}};
    struct e2e_run t, a;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "%s: stderr:\n%s", filter, t.err);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_run_sh(work, &a, "'" E2E_SLEDTRACE "' account --format csv --names full '%s'", trace);
    cr_assert_eq(a.status, 0, "%s", a.err);
    int rows = 0, nwant = 0;
    for (const char *p = strchr(a.out, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
        const char *line = p + 1;
        if (strncmp(line, "[sledtrace]", 11) == 0)
            continue;
        rows++;
        /* function,id,count,...: as "function=count" */
        char name[128], row[160];
        long id, count;
        const char *comma = strchr(line, ',');
        cr_assert(comma && comma - line < (long)sizeof name &&
                      sscanf(comma, ",%ld,%ld,", &id, &count) == 2,
                  "%s: bad row %.60s", filter, line);
        snprintf(name, sizeof name, "%.*s", (int)(comma - line), line);
        snprintf(row, sizeof row, "%s=%ld", name, count);
        int found = 0;
        for (int i = 0; want[i]; i++)
            found |= strcmp(row, want[i]) == 0;
        cr_assert(found, "%s: unexpected row %s", filter, row);
    }
    while (want[nwant])
        nwant++;
    cr_assert_eq(rows, nwant, "%s: %d functions traced, want %d:\n%s", filter, rows, nwant, a.out);
    e2e_run_free(&a);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

static void check_cxx(const char *filter, const char *const *want)
{
    char env[256];
    snprintf(env, sizeof env, "SLEDTRACE_FILTER=%s", filter);
    check_cxx_env(env, want);
}

Test(filter, cxx_demangled_patterns)
{
    check_cxx("app::risky*",
              (const char *const[]){"app::risky(long)=3", "app::risky(double)=2", NULL});
    check_cxx("app::safe", (const char *const[]){"app::safe(long)=5", NULL});
    check_cxx("app::*", (const char *const[]){"app::risky(long)=3", "app::risky(double)=2",
                                              "app::safe(long)=5",
                                              "app::Widget::risky_method(long)=4", NULL});
    check_cxx("cxxfilter:app::risky(double)", (const char *const[]){"app::risky(double)=2", NULL});
    check_cxx("_ZN3app4safeEl", (const char *const[]){"app::safe(long)=5", NULL});
}

/* envwipe.c writes over its environment block (as servers that set their process title do) and
 * chdirs to "/" before it forks a traced child and dlopens libslb.so: the filter, the relative
 * output directory and every other setting were copied (and the directory resolved) at
 * start-up. Both processes trace into <work>/out, with exact counts; `unlisted` stays out. */
Test(filter, survives_a_wiped_environment_and_chdir)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("envwipe-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    e2e_run_sh(work, &t,
               "env -C '%s' LD_PRELOAD='" E2E_PRELOAD "' SLEDTRACE_OUTPUT=out "
               "SLEDTRACE_FILTER='fib,libslb.so:b_*' '%s' '%s'",
               work, bin, BIN("libslb.so"));
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "parent");

    int child = -1;
    const char *f = strstr(t.out, "forked ");
    cr_assert(f && sscanf(f, "forked %d", &child) == 1, "%s", t.out);
    char want[256];
    snprintf(want, sizeof want, "count fib %ld\nthreads 1\nthreadwork %ld\n", 177L, 177L);
    e2e_parse_expect(want, &e); /* fib(10): 2 F(11) - 1 = 177 calls */
    e2e_trace_path(trace, sizeof trace, out, bin, child, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "child");
    cr_assert_eq(e2e_dir_entries(out), 4, "the parent's and the child's trace and sidecar");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* ---- SLEDTRACE_EXCLUDE_FILE ---------------------------------------------------------------- */

/* Writes text to <work>/name; its path in buf. */
static void write_file(char *buf, size_t len, const char *work, const char *name, const char *text)
{
    snprintf(buf, len, "%s/%s", work, name);
    FILE *f = fopen(buf, "w");
    cr_assert_not_null(f, "%s", buf);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* Runs manyprog (2 rounds) with env; `gone(name)` says which functions must be absent. Every
 * other function has exactly the count the program prints, and the thread's enters are the
 * kept ones' sum. stderr must be `err`. */
static void check_many(const char *const *env, int (*gone)(const char *name), const char *err)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("manyprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .argv1 = "2", .preload = 1, .outdir = out};
    for (int i = 0; env[i]; i++)
        s.env[i] = env[i];
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_eq(t.err, err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    cr_assert_eq(e.nfuncs, 103);
    int ngone = 0;
    for (int i = 0; i < e.nfuncs; i++)
        if (gone(e.f[i].name)) {
            e.work[0] -= e.f[i].count;
            e.f[i].count = 0; /* absent: never entered */
            ngone++;
        }
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "manyprog");
    cr_assert_eq(tr.nfuncs, 103 - ngone, "%d functions traced, want %d", tr.nfuncs, 103 - ngone);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* tinyNN's number, or -1 for another function. */
static int tiny_no(const char *name)
{
    int n;
    char end;
    return sscanf(name, "tiny%2d%c", &n, &end) == 1 && strlen(name) == 6 ? n : -1;
}

/* The file of exclude_file_adds_up: tiny00..tiny69 by name, tiny85 escaped, tiny86 limited to
 * the program, tiny9? as a glob; SLEDTRACE_EXCLUDE adds tiny80. */
static int gone_file(const char *name)
{
    int n = tiny_no(name);
    return n >= 0 && (n < 70 || n == 80 || n == 85 || n == 86 || n >= 90);
}

/* Far more patterns than SLEDTRACE_EXCLUDE ever allowed (64): 2800 exact names (tiny00..tiny69,
 * each 40 times), one a line, with comments, blank lines, blanks around a pattern and a CRLF
 * line end; its patterns and SLEDTRACE_EXCLUDE's add up. Every pattern matches, so nothing is
 * said. */
Test(filter, exclude_file_adds_up)
{
    char work[PATH_MAX], path[PATH_MAX], var[PATH_MAX + 32];
    e2e_workdir(work, sizeof work);
    static char text[64 * 1024];
    snprintf(text, sizeof text, "# written for manyprog\n\n");
    for (int k = 0; k < 40; k++)
        for (int i = 0; i < 70; i++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%stiny%02d%s\n",
                     i % 7 == 3 ? "  \t" : "", i,
                     i == 5   ? " \t"
                     : i == 6 ? "\r"
                              : "");
    strcat(text, "   \n# an escaped literal, one limited to the program, a glob\n"
                 "tin\\y85\nmanyprog:tiny86\ntiny9?");
    write_file(path, sizeof path, work, "exclude.txt", text);
    snprintf(var, sizeof var, "SLEDTRACE_EXCLUDE_FILE=%s", path);
    check_many((const char *const[]){var, "SLEDTRACE_EXCLUDE=tiny80", NULL}, gone_file, "");
    e2e_rmtree(work);
}

static int gone_none(const char *name)
{
    (void)name;
    return 0;
}

/* A file that cannot be read: one warning, and the run is traced as if it were not given. */
Test(filter, exclude_file_unreadable)
{
    check_many((const char *const[]){"SLEDTRACE_EXCLUDE_FILE=/nonexistent/exclude.txt", NULL},
               gone_none,
               "sledtrace: warning: SLEDTRACE_EXCLUDE_FILE=/nonexistent/exclude.txt: cannot read "
               "it (No such file or directory); tracing as if it were not given\n");
    /* a directory, and a FIFO nobody writes to (must not hang) */
    check_many((const char *const[]){"SLEDTRACE_EXCLUDE_FILE=/", NULL}, gone_none,
               "sledtrace: warning: SLEDTRACE_EXCLUDE_FILE=/: cannot read it (not a regular "
               "file); tracing as if it were not given\n");
    char work[PATH_MAX], fifo[PATH_MAX], var[PATH_MAX + 32], want[2 * PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(fifo, sizeof fifo, "%s/fifo", work);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    snprintf(var, sizeof var, "SLEDTRACE_EXCLUDE_FILE=%s", fifo);
    snprintf(want, sizeof want,
             "sledtrace: warning: %s: cannot read it (not a regular file); tracing as if it "
             "were not given\n",
             var);
    check_many((const char *const[]){var, NULL}, gone_none, want);
    e2e_rmtree(work);
}

static int is_tiny01(const char *name)
{
    return strcmp(name, "tiny01") == 0;
}

/* C++ names in the file: a demangled name with its parameter list, a mangled one (what account
 * --suggest-exclude writes), one limited to the program. */
Test(filter, exclude_file_cxx)
{
    char work[PATH_MAX], path[PATH_MAX], var[PATH_MAX + 32];
    e2e_workdir(work, sizeof work);
    write_file(path, sizeof path, work, "exclude.txt",
               "# app::safe(long)\n_ZN3app4safeEl\napp::risky(double)\ncxxfilter:helper\n");
    snprintf(var, sizeof var, "SLEDTRACE_EXCLUDE_FILE=%s", path);
    check_cxx_env(var, (const char *const[]){"app::risky(long)=3",
                                             "app::Widget::risky_method(long)=4", NULL});
    e2e_rmtree(work);
}

/* A pattern of the file that matches nothing is said with its line; past 8 such warnings the
 * others are counted in one line. */
Test(filter, exclude_file_pattern_matching_nothing)
{
    char work[PATH_MAX], path[PATH_MAX], var[PATH_MAX + 32];
    e2e_workdir(work, sizeof work);
    write_file(path, sizeof path, work, "exclude.txt",
               "# stale\ntiny01\nnope1\n\nnope2\nnope3\nnope4\nnope5\nnope6\nnope7\nnope8\nnope9\n"
               "nope10\n");
    snprintf(var, sizeof var, "SLEDTRACE_EXCLUDE_FILE=%s", path);
    char want[4096] = "";
    static const int lines[] = {3, 5, 6, 7, 8, 9, 10, 11};
    for (int i = 0; i < 8; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want),
                 "sledtrace: warning: SLEDTRACE_EXCLUDE_FILE line %d: 'nope%d' matches no "
                 "function (patterns are shell globs on function names, C++ names demangled or "
                 "not; LIB:GLOB limits one to an object)\n",
                 lines[i], i + 1);
    strcat(want, "sledtrace: warning: SLEDTRACE_EXCLUDE_FILE: 2 more patterns match no function "
                 "(SLEDTRACE_LOG=info names them)\n");
    check_many((const char *const[]){var, NULL}, is_tiny01, want);
    e2e_rmtree(work);
}

/* run --exclude-file: the runtime gets the file by its absolute path (a program that changes
 * directory still finds it); a file it could not read is a usage error before the program
 * starts. */
Test(filter, run_exclude_file)
{
    char work[PATH_MAX], path[PATH_MAX], want[PATH_MAX + 8];
    e2e_workdir(work, sizeof work);
    write_file(path, sizeof path, work, "exclude.txt", "tiny*\n");
    struct e2e_run t;
    e2e_run_sh(work, &t,
               "env -C '%s' '" E2E_SLEDTRACE "' run -o out --exclude-file exclude.txt -- sh -c "
               "'echo \"$SLEDTRACE_EXCLUDE_FILE\"'",
               work);
    snprintf(want, sizeof want, "%s\n", path);
    cr_assert_str_eq(t.out, want);
    e2e_run_free(&t);
    e2e_run_sh(work, &t,
               "env -C '%s' '" E2E_SLEDTRACE "' run -o out --exclude-file missing.txt -- '%s' 2",
               work, BIN("manyprog"));
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 2, "status %#x", t.status);
    cr_assert_str_eq(t.out, "", "the program ran");
    cr_assert_str_eq(t.err,
                     "sledtrace: run: --exclude-file missing.txt: No such file or directory\n");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* ---- account --suggest-exclude, round trip: suggest -> file -> run with it ---------------- */

/* Traces prog (argv1) into <work>/out, gives the trace a calibration saying a call costs the
 * tracer cost_ns (calibadd.c replaces the runtime's own), and has account write its
 * suggestion (extra: more options) to <work>/suggest.txt. Returns the file's text (malloc'd). */
static char *suggest(const char *work, const char *prog, const char *argv1, const char *cost_ns,
                     const char *extra)
{
    char out[PATH_MAX], trace[PATH_MAX], file[PATH_MAX];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(file, sizeof file, "%s/suggest.txt", work);
    struct e2e_spec s = {.prog = prog, .argv1 = argv1, .preload = 1, .outdir = out};
    struct e2e_run t, a;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    e2e_trace_path(trace, sizeof trace, out, prog, t.pid, "fdr");
    e2e_run_sh(work, &a, "'" E2E_CALIBADD "' '%s' %s", trace, cost_ns);
    cr_assert(WIFEXITED(a.status) && WEXITSTATUS(a.status) == 0, "%s", a.err);
    e2e_run_free(&a);
    e2e_run_sh(work, &a, "'" E2E_SLEDTRACE "' account '%s' --suggest-exclude%s -o '%s'", trace,
               extra, file);
    cr_assert(WIFEXITED(a.status) && WEXITSTATUS(a.status) == 0, "%s%s", a.out, a.err);
    cr_assert_str_empty(a.err);
    e2e_run_free(&a);
    e2e_run_free(&t);
    e2e_rmtree(out);
    char *text = e2e_slurp(file, NULL);
    cr_assert_not_null(text);
    return text;
}

/* The file's patterns (its lines that are not comments), each as one string in `set`
 * (newline-separated, with a newline at each end); how many. */
static int patterns(const char *text, char *set, size_t len)
{
    int n = 0;
    snprintf(set, len, "\n");
    for (const char *l = text; *l;) {
        size_t k = strcspn(l, "\n");
        if (k && *l != '#') {
            snprintf(set + strlen(set), len - strlen(set), "%.*s\n", (int)k, l);
            n++;
        }
        l += k + (l[k] == '\n');
    }
    return n;
}

static char g_set[8192]; /* the suggested patterns, for gone_suggested */

static int gone_suggested(const char *name)
{
    char line[128];
    snprintf(line, sizeof line, "\nmanyprog:%s\n", name);
    return strstr(g_set, line) != NULL;
}

/* manyprog, said to cost 200ns a call to trace: its tiny leaves (a few ns of work) are
 * suggested, medium and work (microseconds) and main never. Every line of the file is an exact
 * pattern; run with it, those functions are gone and every other count is exact. An interrupt
 * inside a tiny call can lift its own time above 200ns, so a few may be missing from the list:
 * whatever it lists is what the second run leaves out. */
Test(filter, suggest_round_trip)
{
    char work[PATH_MAX], path[PATH_MAX], var[PATH_MAX + 32];
    e2e_workdir(work, sizeof work);
    char *text = suggest(work, BIN("manyprog"), "2", "200", "");
    int n = patterns(text, g_set, sizeof g_set);
    cr_assert_geq(n, 95, "%d suggestions:\n%s", n, text);
    cr_assert_leq(n, 100, "%s", text);
    for (const char *l = g_set + 1; *l; l = strchr(l, '\n') + 1) {
        int no;
        char end;
        cr_assert(sscanf(l, "manyprog:tiny%2d%c", &no, &end) == 2 && end == '\n',
                  "not a tiny function's exact pattern: %.40s", l);
    }
    free(text);
    snprintf(path, sizeof path, "%s/suggest.txt", work);
    snprintf(var, sizeof var, "SLEDTRACE_EXCLUDE_FILE=%s", path);
    check_many((const char *const[]){var, NULL}, gone_suggested, "");
    e2e_rmtree(work);
}

/* C++: the file names mangled symbols, which the runtime matches whether or not it can
 * demangle. Said to cost 1ms a call, every function qualifies; the first two by calls are
 * helper (7) and app::safe (5). */
Test(filter, suggest_round_trip_cxx)
{
    char work[PATH_MAX], path[PATH_MAX], var[PATH_MAX + 32], set[1024];
    e2e_workdir(work, sizeof work);
    char *text = suggest(work, BIN("cxxfilter"), NULL, "1000000", "=2");
    cr_assert_eq(patterns(text, set, sizeof set), 2, "%s", text);
    cr_assert_str_eq(set, "\ncxxfilter:_Z6helperl\ncxxfilter:_ZN3app4safeEl\n");
    cr_assert(strstr(text, "\n# helper: 7 calls, own "), "%s", text);
    cr_assert(strstr(text, "\n# app::safe: 5 calls, own "), "%s", text);
    free(text);
    snprintf(path, sizeof path, "%s/suggest.txt", work);
    snprintf(var, sizeof var, "SLEDTRACE_EXCLUDE_FILE=%s", path);
    check_cxx_env(var, (const char *const[]){"app::risky(long)=3", "app::risky(double)=2",
                                             "app::Widget::risky_method(long)=4", NULL});
    e2e_rmtree(work);
}

/* Quiet descendants: a process `sledtrace run`'s program started that cannot read the file (it
 * was removed meanwhile) says so only at the info level, and is traced whole. */
Test(filter, exclude_file_unreadable_in_a_descendant)
{
    char work[PATH_MAX], path[PATH_MAX];
    e2e_workdir(work, sizeof work);
    write_file(path, sizeof path, work, "exclude.txt", "tiny*\n");
    struct e2e_run t;
    e2e_run_sh(work, &t,
               "env -C '%s' '" E2E_SLEDTRACE "' run -o out --exclude-file exclude.txt -- sh -c "
               "'rm exclude.txt; \"$0\" 2; true' '%s'",
               work, BIN("manyprog"));
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s", t.err);
    cr_assert_null(strstr(t.err, "warning"), "%s", t.err);
    const char *w = strstr(t.err, "sledtrace: trace written to ");
    cr_assert_not_null(w, "%s", t.err);
    char trace[PATH_MAX];
    cr_assert_eq(sscanf(w, "sledtrace: trace written to %4095s", trace), 1);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "descendant");
    e2e_run_free(&t);
    e2e_rmtree(work);
}
