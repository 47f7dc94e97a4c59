/* Time windows and call filters (window.h), shared by account, replay, stack, flamegraph and
 * convert.
 *
 * Times. --from and --to are times as replay shows them: since the earliest thread start
 * (tool_trace_base), corrected when the trace is (the same clock every command shows). They
 * become ticks once the trace is open: --from the first tick that shows at or after it,
 * --to the last tick that shows at or before it, so a call replay prints at 0.001000000 is in
 * a window from 1ms, and one at 0.001000001 is not in one to 1ms.
 *
 * Filters. --filter and --exclude take the runtime's pattern rules (preload/filter.c,
 * SLEDTRACE_FILTER): comma-separated `[LIB:]GLOB` patterns, fnmatch globs, LIB what comes before
 * the first single ':' (a "::" belongs to the name) matched against the base name of the
 * function's object; the name tested is the one the command shows (demangled per --names),
 * since the tools have no other. Each option may be given several times: a call is shown when
 * its function matches some --filter pattern (or none is given) and no --exclude pattern. Like
 * replay's --filter before, they select calls, not subtrees: a filtered call's callees are
 * tested on their own names. --max-depth N keeps calls at depth < N (top level 0);
 * --min-duration D keeps calls lasting at least D (their clipped duration). */
#include "window.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if ((m = tool_option(argc, argv, i, cmd, "--filter", &v)) != 0)
        return m < 0 ? m : add_list(cmd, "--filter", w->filter, &w->nfilter, v);
    if ((m = tool_option(argc, argv, i, cmd, "--exclude", &v)) != 0)
        return m < 0 ? m : add_list(cmd, "--exclude", w->exclude, &w->nexclude, v);
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
            if (!base || fnmatch(buf, base, 0) != 0)
                return false;
            glob = p + 1;
            break;
        }
    }
    return fnmatch(glob, name, 0) == 0;
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

bool tool_window_show(const struct tool_window *w, const struct stf_syms *syms, uint32_t id,
                      size_t depth, uint64_t dur_ns)
{
    if (!w)
        return true;
    if (w->max_depth && depth >= w->max_depth)
        return false;
    if (dur_ns < w->min_ns)
        return false;
    return tool_window_name(w, syms, id);
}

void tool_window_usage(FILE *out)
{
    fputs("  --from TIME, --to TIME\n"
          "                     only the calls in this window, times since the earliest\n"
          "                     thread start as replay shows them (10us, 2.5ms, 1s; bare:\n"
          "                     ns); a call crossing an edge is clipped to it and marked\n"
          "  --max-depth N      only calls at depth < N (top-level calls are depth 0)\n"
          "  --min-duration TIME  only calls lasting at least TIME (clipped)\n"
          "  --filter P         only functions matching P: comma-separated [LIB:]GLOB, the\n"
          "                     runtime's rules, on names as shown (repeatable)\n"
          "  --exclude P        not the functions matching P (repeatable)\n",
          out);
}
