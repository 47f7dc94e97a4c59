/* sledtrace diff: per-function comparison of two sets of traces (issue 15.1).
 *
 * Each trace is summarised by account (its CSV, read back: one definition of every column), and
 * functions are matched by name, not id, so that traces of two builds compare. A side may hold
 * several traces (runs of the same build): a function's figure is then the median over the
 * runs, and its spread (min..max over the runs) is kept. A change is flagged only when the two
 * sides' spreads do not overlap and the medians differ by at least --min-change percent (with
 * one run per side, only the latter): noise on a busy machine, which makes runs overlap, is not
 * reported as a regression. Functions in one side only are flagged new or gone.
 *
 * Noise floor (issue 22.5). Nor is a change the clock's resolution can make. A clock that
 * advances in steps of q (a trace's resolution, resolution.h: 10 ns on a VM whose TSC moves 26
 * ticks at a time) reads a call's entry and its exit each up to one step late, so a measured
 * duration is off by less than one step either way: |error| < q. Hence:
 *
 * - a per-call figure (median, p99: one call's duration, ranked) is off by less than q on each
 *   side, since ranking is monotone (every duration within q of its true value puts every rank
 *   within q of its true value); so is the median of a side's runs, for the same reason.
 * - a sum of n durations (total, self) is off by less than n q, but that bound needs every call
 *   to start at the same phase of the clock's step (a loop locked to the clock). Otherwise a
 *   call's error averages to zero (a start placed anywhere within the step makes the measured
 *   duration right on average), its standard deviation is at most q/2, and different calls'
 *   errors are independent: the sum's error has a standard deviation of at most q sqrt(n) / 2.
 *   Its bound is taken as two of those, q sqrt(n), which for one call is the hard bound q.
 * - a count is exact.
 *
 * So, per side s (q_s: the coarsest resolution of the side's traces, in ns; n_s: the function's
 * calls in the side's run that has most), F_s = q_s sqrt(n_s) for total and self, q_s for median
 * and p99, 0 for count, and a change is flagged only if
 *
 *     |new - old| >= floor = F_old + F_new
 *
 * as well as by the two rules above; below the floor it is shown as within the resolution (`~`
 * in text; csv and json: within_resolution) and not flagged. One call going 30 -> 40 ns on a
 * 10 ns clock is one step, under a floor of 20 ns: not flagged, however many runs agree (the
 * rounding is the same in every run). 1000 calls going 30 -> 40 ns each make totals of 30 and
 * 40 us, over a floor of 2 x 10 sqrt(1000) = 632 ns: flagged. With equal sides the floor is 2.8
 * standard deviations of the difference's error at most, which quantisation alone exceeds for
 * under 0.5% of functions, and never for one call. Not covered: a call's self time is k + 1
 * intervals for its k direct callees, and account's figures do not give k, so for a function
 * that makes many calls the self floor is low by up to sqrt(k + 1); a loop locked to the clock
 * (above); account's median and p99 of over a million calls come from a histogram whose bins
 * are coarser than the step. Corrected times (tools/DESIGN.md) take a calibrated constant off
 * each call, which leaves the rounding as it was. A side's resolution is measured by reading
 * its traces once more (resolution.h; on a TSC that counts every tick, a few blocks), except
 * standard input, which is read once, by account: it adds nothing to its side's floor.
 *
 * Memory: the functions of every trace (names and a few numbers each); the traces themselves are
 * read by account, streaming. */
#include "common.h"
#include "csvread.h"
#include "output.h"
#include "resolution.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_RUNS = 32 };

enum { F_TEXT, F_CSV, F_JSON }; /* --format */

/* The keys a diff can sort and flag by: account's CSV columns. */
enum key { K_TOTAL, K_SELF, K_COUNT, K_MEDIAN, K_P99 };
static const char *const key_names[] = {"total", "self", "count", "median", "p99"};
static const char *const key_cols[] = {"total_ns", "self_ns", "count", "median_ns", "p99_ns"};

enum { NKEYS = 5 };

