/* The call filters of every command that reads calls (issue 25.1; tools/window.c's top gives
 * the rules): --filter (a match and its subtree), --exclude (a match's subtree hidden, winning
 * over --filter), --max-depth, --min-duration, on one crafted trace whose calls, durations and
 * self times are known by construction (1 GHz: a tick is a nanosecond). Each command's output
 * is checked exactly: account's rows, stack's folded weights (hidden time folded into the
 * caller shown, so they still add up to main's 1000 ns), replay's lines, graph's nodes and
 * edges, the Chrome export's events, the Perfetto export's slices (pfcount); and a bad value of
 * each option is one error line with exit status 2. */
#include "toolrun.h"
#include "tracegen.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Thread 100:
 *   main                 [1000, 2000]  self 350
 *     parse              [1100, 1600]  self 200
 *       lex              [1200, 1300]  self 100
 *       ns::Box::get     [1350, 1550]  self 100
 *         inflate (libz) [1400, 1500]  self 100
 *     log                [1700, 1750]  self 50
 *     ns::Box::get       [1800, 1900]  self 80
 *       lex              [1820, 1840]  self 20
 * ns::Box::get is _ZN2ns3Box3getEv in the sidecar (shown demangled); inflate is function 1 of
 * object 1, /usr/lib/libz.so.1. */
enum { MAIN = 1, PARSE = 2, LEX = 3, GET = 4, LOG = 5, INFLATE = (1 << 24) | 1 };

static char *filter_trace(void)
{
    struct tg g;
    tg_init(&g, 5, 1000000000, 4096);
    tg_block_begin(&g, 100, 100, 0, 1000);
    static const struct {
        uint32_t id;
        enum stf_action a;
        uint64_t tsc;
    } rec[] = {
        {MAIN, STF_ENTER, 1000},   {PARSE, STF_ENTER, 1100}, {LEX, STF_ENTER, 1200},
        {LEX, STF_EXIT, 1300},     {GET, STF_ENTER, 1350},   {INFLATE, STF_ENTER, 1400},
        {INFLATE, STF_EXIT, 1500}, {GET, STF_EXIT, 1550},    {PARSE, STF_EXIT, 1600},
        {LOG, STF_ENTER, 1700},    {LOG, STF_EXIT, 1750},    {GET, STF_ENTER, 1800},
        {LEX, STF_ENTER, 1820},    {LEX, STF_EXIT, 1840},    {GET, STF_EXIT, 1900},
        {MAIN, STF_EXIT, 2000},
    };
    for (size_t i = 0; i < sizeof rec / sizeof rec[0]; i++)
        tg_func(&g, rec[i].id, rec[i].a, rec[i].tsc);
    tg_block_end(&g);
    char *p = tr_write_trace(&g, false);
    tr_write_syms(p, "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\no\t1\t0x0\t/usr/lib/libz.so.1\n"
                     "f\t0\t1\t0x1000\tmain\nf\t0\t2\t0x1100\tparse\nf\t0\t3\t0x1200\tlex\n"
                     "f\t0\t4\t0x1300\t_ZN2ns3Box3getEv\nf\t0\t5\t0x1400\tlog\n"
                     "f\t1\t1\t0x2000\tinflate\n");
    tg_free(&g);
    return p;
}

/* Runs sledtrace CMD TRACE ARGS... (NULL-terminated, at most 12) expecting exit code. */
static struct tr_out run(const char *cmd, const char *trace, const char *const *args, int code)
{
    const char *argv[20] = {tr_bin(), cmd, trace};
    size_t n = 3;
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    struct tr_out r = tr_run(argv);
    cr_assert_eq(r.code, code, "%s: exit %d, want %d: %s", cmd, r.code, code, r.e);
    return r;
}

/* stack --format folded's lines (stdout) must be exactly want; the summary on stderr must hold
 * note. */
static void folded(const char *p, const char *const *args, const char *want, const char *note)
{
    const char *argv[16] = {"--format", "folded"};
    size_t n = 2;
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    struct tr_out r = run("stack", p, argv, 0);
    cr_assert_str_eq(r.o, want, "%s", r.e);
    if (note)
        cr_assert(strstr(r.e, note), "want '%s' in:\n%s", note, r.e);
    tr_out_free(&r);
}

