/* Time windows and call filters (window.h), shared by account, replay, stack, flamegraph and
 * convert.
 *
 * Times. --from and --to are times as replay shows them: since the earliest thread start
 * (tool_trace_base), corrected when the trace is (the same clock every command shows). They
 * become ticks once the trace is open: --from the first tick that shows at or after it,
 * --to the last tick that shows at or before it, so a call replay prints at 0.001000000 is in
 * a window from 1ms, and one at 0.001000001 is not in one to 1ms.
 *
 * Filters: one set of rules for every command that reads calls, as uftrace's -F, -N, -D and
 * -t. Patterns are the runtime's (preload/filter.c, SLEDTRACE_FILTER): comma-separated
 * `[LIB:]GLOB`, fnmatch globs, LIB what comes before the first single ':' (a "::" belongs to
 * the name) matched against the base name of the function's object; the name tested is the one
 * the command shows (demangled per --names), since the tools have no other. A glob also matches
 * the name it spells exactly (tool_glob_match): `[sledtrace] buffer switch`, copied from
 * account's output, finds the tracer's own pseudo-calls. Each option may be
 * given up to 16 times.
 *  --filter P: a call is shown when its function or one of its open ancestors' matches: the
 *    matching calls and everything they call (the subtree). Callers above a match are not
 *    shown as calls; stack and flamegraph keep their names as the path above the match (so the
 *    context stays visible) with no weight of their own.
 *  --exclude P: the calls of matching functions and their whole subtrees are hidden, even
 *    inside a --filter subtree (exclude wins); stack and flamegraph drop their time.
 *  --max-depth N: calls at depth < N are shown (a thread's top-level calls are depth 0);
 *    stack and flamegraph fold a deeper call's time into its ancestor at depth N - 1, so
 *    widths stay true.
 *  --min-duration D: calls lasting less than D (their clipped duration) are hidden, and so are
 *    their callees (shorter still); stack and flamegraph fold their time into the caller
 *    shown. A call with no duration (unfinished, cut at a gap) passes.
 * Each shown call keeps its own duration and self time (account's rows count shown calls
 * only, with their figures unchanged by hidden callees); exports write shown calls only, so a
 * shown call's parent in the file is its nearest shown ancestor. replay --filter-only
 * (filter_only) keeps replay's earlier rule: each call tested on its own name, no subtree.
 *
 * The subtree state lives in the frame (cs_frame.vis), computed from the parent's the first
 * time it is asked for (at the entry, or at the close: the parents are still on the stack), so
 * a name is tested once per call, and nothing is kept per function. */
#include "window.h"

#include "callstack.h"

#include <inttypes.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Patterns given in this process, numbering the windows that hold them (tool_window.serial);
 * options are parsed on one thread. */
static uint64_t g_serial;

static int add_list(const char *cmd, const char *opt, const char **list, size_t *n, const char *v)
{
    if (*n == 16) {
        tool_err("%s: %s given more than 16 times", cmd, opt);
        return -1;
    }
    list[(*n)++] = v;
    return 1;
}

static int time_value(const char *cmd, const char *opt, const char *v, uint64_t *ns)
{
    if (!tool_parse_duration(v, ns)) {
        tool_err("%s: %s: bad time '%s' (e.g. 10us, 2.5ms, 1s; bare: ns)", cmd, opt, v);
        return -1;
    }
    return 1;
}

int tool_window_time_option(int argc, char **argv, int *i, const char *cmd, struct tool_window *w)
{
    const char *v;
    int m;
    if ((m = tool_option(argc, argv, i, cmd, "--from", &v)) != 0) {
        w->has_from = m > 0;
        return m < 0 ? m : time_value(cmd, "--from", v, &w->from_ns);
    }
    if ((m = tool_option(argc, argv, i, cmd, "--to", &v)) != 0) {
        w->has_to = m > 0;
        return m < 0 ? m : time_value(cmd, "--to", v, &w->to_ns);
    }
    return 0;
}

int tool_window_option(int argc, char **argv, int *i, const char *cmd, struct tool_window *w)
{
    const char *v;
    int m = tool_window_time_option(argc, argv, i, cmd, w);
    if (m != 0)
        return m;
    if ((m = tool_option(argc, argv, i, cmd, "--min-duration", &v)) != 0)
        return m < 0 ? m : time_value(cmd, "--min-duration", v, &w->min_ns);
    if ((m = tool_option(argc, argv, i, cmd, "--max-depth", &v)) != 0) {
        if (m < 0)
            return m;
        if (!tool_parse_u64(v, &w->max_depth) || w->max_depth == 0) {
            tool_err("%s: --max-depth: expected a positive integer, got '%s'", cmd, v);
            return -1;
        }
        return 1;
    }
    if ((m = tool_option(argc, argv, i, cmd, "--filter", &v)) != 0) {
        w->serial = ++g_serial;
        return m < 0 ? m : add_list(cmd, "--filter", w->filter, &w->nfilter, v);
    }
    if ((m = tool_option(argc, argv, i, cmd, "--exclude", &v)) != 0) {
        w->serial = ++g_serial;
        return m < 0 ? m : add_list(cmd, "--exclude", w->exclude, &w->nexclude, v);
    }
    return 0;
}