struct fn {
    char *name;
    /* per key, side and run: the value (key K_COUNT: the calls); -1: absent from that run */
    double v[NKEYS][2][MAX_RUNS];
};

struct diff {
    struct fn *f;
    size_t n, cap;
    int runs[2];
    double res[2]; /* per side, the coarsest clock resolution of its traces, ns (0: none seen) */
};

static void help(FILE *out)
{
    fputs("usage: sledtrace diff OLD NEW [OPTIONS]\n"
          "       sledtrace diff --old A [B ...] --new C [D ...] [OPTIONS]\n"
          "\n"
          "Compare two sets of traces function by function (matched by name, so traces of\n"
          "two builds compare): calls, and the key (--sort) on each side, its absolute and\n"
          "relative change. With several runs per side, a side's figure is the median of its\n"
          "runs and [min..max] their spread; a change is flagged (slower, faster) only when the\n"
          "two spreads do not overlap and the medians differ by at least --min-change percent,\n"
          "so that noise is not reported, and only when the change is at least the noise floor\n"
          "the clock's resolution makes. With q a side's clock step (the coarsest of its\n"
          "traces', as 'sledtrace info' measures it) and n the function's calls in a run, the\n"
          "floor is the sum over both sides of q x sqrt(n) for total and self, of q for median\n"
          "and p99; 0 for count. So one call going from 30 to 40 ns on a 10 ns clock is not\n"
          "flagged, 1000 such calls are. A change below the floor is marked ~ (csv and json:\n"
          "within_resolution). Functions found on one side only are flagged new or gone.\n"
          "Rows are sorted by the size of the change, largest first. The tracer's own\n"
          "calls ([sledtrace] ...) are left out. On a busy machine prefer --sort median: one\n"
          "preempted call moves a function's total, not its median call.\n"
          "\n"
          "  --sort KEY          total (default), self, count, median or p99 (account's columns)\n"
          "  --min-change PCT    smallest relative change flagged (default 10)\n"
          "  --format FMT        text (default), csv or json (these add total, self, median\n"
          "                      and p99 of both sides, the noise floor and within_resolution)\n"
          "  --top N             only the first N rows\n"
          "  --raw-times         times as measured, the tracer's own cost included\n"
          "                      (default: corrected, when the traces record that cost)\n"
          "  --names MODE        C++ names: short (default), full or mangled\n",
          out);
}

static struct fn *find_or_add(struct diff *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->f[i].name, name) == 0)
            return &d->f[i];
    if (d->n == d->cap) {
        struct fn *nf = tool_grow(d->f, &d->cap, sizeof *nf, 64);
        if (!nf)
            return NULL;
        d->f = nf;
    }
    struct fn *f = &d->f[d->n];
    f->name = strdup(name);
    if (!f->name)
        return NULL;
    for (int k = 0; k < NKEYS; k++)
        for (int s = 0; s < 2; s++)
            for (int r = 0; r < MAX_RUNS; r++)
                f->v[k][s][r] = -1;
    d->n++;
    return f;
}

/* account's CSV of one trace, on a temporary file: the tool's own account, not a copy of it. */
static char *account_csv(const char *trace, const char *names)
{
    char tmpl[] = "/tmp/sledtrace-diff-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        tool_err("diff: cannot make a temporary file: %s", strerror(errno));
        return NULL;
    }
    unlink(tmpl);
    /* account's summary lines (stderr with csv) are not diff's: kept apart, errors passed on */
    char etmpl[] = "/tmp/sledtrace-diff-XXXXXX";
    int efd = mkstemp(etmpl);
    if (efd >= 0)
        unlink(etmpl);
    int saved = tool_redirect(STDOUT_FILENO, fd);
    char *text = NULL;
    if (saved >= 0) {
        int saved_err = efd >= 0 ? tool_redirect(STDERR_FILENO, efd) : -1;
        char *av[] = {"account", (char *)trace, "--format", "csv", "--names", (char *)names, NULL};
        int rc = cmd_account(6, av);
        tool_unredirect(STDOUT_FILENO, saved);
        if (saved_err >= 0) {
            tool_unredirect(STDERR_FILENO, saved_err);
            FILE *e = fdopen(efd, "r");
            if (e) {
                rewind(e);
                char line[1024];
                while (fgets(line, sizeof line, e))
                    if (strncmp(line, "# ", 2) != 0)
                        fputs(line, stderr);
                fclose(e);
                efd = -1;
            }
        }
        if (rc == EXIT_OK) {
            off_t len = lseek(fd, 0, SEEK_END);
            text = len >= 0 ? malloc((size_t)len + 1) : NULL;
            if (text && pread(fd, text, (size_t)len, 0) == (ssize_t)len)
                text[len] = '\0';
            else {
                free(text);
                text = NULL;
                tool_err("diff: %s: cannot read account's output back", trace);
            }
        }
    }
    if (efd >= 0)
        close(efd);
    close(fd);
    return text;
}

