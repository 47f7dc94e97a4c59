/* sledtrace stack: aggregated call stacks (root;...;leaf) weighted by self time or call count.
 *
 * One streaming pass builds a tree of distinct stacks (callstack.h: account's stack rule, repairs,
 * loss markers); memory grows with the number of distinct stacks, never with the trace length.
 * Self time of a closed frame = its duration minus its directly closed callees' durations, so the
 * self times under a closed top-level frame add up to exactly its duration. */
#include "callstack.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace stack TRACE [--by time|count] [--format text|folded]\n"
          "                       [--tid N] [--syms FILE [--force-syms]]\n"
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
          "  --tid N               only thread N\n"
          "  --per-thread          a root per thread (its name and tid) above its stacks\n"
          "  --syms FILE           symbols file (default: TRACE with .fdr replaced by .syms),\n"
          "                        or the traced binary: refused if its build id is not the\n"
          "                        one the trace's symbols file records\n"
          "  --force-syms          use a --syms binary even if its build id differs\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n",
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

/* "root;...;node" into a malloc'd string. */
static char *path_of(const struct cs_tree *tr, char **names, uint32_t node)
{
    size_t len = 0;
    for (uint32_t k = node; k; k = tr->n[k].parent)
        len += strlen(names[k]) + 1;
    char *s = malloc(len ? len : 1);
    if (!s)
        return NULL;
    size_t pos = len ? len - 1 : 0;
    s[pos] = '\0';
    for (uint32_t k = node; k; k = tr->n[k].parent) {
        size_t n = strlen(names[k]);
        pos -= n;
        memcpy(s + pos, names[k], n);
        if (pos)
            s[--pos] = ';';
    }
    return s;
}

int cmd_stack(int argc, char **argv)
{
    int32_t tid = 0;
    bool have_tid = false, per_thread = false;
    const char *path = NULL, *syms_path = NULL;
    bool by_count = false, folded = false;
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
        } else if (strcmp(argv[i], "--per-thread") == 0) {
            per_thread = true;
        } else if ((m = tool_tid_option(argc, argv, &i, "stack", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if (tool_trace_arg(argc, argv, &i, "stack", &path, &syms_path) < 0) {
            return EXIT_USAGE;
        }
    }
    if (!tool_default_trace(&path, "stack"))
        return EXIT_USAGE;

    struct cs_tree tree = {0};
    struct callstack cs = {0};
    struct stf_syms *syms = NULL;
    uint64_t freq = 0;
    tree.per_thread = per_thread;
    int status = cs_tree_load(path, syms_path, have_tid ? &tid : NULL, &tree, &cs, &syms, &freq);
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
        uint64_t self_ns = tool_ticks_to_ns(n->self, freq);
        uint64_t w = by_count ? n->calls : self_ns;
        if (w == 0)
            continue;
        rows[nrows] = (struct srow){.stack = path_of(&tree, names, (uint32_t)i),
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
