/* Shared by `sledtrace convert` (chrome, yaml) and `sledtrace graph`: output files, progress
 * reporting and a streaming call-stack walker that applies the account stack rule. */
#ifndef SLEDTRACE_TOOLS_CONVERT_H
#define SLEDTRACE_TOOLS_CONVERT_H

#include "common.h"

#include <stdio.h>

/* Open OUT for writing (stdout when NULL). Prints the error and returns NULL on failure. */
FILE *conv_open_out(const char *out);
/* Flush and close (stdout is only flushed). Returns EXIT_OK or EXIT_BAD_TRACE (error printed). */
int conv_close_out(FILE *f, const char *out);

/* Call-stack walker, per (pid, tid). ENTER / ENTER_ARGS push a frame; an EXIT or TAIL_EXIT of f
 * closes the nearest open frame of f, and the frames above it at the same TSC (repairs); an exit
 * with no open frame of f is ignored. A loss marker closes every open frame of its thread at the
 * thread's last timestamp (that of its last function record or event); so does walk_finish()
 * for frames still open at the end. Memory grows with threads and stack depth only. */
struct walk_frame {
    uint32_t id;
    uint64_t start; /* entry TSC */
};

struct walk_thread {
    int32_t pid, tid;
    struct walk_frame *st;
    size_t depth, cap;
    uint64_t last; /* TSC of the thread's last function record or event */
};

enum walk_why { WALK_EXIT, WALK_REPAIR, WALK_GAP, WALK_END };

/* Called for each closed frame (already popped: parent is the frame below it, or NULL). */
typedef int (*walk_close_fn)(void *ctx, const struct walk_thread *t, const struct walk_frame *f,
                             const struct walk_frame *parent, uint64_t end, enum walk_why why);
/* Called once per thread, when first seen. */
typedef int (*walk_thread_fn)(void *ctx, const struct walk_thread *t);

struct walk {
    struct u64map map;
    struct walk_thread *t;
    size_t nt, cap;
    walk_close_fn on_close;
    walk_thread_fn on_thread;
    void *ctx;
    uint64_t repairs, unmatched, gaps, lost;
};

/* The thread of a record (created, and on_thread called, when new); NULL on failure. The
 * pointer is valid until the next call. */
struct walk_thread *walk_thread_of(struct walk *w, const struct stf_item *it);
/* Feed one record: function records and loss markers change the stack; other records only
 * update the thread's last timestamp. Returns 0, or -1 on allocation failure or a callback's
 * nonzero return. *out (if non-NULL) gets the record's thread, or NULL for block preamble
 * records that name no thread yet. */
int walk_item(struct walk *w, const struct stf_item *it, struct walk_thread **out);
int walk_finish(struct walk *w);
void walk_free(struct walk *w);

/* Formats: convert_chrome.c and convert_yaml.c. */
int convert_chrome(const char *path, const char *out, const char *syms_opt);
int convert_yaml(const char *path, const char *out, const char *syms_opt);

#endif