/* Adds run r of side s from trace's account. 0, or an exit code after the error. */
static int add_trace(struct diff *d, int s, int r, const char *trace, const char *names)
{
    char *csv = account_csv(trace, names);
    if (!csv)
        return EXIT_BAD_TRACE;
    /* header: find every key's column */
    const char *p = csv;
    int kcol[NKEYS] = {-1, -1, -1, -1, -1}, col = 0;
    while (*p && *p != '\n') {
        char *h = tool_csv_take(&p);
        if (!h) {
            free(csv);
            tool_err("out of memory");
            return EXIT_BAD_TRACE;
        }
        for (int k = 0; k < NKEYS; k++)
            if (strcmp(h, key_cols[k]) == 0)
                kcol[k] = col;
        free(h);
        col++;
    }
    for (int k = 0; k < NKEYS; k++)
        if (kcol[k] < 0) {
            free(csv);
            tool_err("diff: %s: account's output has no %s column", trace, key_cols[k]);
            return EXIT_BAD_TRACE;
        }
    if (*p == '\n')
        p++;
    while (*p) {
        char *name = NULL;
        double kv[NKEYS] = {0};
        for (col = 0; *p && *p != '\n'; col++) {
            char *v = tool_csv_take(&p);
            if (!v) {
                free(name);
                free(csv);
                tool_err("out of memory");
                return EXIT_BAD_TRACE;
            }
            if (col == 0)
                name = v;
            else {
                for (int k = 0; k < NKEYS; k++)
                    if (col == kcol[k])
                        kv[k] = strtod(v, NULL);
                free(v);
            }
        }
        if (*p == '\n')
            p++;
        if (!name)
            continue;
        if (strncmp(name, "[sledtrace] ", 12) == 0) {
            free(name); /* the tracer's own calls (stf.h) are not the program's to compare */
            continue;
        }
        struct fn *f = find_or_add(d, name);
        free(name);
        if (!f) {
            free(csv);
            tool_err("out of memory");
            return EXIT_BAD_TRACE;
        }
        /* a name shared by overloads (short names): totals and calls add up; of the
         * per-call figures (median, p99) the larger is kept */
        for (int k = 0; k < NKEYS; k++) {
            double *x = &f->v[k][s][r];
            if (*x < 0)
                *x = kv[k];
            else if (k == K_MEDIAN || k == K_P99)
                *x = *x > kv[k] ? *x : kv[k];
            else
                *x += kv[k];
        }
    }
    free(csv);
    return EXIT_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of side s's runs of values (an absent run counts as 0: the function was
 * not called there); present: the function is in at least one run. */
static void spread(const double *v, int runs, double *med, double *lo, double *hi, int *present)
{
    double x[MAX_RUNS];
    *present = 0;
    for (int r = 0; r < runs; r++) {
        x[r] = v[r] < 0 ? 0 : v[r];
        *present |= v[r] >= 0;
    }
    qsort(x, (size_t)runs, sizeof x[0], cmp_double);
    *lo = x[0];
    *hi = x[runs - 1];
    *med = runs % 2 ? x[runs / 2] : (x[runs / 2 - 1] + x[runs / 2]) / 2;
}