bool tool_window_timed(const struct tool_window *w)
{
    return w && (w->has_from || w->has_to);
}

void tool_window_ticks(const struct tool_window *w, uint64_t base, uint64_t freq, uint64_t *from,
                       uint64_t *to)
{
    *from = 0;
    *to = UINT64_MAX;
    if (!w)
        return;
    if (w->has_from) {
        /* the smallest d with ticks_to_ns(d) >= from_ns */
        uint64_t d = freq ? (uint64_t)((long double)w->from_ns * freq / 1e9L) : w->from_ns;
        while (d > 0 && tool_ticks_to_ns(d - 1, freq) >= w->from_ns)
            d--;
        while (tool_ticks_to_ns(d, freq) < w->from_ns && d < UINT64_MAX - base)
            d++;
        *from = base + d;
    }
    if (w->has_to) {
        /* the largest d with ticks_to_ns(d) <= to_ns */
        uint64_t d = freq ? (uint64_t)((long double)w->to_ns * freq / 1e9L) : w->to_ns;
        while (tool_ticks_to_ns(d + 1, freq) <= w->to_ns && d < UINT64_MAX - base - 1)
            d++;
        while (d > 0 && tool_ticks_to_ns(d, freq) > w->to_ns)
            d--;
        *to = d > UINT64_MAX - base ? UINT64_MAX : base + d;
    }
}

bool tool_glob_match(const char *glob, const char *name)
{
    return strcmp(glob, name) == 0 || fnmatch(glob, name, 0) == 0;
}

/* Does one pattern [LIB:]GLOB match name (of the object at path)? */
static bool pattern_matches(const char *pat, size_t n, const char *name, const char *path)
{
    char buf[1024];
    if (n >= sizeof buf)
        return false;
    memcpy(buf, pat, n);
    buf[n] = '\0';
    char *glob = buf;
    for (char *p = buf; *p; p++) {
        if (p[0] == ':' && p[1] == ':') {
            p++;
            continue;
        }
        if (p[0] == ':') {
            *p = '\0';
            const char *base = path ? strrchr(path, '/') : NULL;
            base = base ? base + 1 : path;
            if (!base || !tool_glob_match(buf, base))
                return false;
            glob = p + 1;
            break;
        }
    }
    return tool_glob_match(glob, name);
}

static bool list_matches(const char *const *list, size_t n, const char *name, const char *path)
{
    for (size_t k = 0; k < n; k++) {
        const char *s = list[k];
        for (;;) {
            const char *c = strchr(s, ',');
            size_t len = c ? (size_t)(c - s) : strlen(s);
            if (len && pattern_matches(s, len, name, path))
                return true;
            if (!c)
                break;
            s = c + 1;
        }
    }
    return false;
}

bool tool_window_name(const struct tool_window *w, const struct stf_syms *syms, uint32_t id)
{
    if (!w || (!w->nfilter && !w->nexclude))
        return true;
    char buf[24];
    const char *name = stf_syms_name(syms, id, buf, sizeof buf);
    uint32_t obj, fid;
    stf_syms_split(syms, id, &obj, &fid);
    const char *path = stf_syms_object(syms, obj);
    if (w->nfilter && !list_matches(w->filter, w->nfilter, name, path))
        return false;
    return !list_matches(w->exclude, w->nexclude, name, path);
}

bool tool_window_filtered(const struct tool_window *w)
{
    return w && (w->max_depth || w->min_ns || w->nfilter || w->nexclude);
}

/* What --filter and --exclude say of function id's own name: a bit each. Names are tested
 * once per function per thread: a small direct-mapped cache, thread-local (account walks
 * threads in parallel), valid for one window and one symbol table (key: their addresses and the
 * window's serial, so a window parsed again at the same address is not mistaken for the old). */
enum { M_FILTER = 1, M_EXCLUDE = 2, M_CACHE = 1024 };
static _Thread_local struct {
    const struct tool_window *w;
    const struct stf_syms *syms;
    uint64_t serial;
    uint32_t key[M_CACHE]; /* id + 1 (0: empty) */
    uint8_t val[M_CACHE];
} g_names;

static unsigned name_match(const struct tool_window *w, const struct stf_syms *syms, uint32_t id)
{
    if (g_names.w != w || g_names.syms != syms || g_names.serial != w->serial) {
        memset(g_names.key, 0, sizeof g_names.key);
        g_names.w = w;
        g_names.syms = syms;
        g_names.serial = w->serial;
    }
    size_t slot = (size_t)((id * 0x9e3779b1u) >> 22) & (M_CACHE - 1);
    if (g_names.key[slot] == id + 1u)
        return g_names.val[slot];
    char buf[24];
    const char *name = stf_syms_name(syms, id, buf, sizeof buf);
    uint32_t obj, fid;
    stf_syms_split(syms, id, &obj, &fid);
    const char *path = stf_syms_object(syms, obj);
    unsigned m = 0;
    if (w->nfilter && list_matches(w->filter, w->nfilter, name, path))
        m |= M_FILTER;
    if (w->nexclude && list_matches(w->exclude, w->nexclude, name, path))
        m |= M_EXCLUDE;
    g_names.key[slot] = id + 1u;
    g_names.val[slot] = (uint8_t)m;
    return m;
}

