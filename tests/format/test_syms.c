/* Symbols sidecar tests: parsing, lookup keyed on (objid, fid), "#id" fallback, forward
 * compatibility (unknown line types), and error messages naming file and line. */
#include "stf.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *write_tmp(const char *text)
{
    char *p = strdup("/tmp/stf-syms-XXXXXX");
    cr_assert(p);
    int fd = mkstemp(p);
    cr_assert(fd >= 0);
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    return p;
}

Test(syms, parse_and_lookup)
{
    char *p = write_tmp("sledtrace-syms\t1\n"
                        "o\t0\t0x555555554000\t/usr/bin/prog with\ttab\n"
                        "f\t0\t1\t0x401000\tmain\n"
                        "f\t0\t2\t0x401100\t\n"
                        "x\tfuture record type\n"
                        "f\t0\t3\t0x401200\tns::fn(int, char)\n"
                        "f\t1\t1\t0x7f0000001000\tlib_fn\n");
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_syms_count(s), 4);
    cr_assert_str_eq(stf_syms_lookup(s, 0, 1), "main");
    cr_assert_null(stf_syms_lookup(s, 0, 2)); /* empty name */
    cr_assert_str_eq(stf_syms_lookup(s, 0, 3), "ns::fn(int, char)");
    cr_assert_str_eq(stf_syms_lookup(s, 1, 1), "lib_fn");
    cr_assert_null(stf_syms_lookup(s, 0, 99));
    cr_assert_eq(stf_syms_address(s, 1, 1), 0x7f0000001000ull);
    char b[32];
    cr_assert_str_eq(stf_syms_name(s, 1, b, sizeof b), "main");
    cr_assert_str_eq(stf_syms_name(s, 2, b, sizeof b), "#2");
    cr_assert_str_eq(stf_syms_name(NULL, 268435455, b, sizeof b), "#268435455");
    stf_syms_free(s);
    unlink(p);
    free(p);
}

/* Replacement for rename_keeps_and_replaces: upper-cases names starting with 'r', keeps others. */
static char *upper_r(const char *name, void *arg)
{
    ++*(int *)arg;
    if (name[0] != 'r')
        return NULL;
    char *d = strdup(name);
    for (char *c = d; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    return d;
}

Test(syms, rename_keeps_and_replaces)
{
    char *p = write_tmp("sledtrace-syms\t1\n"
                        "f\t0\t1\t0x1\trun\n"
                        "f\t0\t2\t0x2\t\n"
                        "f\t0\t3\t0x3\tkeep\n"
                        "f\t1\t1\t0x4\trest\n");
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
    int calls = 0;
    cr_assert_eq(stf_syms_rename(s, upper_r, &calls), 2);
    cr_assert_eq(calls, 3); /* the empty name is not offered */
    cr_assert_str_eq(stf_syms_lookup(s, 0, 1), "RUN");
    cr_assert_null(stf_syms_lookup(s, 0, 2));
    cr_assert_str_eq(stf_syms_lookup(s, 0, 3), "keep");
    cr_assert_str_eq(stf_syms_lookup(s, 1, 1), "REST");
    cr_assert_eq(stf_syms_rename(NULL, upper_r, &calls), 0);
    stf_syms_free(s);
    unlink(p);
    free(p);
}

Test(syms, many_functions)
{
    char *p = strdup("/tmp/stf-syms-XXXXXX");
    int fd = mkstemp(p);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "sledtrace-syms\t1\n");
    for (int i = 1; i <= 5000; i++)
        fprintf(f, "f\t0\t%d\t0x%x\tfn_%d\n", i, 0x1000 + i, i);
    fclose(f);
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_syms_count(s), 5000);
    char want[32];
    for (int i = 1; i <= 5000; i++) {
        snprintf(want, sizeof want, "fn_%d", i);
        cr_assert_str_eq(stf_syms_lookup(s, 0, (uint32_t)i), want);
    }
    stf_syms_free(s);
    unlink(p);
    free(p);
}