struct row {
    const struct fn *f;
    double med[2], lo[2], hi[2], calls[2];
    double all[NKEYS][2]; /* every key's median over the runs, per side */
    int present[2];
    const char *flag; /* slower, faster, new, gone, or "" */
    double change, rel;
    double floor; /* the noise floor (design comment), the key's unit */
    bool within;  /* on both sides and |change| below a floor above 0 */
};

static int row_cmp(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    double x = fabs(a->change), y = fabs(b->change);
    if (x != y)
        return x < y ? 1 : -1;
    return strcmp(a->f->name, b->f->name);
}

/* The noise floor of a change of key (design comment): res per side in ns, calls the function's
 * largest number of calls in a run of each side. */
static double noise_floor(enum key key, const double res[2], const double calls[2])
{
    double f = 0;
    for (int s = 0; s < 2; s++)
        if (key == K_TOTAL || key == K_SELF)
            f += res[s] * sqrt(calls[s]);
        else if (key == K_MEDIAN || key == K_P99)
            f += res[s];
    return f;
}

/* Adds trace's clock resolution to side s's (the coarsest). 0, or an exit code after the
 * error. */
static int add_resolution(struct diff *d, int s, const char *trace)
{
    if (strcmp(trace, "-") == 0) {
        tool_err("diff: -: the clock's resolution is not measured on standard input (read once, "
                 "by account); the noise floor takes the other traces'");
        return EXIT_OK;
    }
    struct tool_res r;
    uint64_t freq;
    int status = tool_trace_resolution(trace, false, &r, &freq);
    double q = tool_res_ns(r.gcd, freq);
    if (status == EXIT_OK && q > d->res[s])
        d->res[s] = q;
    return status;
}

/* |v| as the key's unit shows it (the caller writes the sign) */
static void fmt_value(char *b, size_t len, double v, enum key key)
{
    tool_fmt_weight(b, len, (uint64_t)llround(v < 0 ? -v : v), key == K_COUNT);
}

