/* sledtrace account --suggest-exclude[=N] [-o FILE]: the functions whose tracing costs more
 * than their own work, and a pattern file that leaves them out of the next run
 * (SLEDTRACE_EXCLUDE_FILE, run --exclude-file). The ranking and the file are suggest.c's.
 *
 * It is an account option because its figures are account's: each function's calls and
 * corrected self time are read from account's CSV of the trace (run in this process, as diff
 * does), so they have one definition, and account's code is not touched (one call at the top
 * of cmd_account hands the option over). The tracer's cost per call is the trace's calibration
 * (format/stf.h): gap E->X + gap X->E of a leaf, in the header's ticks. A trace without one
 * (compiler-rt's, an older sledtrace's) cannot be weighed: one line, exit 1. Names: account's
 * CSV with --names mangled, the symbols the runtime tests everywhere; shown as --names asks.
 *
 * Memory: the rows of every function the trace entered; the trace is read by account,
 * streaming. */
#include "common.h"
#include "csvread.h"
#include "names.h"
#include "output.h"
#include "suggest.h"
#include "vclock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { F_TEXT, F_CSV, F_JSON };

bool tool_suggest_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--suggest-exclude") == 0 ||
            strncmp(argv[i], "--suggest-exclude=", 18) == 0)
            return true;
    return false;
}

static void help(FILE *out)
{
    fputs("usage: sledtrace account TRACE --suggest-exclude[=N] [-o FILE]\n"
          "                         [--format text|csv|json] [--syms FILE] [--names MODE]\n"
          "\n"
          "The functions whose tracing costs more than their own work: each traced call\n"
          "costs the tracer its entry and its exit, about the same for every function (the\n"
          "trace records it: the runtime measures it at start-up), and a function whose own\n"
          "work per call (account's self time, the tracer's cost taken out) is less than\n"
          "that is cheaper to leave out than to trace. Listed most calls first: with one\n"
          "cost per call for all, that is also the largest saving first, so the first N\n"
          "are the N exclusions that save the most. main and the tracer's own pseudo-\n"
          "functions are never listed. Per function: count, own work per call, tracer\n"
          "cost per call, its share of the run's tracer cost (its calls over all calls)\n"
          "and the saving (calls x cost); then the totals and account's note on times.\n"
          "With -o, the pattern file for the next run:\n"
          "  sledtrace run --exclude-file FILE -- PROG (SLEDTRACE_EXCLUDE_FILE=FILE)\n"
          "one exact pattern a line, LIB:SYMBOL (the object's file name and the symbol as\n"
          "the object has it, C++ names mangled, glob characters escaped), each under a\n"
          "comment with its figures. A trace that records no tracer cost (compiler-rt's,\n"
          "or an older sledtrace's) cannot be weighed: exit status 1.\n"
          "\n"
          "  --suggest-exclude[=N]  the functions to leave out; =N: at most the first N\n"
          "  -o, --output FILE      write the pattern file\n"
          "  --format F             text (default); csv (function,pattern,count,own_ns,\n"
          "                         cost_ns,share_pct,saving_ns; totals on stderr); json\n"
          "  --syms FILE            symbols file (default: TRACE with .fdr replaced by .syms)\n"
          "  --names MODE           C++ names shown: short (default), full or mangled (the\n"
          "                         file always holds the mangled symbol)\n",
          out);
}

