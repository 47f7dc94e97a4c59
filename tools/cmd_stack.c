/* sledtrace stack: aggregated call stacks (root;...;leaf) weighted by self time or call count.
 *
 * One streaming pass builds a tree of distinct stacks (callstack.h: account's stack rule, repairs,
 * loss markers); memory grows with the number of distinct stacks, never with the trace length.
 * --diff OLD: both traces as stacks by name (stackpaths.h), merged.
 * Self time of a closed frame = its duration minus its directly closed callees' durations, so the
 * self times under a closed top-level frame add up to exactly its duration.
 * Call filters (window.h): the tree comes from tool_window_tree_load (window_tree.c), which
 * folds a hidden call's time into its caller shown, so that sum still holds for shown calls. */
#include "callstack.h"
#include "stackpaths.h"
#include "window.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace stack TRACE [--by time|count] [--format text|folded]\n"
          "                       [--from TIME] [--to TIME] [--tid N] [--filter P]\n"
          "                       [--exclude P] [--max-depth N] [--min-duration TIME]\n"
          "                       [--syms FILE [--force-syms]]\n"
          "\n"
          "Aggregated call stacks of closed calls, root first: 'main;parse;lex'. The weight of\n"
          "a stack is the self time (ns) of the calls with exactly that stack (--by time, the\n"
          "default) or their number (--by count). Stack rule as in account: an exit closes the\n"
          "nearest open frame of its function; a loss marker empties the thread's stack.\n"
          "\n"
          "  --by time|count       weight: self time in ns (default) or number of calls\n"
          "  --format text|folded  text table (default, heaviest first) or folded lines\n"
          "                        'a;b;c WEIGHT' sorted by stack (flamegraph.pl, inferno,\n"
          "                        speedscope); the summary then goes to stderr\n"
          "  --from TIME, --to TIME\n"
          "                        only the time in this window (since the earliest thread\n"
          "                        start, as replay shows it; 10us, 2.5ms, 1s): calls\n"
          "                        crossing an edge count with their part inside it\n"
          "                        (summary: how many were clipped)\n"
          "  --filter P            only the calls of functions matching P and their\n"
          "                        callees (subtree); callers above a match stay in the\n"
          "                        path, with no weight of their own. P: comma-separated\n"
          "                        [LIB:]GLOB, on names as shown (repeatable)\n"
          "  --exclude P           not the calls of functions matching P nor their\n"
          "                        subtree: their time is dropped (wins over --filter)\n"
          "  --max-depth N         stacks of at most N frames: a deeper call's time\n"
          "                        counts in its ancestor at depth N-1 (top level: 0)\n"
          "  --min-duration TIME   not the calls shorter than TIME: their time counts in\n"
          "                        the caller shown (summary: calls shown)\n"
          "  --tid N               only thread N\n"
          "  --per-thread          a root per thread (its name and tid) above its stacks\n"
          "  --raw-times           times as measured, the tracer's own cost included\n"
          "                        (default: corrected, when the trace records that cost)\n"
          "  --syms FILE           symbols file (default: TRACE with .fdr replaced by .syms),\n"
          "                        or the traced binary: refused if its build id is not the\n"
          "                        one the trace's symbols file records\n"
          "  --force-syms          use a --syms binary even if its build id differs\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n"
          "  --diff OLD            compare with the trace OLD, stack by stack (by name, so\n"
          "                        two builds compare): folded lines 'a;b;c OLD NEW' as\n"
          "                        difffolded.pl writes, or a table of the changes, largest\n"
          "                        first; OLD is read with its own symbols file (--syms is\n"
          "                        for TRACE)\n",
          out);
}

struct srow {
    char *stack;
    uint64_t weight, self_ns, calls;
};

static int cmp_stack(const void *pa, const void *pb)
{
    const struct srow *a = pa, *b = pb;
    return strcmp(a->stack, b->stack);
}

static int cmp_weight(const void *pa, const void *pb)
{
    const struct srow *a = pa, *b = pb;
    if (a->weight != b->weight)
        return a->weight < b->weight ? 1 : -1;
    return strcmp(a->stack, b->stack);
}

