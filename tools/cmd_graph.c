/* sledtrace graph TRACE [-o FILE] [--syms FILE]: the dynamic call graph as Graphviz DOT, in one
 * streaming pass (memory grows with functions, caller/callee pairs, threads and stack depth).
 *
 *   digraph calls {
 *     node [shape=box];
 *     f1 [label="main\ncalls: 1\ntotal: 3.000us"];
 *     f1 -> f2 [label="calls: 2\ntotal: 1.300us"];
 *   }
 *
 * One node per function that was entered (calls: frames of it that closed; total: the time at
 * least one frame of it was open, per thread, summed over threads - account's total), one edge
 * per caller -> callee pair (calls: the callee's frames under that caller; total: the time at
 * least one such frame was open - nested calls of the same pair, in a recursion, count once).
 * An edge's total is at most its callee's and its caller's node total, and equals the callee's
 * when every outermost call of the callee is made by that caller. Frames are closed by the
 * stack rule of
 * callstack.h with close_open: frames open at a loss marker or at the end are closed at their
 * thread's last timestamp and counted. Nodes and edges are listed in order of first appearance.
 * --from/--to and the call filters (window.h): only the calls shown count; a shown call's edge
 * comes from its parent when that is shown too (see on_close). */
#include "callstack.h"
#include "convert.h"
#include "seek.h"
#include "window.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace graph TRACE [-o OUT] [--tid N] [--syms FILE] [--from TIME]\n"
          "                       [--to TIME] [--filter P] [--exclude P] [--max-depth N]\n"
          "                       [--min-duration TIME]\n"
          "\n"
          "Writes the call graph as Graphviz DOT (render with 'dot -Tsvg'): one node per\n"
          "function (name, calls, total time; filled from white to red by self time), one\n"
          "edge per caller -> callee pair (calls and\n"
          "total time of the callee under that caller). A node's total is account's: the\n"
          "time the function was on the stack, per thread, summed over threads (recursion\n"
          "counted once). An edge's total is the time a call of the callee made by that\n"
          "caller was on the stack: at most the callee's node total, and equal to it when\n"
          "that caller makes every outermost call of the callee. Calls follow the account\n"
          "stack rule; calls still open at a loss marker or at the end are closed at the\n"
          "thread's last timestamp (account leaves them out of its times).\n"
          "\n"
          "  -o OUT        output file (default: stdout)\n"
          "  --focus P     only the functions matching P (comma-separated globs on the names\n"
          "                shown), everything they call and everything that calls them,\n"
          "                transitively (uftrace graph FUNC)\n"
          "  --min-share PCT\n"
          "                leave out the functions whose total is under PCT percent of the\n"
          "                largest (and their edges)\n"
          "  --tid N       only thread N\n"
          "  --from TIME, --to TIME\n"
          "                only the time in this window (since the earliest thread start,\n"
          "                as replay shows it; 10us, 2.5ms, 1s): calls crossing an edge\n"
          "                count with their part inside it\n"
          "  --filter P    only the calls of functions matching P and their callees\n"
          "                (subtree); P: comma-separated [LIB:]GLOB, on names as shown\n"
          "                (repeatable). A match's callers are not drawn\n"
          "  --exclude P   not the calls of functions matching P nor their subtree\n"
          "                (wins over --filter)\n"
          "  --max-depth N only calls at depth < N (top-level calls are depth 0)\n"
          "  --min-duration TIME\n"
          "                only calls lasting at least TIME. Nodes and edges count the\n"
          "                calls shown only (closing comment: how many)\n"
          "  --raw-times   times as measured, the tracer's own cost included\n"
          "                (default: corrected, when the trace records that cost)\n"
          "  --syms FILE   symbols file (default: TRACE with .fdr replaced by .syms)\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n",
          out);
}

struct gnode {
    uint32_t id;
    uint64_t calls, total, self;
    bool keep; /* drawn (--focus, --min-share) */
};

struct gedge {
    uint32_t from, to;
    uint64_t calls, total;
};

