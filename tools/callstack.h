/* The one call-stack walker of the analysis commands (account, replay, stack, flamegraph, graph,
 * convert --format chrome).
 *
 * The stack rule, per (pid, tid): ENTER / ENTER_ARGS push a frame; EXIT or TAIL_EXIT of f closes
 * the nearest open frame of f, and frames above it are closed at the same TSC (each one a
 * "repair"); an exit with no open frame of f is ignored ("unmatched"). At a loss marker, and at
 * the end of the trace, frames are still open; what happens to them is the one choice a command
 * makes (close_open):
 *   false (account, replay, stack, flamegraph): they are dropped - no call is measured across a
 *         gap, and unfinished calls have no duration;
 *   true (graph, chrome): they are closed at the thread's last timestamp before the marker (its
 *         last function record or event), or at its last timestamp at the end (cs_finish), and
 *         reported with why CS_GAP / CS_END, so a timeline shows them.
 * With nesting (account, graph), each frame also knows the nearest open frame below it of the
 * same function and of the same caller -> callee pair (cs_frame.same_below, edge_below), so that
 * a recursive function's time can be counted once: at its outermost frame. Functions and pairs
 * get dense numbers (cs_frame.fx, ex) the first time they are seen (a small cache in front of a
 * hash map), and each thread keeps the topmost open frame of each in arrays indexed by them: a
 * push reads and writes one slot of each, a pop writes them back, no hashing.
 * Memory grows with threads, functions (and caller -> callee pairs) and stack depth only.
 *
 * Contexts (coroutines). A thread that switches between ucontexts (swapcontext, setcontext, a
 * context's function returning to its uc_link) runs several stacks: the runtime records each
 * switch as a typed event STF_TYPED_CONTEXT (format/stf.h: the context that runs from then on,
 * and the one left). The walker keeps one stack per (thread, context): at a switch it parks the
 * running stack under the context left and resumes the target's (empty the first time), so a
 * coroutine's frames never nest in another's. The rule above holds per context; times stay
 * wall-clock: a frame of a coroutine switched out stays open meanwhile, and its duration (and
 * its self time, for the frame that switched) includes the time other contexts ran. The thread's
 * stack before its first switch is the context that switch leaves (the event's `from`); a switch
 * whose `from` is not the context the walker thinks is running (events lost before it) names
 * the running stack `from` (frames parked under `from` before are dropped, counted as at a
 * gap). A loss marker drops (or, with close_open, closes) the frames of every context of its
 * thread, and the end of the trace those of every context (cs_finish). A trace without the
 * event is one context per thread, read as before. Memory: a parked stack per context.
 *
 * Windows (--from, --to: window.h). With cs_set_window, each thread is walked from its start
 * as always (so the frames open when the window starts are exactly known: no call is guessed),
 * but before the window's start no callback is called and no counter moves. At the thread's
 * first record at or after the start, every frame then open (in every context) is clipped: its
 * start becomes the window's start, its callees' time before it is forgotten, it is marked
 * CS_CLIP_START and, for the running context, ops->enter is called for it then, bottom first (so
 * replay prints it there). At the thread's first record after the window's end, every open
 * frame closes at the end as an exit marked CS_CLIP_END (each context's), and the thread's
 * remaining records are ignored. Durations, self times and nesting are thus those of the
 * window's part of each call; cs_close.clip says which edges a call crosses, and
 * callstack.clipped counts them. A thread with no record inside the window but records on
 * both sides has its frames then open clipped at both edges (entered, then closed, at each
 * edge in turn). A thread whose records all lie before the window shows
 * nothing, not even its frames open at the end. The walk of each thread may start at a
 * checkpoint instead of its start, with the frames open there fed first (seek.h, trace.c:
 * tool_trace_window), and ends after its first function record past the window: what it feeds
 * the walker is then exactly what the walker would have taken from a whole walk. */
#ifndef SLEDTRACE_TOOLS_CALLSTACK_H
#define SLEDTRACE_TOOLS_CALLSTACK_H

#include "common.h"

#include <stdio.h>

struct tool_window;