static void csv_put(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void json_str(const char *s)
{
    putchar('"');
    tool_json_escape(stdout, (const uint8_t *)s, strlen(s));
    putchar('"');
}

/* account's CSV of the trace (malloc'd), its "# times:" line into times (kept for the footer),
 * its other messages passed on to stderr; NULL after an error. */
static char *account_csv(const char *trace, const char *syms, char *times, size_t tlen)
{
    char tmpl[] = "/tmp/sledtrace-suggest-XXXXXX", etmpl[] = "/tmp/sledtrace-suggest-XXXXXX";
    int fd = mkstemp(tmpl), efd = fd >= 0 ? mkstemp(etmpl) : -1;
    if (fd < 0 || efd < 0) {
        tool_err("account: cannot make a temporary file: %s", strerror(errno));
        if (fd >= 0) {
            unlink(tmpl);
            close(fd);
        }
        return NULL;
    }
    unlink(tmpl);
    unlink(etmpl);
    char *text = NULL;
    int saved = tool_redirect(STDOUT_FILENO, fd), saved_err = -1;
    if (saved >= 0)
        saved_err = tool_redirect(STDERR_FILENO, efd);
    if (saved >= 0 && saved_err >= 0) {
        char *av[] = {"account", (char *)trace,          "--format",   "csv", "--names",
                      "mangled", syms ? "--syms" : NULL, (char *)syms, NULL};
        int rc = cmd_account(syms ? 8 : 6, av);
        tool_unredirect(STDOUT_FILENO, saved);
        tool_unredirect(STDERR_FILENO, saved_err);
        FILE *e = fdopen(efd, "r");
        if (e) {
            efd = -1;
            rewind(e);
            char line[1024];
            while (fgets(line, sizeof line, e))
                if (strncmp(line, "# times:", 8) == 0)
                    snprintf(times, tlen, "%s", line);
                else if (strncmp(line, "# ", 2) != 0)
                    fputs(line, stderr);
            fclose(e);
        }
        off_t len = rc == EXIT_OK ? lseek(fd, 0, SEEK_END) : -1;
        text = len >= 0 ? malloc((size_t)len + 1) : NULL;
        if (text && pread(fd, text, (size_t)len, 0) == (ssize_t)len) {
            text[len] = '\0';
        } else {
            free(text);
            text = NULL;
            if (rc == EXIT_OK)
                tool_err("account: %s: cannot read account's output back", trace);
        }
    } else if (saved >= 0) {
        tool_unredirect(STDOUT_FILENO, saved);
    }
    if (efd >= 0)
        close(efd);
    close(fd);
    return text;
}

/* The program's functions from account's CSV, as rows (names, patterns malloc'd). */
struct rows {
    struct suggest_row *r;
    size_t n, cap;
};

static void rows_free(struct rows *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        free((char *)rs->r[i].name);
        free((char *)rs->r[i].pattern);
    }
    free(rs->r);
}

enum { C_FUNCTION, C_ID, C_COUNT, C_SELF, C_UNFINISHED, C_ELIDED, C_ELIDED_NS, NCOLS };