struct graph {
    const struct tool_window *w; /* call filters (window.h): NULL for none */
    const struct stf_syms *syms;
    uint64_t freq, shown;
    struct u64map nmap, emap;
    struct gnode *n;
    size_t nn, capn;
    struct gedge *e;
    size_t ne, cape;
};

static struct gnode *node(struct graph *g, uint32_t id)
{
    bool added;
    long i = u64map_get(&g->nmap, id, &added);
    if (i < 0)
        return NULL;
    if (added) {
        if (g->nn == g->capn) {
            struct gnode *p = tool_grow(g->n, &g->capn, sizeof *p, 64);
            if (!p)
                return NULL;
            g->n = p;
        }
        g->n[g->nn++] = (struct gnode){.id = id};
    }
    return &g->n[i];
}

static struct gedge *edge(struct graph *g, uint32_t from, uint32_t to)
{
    bool added;
    long i = u64map_get(&g->emap, ((uint64_t)from << 32) | to, &added);
    if (i < 0)
        return NULL;
    if (added) {
        if (g->ne == g->cape) {
            struct gedge *p = tool_grow(g->e, &g->cape, sizeof *p, 64);
            if (!p)
                return NULL;
            g->e = p;
        }
        g->e[g->ne++] = (struct gedge){.from = from, .to = to};
    }
    return &g->e[i];
}

/* Every entered function gets a node, even one whose frames never close. With call filters,
 * only functions with a call shown do (at its close). */
static int on_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    (void)t;
    (void)depth;
    struct graph *g = ctx;
    if (g->w)
        return 0;
    return node(ctx, f->id) ? 0 : -1;
}

/* A call shown adds to its node, and to the edge from its parent when the parent can be shown:
 * a call shown lies inside its callers, so they pass --min-duration and --max-depth when it
 * does, and the parent is shown exactly when it is inside the --filter subtree too (else the
 * call is a match with no shown caller: a root of the graph). */
static int on_close(void *ctx, const struct cs_close *c)
{
    struct graph *g = ctx;
    const struct cs_frame *fr = c->f;
    bool parent = c->depth > 0;
    if (g->w) {
        if (tool_window_close(g->w, g->syms, c, g->freq) != TW_SHOW)
            return 0;
        parent = parent && (c->t->st[c->depth - 1].vis & TW_INSIDE);
    }
    g->shown++;
    struct gnode *n = node(g, fr->id);
    if (!n)
        return -1;
    /* every call counts; a duration counts at the outermost frame of its function (node) or of
     * its caller -> callee pair (edge): the ones nested in it lie inside it */
    n->calls++;
    n->self += c->self;
    if (!fr->same_below)
        n->total += c->dur;
    if (parent) {
        struct gedge *e = edge(g, c->t->st[c->depth - 1].id, fr->id);
        if (!e)
            return -1;
        e->calls++;
        if (!fr->edge_below)
            e->total += c->dur;
    }
    return 0;
}

/* DOT double-quoted string body. */
static void dot_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

/* --focus: the nodes whose names match a pattern (fnmatch globs or names as written,
 * comma-separated: tool_glob_match), their callees
 * and their callers, transitively (uftrace graph FUNC's call tree and back-trace), are kept; the
 * others go. --min-share: then the nodes whose total is under pct percent of the largest node
 * total go too (and so the edges that touch them). Returns how many nodes are kept. */