int cmd_diff(int argc, char **argv)
{
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    const char *sides[2][MAX_RUNS];
    int n[2] = {0, 0}, side = -1, plain = 0;
    enum key key = K_TOTAL;
    double min_change = 10;
    uint64_t top = 0;
    int fmt = F_TEXT; /* index into fmts below */
    const char *names = "short";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = NULL;
        int m;
        if (strcmp(o, "--old") == 0 || strcmp(o, "--new") == 0) {
            side = o[2] == 'o' ? 0 : 1;
        } else if (strcmp(o, "--raw-times") == 0) {
            tool_raw_times = true; /* read by account, which summarises each trace */
        } else if ((m = tool_option(argc, argv, &i, "diff", "--sort", &v)) != 0) {
            int k = m < 0 ? -1 : tool_choice("diff", "sort key", v, key_names, 5);
            if (k < 0)
                return EXIT_USAGE;
            key = (enum key)k;
        } else if ((m = tool_option(argc, argv, &i, "diff", "--format", &v)) != 0) {
            static const char *const fmts[] = {"text", "csv", "json"};
            if (m < 0 || (fmt = tool_choice("diff", "format", v, fmts, 3)) < 0)
                return EXIT_USAGE;
        } else if ((m = tool_option(argc, argv, &i, "diff", "--min-change", &v)) != 0) {
            char *end;
            min_change = m < 0 ? -1 : strtod(v, &end);
            if (m < 0 || *end || min_change < 0) {
                if (m > 0)
                    tool_err("diff: --min-change needs a percentage, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "diff", "--top", &v)) != 0) {
            if (m < 0 || !tool_parse_u64(v, &top)) {
                if (m > 0)
                    tool_err("diff: --top needs a number, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "diff", "--names", &v)) != 0) {
            static const char *const modes[] = {"short", "full", "mangled"};
            if (m < 0 || tool_choice("diff", "names mode", v, modes, 3) < 0)
                return EXIT_USAGE;
            names = v;
        } else if (o[0] == '-' && o[1]) {
            tool_err("diff: unknown option '%s' (see 'sledtrace diff --help')", o);
            return EXIT_USAGE;
        } else {
            int s = side >= 0 ? side : plain++;
            if (s > 1) {
                tool_err("diff: more than two traces given without --old/--new");
                return EXIT_USAGE;
            }
            if (n[s] == MAX_RUNS) {
                tool_err("diff: at most %d traces per side", MAX_RUNS);
                return EXIT_USAGE;
            }
            sides[s][n[s]++] = o;
        }
    }
    if (!n[0] || !n[1]) {
        tool_err("diff: needs traces on both sides (sledtrace diff OLD NEW, or --old ... --new "
                 "...)");
        return EXIT_USAGE;
    }
    struct diff d = {.runs = {n[0], n[1]}};
    int status = EXIT_OK;
    for (int s = 0; s < 2 && status == EXIT_OK; s++)
        for (int r = 0; r < n[s] && status == EXIT_OK; r++)
            if ((status = add_trace(&d, s, r, sides[s][r], names)) == EXIT_OK)
                status = add_resolution(&d, s, sides[s][r]);
    struct row *rows = status == EXIT_OK ? calloc(d.n ? d.n : 1, sizeof *rows) : NULL;
    if (status == EXIT_OK && !rows) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    for (size_t i = 0; status == EXIT_OK && i < d.n; i++) {
        struct row *w = &rows[i];
        w->f = &d.f[i];
        double most[2]; /* the function's calls in each side's run that has most */
        for (int s = 0; s < 2; s++) {
            double lo, hi;
            int present;
            for (int k = 0; k < NKEYS; k++)
                spread(d.f[i].v[k][s], n[s], &w->all[k][s], &lo, &hi, &present);
            double med;
            spread(d.f[i].v[K_COUNT][s], n[s], &med, &lo, &most[s], &present);
            spread(d.f[i].v[key][s], n[s], &w->med[s], &w->lo[s], &w->hi[s], &w->present[s]);
            w->calls[s] = w->all[K_COUNT][s];
        }
        w->change = w->med[1] - w->med[0];
        w->rel = w->med[0] > 0 ? 100 * w->change / w->med[0] : 0;
        w->floor = noise_floor(key, d.res, most);
        w->within = w->present[0] && w->present[1] && fabs(w->change) < w->floor;
        w->flag = "";
        if (!w->present[0])
            w->flag = "new";
        else if (!w->present[1])
            w->flag = "gone";
        else if (fabs(w->rel) >= min_change && w->med[0] > 0 && !w->within &&
                 (w->lo[1] > w->hi[0] || w->hi[1] < w->lo[0]))
            w->flag = w->change > 0 ? (key == K_COUNT ? "more" : "slower")
                                    : (key == K_COUNT ? "fewer" : "faster");
    }
    if (status == EXIT_OK) {
        qsort(rows, d.n, sizeof *rows, row_cmp);
        size_t shown = top && top < d.n ? (size_t)top : d.n;
        bool many = n[0] > 1 || n[1] > 1;
        if (fmt == F_CSV)
            /* old, new: the key's (as in JSON, whose "key" names it); then every figure */
            printf("function,flag,old_calls,new_calls,old,new,change,change_pct,old_min,"
                   "old_max,new_min,new_max,old_total,new_total,old_self,new_self,old_median,"
                   "new_median,old_p99,new_p99,noise_floor,within_resolution\n");
        else if (fmt == F_JSON)
            printf("{\"key\": \"%s\", \"old_runs\": %d, \"new_runs\": %d, \"functions\": [",
                   key_names[key], n[0], n[1]);
        else
            printf("%-8s %12s %12s %14s %14s %12s %9s  %s\n", "flag", "old calls", "new calls",
                   many ? "old (median)" : "old", many ? "new (median)" : "new", "change", "%",
                   "function");
        for (size_t i = 0; i < shown; i++) {
            const struct row *w = &rows[i];
            if (fmt == F_CSV) {
                char *q = strpbrk(w->f->name, ",\"\n") ? w->f->name : NULL;
                if (q) {
                    putchar('"');
                    for (const char *c = w->f->name; *c; c++) {
                        if (*c == '"')
                            putchar('"');
                        putchar(*c);
                    }
                    putchar('"');
                } else {
                    fputs(w->f->name, stdout);
                }
                printf(",%s,%.0f,%.0f,%.0f,%.0f,%.0f,%.2f,%.0f,%.0f,%.0f,%.0f", w->flag,
                       w->calls[0], w->calls[1], w->med[0], w->med[1], w->change, w->rel, w->lo[0],
                       w->hi[0], w->lo[1], w->hi[1]);
                for (int k = 0; k < NKEYS; k++)
                    if (k != K_COUNT)
                        printf(",%.0f,%.0f", w->all[k][0], w->all[k][1]);
                printf(",%.0f,%d\n", w->floor, w->within);
            } else if (fmt == F_JSON) {
                printf("%s\n  {\"function\": \"", i ? "," : "");
                tool_json_escape(stdout, (const uint8_t *)w->f->name, strlen(w->f->name));
                printf("\", \"flag\": \"%s\", \"old_calls\": %.0f, \"new_calls\": %.0f, "
                       "\"old\": %.0f, \"new\": %.0f, \"change\": %.0f, \"change_pct\": %.2f, "
                       "\"old_min\": %.0f, \"old_max\": %.0f, \"new_min\": %.0f, "
                       "\"new_max\": %.0f",
                       w->flag, w->calls[0], w->calls[1], w->med[0], w->med[1], w->change, w->rel,
                       w->lo[0], w->hi[0], w->lo[1], w->hi[1]);
                for (int k = 0; k < NKEYS; k++)
                    if (k != K_COUNT)
                        printf(", \"old_%s\": %.0f, \"new_%s\": %.0f", key_names[k], w->all[k][0],
                               key_names[k], w->all[k][1]);
                printf(", \"noise_floor\": %.0f, \"within_resolution\": %s}", w->floor,
                       w->within ? "true" : "false");
            } else {
                char o[32], nw[32], ch[34], pct[16];
                fmt_value(o, sizeof o, w->med[0], key);
                fmt_value(nw, sizeof nw, w->med[1], key);
                fmt_value(ch + 1, sizeof ch - 1, w->change, key);
                ch[0] = w->change < 0 ? '-' : '+';
                if (w->present[0] && w->present[1] && w->med[0] > 0)
                    snprintf(pct, sizeof pct, "%+.1f%%", w->rel);
                else
                    snprintf(pct, sizeof pct, "-");
                printf("%-8s %12.0f %12.0f %14s %14s %12s %9s  %s\n",
                       w->flag[0]  ? w->flag
                       : w->within ? "~"
                                   : "",
                       w->calls[0], w->calls[1], w->present[0] ? o : "-", w->present[1] ? nw : "-",
                       ch, pct, w->f->name);
                if (many) {
                    /* the spread of each side's runs, under its median */
                    char sp[2][72];
                    for (int k = 0; k < 2; k++) {
                        char a[32], b[32];
                        fmt_value(a, sizeof a, w->lo[k], key);
                        fmt_value(b, sizeof b, w->hi[k], key);
                        snprintf(sp[k], sizeof sp[k], "%s..%s", a, b);
                    }
                    printf("%-8s runs: old %s, new %s\n", "", w->present[0] ? sp[0] : "-",
                           w->present[1] ? sp[1] : "-");
                }
            }
        }
        if (fmt == F_JSON)
            printf("\n], \"old_resolution_ns\": %.3f, \"new_resolution_ns\": %.3f}\n", d.res[0],
                   d.res[1]);
        else if (fmt == F_TEXT)
            printf("# %zu functions; %s compared, %d old and %d new run%s; flagged: spreads apart, "
                   "at least %g%% changed and not within the clock's resolution (~; old %.3g ns, "
                   "new %.3g ns); every column: --format csv\n",
                   d.n, key_names[key], n[0], n[1], n[0] + n[1] > 2 ? "s" : "", min_change,
                   d.res[0], d.res[1]);
    }
    for (size_t i = 0; i < d.n; i++)
        free(d.f[i].name);
    free(d.f);
    free(rows);
    return status;
}