struct cs_frame {
    uint32_t id;
    uint32_t node; /* free for the caller (stack tree node) */
    uint64_t start, child;
    uint64_t arg;   /* first logged argument (CallArgument after an enter-with-args) */
    uint32_t nargs; /* arguments logged for this call (all of them: cs_arg, cs_strings) */
    /* With callstack.nesting (else 0): the frame's nearest open frame below it of the same
     * function (same_below) and, with callstack.edges too, of the same caller -> callee pair
     * (edge_below), as index + 1 in
     * t->st; 0 when there is none: the frame is the outermost open one of its function (of its
     * edge). rec: the summed durations of the closed frames of the same function whose nearest
     * enclosing frame of that function is this one - the time this frame's function spent
     * nested in it, counted once, which is what remains of it when this frame never closes. */
    size_t same_below, edge_below;
    uint64_t rec;
    uint64_t mark; /* free for the caller (convert --format chrome: its start as written) */
    /* With callstack.nesting: the dense numbers of the frame's function and of its caller ->
     * callee pair (ex: UINT32_MAX for a top-level frame), see the top of this file. */
    uint32_t fx, ex;
    uint8_t clip; /* CS_CLIP_START: entered before the window (start is the window's start) */
    /* A wait (stf.h, "[wait] NAME") that ended on another CPU than it began on (a NewCPUId
     * with another CPU than the thread's last one while it was the innermost frame): it was
     * descheduled, visibly. The runtime records the CPU at both ends of a wait only. */
    uint8_t moved;
    uint8_t vis; /* free for window.c: the call filters' state (tool_window_vis; 0: unknown) */
};

/* Open frames by function (and by caller -> callee pair): for dense number fx (ex), index + 1 of
 * the topmost open frame of that function (pair), 0 when none is open; the arrays grow to the
 * largest number the thread has used. */
struct cs_nest {
    size_t *fn_top, *edge_top;
    size_t nfn, nedge;
};

/* A context of a thread (see the top): its id (the runtime's), its track, and while another
 * context runs, its parked stack (st NULL and depth 0 while it is the running one, whose stack
 * is the thread's st). */
struct cs_ctx {
    uint64_t id;
    uint32_t track;
    bool args_open;
    struct cs_frame *st;
    size_t depth, cap;
};

struct cs_thread {
    int32_t pid, tid;
    struct cs_frame *st; /* the running context's stack */
    size_t depth, cap;
    uint64_t first;      /* TSC of the first record fed for the thread */
    uint64_t last;       /* TSC of the thread's last function record or event (for the
                          * function records of a cs_feed_funcs run: at its end) */
    bool args_open;      /* the last function record entered with arguments: CallArguments follow */
    struct cs_nest nest; /* with callstack.nesting */
    /* Contexts (see the top). ctx: the running context's id, 0 until the first switch names it
     * (switched). track: a number per (thread, context), dense over the walk
     * (callstack.ntracks), the running context's; track0 the thread's first context's. ctxs:
     * every context seen, the running one included, in order of appearance (ctxmap: id ->
     * index). */
    uint64_t ctx;
    uint32_t track, track0;
    bool switched;
    struct cs_ctx *ctxs;
    size_t nctx, capctx;
    struct u64map ctxmap;
    bool win_in, win_done; /* with a window: its start reached; its end passed (rest ignored) */
    /* Arguments (SLEDTRACE_ARGS, format/stf.h "Arguments"), for the running context's frames:
     * xargs[i] the first CS_MAX_ARGS arguments of frame i (read with cs_arg; written only for
     * frames that log them, so valid for k < nargs); strs the strings of the open frames, a
     * stack of records (cs_strings), the top ones the topmost frame's; ret the return registers
     * of the call the next exit closes (has_ret). */
    uint64_t (*xargs)[6];
    size_t capx;
    uint8_t *strs;
    size_t nstrs, capstrs;
    uint64_t ret[4];
    bool has_ret;
    uint32_t cpu1; /* the thread's CPU (its last NewCPUId) + 1; 0 while unknown */
};

enum { CS_MAX_ARGS = 6 };
/* Argument k (0-based, k < f->nargs and < CS_MAX_ARGS) of frame i of t. */
static inline uint64_t cs_arg(const struct cs_thread *t, size_t i, unsigned k)
{
    return k == 0 ? t->st[i].arg : t->xargs[i][k];
}
/* The strings frame i of t (an open frame) logged: calls fn(arg, argno, flags, bytes, n) for
 * each, in the order logged. Only the running context's frames keep them. */
void cs_strings(const struct cs_thread *t, size_t i,
                void (*fn)(void *arg, unsigned argno, unsigned flags, const uint8_t *b, size_t n),
                void *arg);

/* Why a frame closed: its own exit, an exit of a function below it (a repair), a loss marker or
 * the end of the trace (the last two only with close_open). */
enum cs_why { CS_EXIT, CS_REPAIR, CS_GAP, CS_END };

/* One closed frame (already popped: the parent, if any, is t->st[depth - 1]). depth 0 =
 * top-level. Durations in ticks (|end - start|: a CPU change can step the counter back). */
struct cs_close {
    const struct cs_thread *t;
    const struct cs_frame *f;
    size_t depth;
    uint64_t end, dur, self;
    enum cs_why why;
    bool repaired;       /* why == CS_REPAIR */
    uint8_t clip;        /* CS_CLIP_START | CS_CLIP_END: the call crosses the window's edge(s) */
    const uint64_t *ret; /* its return registers (rax rdx xmm0 xmm1), if it logged them */
};