static size_t select_nodes(struct graph *g, const char *focus, double pct)
{
    size_t kept = 0;
    if (!focus) {
        for (size_t i = 0; i < g->nn; i++)
            g->n[i].keep = true;
    } else {
        char buf[24];
        for (size_t i = 0; i < g->nn; i++) {
            const char *name = stf_syms_name(g->syms, g->n[i].id, buf, sizeof buf);
            g->n[i].keep = false;
            for (const char *p = focus; *p;) {
                size_t l = strcspn(p, ",");
                char pat[256];
                snprintf(pat, sizeof pat, "%.*s", (int)(l < sizeof pat ? l : sizeof pat - 1), p);
                if (tool_glob_match(pat, name))
                    g->n[i].keep = true;
                p += l + (p[l] == ',');
            }
        }
        /* callees down, then callers up: until nothing changes (the graph is small) */
        bool *down = calloc(g->nn ? g->nn : 1, sizeof *down), *up = calloc(g->nn ? g->nn : 1, 1);
        if (!down || !up) {
            free(down);
            free(up);
            return 0;
        }
        for (size_t i = 0; i < g->nn; i++)
            down[i] = up[i] = g->n[i].keep;
        for (bool more = true; more;) {
            more = false;
            for (size_t k = 0; k < g->ne; k++) {
                bool fadded, tadded;
                long a = u64map_get(&g->nmap, g->e[k].from, &fadded);
                long b = u64map_get(&g->nmap, g->e[k].to, &tadded);
                if (a < 0 || b < 0)
                    continue;
                if (down[a] && !down[b])
                    down[b] = more = true;
                if (up[b] && !up[a])
                    up[a] = more = true;
            }
        }
        for (size_t i = 0; i < g->nn; i++)
            g->n[i].keep = down[i] || up[i];
        free(down);
        free(up);
    }
    uint64_t top = 0;
    for (size_t i = 0; i < g->nn; i++)
        if (g->n[i].keep && cs_ticks(g->n[i].total) > top)
            top = cs_ticks(g->n[i].total);
    for (size_t i = 0; i < g->nn; i++) {
        if (g->n[i].keep && pct > 0 && (double)cs_ticks(g->n[i].total) < pct / 100 * (double)top)
            g->n[i].keep = false;
        kept += g->n[i].keep;
    }
    return kept;
}

static bool kept(struct graph *g, uint32_t id)
{
    bool added;
    long i = u64map_get(&g->nmap, id, &added);
    return i >= 0 && !added && g->n[i].keep;
}

static void dot_time(FILE *f, uint64_t ticks, uint64_t freq)
{
    char b[32];
    tool_fmt_ns(b, sizeof b, tool_ticks_to_ns(cs_ticks(ticks), freq));
    fputs(b, f);
}

int cmd_graph(int argc, char **argv);

