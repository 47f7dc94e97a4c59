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

Test(syms, malformed_lines_name_file_and_line)
{
    expect_bad("", "1: empty file");
    expect_bad("not-syms\t1\n", "1: not a sledtrace symbols file");
    expect_bad("sledtrace-syms\t2\n", "1: unsupported");
    expect_bad("sledtrace-syms\t1\nf\t0\t1\t0x10\n", "2: function line needs 5 fields");
    expect_bad("sledtrace-syms\t1\nf\t0\tx\t0x10\tmain\n", "2: bad function id");
    expect_bad("sledtrace-syms\t1\nf\t0\t1\t0x10\ta\nf\t0\t2\t10\tb\n", "3: bad address");
    expect_bad("sledtrace-syms\t1\no\tzero\t0x0\t/bin/x\n", "2: bad object id");
    expect_bad("sledtrace-syms\t1\nf\t0\t1\t0x10\ta\nf\t0\t1\t0x20\tb\n",
               "3: duplicate function id");
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