Test(filters, stack_folds_hidden_time_into_the_caller_shown)
{
    char *p = filter_trace();
    const char *none[] = {NULL};
    folded(p, none,
           "main 350\nmain;log 50\nmain;ns::Box::get 80\nmain;ns::Box::get;lex 20\n"
           "main;parse 200\nmain;parse;lex 100\nmain;parse;ns::Box::get 100\n"
           "main;parse;ns::Box::get;inflate 100\n",
           NULL);
    /* the matches' subtrees, their callers as the path with no weight */
    const char *f1[] = {"--filter", "ns::Box::get", NULL};
    folded(p, f1,
           "main;ns::Box::get 80\nmain;ns::Box::get;lex 20\nmain;parse;ns::Box::get 100\n"
           "main;parse;ns::Box::get;inflate 100\n",
           "# filters: --filter 'ns::Box::get': 4 of 8 calls shown\n");
    /* LIB: the base name of the object's file */
    const char *f2[] = {"--filter", "libz.so*:inflate", NULL};
    folded(p, f2, "main;parse;ns::Box::get;inflate 100\n", ": 1 of 8 calls shown");
    const char *f3[] = {"--filter", "prog:inflate,nothing", NULL};
    folded(p, f3, "", ": 0 of 8 calls shown");
    /* exclude wins: parse's subtree holds a match, which is hidden with it */
    const char *f4[] = {"--filter", "ns::Box::get", "--exclude", "parse", NULL};
    folded(p, f4, "main;ns::Box::get 80\nmain;ns::Box::get;lex 20\n", ": 2 of 8 calls shown");
    /* excluded time is dropped */
    const char *f5[] = {"--exclude", "ns::*", NULL};
    folded(p, f5, "main 350\nmain;log 50\nmain;parse 200\nmain;parse;lex 100\n",
           ": 4 of 8 calls shown");
    /* deeper calls fold into their ancestor at depth N-1 */
    const char *d1[] = {"--max-depth", "1", NULL};
    folded(p, d1, "main 1000\n", "--max-depth 1: 1 of 8 calls shown");
    const char *d2[] = {"--max-depth", "2", NULL};
    folded(p, d2, "main 350\nmain;log 50\nmain;ns::Box::get 100\nmain;parse 500\n",
           ": 4 of 8 calls shown");
    /* shorter calls fold into the caller shown */
    const char *m1[] = {"--min-duration", "100ns", NULL};
    folded(p, m1,
           "main 400\nmain;ns::Box::get 100\nmain;parse 200\nmain;parse;lex 100\n"
           "main;parse;ns::Box::get 100\nmain;parse;ns::Box::get;inflate 100\n",
           "--min-duration 100ns: 6 of 8 calls shown");
    const char *m2[] = {"--min-duration", "150", NULL};
    folded(p, m2, "main 500\nmain;parse 300\nmain;parse;ns::Box::get 200\n",
           ": 3 of 8 calls shown");
    /* by count: the calls shown */
    const char *c1[] = {"--by", "count", "--filter", "ns::Box::get", "--max-depth", "3", NULL};
    folded(p, c1, "main;ns::Box::get 1\nmain;ns::Box::get;lex 1\nmain;parse;ns::Box::get 1\n",
           ": 3 of 8 calls shown");
    tr_remove_trace(p);
}