int cmd_graph(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *syms_opt = NULL;
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    int32_t tid = 0;
    bool have_tid = false;
    struct tool_window win = {0};
    const char *focus = NULL, *v;
    double min_share = 0;
    for (int i = 1; i < argc; i++) {
        int m;
        if ((m = tool_option(argc, argv, &i, "graph", "--focus", &focus)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_option(argc, argv, &i, "graph", "--min-share", &v)) != 0) {
            char *end;
            if (m < 0)
                return EXIT_USAGE;
            min_share = strtod(v, &end);
            if (*end || !(min_share >= 0 && min_share <= 100)) {
                tool_err("graph: --min-share needs a percentage 0..100, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_window_option(argc, argv, &i, "graph", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_tid_option(argc, argv, &i, "graph", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if (strcmp(argv[i], "--raw-times") == 0) {
            tool_raw_times = true;
        } else if ((m = tool_option(argc, argv, &i, "graph", "-o", &out)) != 0 ||
                   (m = tool_option(argc, argv, &i, "graph", "--output", &out)) != 0 ||
                   (m = tool_option(argc, argv, &i, "graph", "--syms", &syms_opt)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((argv[i][0] != '-' || !argv[i][1]) && !path) { /* "-": standard input */
            path = argv[i];
        } else {
            tool_err("graph: unexpected argument '%s'", argv[i]);
            help(stderr);
            return EXIT_USAGE;
        }
    }
    if (!tool_default_trace(&path, "graph"))
        return EXIT_USAGE;

    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_opt, "reading", false) != EXIT_OK)
        return EXIT_BAD_TRACE;
    struct stf_syms *syms = tr.syms;
    uint64_t freq = tr.freq;
    tr.one = have_tid;
    tr.tid = tid;
    struct graph g = {.w = tool_window_filtered(&win) ? &win : NULL, .syms = syms, .freq = freq};
    static const struct cs_ops ops = {.enter = on_enter, .close = on_close};
    struct callstack cs = {.close_open = true,
                           .nesting = true,
                           .edges = true,
                           .signed_dur = tool_trace_corrected(&tr)};
    tool_window_begin(&win, &tr, &cs, tool_trace_base(&tr), NULL, NULL);
    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = tool_trace_next(&tr, &it)) == STF_OK) {
        if (cs_feed(&cs, &it, &ops, &g) != 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK && cs_finish(&cs, &ops, &g) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    struct tool_out o = {0};
    FILE *f = status == EXIT_OK ? tool_out_open(&o, out) : NULL;
    if (status == EXIT_OK && !f)
        status = EXIT_BAD_TRACE;
    size_t shown = f ? select_nodes(&g, focus, min_share) : 0;
    if (f) {
        fputs("digraph calls {\n  node [shape=box];\n", f);
        for (size_t i = 0; i < g.nn; i++) {
            if (!g.n[i].keep)
                continue;
            char buf[24];
            const char *name = stf_syms_name(syms, g.n[i].id, buf, sizeof buf);
            fprintf(f, "  f%" PRIu32 " [label=\"", g.n[i].id);
            dot_escape(f, name);
            fprintf(f, "\\ncalls: %" PRIu64 "\\ntotal: ", g.n[i].calls);
            dot_time(f, g.n[i].total, freq);
            fputs("\"];\n", f);
        }
        for (size_t i = 0; i < g.ne; i++) {
            if (!kept(&g, g.e[i].from) || !kept(&g, g.e[i].to))
                continue;
            fprintf(f, "  f%" PRIu32 " -> f%" PRIu32 " [label=\"calls: %" PRIu64 "\\ntotal: ",
                    g.e[i].from, g.e[i].to, g.e[i].calls);
            dot_time(f, g.e[i].total, freq);
            fputs("\"];\n", f);
        }
        /* the hot functions stand out: fill from white to red by self time (the largest's
         * red), in attribute lines of their own after the graph's */
        uint64_t top_self = 0;
        for (size_t i = 0; i < g.nn; i++)
            if (g.n[i].keep && cs_ticks(g.n[i].self) > top_self)
                top_self = cs_ticks(g.n[i].self);
        for (size_t i = 0; i < g.nn && top_self; i++) {
            if (!g.n[i].keep)
                continue;
            double share = (double)cs_ticks(g.n[i].self) / (double)top_self;
            int c = 255 - (int)(share * 200 + 0.5);
            fprintf(f, "  f%" PRIu32 " [style=filled, fillcolor=\"#ff%02x%02x\"];\n", g.n[i].id, c,
                    c);
        }
        fprintf(f,
                "  // calls: %" PRIu64 ", stack repairs: %" PRIu64 ", unmatched exits: %" PRIu64
                ", gaps: %" PRIu64 "\n",
                cs.calls, cs.repairs, cs.unmatched, cs.gaps);
        if (cs.win)
            fprintf(f, "  // window: calls clipped at its edges: %" PRIu64 "\n", cs.clipped);
        if (focus || min_share > 0)
            fprintf(f, "  // drawn: %zu of %zu functions (--focus '%s', --min-share %g)\n", shown,
                    g.nn, focus ? focus : "*", min_share);
        tool_window_note(f, "  // ", &win, g.shown, cs.calls);
        struct vtimes vt = tool_trace_times(&tr);
        tool_times_note(f, "  // ", &vt, 0);
        fputs("}\n", f);
        status = tool_out_close(&o, 1) ? EXIT_BAD_TRACE : EXIT_OK;
    }
    cs_free(&cs);
    free(g.n);
    free(g.e);
    u64map_free(&g.nmap);
    u64map_free(&g.emap);
    tool_trace_close(&tr);
    return status;
}
