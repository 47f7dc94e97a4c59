/* sledtrace convert TRACE --format speedscope: speedscope's own file format (issue 28.6).
 *
 * Why: speedscope reads the Chrome JSON too, but names each frame by the event's name followed
 * by its args as JSON ("main {"id":40,"closed":"unfinished"}"), so the export's per-call
 * details split one function into many frames. Its own format names frames once: a shared list
 * of frames (the function names as every command shows them) and, per thread, an "evented"
 * profile of open (O) and close (C) events at times in nanoseconds since the earliest thread
 * start (corrected, as replay shows times). The details stay in the Chrome and Perfetto
 * exports; speedscope's format has no place for them.
 *
 * Streaming, in one pass (memory: the frames table, threads, stack depth): the walk reads one
 * thread after another (tool_trace), so a thread's profile is written whole before the next
 * one's begins. Calls open at a loss marker or at the end close at the thread's last timestamp
 * (callstack.h, close_open), as in the Chrome export; when the walk leaves a thread, its frames
 * still open are closed there and then (the walker's own close of them, at the very end, is
 * then not written again). speedscope wants each profile's events in time order and nested: a
 * thread that switches ucontexts (coroutines) has its running context's frames closed at the
 * switch and the resumed context's opened again, so its profile shows one stack at a time.
 * cs_frame.mark (free for the caller) says where a frame is in the file: 0 not written (hidden by
 * a filter), 1 open, 2 closed at a context switch (to open again when its context resumes). The profiles come first and the
 * frames table last (JSON objects' keys are unordered), so nothing waits for the end but the
 * table. --from/--to, --tid and the call filters are taken (window.h; not --min-duration: a
 * call's open is written at its entry, before its duration is known). */
#include "convert.h"
#include "seek.h"
#include "window.h"

#include "callstack_walk.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct sscope {
    FILE *f;
    const struct stf_syms *syms;
    const struct tool_window *filt;
    struct callstack *cs;
    uint64_t freq, base;
    struct u64map frames; /* function id -> index in ids */
    uint32_t *ids;
    size_t nids, capids;
    bool have_cur; /* a profile is being written: thread (cur_pid, cur_tid)'s (found
                                 again by cs_find: the walker's thread array moves) */
    int32_t cur_pid, cur_tid;
    bool first_event, nomem;
    uint64_t start, end; /* the profile's first and last event time, ns */
    uint64_t profiles, events;
};

static uint64_t at_ns(const struct sscope *s, uint64_t tsc)
{
    return tsc > s->base ? tool_ticks_to_ns(tsc - s->base, s->freq) : 0;
}

static long frame_of(struct sscope *s, uint32_t id)
{
    bool added;
    long i = u64map_get(&s->frames, id, &added);
    if (i < 0)
        return -1;
    if (added) {
        if (s->nids == s->capids) {
            uint32_t *n = tool_grow(s->ids, &s->capids, sizeof *n, 256);
            if (!n)
                return -1;
            s->ids = n;
        }
        s->ids[s->nids++] = id;
    }
    return i;
}

static void event(struct sscope *s, char type, uint32_t id, uint64_t tsc)
{
    long k = frame_of(s, id);
    if (k < 0) {
        s->nomem = true;
        return;
    }
    uint64_t at = at_ns(s, tsc);
    if (at < s->end)
        at = s->end; /* time order within the profile (a CPU change can step the clock back) */
    if (s->first_event)
        s->start = at;
    s->end = at;
    fprintf(s->f, "%s{\"type\":\"%c\",\"frame\":%ld,\"at\":%" PRIu64 "}",
            s->first_event ? "\n" : ",\n", type, k, at);
    s->first_event = false;
    s->events++;
}

static bool is_cur(const struct sscope *s, const struct cs_thread *t)
{
    return s->have_cur && s->cur_pid == t->pid && s->cur_tid == t->tid;
}

/* The frames of t's running stack open in the file close at tsc, the innermost first, and are
 * marked `to` (0: for good, 2: parked by a context switch). t's frames are the walker's; mark is
 * the caller's to write. */
static void close_stack(struct sscope *s, const struct cs_thread *t, uint64_t tsc, uint64_t to)
{
    for (size_t i = t->depth; i-- > 0;)
        if (t->st[i].mark == 1) {
            event(s, 'C', t->st[i].id, tsc);
            ((struct cs_frame *)&t->st[i])->mark = to;
        }
}

/* The profile being written ends: its open frames close at its thread's last timestamp. */
static void end_profile(struct sscope *s)
{
    if (!s->have_cur)
        return;
    const struct cs_thread *t = cs_find(s->cs, s->cur_pid, s->cur_tid);
    if (t)
        close_stack(s, t, t->last, 0);
    fprintf(s->f, "\n],\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64 "}", s->start, s->end);
    s->have_cur = false;
}