/* account's CSV rows: "function,count,total_ns,self_ns" of each row, sorted by name. */
static char *acct_rows(const char *p, const char *const *args, char **err)
{
    const char *argv[16] = {"--format", "csv", "--sort", "name", "--raw-times"};
    size_t n = 5;
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    struct tr_out r = run("account", p, argv, 0);
    static char out[4096];
    size_t len = 0;
    out[0] = '\0';
    char *save = NULL;
    bool header = true;
    for (char *l = strtok_r(r.o, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (header) {
            header = false;
            continue;
        }
        /* function,id,count,total_ns,share_pct,self_ns,... */
        char *col[8] = {0};
        char *s2 = NULL;
        int k = 0;
        for (char *c = strtok_r(l, ",", &s2); c && k < 8; c = strtok_r(NULL, ",", &s2))
            col[k++] = c;
        cr_assert_geq(k, 6);
        len += (size_t)snprintf(out + len, sizeof out - len, "%s,%s,%s,%s\n", col[0], col[2],
                                col[3], col[5]);
    }
    *err = strdup(r.e);
    tr_out_free(&r);
    return out;
}

Test(filters, account_counts_the_shown_calls_with_their_own_figures)
{
    char *p = filter_trace();
    char *e;
    const char *f1[] = {"--filter", "ns::Box::get", NULL};
    cr_assert_str_eq(acct_rows(p, f1, &e),
                     "inflate,1,100,100\nlex,1,20,20\nns::Box::get,2,300,180\n");
    cr_assert(strstr(e, "# filters: --filter 'ns::Box::get': 4 of 8 calls shown\n"), "%s", e);
    free(e);
    const char *f2[] = {"--filter", "ns::Box::get", "--exclude", "parse", NULL};
    cr_assert_str_eq(acct_rows(p, f2, &e), "lex,1,20,20\nns::Box::get,1,100,80\n");
    free(e);
    /* a shown call keeps its own self time: main's 350, not the 1000 its hidden callees add */
    const char *d1[] = {"--max-depth", "1", NULL};
    cr_assert_str_eq(acct_rows(p, d1, &e), "main,1,1000,350\n");
    free(e);
    const char *m1[] = {"--min-duration", "100ns", NULL};
    cr_assert_str_eq(acct_rows(p, m1, &e),
                     "inflate,1,100,100\nlex,1,100,100\nmain,1,1000,350\nns::Box::get,2,300,180\n"
                     "parse,1,500,200\n");
    free(e);
    const char *l1[] = {"--filter", "libz.so.1:*", "--tid", "100", NULL};
    cr_assert_str_eq(acct_rows(p, l1, &e), "inflate,1,100,100\n");
    free(e);
    tr_remove_trace(p);
}

/* replay's lines without their time columns: "DURATION  <indent>NAME". */
static char *replay_lines(const char *p, const char *const *args)
{
    struct tr_out r = run("replay", p, args, 0);
    static char out[4096];
    size_t len = 0;
    out[0] = '\0';
    char *save = NULL;
    for (char *l = strtok_r(r.o, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '#') {
            if (strstr(l, "filters"))
                len += (size_t)snprintf(out + len, sizeof out - len, "%s\n", l);
            continue;
        }
        /* "TID     TIME DURATION  NAME": skip the tid and the time */
        char *q = l + 8;
        while (*q == ' ')
            q++;
        q = strchr(q, ' ');
        cr_assert(q, "%s", l);
        len += (size_t)snprintf(out + len, sizeof out - len, "%s\n", q + 1);
    }
    tr_out_free(&r);
    return out;
}

Test(filters, replay_shows_the_subtree_and_keeps_the_old_rule_on_request)
{
    char *p = filter_trace();
    const char *f1[] = {"--filter", "ns::Box::get", NULL};
    cr_assert_str_eq(replay_lines(p, f1),
                     "                ns::Box::get {\n"
                     "     100ns        inflate\n"
                     "     200ns      } ns::Box::get\n"
                     "              ns::Box::get {\n"
                     "      20ns      lex\n"
                     "     100ns    } ns::Box::get\n"
                     "# filters: --filter 'ns::Box::get': 4 of 8 calls shown\n");
    /* issue 28.3: the former rule, each call on its own name */
    const char *f2[] = {"--filter", "ns::Box::get", "--filter-only", "--order", "exit", NULL};
    cr_assert_str_eq(replay_lines(p, f2),
                     "     200ns      ns::Box::get\n"
                     "     100ns    ns::Box::get\n"
                     "# filters: --filter 'ns::Box::get' --filter-only: 2 of 8 calls shown\n");
    /* --depth: --max-depth's former name */
    const char *f3[] = {"--exclude", "parse,log", "--depth", "2", NULL};
    cr_assert_str_eq(replay_lines(p, f3),
                     "            main {\n"
                     "              ns::Box::get {\n"
                     "     100ns    } ns::Box::get\n"
                     "   1.000us  } main\n"
                     "# filters: --exclude 'parse,log' --max-depth 2: 2 of 8 calls shown\n");
    const char *d1[] = {"--max-depth", "1", "--order", "exit", NULL};
    cr_assert_str_eq(replay_lines(p, d1), "   1.000us  main\n"
                                          "# filters: --max-depth 1: 1 of 8 calls shown\n");
    const char *m1[] = {"--min-duration", "150ns", "--order", "exit", NULL};
    cr_assert_str_eq(replay_lines(p, m1), "     200ns      ns::Box::get\n"
                                          "     500ns    parse\n"
                                          "   1.000us  main\n"
                                          "# filters: --min-duration 150ns: 3 of 8 calls shown\n");
    tr_remove_trace(p);
}

Test(filters, graph_draws_the_shown_calls)
{
    char *p = filter_trace();
    const char *f1[] = {"--filter", "ns::Box::get", "--raw-times", NULL};
    struct tr_out r = run("graph", p, f1, 0);
    cr_assert_str_eq(r.o,
                     "digraph calls {\n  node [shape=box];\n"
                     "  f16777217 [label=\"inflate\\ncalls: 1\\ntotal: 100ns\"];\n"
                     "  f4 [label=\"ns::Box::get\\ncalls: 2\\ntotal: 300ns\"];\n"
                     "  f3 [label=\"lex\\ncalls: 1\\ntotal: 20ns\"];\n"
                     "  f4 -> f16777217 [label=\"calls: 1\\ntotal: 100ns\"];\n"
                     "  f4 -> f3 [label=\"calls: 1\\ntotal: 20ns\"];\n"
                     /* filled by self time: get 180 ns (red), inflate 100, lex 20 */
                     "  f16777217 [style=filled, fillcolor=\"#ff9090\"];\n"
                     "  f4 [style=filled, fillcolor=\"#ff3737\"];\n"
                     "  f3 [style=filled, fillcolor=\"#ffe9e9\"];\n"
                     "  // calls: 8, stack repairs: 0, unmatched exits: 0, gaps: 0\n"
                     "  // filters: --filter 'ns::Box::get': 4 of 8 calls shown\n"
                     "  // times: as measured; this trace records no tracer cost (compiler-rt's, "
                     "or an older sledtrace's), so each call's figures include the tracer's "
                     "own\n}\n");
    tr_out_free(&r);
    const char *d2[] = {"--max-depth", "2", "--min-duration", "60", "--raw-times", NULL};
    r = run("graph", p, d2, 0);
    cr_assert(strstr(r.o, "  f1 -> f2 [label=\"calls: 1\\ntotal: 500ns\"];\n"
                          "  f1 -> f4 [label=\"calls: 1\\ntotal: 100ns\"];\n"
                          "  f2 [style=filled"),
              "%s", r.o);
    cr_assert(!strstr(r.o, "log") && !strstr(r.o, "lex"), "%s", r.o);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* The Chrome export's complete events, "name@depth" sorted by start, via python3. */
static char *chrome_events(const char *p, const char *const *args)
{
    char *json = tg_tmpname(".json");
    const char *argv[16] = {"--format", "chrome", "-o", json};
    size_t n = 4;
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    struct tr_out r = run("convert", p, argv, 0);
    tr_out_free(&r);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import json,sys\n"
             "d=json.load(open(sys.argv[1]))\n"
             "x=sorted((e['ts'],-e['dur'],e['name'],e['ts']+e['dur']) for e in d['traceEvents'] "
             "if e['ph']=='X')\n"
             "st=[];out=[]\n"
             "for ts,nd,nm,end in x:\n"
             "    while st and st[-1]<=ts: st.pop()\n"
             "    out.append('%%s@%%d'%%(nm,len(st))); st.append(end)\n"
             "print(' '.join(out), d['otherData'].get('shown','-'))\" %s",
             json);
    FILE *f = popen(cmd, "r");
    cr_assert(f);
    static char out[1024];
    if (!fgets(out, sizeof out, f))
        out[0] = '\0';
    cr_assert_eq(pclose(f), 0);
    remove(json);
    free(json);
    return out;
}

Test(filters, chrome_writes_the_shown_calls_nested_by_their_shown_ancestors)
{
    char *p = filter_trace();
    const char *none[] = {NULL};
    cr_assert_str_eq(chrome_events(p, none), "main@0 parse@1 lex@2 ns::Box::get@2 inflate@3 log@1 "
                                             "ns::Box::get@1 lex@2 -\n");
    const char *f1[] = {"--filter", "ns::Box::get", NULL};
    cr_assert_str_eq(chrome_events(p, f1), "ns::Box::get@0 inflate@1 ns::Box::get@0 lex@1 4\n");
    const char *f2[] = {"--exclude", "ns::Box::get", "--max-depth", "2", NULL};
    cr_assert_str_eq(chrome_events(p, f2), "main@0 parse@1 log@1 3\n");
    const char *m1[] = {"--min-duration", "150ns", "--tid", "100", NULL};
    cr_assert_str_eq(chrome_events(p, m1), "main@0 parse@1 ns::Box::get@2 3\n");
    const char *l1[] = {"--filter", "libz*:*", "--from", "450ns", NULL};
    cr_assert_str_eq(chrome_events(p, l1), "inflate@0 1\n");
    tr_remove_trace(p);
}

/* The Perfetto export's slices by name (pfcount's lines, its summary left out). */
static char *perfetto_slices(const char *p, const char *const *args)
{
    char *pb = tg_tmpname(".pftrace");
    const char *argv[16] = {"--format", "perfetto", "-o", pb};
    size_t n = 4;
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    struct tr_out r = run("convert", p, argv, 0);
    tr_out_free(&r);
    const char *pf = getenv("PFCOUNT");
    cr_assert(pf, "PFCOUNT is not set");
    const char *cargv[] = {pf, pb, NULL};
    r = tr_run(cargv);
    cr_assert_eq(r.code, 0, "%s", r.e);
    static char out[1024];
    size_t len = 0;
    out[0] = '\0';
    char *save = NULL;
    for (char *l = strtok_r(r.o, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (l[0] != '#')
            len += (size_t)snprintf(out + len, sizeof out - len, "%s\n", l);
    tr_out_free(&r);
    remove(pb);
    free(pb);
    return out;
}

Test(filters, perfetto_writes_the_shown_calls)
{
    char *p = filter_trace();
    const char *f1[] = {"--filter", "ns::Box::get", NULL};
    cr_assert_str_eq(perfetto_slices(p, f1), "inflate\t1\nlex\t1\nns::Box::get\t2\n");
    const char *f2[] = {"--filter", "ns::Box::get", "--exclude", "parse", NULL};
    cr_assert_str_eq(perfetto_slices(p, f2), "lex\t1\nns::Box::get\t1\n");
    const char *d1[] = {"--max-depth", "1", "--tid", "100", NULL};
    cr_assert_str_eq(perfetto_slices(p, d1), "main\t1\n");
    const char *w1[] = {"--from", "350ns", "--to", "700ns", "--max-depth", "2", NULL};
    cr_assert_str_eq(perfetto_slices(p, w1), "log\t1\nmain\t1\nparse\t1\n");
    tr_remove_trace(p);
}

/* A bad value of each option: one error line, exit status 2, for every command. */
Test(filters, bad_values_are_one_line_and_exit_2)
{
    char *p = filter_trace();
    static const char *const cmds[][4] = {
        {"account", NULL},
        {"stack", NULL},
        {"flamegraph", "-o", "/dev/null", NULL},
        {"graph", NULL},
        {"replay", NULL},
        {"convert", "--format", "chrome", NULL},
        {"convert", "--format", "perfetto", NULL},
    };
    static const char *const bad[][3] = {
        {"--max-depth", "0", "--max-depth: expected a positive integer, got '0'\n"},
        {"--max-depth", "x", "--max-depth: expected a positive integer, got 'x'\n"},
        {"--min-duration", "10 us", "--min-duration: bad time '10 us'"},
        {"--from", "-1", "--from: bad time '-1'"},
        {"--to", "soon", "--to: bad time 'soon'"},
        {"--tid", "abc", "--tid"},
        {"--filter", NULL, "--filter"},
        {"--exclude", NULL, "--exclude"},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++)
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            const char *argv[12] = {tr_bin(), cmds[c][0], p};
            size_t n = 3;
            for (size_t k = 1; cmds[c][k]; k++)
                argv[n++] = cmds[c][k];
            argv[n++] = bad[b][0];
            if (bad[b][1])
                argv[n++] = bad[b][1];
            struct tr_out r = tr_run(argv);
            cr_assert_eq(r.code, 2, "%s %s: exit %d: %s", cmds[c][0], bad[b][0], r.code, r.e);
            cr_assert_eq(strchr(r.e, '\n'), r.e + strlen(r.e) - 1, "%s %s: %s", cmds[c][0],
                         bad[b][0], r.e);
            cr_assert(strstr(r.e, bad[b][2]), "%s %s: %s", cmds[c][0], bad[b][0], r.e);
            tr_out_free(&r);
        }
    /* what a format does not take */
    const char *pm[] = {tr_bin(),   "convert",        p,     "--format",
                        "perfetto", "--min-duration", "1us", NULL};
    struct tr_out r = tr_run(pm);
    cr_assert_eq(r.code, 2);
    cr_assert_str_eq(r.e, "sledtrace: convert: --min-duration is for --format chrome only "
                          "(perfetto writes a call's begin at its entry)\n");
    tr_out_free(&r);
    const char *ym[] = {tr_bin(), "convert", p, "--format", "yaml", "--filter", "f", NULL};
    r = tr_run(ym);
    cr_assert_eq(r.code, 2);
    cr_assert_eq(strchr(r.e, '\n'), r.e + strlen(r.e) - 1, "%s", r.e);
    tr_out_free(&r);
    const char *sd[] = {tr_bin(), "stack", p, "--diff", p, "--filter", "f", NULL};
    r = tr_run(sd);
    cr_assert_eq(r.code, 2);
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* The flame graph: the matches' frames and their callers' as the path; widths true. */
Test(filters, flamegraph_keeps_the_path_above_a_match)
{
    char *p = filter_trace();
    char *svg = tg_tmpname(".svg");
    const char *f1[] = {"-o", svg, "--filter", "inflate", "--raw-times", NULL};
    struct tr_out r = run("flamegraph", p, f1, 0);
    cr_assert(strstr(r.e, "# filters: --filter 'inflate': 1 of 8 calls shown\n"), "%s", r.e);
    tr_out_free(&r);
    char *s = tr_slurp(svg);
    /* the path main;parse;ns::Box::get;inflate, each 100 ns wide; lex and log absent */
    cr_assert(strstr(s, ">main (100"), "%s", s);
    cr_assert(strstr(s, ">parse (100"), "%s", s);
    cr_assert(strstr(s, ">inflate (100"), "%s", s);
    cr_assert(!strstr(s, ">lex (") && !strstr(s, ">log ("), "%s", s);
    free(s);
    remove(svg);
    free(svg);
    tr_remove_trace(p);
}

/* top --once: the calls shown, each with its own self time; --tid of a thread not in the trace
 * is refused as by the other commands; no window. */
Test(filters, top_counts_the_shown_calls)
{
    char *p = filter_trace();
    const char *f1[] = {"--once",    "--raw-times", "--filter", "ns::Box::get",
                        "--exclude", "lex",         NULL};
    struct tr_out r = run("top", p, f1, 0);
    cr_assert(strstr(r.o, "functions: 2 "), "%s", r.o);
    cr_assert(strstr(r.o, "\n       180ns            2  ns::Box::get\n"
                          "       100ns            1  inflate\n"),
              "%s", r.o);
    cr_assert(!strstr(r.o, "lex") && !strstr(r.o, "main"), "%s", r.o);
    tr_out_free(&r);
    const char *t1[] = {"--once", "--tid", "7", NULL};
    r = run("top", p, t1, 1);
    cr_assert(strstr(r.e, ": no thread 7 in this trace (its threads: 100)\n"), "%s", r.e);
    tr_out_free(&r);
    const char *w1[] = {"--once", "--from", "1us", NULL};
    r = run("top", p, w1, 2);
    cr_assert_str_eq(r.e, "sledtrace: top: unknown option '--from' (see 'sledtrace top --help')\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}

/* slowest --from/--to: the calls' parts inside the window compete (get's first call, 200 ns,
 * has 150 inside [400, 850]; its second, 100 ns, 50). */
Test(filters, slowest_takes_a_window)
{
    char *p = filter_trace();
    const char *w1[] = {"ns::*", "--from", "400ns", "--to", "850ns", "--raw-times", NULL};
    struct tr_out r = run("slowest", p, w1, 0);
    cr_assert(strstr(r.o,
                     "   1        150ns      0.000000400      100  main > parse > ns::Box::get\n"
                     "   2         50ns      0.000000800      100  main > ns::Box::get\n"
                     "# 2 slowest of 2 calls of ns::*\n"
                     "# window: calls clipped at its edges: 4\n"),
              "%s", r.o);
    tr_out_free(&r);
    const char *w2[] = {"ns::*", "--to", "1 ms", NULL};
    r = run("slowest", p, w2, 2);
    cr_assert_str_eq(
        r.e, "sledtrace: slowest: --to: bad time '1 ms' (e.g. 10us, 2.5ms, 1s; bare: ns)\n");
    tr_out_free(&r);
    tr_remove_trace(p);
}