/* Reads the CSV into rs: 0, or -1 after an error message. */
static int read_rows(const char *csv, const struct stf_syms *syms, const char *trace,
                     struct rows *rs)
{
    static const char *const names[NCOLS] = {"function",   "id",     "count",    "self_ns",
                                             "unfinished", "elided", "elided_ns"};
    int col[NCOLS], ncol = 0;
    for (int k = 0; k < NCOLS; k++)
        col[k] = -1;
    const char *p = csv;
    while (*p && *p != '\n') {
        char *h = tool_csv_take(&p);
        if (!h) {
            tool_err("out of memory");
            return -1;
        }
        for (int k = 0; k < NCOLS; k++)
            if (strcmp(h, names[k]) == 0)
                col[k] = ncol;
        free(h);
        ncol++;
    }
    for (int k = 0; k < C_ELIDED; k++)
        if (col[k] < 0) {
            tool_err("account: %s: account's output has no %s column", trace, names[k]);
            return -1;
        }
    if (*p == '\n')
        p++;
    while (*p) {
        char *name = NULL;
        double v[NCOLS] = {0};
        for (int c = 0; *p && *p != '\n'; c++) {
            char *f = tool_csv_take(&p);
            if (!f) {
                free(name);
                tool_err("out of memory");
                return -1;
            }
            for (int k = 1; k < NCOLS; k++)
                if (c == col[k])
                    v[k] = strtod(f, NULL);
            if (c == col[C_FUNCTION])
                name = f;
            else
                free(f);
        }
        if (*p == '\n')
            p++;
        uint32_t id = (uint32_t)v[C_ID], objid, fid;
        stf_syms_split(syms, id, &objid, &fid);
        /* pseudo-functions (the tracer's, the waits): no trampoline's cost, nothing to patch */
        if (!name || (objid == 0 && fid >= STF_FID_RESERVED_FIRST) ||
            strncmp(name, "[sledtrace] ", 12) == 0) {
            free(name);
            continue;
        }
        if (rs->n == rs->cap) {
            struct suggest_row *n = tool_grow(rs->r, &rs->cap, sizeof *n, 64);
            if (!n) {
                free(name);
                tool_err("out of memory");
                return -1;
            }
            rs->r = n;
        }
        /* A pattern only for a symbol the sidecar names as it is: a name made printable
         * (a backslash escape) or a missing one ("#id") is not the symbol the runtime tests. */
        const char *obj = stf_syms_object(syms, objid), *slash = obj ? strrchr(obj, '/') : NULL;
        char *pattern = NULL;
        errno = 0;
        if (stf_syms_lookup(syms, objid, fid) && !strchr(name, '\\') &&
            !(pattern = tool_suggest_pattern(slash ? slash + 1 : obj, name)) && errno == ENOMEM) {
            free(name);
            tool_err("out of memory");
            return -1;
        }
        uint64_t count = (uint64_t)v[C_COUNT], unfinished = (uint64_t)v[C_UNFINISHED];
        rs->r[rs->n++] = (struct suggest_row){
            .name = name,
            .pattern = pattern,
            .calls = count,
            .timed = count > unfinished ? count - unfinished : 0,
            /* elided calls (SLEDTRACE_MIN_DURATION): their whole duration, uncorrected, as
             * their own work: an upper bound, so never a reason to suggest */
            .self_ns = v[C_SELF] + v[C_ELIDED_NS],
            .keep = strcmp(name, "main") == 0,
        };
    }
    return 0;
}

static void put_text(const struct rows *rs, const struct suggest_result *r)
{
    printf("# functions whose tracing costs more than their own work, most calls first\n");
    printf("%12s %10s %10s %7s %12s  %s\n", "count", "own/call", "cost/call", "share", "saving",
           "function");
    for (size_t k = 0; k < r->n; k++) {
        const struct suggest_pick *p = &r->pick[k];
        const struct suggest_row *row = &rs->r[p->row];
        char own[32], cost[32], saving[32];
        snprintf(own, sizeof own, "%.1fns", p->own_ns);
        snprintf(cost, sizeof cost, "%.1fns", r->cost_ns);
        tool_fmt_ns(saving, sizeof saving, (uint64_t)(p->saving_ns + 0.5));
        printf("%12" PRIu64 " %10s %10s %6.2f%% %12s  %s\n", row->calls, own, cost,
               100.0 * p->share, saving, row->name);
    }
}

static void put_csv(const struct rows *rs, const struct suggest_result *r)
{
    printf("function,pattern,count,own_ns,cost_ns,share_pct,saving_ns\n");
    for (size_t k = 0; k < r->n; k++) {
        const struct suggest_pick *p = &r->pick[k];
        const struct suggest_row *row = &rs->r[p->row];
        csv_put(stdout, row->name);
        putchar(',');
        csv_put(stdout, row->pattern);
        printf(",%" PRIu64 ",%.1f,%.1f,%.2f,%.0f\n", row->calls, p->own_ns, r->cost_ns,
               100.0 * p->share, p->saving_ns);
    }
}

