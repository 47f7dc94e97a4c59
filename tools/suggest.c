/* account --suggest-exclude: the ranking and the pattern file (suggest.h says what and why).
 *
 * Order: most calls first. The tracer's cost per call is one figure for every function (the
 * calibration measures the trampolines, not the function), so a function's tracing cost is its
 * calls times that figure: most calls first is also the largest cost, hence the largest saving,
 * first, and any prefix of the list (--suggest-exclude=N) is the N exclusions that save the
 * most. Ties go to the function with the least own work per call (the most wasteful to trace),
 * then to the name, so that the order is the same on every run of the same trace.
 *
 * Patterns are exact: the runtime tests a function's symbol as the object has it (C++: mangled)
 * on every system, demangled forms only when the program has libstdc++'s demangler, so the
 * symbol is what the file names. The runtime's globs are fnmatch's: `*`, `?`, `[` and the
 * backslash are escaped with a backslash; a pattern without an unescaped wildcard is a literal
 * there (one hash lookup per function at start-up), so thousands of lines cost nothing. The
 * object's base name as LIB keeps a static function of one object from excluding its namesake
 * in another. */
#include "suggest.h"

#include "common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Appends s to out with the glob characters escaped; returns the new end. */
static char *escape(char *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '*' || *s == '?' || *s == '[' || *s == '\\')
            *out++ = '\\';
        *out++ = *s;
    }
    return out;
}

/* A single ':' in s (not part of a "::"): the runtime would end a LIB part there. */
static bool single_colon(const char *s)
{
    for (; *s; s++) {
        if (*s != ':')
            continue;
        if (s[1] != ':')
            return true;
        s++;
    }
    return false;
}

char *tool_suggest_pattern(const char *lib, const char *name)
{
    size_t n = strlen(name);
    if (!n || name[0] == ' ' || name[0] == '\t' || name[n - 1] == ' ' || name[n - 1] == '\t')
        return NULL;
    for (const char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            return NULL;
    if (lib && (!*lib || strchr(lib, ':')))
        lib = NULL;
    for (const char *c = lib; c && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            lib = NULL;
    size_t ln = lib ? strlen(lib) : 1;
    char *p = malloc(2 * (ln + n) + 3);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    char *e = p;
    if (lib)
        e = escape(e, lib);
    else if (single_colon(name))
        *e++ = '*';
    if (lib || single_colon(name))
        *e++ = ':';
    else if (name[0] == '#')
        *e++ = '\\'; /* not a comment line */
    e = escape(e, name);
    *e = '\0';
    return p;
}

/* Per call, the row's own work (ns): its self time over the calls it covers (0 if none). */
static double own_per_call(const struct suggest_row *r)
{
    double v = r->timed ? r->self_ns / (double)r->timed : 0;
    return v > 0 ? v : 0;
}

static const struct suggest_row *g_rows; /* for qsort's comparison */

static int pick_cmp(const void *pa, const void *pb)
{
    const struct suggest_pick *a = pa, *b = pb;
    const struct suggest_row *ra = &g_rows[a->row], *rb = &g_rows[b->row];
    if (ra->calls != rb->calls)
        return ra->calls > rb->calls ? -1 : 1;
    if (a->own_ns != b->own_ns)
        return a->own_ns < b->own_ns ? -1 : 1;
    int c = strcmp(ra->name, rb->name);
    return c ? c : a->row < b->row ? -1 : a->row > b->row;
}

int tool_suggest(const struct suggest_row *rows, size_t n, double cost_ns, size_t limit,
                 struct suggest_result *out)
{
    *out = (struct suggest_result){.cost_ns = cost_ns};
    out->pick = calloc(n ? n : 1, sizeof *out->pick);
    if (!out->pick)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct suggest_row *r = &rows[i];
        out->calls += r->calls;
        if (r->keep || !r->calls || (double)r->calls * cost_ns <= r->self_ns)
            continue;
        out->qualified++;
        if (!r->pattern) {
            out->unnamed++;
            continue;
        }
        out->pick[out->n++] = (struct suggest_pick){.row = i, .own_ns = own_per_call(r)};
    }
    g_rows = rows;
    qsort(out->pick, out->n, sizeof *out->pick, pick_cmp);
    if (limit && out->n > limit)
        out->n = limit;
    out->total_ns = (double)out->calls * cost_ns;
    for (size_t k = 0; k < out->n; k++) {
        struct suggest_pick *p = &out->pick[k];
        uint64_t calls = rows[p->row].calls;
        p->saving_ns = (double)calls * cost_ns;
        p->share = out->calls ? (double)calls / (double)out->calls : 0;
        out->picked_calls += calls;
        out->saving_ns += p->saving_ns;
    }
    return 0;
}

void tool_suggest_free(struct suggest_result *r)
{
    free(r->pick);
    r->pick = NULL;
    r->n = 0;
}

int tool_suggest_write(FILE *f, const struct suggest_row *rows, const struct suggest_result *r,
                       const char *source)
{
    char saving[32];
    tool_fmt_ns(saving, sizeof saving, (uint64_t)(r->saving_ns + 0.5));
    fprintf(f,
            "# sledtrace exclude file: functions whose tracing costs more than their own work,\n"
            "# most calls first. Written by sledtrace account --suggest-exclude from\n"
            "# %s\n"
            "# Read by: sledtrace run --exclude-file FILE (SLEDTRACE_EXCLUDE_FILE=FILE), one\n"
            "# pattern a line, LIB:NAME (LIB: the object's file name).\n"
            "# Tracer cost per call %.1fns; these %zu function%s make %.2f%% of the calls,\n"
            "# about %s of tracer time.\n",
            source, r->cost_ns, r->n, r->n == 1 ? "" : "s",
            r->calls ? 100.0 * (double)r->picked_calls / (double)r->calls : 0.0, saving);
    for (size_t k = 0; k < r->n; k++) {
        const struct suggest_pick *p = &r->pick[k];
        const struct suggest_row *row = &rows[p->row];
        fprintf(f, "# %s: %" PRIu64 " calls, own %.1fns, tracer %.1fns per call\n%s\n", row->name,
                row->calls, p->own_ns, r->cost_ns, row->pattern);
    }
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
