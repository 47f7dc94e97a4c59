/* Hostile inputs to the built `sledtrace` ($SLEDTRACE_BIN): sidecars with malformed lines and
 * ids named twice (skipped with warnings, the rest still named), names full of terminal
 * control bytes (escaped in every output), and call stacks deep enough to make indented output
 * quadratic (replay caps the indentation). */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Functions 1..4 called in turn at top level, one thread; 1 tick = 1 ns. */
static char *four_calls_trace(const char *syms_text, size_t syms_len)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 7, 7, 0, 100);
    for (uint32_t id = 1; id <= 4; id++) {
        tg_func(&g, id, STF_ENTER, 1000 * id);
        tg_func(&g, id, STF_EXIT, 1000 * id + 10 * id);
    }
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tg_free(&g);
    char *s = stf_syms_path_for(p);
    FILE *f = fopen(s, "w");
    cr_assert(f);
    cr_assert_eq(fwrite(syms_text, 1, syms_len, f), syms_len);
    fclose(f);
    free(s);
    return p;
}

static struct tr_out account_csv(const char *p)
{
    const char *argv[] = {tr_bin(), "account", p, "--format", "csv", "--sort", "id", NULL};
    return tr_run(argv);
}

/* stderr of account --format csv: the warnings want, then only its summary line. */
static void expect_warnings(const char *err, const char *want)
{
    size_t n = strlen(want);
    cr_assert(strncmp(err, want, n) == 0, "stderr:\n%s\nwanted first:\n%s", err, want);
    cr_assert(strncmp(err + n, "# functions: 4, calls: 4,", 25) == 0, "%s", err);
    cr_assert_null(strchr(err + n, '\n')[1] ? err : NULL, "more after the summary: %s", err);
}

/* One malformed line among good ones: the other names resolve, the skipped line's id shows as
 * #id, and the warning names the sidecar and the exact line. */
Test(hostile, malformed_sidecar_line_is_skipped)
{
    static const char syms[] = "sledtrace-syms\t1\n"
                               "o\t0\t0x0\t/bin/prog\n"
                               "f\t0\t1\t0x1000\tone\n"
                               "f\t0\t2\t0x11x0\ttwo\n"
                               "f\t0\t3\t0x1200\tthree\n"
                               "f\t0\t4\t0x1300\tfour\n";
    char *p = four_calls_trace(syms, sizeof syms - 1);
    struct tr_out r = account_csv(p);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "function,id,count,total_ns,self_ns,min_ns,median_ns,p90_ns,p99_ns,"
                          "max_ns,unfinished\n"
                          "one,1,1,10,10,10,10,10,10,10,0\n"
                          "#2,2,1,20,20,20,20,20,20,20,0\n"
                          "three,3,1,30,30,30,30,30,30,30,0\n"
                          "four,4,1,40,40,40,40,40,40,40,0\n");
    char *s = stf_syms_path_for(p);
    char want[512];
    snprintf(want, sizeof want,
             "sledtrace: warning: %s:4: bad address (expected 0x hex), line skipped\n", s);
    expect_warnings(r.e, want);
    free(s);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* A function id named twice is ambiguous: #id (not the first name), with a warning. */
Test(hostile, duplicate_function_id_is_unnamed)
{
    static const char syms[] = "sledtrace-syms\t1\n"
                               "f\t0\t1\t0x1000\tone\n"
                               "f\t0\t3\t0x1200\tthree\n"
                               "f\t0\t2\t0x1100\ttwo\n"
                               "f\t0\t3\t0x1300\tother\n";
    char *p = four_calls_trace(syms, sizeof syms - 1);
    const char *argv[] = {tr_bin(), "replay", p, NULL};
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert_str_eq(r.o, "7        0.000000900       10ns  one\n"
                          "7        0.000001900       20ns  two\n"
                          "7        0.000002900       30ns  #3\n"
                          "7        0.000003900       40ns  #4\n"
                          "# shown: 4 of 4 calls, stack repairs: 0, unmatched exits: 0, "
                          "unfinished frames: 0\n");
    char *s = stf_syms_path_for(p);
    char want[512];
    snprintf(want, sizeof want,
             "sledtrace: warning: %s:5: function 3 of object 0 named twice, it is left "
             "unnamed\n",
             s);
    cr_assert_str_eq(r.e, want);
    free(s);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* Many bad lines: the first 10 warnings, then a count; the good line still names its id. */
Test(hostile, sidecar_warnings_are_capped)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert(m);
    fputs("sledtrace-syms\t1\n", m);
    for (int i = 0; i < 13; i++)
        fputs("f\t0\t2\n", m);
    fputs("f\t0\t1\t0x1000\tone\n", m);
    fclose(m);
    char *p = four_calls_trace(text, len);
    free(text);
    struct tr_out r = account_csv(p);
    cr_assert_eq(r.code, 0, "stderr: %s", r.e);
    cr_assert(strstr(r.o, "\none,1,1,"), "%s", r.o);
    cr_assert(strstr(r.o, "\n#2,2,1,"), "%s", r.o);
    char *s = stf_syms_path_for(p);
    char want[4096];
    size_t n = 0;
    for (int line = 2; line <= 11; line++)
        n += (size_t)snprintf(want + n, sizeof want - n,
                              "sledtrace: warning: %s:%d: function line needs 5 fields, line "
                              "skipped\n",
                              s, line);
    snprintf(want + n, sizeof want - n, "sledtrace: warning: %s: 3 more warnings not shown\n", s);
    expect_warnings(r.e, want);
    free(s);
    tr_out_free(&r);
    tr_remove_trace(p);
}