static void put_json(const char *trace, const struct rows *rs, const struct suggest_result *r)
{
    fputs("{\"trace\": ", stdout);
    json_str(trace);
    printf(",\n  \"cost_ns\": %.1f,\n  \"suggestions\": [", r->cost_ns);
    for (size_t k = 0; k < r->n; k++) {
        const struct suggest_pick *p = &r->pick[k];
        const struct suggest_row *row = &rs->r[p->row];
        fputs(k ? ",\n    {\"function\": " : "\n    {\"function\": ", stdout);
        json_str(row->name);
        fputs(", \"pattern\": ", stdout);
        json_str(row->pattern);
        printf(", \"count\": %" PRIu64 ", \"own_ns\": %.1f, \"cost_ns\": %.1f, \"share_pct\": "
               "%.2f, \"saving_ns\": %.0f}",
               row->calls, p->own_ns, r->cost_ns, 100.0 * p->share, p->saving_ns);
    }
    printf("%s],\n  \"summary\": {\"functions\": %zu, \"qualified\": %zu, \"suggested\": %zu, "
           "\"unnamed\": %zu, \"calls\": %" PRIu64 ", \"suggested_calls\": %" PRIu64
           ", \"tracer_ns\": %.0f, \"saving_ns\": %.0f}}\n",
           r->n ? "\n  " : "", rs->n, r->qualified, r->n, r->unnamed, r->calls, r->picked_calls,
           r->total_ns, r->saving_ns);
}

static void put_footer(FILE *f, const struct rows *rs, const struct suggest_result *r,
                       const char *times)
{
    char save[32], total[32];
    tool_fmt_ns(save, sizeof save, (uint64_t)(r->saving_ns + 0.5));
    tool_fmt_ns(total, sizeof total, (uint64_t)(r->total_ns + 0.5));
    if (r->n)
        fprintf(f,
                "# suggested: %zu of %zu functions; their %" PRIu64 " calls are %.2f%% of the "
                "run's %" PRIu64 ", about %s of its %s of tracer time (%.1fns a call)\n",
                r->n, rs->n, r->picked_calls, 100.0 * (double)r->picked_calls / (double)r->calls,
                r->calls, save, total, r->cost_ns);
    else
        fprintf(f,
                "# suggested: none of %zu functions costs more to trace than its own work "
                "(%.1fns a call)\n",
                rs->n, r->cost_ns);
    size_t beyond = r->qualified - r->n - r->unnamed;
    if (beyond)
        fprintf(f, "# %zu more qualif%s beyond the first %zu (--suggest-exclude=N)\n", beyond,
                beyond == 1 ? "ies" : "y", r->n);
    if (r->unnamed)
        fprintf(f,
                "# %zu more qualif%s but no pattern can name %s (no symbol, or one with a "
                "control character)\n",
                r->unnamed, r->unnamed == 1 ? "ies" : "y", r->unnamed == 1 ? "it" : "them");
    if (times[0])
        fputs(times, f);
}