enum { CS_CLIP_START = 1, CS_CLIP_END = 2 };

/* One call's duration or self time as a figure to show: a signed one (cs.signed_dur) below
 * zero is 0. */
static inline uint64_t cs_ticks(uint64_t v)
{
    return (int64_t)v < 0 ? 0 : v;
}

/* Callbacks (any may be NULL); a non-zero return stops cs_feed with that value. thread is called
 * once per thread, when it is first seen. loss: without close_open, the `dropped` frames it
 * dropped are still readable in t->st[0..dropped) during the call. parked_loss: the same for
 * each other context of the thread holding frames, after loss, t showing that context as the
 * running one during the call. */
struct cs_ops {
    int (*thread)(void *ctx, const struct cs_thread *t);
    int (*enter)(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth);
    int (*close)(void *ctx, const struct cs_close *c);
    int (*loss)(void *ctx, const struct cs_thread *t, uint64_t tsc, uint64_t lost, size_t dropped);
    int (*parked_loss)(void *ctx, const struct cs_thread *t, uint64_t tsc, size_t dropped);
};

struct callstack {
    bool close_open; /* set before the first cs_feed (see the top of this file) */
    bool nesting;    /* set before the first cs_feed: keep same_below and rec */
    bool edges;      /* with nesting, set before the first cs_feed: keep edge_below too (graph) */
    /* Set before the first cs_feed, for corrected times (vclock.h): a duration is end - start
     * and a self time dur - child modulo 2^64, i.e. signed: a call the correction takes below
     * zero stays below zero in every sum (read one call's figures with cs_ticks). Otherwise a
     * duration is |end - start| (a CPU change can step the counter back) and self is at
     * least 0. */
    bool signed_dur;
    struct vtimes times; /* what cs_summary says of the times (cs_tree_load sets it) */
    struct u64map tmap;
    struct cs_thread *t;
    size_t nt, capt;
    size_t last_ti; /* cache: index + 1 of the last thread looked up (0: none) */
    uint64_t last_key;
    uint64_t calls, repairs, unmatched;
    uint64_t gaps, gap_events, gap_frames; /* loss markers, events they count, frames open */
    uint64_t top_ticks;                    /* sum of the durations of closed top-level frames */
    uint64_t switches;                     /* context switches (see the top) */
    uint32_t ntracks;                      /* (thread, context) pairs seen: cs_thread.track */
    uint64_t lost_ticks; /* closed ticks under top-level frames dropped at a loss marker */
    /* With nesting: dense numbers of functions and of caller -> callee pairs (see the top),
     * each map's index, with a direct-mapped cache in front. */
    struct u64map fxmap, exmap;
    uint64_t fx_key[256], ex_key[1024]; /* key + 1 (0: empty) */
    uint32_t fx_val[256], ex_val[1024];
    uint64_t fx_last, ex_last; /* the last lookups' keys + 1 (0: none) and their numbers */
    uint32_t fx_last_val, ex_last_val;
    /* Windows (set before the first cs_feed with cs_set_window, or window for cs_tree_load to
     * set): see "Windows" at the top. clipped: calls closed with a clip mark. */
    bool win;
    uint64_t win_from, win_to;
    uint64_t clipped;
    uint8_t clip_end; /* CS_CLIP_END while frames close at the window's end */
    const struct tool_window *window;
};

/* Feed one record: function records and loss markers change the stack; a CPU change marks the
 * innermost open frame `moved` when it is a wait and the CPU is another; TSC wraps, call arguments and events
 * only make their thread known (and events move its last timestamp); other records are ignored. 0, -1 on allocation failure, or a callback's non-zero value. */
int cs_feed(struct callstack *cs, const struct stf_item *it, const struct cs_ops *ops, void *ctx);
/* Feed n function records of thread (pid, tid) (stf_cursor_funcs): exactly what cs_feed of each
 * as a function record item would do, in order; the same return values. */
int cs_feed_funcs(struct callstack *cs, int32_t pid, int32_t tid, const struct stf_func *fn,
                  size_t n, const struct cs_ops *ops, void *ctx);
/* Walking a trace: feeds t's function records to cs in bulk (tool_trace_run, cs_feed_funcs) up
 * to its next other record, which goes into *it for the caller to feed (cs_feed) or not.
 * STF_OK with *it, STF_END, a negative reader error (for tool_trace_end), or CS_NOMEM when
 * feeding failed (out of memory, or a callback's non-zero value). */
enum { CS_NOMEM = STF_END + 1 };
int cs_next_item(struct callstack *cs, struct tool_trace *t, const struct cs_ops *ops, void *ctx,
                 struct stf_item *it);