static void expect_bad(const char *text, const char *where)
{
    char *p = write_tmp(text);
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_ERR_SYMS, "accepted: %s", text);
    cr_assert_null(s);
    char want[300];
    snprintf(want, sizeof want, "%s:%s", p, where);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "error '%s' does not start with '%s'", err,
              want);
    unlink(p);
    free(p);
}

Test(syms, bad_first_line_or_empty_is_an_error)
{
    expect_bad("", "1: empty file");
    expect_bad("not-syms\t1\n", "1: not a sledtrace symbols file");
    expect_bad("sledtrace-syms\t2\n", "1: unsupported");
}

/* text loads with exactly one warning, which is want after "PATH:". */
static struct stf_syms *load_one_warning(const char *text, const char *want, char **path)
{
    char *p = strdup("/tmp/stf-syms-XXXXXX");
    cr_assert(p);
    int fd = mkstemp(p);
    cr_assert(fd >= 0);
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s: %s", want, err);
    cr_assert_eq(stf_syms_warnings(s), 1, "%s", want);
    char full[300];
    snprintf(full, sizeof full, "%s:%s", p, want);
    cr_assert_str_eq(stf_syms_warning(s, 0), full);
    cr_assert_null(stf_syms_warning(s, 1));
    *path = p;
    return s;
}

static void expect_skipped(const char *text, const char *want)
{
    char *p;
    struct stf_syms *s = load_one_warning(text, want, &p);
    /* the good lines around the bad one keep their names */
    cr_assert_str_eq(stf_syms_lookup(s, 0, 1), "first", "%s", want);
    cr_assert_str_eq(stf_syms_lookup(s, 0, 9), "last", "%s", want);
    stf_syms_free(s);
    unlink(p);
    free(p);
}

#define GOOD_FIRST "sledtrace-syms\t1\nf\t0\t1\t0x10\tfirst\n"
#define GOOD_LAST "f\t0\t9\t0x90\tlast\n"

Test(syms, malformed_line_is_skipped_with_a_warning)
{
    expect_skipped(GOOD_FIRST "f\t0\t2\t0x10\n" GOOD_LAST,
                   "3: function line needs 5 fields, line skipped");
    expect_skipped(GOOD_FIRST "f\t0\tx\t0x10\tmain\n" GOOD_LAST,
                   "3: bad function id, line skipped");
    expect_skipped(GOOD_FIRST "f\t0\t2\t10\tb\n" GOOD_LAST,
                   "3: bad address (expected 0x hex), line skipped");
    expect_skipped(GOOD_FIRST "f\t99999999999\t2\t0x10\tb\n" GOOD_LAST,
                   "3: bad object id, line skipped");
    expect_skipped(GOOD_FIRST "o\tzero\t0x0\t/bin/x\n" GOOD_LAST, "3: bad object id, line skipped");
    expect_skipped(GOOD_FIRST "o\t0\t0x0\n" GOOD_LAST,
                   "3: object line needs 4 fields, line skipped");
    expect_skipped(GOOD_FIRST "o\t0\tbias\t/bin/x\n" GOOD_LAST,
                   "3: bad load bias (expected 0x hex), line skipped");
}

/* Malformed lines among good ones: every other name resolves, the ids a bad line names print
 * as #id even where a good line names them too, and the warnings give the lines. */
