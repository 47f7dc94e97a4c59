/* Which functions cost more to trace than they do themselves (account --suggest-exclude), and
 * the pattern file that leaves them out (SLEDTRACE_EXCLUDE_FILE). suggest.c has the rules;
 * cmd_suggest.c reads a trace into rows and prints what this finds.
 *
 * Every traced call pays the tracer at its entry and at its exit: about the same time for any
 * function (the trace's calibration, format/stf.h: gap E->X + gap X->E of a leaf). A function
 * whose own work per call (its corrected self time) is below that cost costs more to trace
 * than to run, and its calls crowd the trace; leaving it out removes that cost from the run,
 * and its callers' corrected times stay right (their totals as before; their self time now
 * holds its work). */
#ifndef SLEDTRACE_TOOLS_SUGGEST_H
#define SLEDTRACE_TOOLS_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One function of the program (the tracer's pseudo-functions are no rows: theirs is no
 * trampoline's cost). */
struct suggest_row {
    const char *name;    /* as shown */
    const char *pattern; /* the pattern naming it exactly (tool_suggest_pattern); NULL: none can */
    uint64_t calls;      /* calls entered: each paid the tracer's entry and exit */
    uint64_t timed;      /* calls whose own time is known (finished ones, elided ones) */
    double self_ns;      /* their own time, the tracer's cost taken out */
    bool keep;           /* never suggested (main) */
};

struct suggest_pick {
    size_t row;       /* index into the rows */
    double own_ns;    /* own work per call */
    double share;     /* of the run's tracer cost, 0..1 */
    double saving_ns; /* calls x cost per call */
};

struct suggest_result {
    struct suggest_pick *pick; /* most calls first */
    size_t n;                  /* picks (at most the limit) */
    size_t qualified;          /* functions whose tracing costs more than their work */
    size_t unnamed;            /* of those, functions no pattern can name (left out of pick) */
    uint64_t calls;            /* every row's calls */
    uint64_t picked_calls;
    double cost_ns;   /* per call */
    double total_ns;  /* the run's tracer cost: calls x cost_ns */
    double saving_ns; /* the picks' */
};

/* Ranks the rows: a function qualifies when calls x cost_ns exceeds self_ns (its tracing costs
 * more than its own work), unless it is kept; those a pattern names are picked, most calls first
 * (the cost per call being the same for all, that is also the largest saving first; equal
 * counts: the least own work per call first, then by name), the first `limit` of them (0: all).
 * 0, or -1 when out of memory. */
int tool_suggest(const struct suggest_row *rows, size_t n, double cost_ns, size_t limit,
                 struct suggest_result *out);
void tool_suggest_free(struct suggest_result *r);

/* The SLEDTRACE_EXCLUDE_FILE pattern that names function `name` of the object whose file's base
 * name is `lib` and nothing else (malloc'd): `lib:name` with the glob characters * ? [ and the
 * backslash escaped in both; without `lib` (NULL, or a name with ':' that a LIB part cannot
 * hold), the name alone, `*:name` if it has a single ':' the runtime would take for LIB's end.
 * NULL when no line of the file can hold it (empty, a control character, a blank at either end)
 * or when out of memory (errno ENOMEM). */
char *tool_suggest_pattern(const char *lib, const char *name);

/* The pattern file: a header of '#' comments (`source` names the trace), then per pick a
 * comment with its figures and its pattern. 0, or -1 on a write error. */
int tool_suggest_write(FILE *f, const struct suggest_row *rows, const struct suggest_result *r,
                       const char *source);

/* cmd_suggest.c: account --suggest-exclude (cmd_account hands its arguments over when
 * tool_suggest_wanted says the option is among them). */
bool tool_suggest_wanted(int argc, char **argv);
int cmd_suggest(int argc, char **argv);

#endif