/* The state of a frame of function id whose parent's state is parent (0: top level). */
static uint8_t vis_of(const struct tool_window *w, const struct stf_syms *syms, uint32_t id,
                      uint8_t parent)
{
    uint8_t v = TW_KNOWN;
    if (!w->nfilter && !w->nexclude)
        return v | TW_INSIDE;
    bool inherit = !w->filter_only && parent;
    if (inherit && (parent & TW_EXCLUDED))
        return v | TW_EXCLUDED | (parent & TW_INSIDE);
    unsigned m = name_match(w, syms, id);
    if (!w->nfilter || (inherit && (parent & TW_INSIDE)) || (m & M_FILTER))
        v |= TW_INSIDE;
    if (m & M_EXCLUDE)
        v |= TW_EXCLUDED;
    return v;
}

uint8_t tool_window_vis(const struct tool_window *w, const struct stf_syms *syms,
                        struct cs_frame *st, size_t depth, const struct cs_frame *f)
{
    if (!w)
        return TW_KNOWN | TW_INSIDE;
    if (f->vis)
        return f->vis;
    size_t k = depth;
    while (k > 0 && !st[k - 1].vis)
        k--; /* st[k - 1] is known (or k is 0): compute from there up */
    for (; k < depth; k++)
        st[k].vis = vis_of(w, syms, st[k].id, k ? st[k - 1].vis : 0);
    return vis_of(w, syms, f->id, depth ? st[depth - 1].vis : 0);
}

static bool vis_shown(uint8_t v)
{
    return (v & TW_INSIDE) && !(v & TW_EXCLUDED);
}

bool tool_window_enter(const struct tool_window *w, const struct stf_syms *syms,
                       const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    if (!tool_window_filtered(w))
        return true;
    f->vis = tool_window_vis(w, syms, t->st, depth, f);
    if (w->max_depth && depth >= w->max_depth)
        return false;
    return vis_shown(f->vis);
}

enum tool_show tool_window_close(const struct tool_window *w, const struct stf_syms *syms,
                                 const struct cs_close *c, uint64_t freq)
{
    if (!tool_window_filtered(w))
        return TW_SHOW;
    if (!vis_shown(tool_window_vis(w, syms, c->t->st, c->depth, c->f)))
        return TW_DROP;
    if (w->max_depth && c->depth >= w->max_depth)
        return TW_FOLD;
    if (w->min_ns && tool_ticks_to_ns(cs_ticks(c->dur), freq) < w->min_ns)
        return TW_FOLD;
    return TW_SHOW;
}

static void note_list(FILE *out, const char *opt, const char *const *list, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        char *p = tool_printable(list[k]);
        fprintf(out, " %s '%s'", opt, p ? p : list[k]);
        free(p);
    }
}

void tool_window_note(FILE *out, const char *prefix, const struct tool_window *w, uint64_t shown,
                      uint64_t calls)
{
    if (!tool_window_filtered(w))
        return;
    fprintf(out, "%sfilters:", prefix);
    note_list(out, "--filter", w->filter, w->nfilter);
    note_list(out, "--exclude", w->exclude, w->nexclude);
    if (w->filter_only)
        fputs(" --filter-only", out);
    if (w->max_depth)
        fprintf(out, " --max-depth %" PRIu64, w->max_depth);
    if (w->min_ns) {
        char b[32];
        tool_fmt_ns(b, sizeof b, w->min_ns);
        fprintf(out, " --min-duration %s", b);
    }
    fprintf(out, ": %" PRIu64 " of %" PRIu64 " calls shown\n", shown, calls);
}

void tool_window_usage(FILE *out, bool filters)
{
    fputs("  --from TIME, --to TIME\n"
          "                     only the calls in this window, times since the earliest\n"
          "                     thread start as replay shows them (10us, 2.5ms, 1s; bare:\n"
          "                     ns); a call crossing an edge is clipped to it and marked\n",
          out);
    if (!filters)
        return;
    fputs("  --filter P         only the calls of functions matching P and everything they\n"
          "                     call (their subtree); P: comma-separated [LIB:]GLOB, the\n"
          "                     runtime's rules, on names as shown (repeatable)\n"
          "  --exclude P        not the calls of functions matching P, nor their subtree\n"
          "                     (wins over --filter; repeatable)\n"
          "  --max-depth N      only calls at depth < N (top-level calls are depth 0)\n"
          "  --min-duration TIME  only calls lasting at least TIME (their part in the window)\n",
          out);
}
