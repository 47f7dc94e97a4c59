/* Seeking a time window (seek.c): each thread's walk state at some of its block starts, so that
 * a command reading a window (--from) starts each thread near the window instead of at its start.
 *
 * A checkpoint of a thread is taken at the start of one of its blocks: the frames then open (the
 * walker's stack rule, callstack.h, run over everything before), the corrected clock's state
 * (vclock.h) and the largest timestamp of any record before it, raw and corrected. A walk whose
 * window starts after that timestamp can start at the block with those frames open: every record
 * before it lies before the window, so the walker would have fed them unseen, and its stack and
 * clock would be exactly those. The frames' own times are not kept: at the window's start every
 * open frame is clipped to it (callstack.h, "Windows"), which forgets them.
 *
 * The checkpoints of a trace are found by one walk over it, the first time a command reads a
 * window of it, and kept in a cache file (tool_seek_dir: $SLEDTRACE_CACHE, else
 * $XDG_CACHE_HOME/sledtrace, else ~/.cache/sledtrace) named after the trace file's device, inode,
 * size and modification time, which the file repeats and which are checked again, with every
 * thread's block count, before it is used. Without a cache directory, or for a trace under
 * SLEDTRACE_SEEK_MIN bytes (default 64 MiB), or one read from a pipe, no checkpoint is made: the
 * walk reads each thread from its start as before (building them would cost the pass they
 * save). A thread that switches contexts (callstack.h, "Contexts") has no checkpoint after its
 * first switch. The cache keeps the 32 most recently used indexes.
 *
 * A checkpoint every ~1 MiB of a thread's blocks: a window costs at most that much reading per
 * thread before it, plus its own records (the walk of a thread stops after its first function
 * record past the window: trace.c). */
#ifndef SLEDTRACE_TOOLS_SEEK_H
#define SLEDTRACE_TOOLS_SEEK_H

#include "common.h"

struct tool_seek;

/* One open frame at a checkpoint: its function, the number of arguments it logged (at most 2
 * kept: only the first is shown, and whether there were more) and the first. */
struct tool_seek_frame {
    uint32_t id;
    uint32_t nargs;
    uint64_t arg;
};

/* Where a thread's walk may start for a window from tick `from` (corrected ticks when
 * corrected, else raw): *block (its block number among the thread's), the corrected clock's
 * state there (*acc, *prev), and the open frames, bottom first (*frames, *nframes; valid while
 * the index is). 0 when there is none past the thread's first block. */
int tool_seek_find(const struct tool_seek *s, int32_t pid, int32_t tid, uint64_t from,
                   bool corrected, size_t *block, uint64_t *acc, uint8_t *prev,
                   const struct tool_seek_frame **frames, size_t *nframes);
/* The trace's extent as tool_trace_extent counts it (items, largest raw TSC of a function record,
 * CPU change, TSC wrap or event), known without reading the trace. */
void tool_seek_extent(const struct tool_seek *s, uint64_t *items, uint64_t *last);
/* The index of t's trace: from the cache, else built and stored there; NULL when there is none
 * (see the top: small trace, no cache, a pipe, an error: never fatal, the walk reads from the
 * start). */
struct tool_seek *tool_seek_open(struct tool_trace *t);
void tool_seek_free(struct tool_seek *s);
/* Walk t for a window [from, to] (ticks as t hands them out): each thread from its checkpoint
 * (tool_seek_open, when from > 0) and up to its first function record past to (trace.c). Call
 * once the trace is open, before its walk starts. */
void tool_trace_window(struct tool_trace *t, uint64_t from, uint64_t to);

#endif