/* --diff: one row per stack of either trace. */
struct drow {
    const char *stack;
    uint64_t old, new_;
};

static int cmp_change(const void *pa, const void *pb)
{
    const struct drow *a = pa, *b = pb;
    uint64_t x = a->new_ > a->old ? a->new_ - a->old : a->old - a->new_;
    uint64_t y = b->new_ > b->old ? b->new_ - b->old : b->old - b->new_;
    if (x != y)
        return x < y ? 1 : -1;
    return strcmp(a->stack, b->stack);
}

/* stack --diff OLD NEW: both lists merged by stack (each sorted by path). Folded: "stack OLD NEW"
 * per line, sorted by stack, as difffolded.pl writes; text: heaviest change first. */
static int write_diff(const struct sp_list *o, const struct sp_list *n, bool folded, bool by_count)
{
    struct drow *rows = calloc(o->n + n->n + 1, sizeof *rows);
    if (!rows) {
        tool_err("out of memory");
        return EXIT_BAD_TRACE;
    }
    size_t i = 0, j = 0, k = 0;
    uint64_t tot_old = 0, tot_new = 0;
    while (i < o->n || j < n->n) {
        int c = i == o->n ? 1 : j == n->n ? -1 : strcmp(o->p[i].path, n->p[j].path);
        rows[k].stack = c <= 0 ? o->p[i].path : n->p[j].path;
        rows[k].old = c <= 0 ? o->p[i++].w : 0;
        rows[k].new_ = c >= 0 ? n->p[j++].w : 0;
        tot_old += rows[k].old;
        tot_new += rows[k].new_;
        k++;
    }
    if (!folded) {
        qsort(rows, k, sizeof *rows, cmp_change);
        printf("%12s %12s %13s %9s  %s\n", "old", "new", "change", "%", "stack");
    }
    for (size_t r = 0; r < k; r++) {
        const struct drow *w = &rows[r];
        if (folded) {
            printf("%s %" PRIu64 " %" PRIu64 "\n", w->stack, w->old, w->new_);
            continue;
        }
        char a[32], b[32], ch[34], pct[16];
        uint64_t d = w->new_ > w->old ? w->new_ - w->old : w->old - w->new_;
        tool_fmt_weight(a, sizeof a, w->old, by_count);
        tool_fmt_weight(b, sizeof b, w->new_, by_count);
        tool_fmt_weight(ch + 1, sizeof ch - 1, d, by_count);
        ch[0] = w->new_ < w->old ? '-' : '+';
        if (w->old)
            snprintf(pct, sizeof pct, "%+.1f%%",
                     100.0 * ((double)w->new_ - (double)w->old) / (double)w->old);
        else
            snprintf(pct, sizeof pct, "new");
        printf("%12s %12s %13s %9s  %s\n", w->old ? a : "-", w->new_ ? b : "-", ch, pct, w->stack);
    }
    fprintf(folded ? stderr : stdout,
            "# stacks: %zu, total weight: old %" PRIu64 "%s, new %" PRIu64 "%s\n", k, tot_old,
            by_count ? " calls" : "ns", tot_new, by_count ? " calls" : "ns");
    free(rows);
    return EXIT_OK;
}

