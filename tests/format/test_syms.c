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

/* ---- build ids ('b' lines) ----------------------------------------------------------------- */

/* A 'b' line gives an object's build id, kept as lower-case hex; fields after it are ignored
 * (room for later additions), it may come before the object's 'o' line, and an object without
 * one (or a sidecar of a runtime older than the line) has none. */
Test(syms, build_ids_are_read)
{
    char *p = write_tmp("sledtrace-syms\t1\n"
                        "o\t0\t0x555555554000\t/usr/bin/prog\n"
                        "b\t0\tDFA445fd1e680e4f52c319025a039a39e4d3564e\n"
                        "f\t0\t1\t0x401000\tmain\n"
                        "b\t2\t0123\tfuture field\n"
                        "o\t1\t0x7f0000000000\t/lib/libnoid.so\n"
                        "f\t1\t1\t0x7f0000001000\tlib_fn\n"
                        "o\t2\t0x7f1000000000\t/lib/liba.so\n");
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_syms_warnings(s), 0);
    cr_assert_str_eq(stf_syms_build_id(s, 0), "dfa445fd1e680e4f52c319025a039a39e4d3564e");
    cr_assert_null(stf_syms_build_id(s, 1));
    cr_assert_str_eq(stf_syms_build_id(s, 2), "0123");
    cr_assert_null(stf_syms_build_id(s, 3));
    cr_assert_null(stf_syms_build_id(NULL, 0));
    cr_assert_str_eq(stf_syms_object(s, 2), "/lib/liba.so");
    cr_assert_str_eq(stf_syms_lookup(s, 0, 1), "main");
    cr_assert_str_eq(stf_syms_lookup(s, 1, 1), "lib_fn");
    /* objects in the order of their first line */
    cr_assert_eq(stf_syms_objects(s), 3);
    cr_assert_eq(stf_syms_object_id(s, 0), 0);
    cr_assert_eq(stf_syms_object_id(s, 1), 2);
    cr_assert_eq(stf_syms_object_id(s, 2), 1);
    cr_assert_eq(stf_syms_object_id(s, 3), UINT32_MAX);
    cr_assert_eq(stf_syms_objects(NULL), 0);
    stf_syms_free(s);
    unlink(p);
    free(p);
}

/* A bad 'b' line is skipped with a warning, and the object's build id stays unknown even where
 * a good line gives one (which is right cannot be told: a second warning says so, as for 'o'
 * and 'f' lines); names are not touched. */
Test(syms, bad_build_id_line_is_skipped)
{
    static const char *const bad[][2] = {
        {"b\t0\n", "3: build id line needs 3 fields, line skipped"},
        {"b\tx\tabcd\n", "3: bad object id, line skipped"},
        {"b\t0\t\n", "3: bad build id (expected 1 to 64 bytes in hex), line skipped"},
        {"b\t0\tabc\n", "3: bad build id (expected 1 to 64 bytes in hex), line skipped"},
        {"b\t0\t0xabcd\n", "3: bad build id (expected 1 to 64 bytes in hex), line skipped"},
        {"b\t0\tab cd\n", "3: bad build id (expected 1 to 64 bytes in hex), line skipped"},
        {"b\t0\t"
         "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
         "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
         "00\n",
         "3: bad build id (expected 1 to 64 bytes in hex), line skipped"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%sb\t0\tabcd\n%s", GOOD_FIRST, bad[i][0], GOOD_LAST);
        char *p = write_tmp(text);
        struct stf_syms *s = NULL;
        char err[256], want[300];
        cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
        snprintf(want, sizeof want, "%s:%s", p, bad[i][1]);
        cr_assert_str_eq(stf_syms_warning(s, 0), want);
        if (bad[i][0][2] == '0') { /* the object id parses: object 0's build id is unknown */
            cr_assert_eq(stf_syms_warnings(s), 2, "%s", bad[i][1]);
            snprintf(want, sizeof want,
                     "%s:4: build id of object 0 given twice, it is left unknown", p);
            cr_assert_str_eq(stf_syms_warning(s, 1), want);
            cr_assert_null(stf_syms_build_id(s, 0), "%s", bad[i][0]);
        } else {
            cr_assert_eq(stf_syms_warnings(s), 1, "%s", bad[i][1]);
            cr_assert_str_eq(stf_syms_build_id(s, 0), "abcd", "%s", bad[i][0]);
        }
        cr_assert_str_eq(stf_syms_lookup(s, 0, 1), "first");
        cr_assert_str_eq(stf_syms_lookup(s, 0, 9), "last");
        stf_syms_free(s);
        unlink(p);
        free(p);
    }
    /* 64 bytes is the most */
    char *p = write_tmp("sledtrace-syms\t1\nb\t0\t"
                        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
                        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
    struct stf_syms *s = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&s, p, err, sizeof err), STF_OK, "%s", err);
    cr_assert_eq(stf_syms_warnings(s), 0);
    cr_assert_eq(strlen(stf_syms_build_id(s, 0)), 128);
    stf_syms_free(s);
    unlink(p);
    free(p);
}

/* An object's build id given twice is left unknown, with a warning; its path stays. */
Test(syms, duplicate_build_id_is_unknown)
{
    char *p;
    struct stf_syms *s =
        load_one_warning(GOOD_FIRST "o\t0\t0x0\t/bin/prog\n"
                                    "b\t0\tabcd\nb\t0\tabcd\n" GOOD_LAST,
                         "5: build id of object 0 given twice, it is left unknown", &p);
    cr_assert_null(stf_syms_build_id(s, 0));
    cr_assert_str_eq(stf_syms_object(s, 0), "/bin/prog");
    stf_syms_free(s);
    unlink(p);
    free(p);
}