int cmd_suggest(int argc, char **argv)
{
    const char *path = NULL, *syms_path = NULL, *out_path = NULL, *names = "short";
    int fmt = F_TEXT;
    uint64_t limit = 0;
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = NULL;
        int m;
        if (strcmp(o, "--suggest-exclude") == 0) {
            limit = 0;
        } else if (strncmp(o, "--suggest-exclude=", 18) == 0) {
            if (!tool_parse_u64(o + 18, &limit) || limit == 0) {
                tool_err("account: --suggest-exclude=N needs a positive integer, not '%s'", o + 18);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "account", "-o", &v)) != 0 ||
                   (m = tool_option(argc, argv, &i, "account", "--output", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            out_path = v;
        } else if ((m = tool_option(argc, argv, &i, "account", "--format", &v)) != 0) {
            static const char *const formats[] = {"text", "csv", "json"};
            int k = m < 0 ? -1 : tool_choice("account", "format", v, formats, 3);
            if (k < 0)
                return EXIT_USAGE;
            fmt = k;
        } else if ((m = tool_option(argc, argv, &i, "account", "--names", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            if (tool_names_mode(v) != 0) {
                tool_err("account: --names must be short, full or mangled, not '%s'", v);
                return EXIT_USAGE;
            }
            names = v;
        } else if (strcmp(o, "--per-thread") == 0 || strcmp(o, "--raw-times") == 0 ||
                   strcmp(o, "--sort") == 0 || strncmp(o, "--sort=", 7) == 0 ||
                   strcmp(o, "--top") == 0 || strncmp(o, "--top=", 6) == 0) {
            tool_err("account: %.*s does not go with --suggest-exclude (whole-run corrected "
                     "times, its own order; --suggest-exclude=N limits the list)",
                     (int)strcspn(o, "="), o);
            return EXIT_USAGE;
        } else if (tool_trace_arg(argc, argv, &i, "account", &path, &syms_path) < 0) {
            return EXIT_USAGE;
        }
    }
    if (!tool_default_trace(&path, "account"))
        return EXIT_USAGE;
    if (strcmp(path, "-") == 0) {
        tool_err("account: --suggest-exclude reads a trace file, not standard input");
        return EXIT_USAGE;
    }

    /* The calibration and the objects' names, from the trace's head and sidecar. */
    tool_names_mode("mangled");
    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_path, "reading", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    if (!tr.has_calib) {
        tool_err("%s: the trace records no tracer cost (compiler-rt's, or an older "
                 "sledtrace's), so no function's tracing can be weighed against its work; trace "
                 "the program again with this sledtrace",
                 path);
        tool_trace_close(&tr);
        return EXIT_BAD_TRACE;
    }
    double cost_ns = vclock_leaf_cost(&tr.calib) * (tr.freq ? 1e9 / (double)tr.freq : 1.0);

    char times[1024] = "";
    char *csv = account_csv(path, syms_path, times, sizeof times);
    struct rows rs = {0};
    struct suggest_result r = {0};
    int status = EXIT_OK;
    if (!csv || read_rows(csv, tr.syms, path, &rs) != 0)
        status = EXIT_BAD_TRACE;
    free(csv);
    if (status == EXIT_OK && tool_suggest(rs.r, rs.n, cost_ns, (size_t)limit, &r) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    tool_names_mode(names); /* what is shown (the list, the file's comments): as asked */
    for (size_t i = 0; i < rs.n; i++) {
        char *d = tool_demangle(rs.r[i].name, NULL);
        if (d) {
            free((char *)rs.r[i].name);
            rs.r[i].name = d;
        }
    }

    if (status == EXIT_OK && out_path) {
        struct tool_out o;
        char *src = tool_printable(path);
        if (!tool_out_open(&o, out_path))
            status = EXIT_BAD_TRACE;
        else if (tool_out_close(&o, tool_suggest_write(o.f, rs.r, &r, src ? src : path) == 0) != 0)
            status = EXIT_BAD_TRACE;
        free(src);
    }
    /* -o -: the file on stdout, so the list is left out and the totals go to stderr */
    bool file_out = out_path && strcmp(out_path, "-") == 0;
    if (status == EXIT_OK && file_out) {
        put_footer(stderr, &rs, &r, times);
    } else if (status == EXIT_OK) {
        if (fmt == F_TEXT)
            put_text(&rs, &r);
        else if (fmt == F_CSV)
            put_csv(&rs, &r);
        else
            put_json(path, &rs, &r);
        put_footer(fmt == F_TEXT ? stdout : stderr, &rs, &r, times);
        if (out_path)
            fprintf(fmt == F_TEXT ? stdout : stderr,
                    "# %s: %zu patterns; the next run: sledtrace run --exclude-file %s -- "
                    "PROGRAM\n",
                    out_path, r.n, out_path);
    }
    tool_suggest_free(&r);
    rows_free(&rs);
    tool_trace_close(&tr);
    if (fflush(stdout) != 0)
        status = EXIT_BAD_TRACE;
    return status;
}