/* The profile of t: begun when the walk reaches t (it is done with the thread before). */
static void profile(struct sscope *s, const struct cs_thread *t)
{
    if (is_cur(s, t))
        return;
    end_profile(s);
    fputs(s->profiles ? ",\n{\"type\":\"evented\",\"name\":\""
                      : "\n{\"type\":\"evented\",\"name\":\"",
          s->f);
    chrome_thread_label(s->f, s->syms, t->pid, t->tid, false, 0);
    fputs("\",\"unit\":\"nanoseconds\",\"events\":[", s->f);
    s->have_cur = true;
    s->cur_pid = t->pid;
    s->cur_tid = t->tid;
    s->first_event = true;
    s->start = s->end = 0;
    s->profiles++;
}

static int on_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    struct sscope *s = ctx;
    f->mark = 0;
    if (s->filt && !tool_window_enter(s->filt, s->syms, t, f, depth))
        return 0;
    profile(s, t);
    event(s, 'O', f->id, f->start);
    f->mark = 1;
    return s->nomem ? -1 : 0;
}

static int on_close(void *ctx, const struct cs_close *cl)
{
    struct sscope *s = ctx;
    if (cl->f->mark != 1 || !is_cur(s, cl->t))
        return 0; /* hidden, or closed in the file already (a thread left, a context parked) */
    event(s, 'C', cl->f->id, cl->end);
    return s->nomem ? -1 : 0;
}

int convert_speedscope(const char *path, const char *out, const char *syms_opt,
                       const struct tool_window *win, const int32_t *tid)
{
    struct tool_trace tr;
    struct tool_out o;
    FILE *f = conv_begin(&tr, &o, path, out, syms_opt, tid);
    if (!f)
        return EXIT_BAD_TRACE;
    static const struct cs_ops ops = {.enter = on_enter, .close = on_close};
    struct callstack cs = {.close_open = true, .signed_dur = tool_trace_corrected(&tr)};
    struct sscope s = {
        .f = f, .syms = tr.syms, .freq = tr.freq, .base = tool_trace_base(&tr), .cs = &cs};
    s.filt = tool_window_filtered(win) ? win : NULL;
    tool_window_begin(win, &tr, &cs, s.base, NULL, NULL);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
          "\"exporter\":\"sledtrace\",\"name\":\"",
          f);
    tool_json_escape(f, (const uint8_t *)name, strlen(name));
    fputs("\",\"activeProfileIndex\":0,\"profiles\":[", f);
    tool_trace_prefetch(&tr);
    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = cs_walk_next_item(&cs, &tr, &ops, &s, &it)) == STF_OK) {
        uint64_t to_ctx, from_ctx;
        uint32_t how;
        const struct cs_thread *t;
        bool sw =
            it.kind == STF_M_TYPED_EVENT &&
            stf_decode_context(it.event_type, it.payload, it.payload_len, &to_ctx, &from_ctx, &how);
        if (sw && (t = cs_find(&cs, it.pid, it.tid)) != NULL && is_cur(&s, t))
            close_stack(&s, t, it.tsc, 2); /* the context switched out: its frames close here */
        if (cs_feed(&cs, &it, &ops, &s) != 0 || s.nomem) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
        if (sw && (t = cs_find(&cs, it.pid, it.tid)) != NULL && is_cur(&s, t))
            for (size_t i = 0; i < t->depth; i++) /* the context switched in: opened again */
                if (t->st[i].mark == 2) {
                    event(&s, 'O', t->st[i].id, it.tsc);
                    ((struct cs_frame *)&t->st[i])->mark = 1;
                }
    }
    if (rc == CS_NOMEM) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
        rc = STF_END;
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    end_profile(&s);
    if (status == EXIT_OK && cs_finish(&cs, &ops, &s) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    fputs("\n],\"shared\":{\"frames\":[", f);
    for (size_t i = 0; i < s.nids; i++) {
        char buf[24];
        const char *nm = stf_syms_name(tr.syms, s.ids[i], buf, sizeof buf);
        fputs(i ? ",\n{\"name\":\"" : "\n{\"name\":\"", f);
        tool_json_escape(f, (const uint8_t *)nm, strlen(nm));
        fputs("\"}", f);
    }
    fputs("\n]}}\n", f);
    int st = tool_out_close(&o, status == EXIT_OK) ? EXIT_BAD_TRACE : EXIT_OK;
    if (status == EXIT_OK)
        status = st;
    cs_free(&cs);
    free(s.ids);
    u64map_free(&s.frames);
    tool_trace_close(&tr);
    return status;
}
