/* sledtrace replay: per-thread call tree, one line per call.
 *
 * Streaming: a call's duration is known only when it exits, so each call is printed when it is
 * closed (post-order: callees before their caller, a repaired frame just before the frame whose
 * exit repaired it). Nothing is buffered beyond the open stack, so memory grows with threads and
 * stack depth only. Each line carries the call's start time, so `sort -s -k2,2n` turns the output
 * into entry order. Stack rule, repairs and loss markers as in account (callstack.h). */
#include "callstack.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace replay TRACE [--tid N] [--depth N] [--min-duration NS]\n"
          "                        [--filter GLOB] [--syms FILE]\n"
          "\n"
          "Per-thread call tree: one line per call, printed when the call returns (callees\n"
          "before their caller; the start column gives the entry order):\n"
          "    TID  START(s since the earliest thread start)  DURATION  <2 spaces per depth>NAME\n"
          "An exit closes the nearest open frame of its function; frames above it close at\n"
          "the same time and are marked [repaired]. A loss marker prints\n"
          "'-- N events lost --' for its thread and empties that thread's stack.\n"
          "\n"
          "  --tid N            only thread N\n"
          "  --depth N          only calls at depth < N (top-level calls are depth 0)\n"
          "  --min-duration NS  only calls lasting at least NS nanoseconds\n"
          "  --filter GLOB      only functions whose name matches GLOB (fnmatch, e.g. 'f*')\n"
          "  --syms FILE        symbols file (default: TRACE with .fdr replaced by .syms)\n",
          out);
}

struct replay {
    const struct stf_syms *syms;
    uint64_t freq, base;
    bool have_tid;
    int32_t tid;
    uint64_t depth; /* 0: unlimited */
    uint64_t min_ns;
    const char *glob;
    uint64_t shown;
};

static void put_start(const struct replay *rp, int32_t tid, uint64_t tsc)
{
    double s = tsc >= rp->base ? tool_ticks_to_s(tsc - rp->base, rp->freq)
                               : -tool_ticks_to_s(rp->base - tsc, rp->freq);
    printf("%-7" PRId32 " %12.9f ", tid, s);
}

static int on_close(void *ctx, const struct cs_close *c)
{
    struct replay *rp = ctx;
    if (rp->have_tid && c->t->tid != rp->tid)
        return 0;
    if (rp->depth && c->depth >= rp->depth)
        return 0;
    uint64_t ns = tool_ticks_to_ns(c->dur, rp->freq);
    if (ns < rp->min_ns)
        return 0;
    char buf[24];
    const char *name = stf_syms_name(rp->syms, c->f->id, buf, sizeof buf);
    if (rp->glob && fnmatch(rp->glob, name, 0) != 0)
        return 0;
    char d[32];
    tool_fmt_ns(d, sizeof d, ns);
    put_start(rp, c->t->tid, c->f->start);
    printf("%10s  %*s%s%s\n", d, (int)(2 * c->depth), "", name, c->repaired ? " [repaired]" : "");
    rp->shown++;
    return 0;
}

static int on_loss(void *ctx, const struct cs_thread *t, uint64_t tsc, uint64_t lost,
                   size_t dropped)
{
    struct replay *rp = ctx;
    (void)dropped;
    if (rp->have_tid && t->tid != rp->tid)
        return 0;
    put_start(rp, t->tid, tsc);
    printf("-- %" PRIu64 " events lost --\n", lost);
    return 0;
}

int cmd_replay(int argc, char **argv)
{
    const char *path = NULL, *syms_path = NULL;
    struct replay rp = {0};
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if ((m = tool_option(argc, argv, &i, "replay", "--tid", &v)) != 0) {
            char *end;
            long t = m > 0 ? strtol(v, &end, 10) : 0;
            if (m < 0 || !*v || *end || t < INT32_MIN || t > INT32_MAX) {
                if (m > 0)
                    tool_err("replay: --tid needs an integer, not '%s'", v);
                return EXIT_USAGE;
            }
            rp.have_tid = true;
            rp.tid = (int32_t)t;
        } else if ((m = tool_option(argc, argv, &i, "replay", "--depth", &v)) != 0) {
            if (m < 0 || !tool_parse_u64(v, &rp.depth) || rp.depth == 0) {
                if (m > 0)
                    tool_err("replay: --depth needs a positive integer, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "replay", "--min-duration", &v)) != 0) {
            if (m < 0 || !tool_parse_u64(v, &rp.min_ns)) {
                if (m > 0)
                    tool_err("replay: --min-duration needs nanoseconds, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "replay", "--filter", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            rp.glob = v;
        } else if ((m = tool_option(argc, argv, &i, "replay", "--syms", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            syms_path = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            tool_err("replay: unknown option '%s'", argv[i]);
            return EXIT_USAGE;
        } else if (!path) {
            path = argv[i];
        } else {
            tool_err("replay: more than one trace given");
            return EXIT_USAGE;
        }
    }
    if (!path) {
        help(stderr);
        return EXIT_USAGE;
    }

    struct tool_trace tr;
    if (tool_trace_open(&tr, path, syms_path, "reading", true) != EXIT_OK)
        return EXIT_BAD_TRACE;
    rp.syms = tr.syms;
    rp.freq = tr.freq;
    rp.base = tool_trace_base(&tr);

    static const struct cs_ops ops = {.enter = NULL, .close = on_close, .loss = on_loss};
    struct callstack cs = {0};
    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = tool_trace_next(&tr, &it)) == STF_OK) {
        if (cs_feed(&cs, &it, &ops, &rp) != 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK) {
        printf("# shown: %" PRIu64 " of %" PRIu64 " calls, stack repairs: %" PRIu64
               ", unmatched exits: %" PRIu64 ", unfinished frames: %" PRIu64 "\n",
               rp.shown, cs.calls, cs.repairs, cs.unmatched, cs_open_frames(&cs));
        if (cs.gaps)
            printf("# gaps: %" PRIu64 " (%" PRIu64 " events dropped by the runtime); %" PRIu64
                   " frames open at a gap were left out\n",
                   cs.gaps, cs.gap_events, cs.gap_frames);
    }
    cs_free(&cs);
    tool_trace_close(&tr);
    if (fflush(stdout) != 0)
        status = EXIT_BAD_TRACE;
    return status;
}