Test(syms, skipped_line_leaves_its_id_unnamed)
{
    static const char text[] = "sledtrace-syms\t1\n"
                               "o\t0\t0x0\t/bin/prog\n"
                               "f\t0\t1\t0x10\tmain\n"
                               "f\t0\t2\t0x20\tf\n"
                               "f\t0\t3\t0xzz\tg\n" /* line 5: bad address */
                               "f\t0\t4\t0x40\th\0idden\n"
                               "f\t0\t5\t0x50\ti\n"
                               "f\t0\t3\t0x30\tg_again\n";
    char *p = strdup("/tmp/stf-syms-XXXXXX");
    int fd = mkstemp(p);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_syms_warnings(s), 3);
    char want[300];
    snprintf(want, sizeof want, "%s:5: bad address (expected 0x hex), line skipped", p);
    cr_assert_str_eq(stf_syms_warning(s, 0), want);
    snprintf(want, sizeof want, "%s:6: NUL byte in line, line skipped", p);
    cr_assert_str_eq(stf_syms_warning(s, 1), want);
    snprintf(want, sizeof want, "%s:8: function 3 of object 0 named twice, it is left unnamed", p);
    cr_assert_str_eq(stf_syms_warning(s, 2), want);
    char b[32];
    cr_assert_str_eq(stf_syms_name(s, 1, b, sizeof b), "main");
    cr_assert_str_eq(stf_syms_name(s, 2, b, sizeof b), "f");
    cr_assert_str_eq(stf_syms_name(s, 3, b, sizeof b), "#3");
    cr_assert_str_eq(stf_syms_name(s, 4, b, sizeof b), "#4");
    cr_assert_str_eq(stf_syms_name(s, 5, b, sizeof b), "i");
    cr_assert_eq(stf_syms_address(s, 0, 3), 0);
    cr_assert_str_eq(stf_syms_object(s, 0), "/bin/prog");
    cr_assert_eq(stf_syms_count(s), 3);
    stf_syms_free(s);
    unlink(p);
    free(p);
}

/* The same function id twice: ambiguous, so unnamed (not the first name), with a warning;
 * likewise an object id twice leaves its path unknown. */
Test(syms, duplicate_id_is_unnamed)
{
    char *p;
    struct stf_syms *s =
        load_one_warning(GOOD_FIRST "f\t0\t2\t0x20\ta\nf\t0\t2\t0x30\tb\n" GOOD_LAST,
                         "4: function 2 of object 0 named twice, it is left unnamed", &p);
    char b[32];
    cr_assert_str_eq(stf_syms_name(s, 1, b, sizeof b), "first");
    cr_assert_str_eq(stf_syms_name(s, 2, b, sizeof b), "#2");
    cr_assert_str_eq(stf_syms_name(s, 9, b, sizeof b), "last");
    cr_assert_eq(stf_syms_address(s, 0, 2), 0);
    stf_syms_free(s);
    unlink(p);
    free(p);
    s = load_one_warning(GOOD_FIRST "o\t1\t0x0\t/lib/a.so\no\t1\t0x0\t/lib/b.so\n",
                         "4: object 1 given twice, its path is left unknown", &p);
    cr_assert_null(stf_syms_object(s, 1));
    cr_assert_str_eq(stf_syms_name(s, 1, b, sizeof b), "first");
    stf_syms_free(s);
    unlink(p);
    free(p);
}

/* Warnings are all counted, the first STF_SYMS_WARNINGS_KEPT kept. */
Test(syms, many_warnings_are_counted)
{
    char *p = strdup("/tmp/stf-syms-XXXXXX");
    int fd = mkstemp(p);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "sledtrace-syms\t1\n");
    for (int i = 1; i <= 25; i++)
        fprintf(f, "f\t0\t%d\tbad\tfn_%d\n", i, i);
    fprintf(f, "f\t0\t100\t0x1\tgood\n");
    fclose(f);
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_syms_warnings(s), 25);
    char want[300];
    snprintf(want, sizeof want, "%s:11: bad address (expected 0x hex), line skipped", p);
    cr_assert_str_eq(stf_syms_warning(s, STF_SYMS_WARNINGS_KEPT - 1), want);
    cr_assert_null(stf_syms_warning(s, STF_SYMS_WARNINGS_KEPT));
    cr_assert_str_eq(stf_syms_lookup(s, 0, 100), "good");
    stf_syms_free(s);
    unlink(p);
    free(p);
}

Test(syms, missing_file_and_path_rule)
{
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, "/nonexistent/x.syms", err, sizeof err), STF_ERR_IO);
    cr_assert_eq(errno, ENOENT);
    char *p = stf_syms_path_for("/d/sledtrace.prog.123.fdr");
    cr_assert_str_eq(p, "/d/sledtrace.prog.123.syms");
    free(p);
    p = stf_syms_path_for("trace.bin");
    cr_assert_str_eq(p, "trace.bin.syms");
    free(p);
    p = stf_syms_path_for(".fdr");
    cr_assert_str_eq(p, ".syms");
    free(p);
}