/* Moves src's threads after dst's (in src's order; none of them may be known to dst) and adds
 * src's counters to dst's, as if dst had been fed src's records after its own: for walking
 * threads apart (one callstack each) and putting the results together. src is left empty (free
 * it with cs_free). 0, or -1 on allocation failure. */
int cs_merge(struct callstack *dst, struct callstack *src);
/* At the end, with close_open: closes every frame still open at its thread's last timestamp
 * (CS_END). Without close_open it does nothing (the frames stay open, see cs_open_frames). */
int cs_finish(struct callstack *cs, const struct cs_ops *ops, void *ctx);
/* The thread (pid, tid) if it has been seen, else NULL. */
const struct cs_thread *cs_find(const struct callstack *cs, int32_t pid, int32_t tid);
/* Frames still open (never exited), in every context. */
uint64_t cs_open_frames(const struct callstack *cs);
/* Makes context i of t (an index in t->ctxs) the running one, as a switch would (the one that ran
 * is parked), so that its frames can be read in t->st or closed. 0, or -1 on allocation
 * failure. For walking the contexts at the end (replay, account); cs_finish does it itself. */
int cs_run_context(struct callstack *cs, struct cs_thread *t, size_t i);
/* Closed ticks beneath top-level frames that never closed (still open at the end, or dropped at a
 * loss marker): counted by stack, not in top_ticks. */
uint64_t cs_orphan_ticks(const struct callstack *cs);
void cs_free(struct callstack *cs);
/* A window on the times handed out (tool_trace's ticks: tool_window_ticks), see the top. */
void cs_set_window(struct callstack *cs, uint64_t from, uint64_t to);

/* Aggregated stacks: a tree of (parent, function) nodes; node 0 is the (unnamed) root. */
struct cs_node {
    uint32_t parent, id;
    uint64_t self, calls; /* self ticks and closed calls with exactly this stack */
};

/* A node's own weight: its self time in ns (ticks at freq), or with by_count its closed calls. */
uint64_t cs_node_weight(const struct cs_node *n, bool by_count, uint64_t freq);

/* With per_thread, each thread's stacks hang under a node of its own (id CS_THREAD_NODE | k,
 * k indexing threads[]), named after the thread (its sidecar name and tid); else they share the
 * root. */
#define CS_THREAD_NODE 0x40000000u
struct cs_tree {
    struct u64map map;
    struct cs_node *n;
    size_t nn, capn;
    bool per_thread;
    struct {
        int32_t pid, tid;
    } * threads;
    size_t nthreads, capthreads;
    /* (parent, function) -> node + 1, direct-mapped, in front of map (0: empty slot) */
    uint64_t ckey[4096];
    uint32_t cval[4096];
};

/* The --by weight of stack and flamegraph: "time" or "count" (sets *by_count). -1 with the
 * error printed, prefixed by cmd, for anything else. */
int cs_parse_by(const char *cmd, const char *v, bool *by_count);

/* Read a whole trace (only thread *tid when tid is not NULL) into tree (stacks of closed
 * frames). Prints errors; returns an exit code. On success *syms (may be NULL) and *freq are
 * set; the caller frees tree, cs and syms. */
int cs_tree_load(const char *path, const char *syms_opt, const int32_t *tid, struct cs_tree *tree,
                 struct callstack *cs, struct stf_syms **syms, uint64_t *freq);
void cs_tree_free(struct cs_tree *tree);
/* Building a tree by hand (window_tree.c): the root made (0, or -1 out of memory); the node of
 * (parent, function id), made when new (its index, -1 out of memory); the node of thread
 * (pid, tid) under the root (per_thread). */
int cs_tree_root(struct cs_tree *tr);
long cs_tree_child(struct cs_tree *tr, uint32_t parent, uint32_t id);
long cs_tree_thread(struct cs_tree *tr, int32_t pid, int32_t tid);
/* Adds src's stacks to dst's (the same (parent, function) paths become the same nodes; thread
 * nodes by pid and tid), as if dst had been built from src's records after its own. 0, or -1 on
 * allocation failure. */
int cs_tree_merge(struct cs_tree *dst, const struct cs_tree *src);
/* Display name per node (node 0: "all"), ';' -> ':' and control characters -> ' ' so that
 * names fit the folded format. NULL on allocation failure. */
char **cs_tree_names(const struct cs_tree *tree, const struct stf_syms *syms);
void cs_names_free(char **names, size_t n);
/* Footer shared by stack and flamegraph (to the given stream). */
void cs_summary(FILE *out, const struct callstack *cs, uint64_t freq);

/* The subcommands built on this (declared here to leave common.h alone). */
int cmd_replay(int argc, char **argv);
int cmd_stack(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);

#endif