int cmd_stack(int argc, char **argv)
{
    int32_t tid = 0;
    bool have_tid = false, per_thread = false;
    const char *path = NULL, *syms_path = NULL, *old_path = NULL;
    bool by_count = false, folded = false;
    struct tool_window win = {0};
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if ((m = tool_option(argc, argv, &i, "stack", "--by", &v)) != 0) {
            if (m < 0 || cs_parse_by("stack", v, &by_count) != 0)
                return EXIT_USAGE;
        } else if ((m = tool_option(argc, argv, &i, "stack", "--format", &v)) != 0) {
            static const char *const formats[] = {"text", "folded"};
            int k = m < 0 ? -1 : tool_choice("stack", "format", v, formats, 2);
            if (k < 0)
                return EXIT_USAGE;
            folded = k == 1;
        } else if ((m = tool_option(argc, argv, &i, "stack", "--diff", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            old_path = v;
        } else if (strcmp(argv[i], "--per-thread") == 0) {
            per_thread = true;
        } else if ((m = tool_window_option(argc, argv, &i, "stack", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_tid_option(argc, argv, &i, "stack", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if (tool_trace_arg(argc, argv, &i, "stack", &path, &syms_path) < 0) {
            return EXIT_USAGE;
        }
    }
    if (old_path &&
        (have_tid || per_thread || tool_window_timed(&win) || tool_window_filtered(&win))) {
        tool_err("stack: --diff compares whole traces: no --tid, --per-thread (thread ids "
                 "differ between runs), --from, --to or call filters");
        return EXIT_USAGE;
    }
    if (!tool_default_trace(&path, "stack"))
        return EXIT_USAGE;
    if (old_path) {
        struct sp_list o, n = {0};
        int st = sp_load(old_path, NULL, by_count, &o);
        if (st == EXIT_OK)
            st = sp_load(path, syms_path, by_count, &n);
        if (st == EXIT_OK)
            st = write_diff(&o, &n, folded, by_count);
        sp_list_free(&o);
        sp_list_free(&n);
        if (fflush(stdout) != 0)
            st = EXIT_BAD_TRACE;
        return st;
    }

    struct cs_tree tree = {0};
    struct callstack cs = {0};
    struct stf_syms *syms = NULL;
    uint64_t freq = 0;
    tree.per_thread = per_thread;
    cs.window = &win;
    uint64_t shown = 0;
    int status = tool_window_tree_load(path, syms_path, have_tid ? &tid : NULL, &tree, &cs, &syms,
                                       &freq, &shown);
    char **names = NULL;
    struct srow *rows = NULL;
    size_t nrows = 0;
    if (status == EXIT_OK) {
        names = cs_tree_names(&tree, syms);
        rows = calloc(tree.nn ? tree.nn : 1, sizeof *rows);
        if (!names || !rows) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
        }
    }
    uint64_t total = 0;
    for (size_t i = 1; status == EXIT_OK && i < tree.nn; i++) {
        const struct cs_node *n = &tree.n[i];
        if (n->calls == 0)
            continue; /* never closed with this stack */
        uint64_t self_ns = tool_ticks_to_ns(cs_ticks(n->self), freq);
        uint64_t w = by_count ? n->calls : self_ns;
        if (w == 0)
            continue;
        rows[nrows] = (struct srow){.stack = sp_path_of(&tree, names, (uint32_t)i),
                                    .weight = w,
                                    .self_ns = self_ns,
                                    .calls = n->calls};
        if (!rows[nrows].stack) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
        total += w;
        nrows++;
    }
    if (status == EXIT_OK) {
        qsort(rows, nrows, sizeof *rows, folded ? cmp_stack : cmp_weight);
        if (!folded)
            printf("%12s %10s %7s  %s\n", "self", "calls", "%", "stack");
        for (size_t i = 0; i < nrows; i++) {
            if (folded) {
                printf("%s %" PRIu64 "\n", rows[i].stack, rows[i].weight);
                continue;
            }
            char b[32];
            tool_fmt_ns(b, sizeof b, rows[i].self_ns);
            printf("%12s %10" PRIu64 " %6.2f%%  %s\n", b, rows[i].calls,
                   total ? 100.0 * (double)rows[i].weight / (double)total : 0.0, rows[i].stack);
        }
        FILE *foot = folded ? stderr : stdout;
        fprintf(foot, "# stacks: %zu, total weight: %" PRIu64 "%s\n", nrows, total,
                by_count ? " calls" : "ns");
        cs_summary(foot, &cs, freq);
        if (tool_window_timed(&win))
            fprintf(foot, "# window: calls clipped at its edges: %" PRIu64 "\n", cs.clipped);
        tool_window_note(foot, "# ", &win, shown, cs.calls);
    }
    for (size_t i = 0; i < nrows; i++)
        free(rows[i].stack);
    free(rows);
    cs_names_free(names, tree.nn);
    cs_tree_free(&tree);
    cs_free(&cs);
    stf_syms_free(syms);
    if (fflush(stdout) != 0)
        status = EXIT_BAD_TRACE;
    return status;
}
