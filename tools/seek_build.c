/* Making the checkpoints of seek.h: one walk of each thread of the trace with the walker itself
 * (callstack.c, no callbacks), as trace.c's walk feeds it (the same clock correction, the
 * runtime's calibration block skipped), so that the frames open at a checkpoint are exactly
 * those a walk from the thread's start would have there. */
#include "seek_int.h"

#include "callstack_walk.h"
#include "vclock.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- building ------------------------------------------------------------------------------ */

static int add_point(struct tool_seek *s, const struct cs_thread *ct, uint32_t block,
                     uint64_t key_raw, uint64_t key_cor, const struct vclock *vc)
{
    if (s->h.npoints == s->capp) {
        void *n = tool_grow(s->p, &s->capp, sizeof *s->p, 64);
        if (!n)
            return -1;
        s->p = n;
    }
    size_t depth = ct ? ct->depth : 0;
    while (s->h.nframes + depth > s->capf) {
        void *n = tool_grow(s->f, &s->capf, sizeof *s->f, 256);
        if (!n)
            return -1;
        s->f = n;
    }
    struct spoint *p = &s->p[s->h.npoints++];
    *p = (struct spoint){.key_raw = key_raw,
                         .key_cor = key_cor,
                         .acc = vc->acc,
                         .prev = vc->prev,
                         .block = block,
                         .frame0 = (uint32_t)s->h.nframes,
                         .nframes = (uint32_t)depth};
    for (size_t i = 0; i < depth; i++)
        s->f[s->h.nframes++] =
            (struct tool_seek_frame){.id = ct->st[i].id,
                                     .nargs = ct->st[i].nargs > 2 ? 2 : ct->st[i].nargs,
                                     .arg = ct->st[i].arg};
    return 0;
}

static bool extent_kind(int kind)
{
    return kind == STF_K_FUNCTION || kind == STF_M_NEW_CPU || kind == STF_M_TSC_WRAP ||
           kind == STF_M_CUSTOM_EVENT || kind == STF_M_TYPED_EVENT;
}

/* One thread (selected in c): its checkpoints, walking it as trace.c's walk does. */
static int build_thread(struct tool_seek *s, struct stf_cursor *c, const struct tool_trace *tr,
                        int32_t pid, int32_t tid)
{
    uint64_t bytes;
    size_t nb = stf_cursor_blocks(c, &bytes);
    uint64_t every = bytes > SEEK_EVERY ? (uint64_t)nb * SEEK_EVERY / bytes : nb;
    if (every == 0)
        every = 1;
    struct sthread *st = &s->t[s->h.nthreads++];
    *st = (struct sthread){.pid = pid, .tid = tid, .blocks = nb, .point0 = (uint32_t)s->h.npoints};
    struct callstack cs = {0};
    struct vclock vc;
    vclock_init(&vc, tr->has_calib ? &tr->calib : NULL);
    vclock_thread(&vc);
    uint64_t key_raw = 0, key_cor = 0;
    size_t last_point = 0;
    bool stop = false; /* no checkpoint after a context switch */
    struct stf_func fn[512];
    struct stf_item it;
    int rc = STF_OK;
    for (;;) {
        size_t n = stf_cursor_funcs(c, fn, sizeof fn / sizeof fn[0]);
        if (n) {
            for (size_t i = 0; i < n; i++) {
                if (fn[i].tsc > key_raw)
                    key_raw = fn[i].tsc;
                if (fn[i].tsc > s->h.last)
                    s->h.last = fn[i].tsc;
            }
            s->h.items += n;
            vclock_funcs(&vc, fn, n);
            for (size_t i = 0; i < n; i++)
                if (fn[i].tsc > key_cor)
                    key_cor = fn[i].tsc;
            static const struct cs_ops none = {0}; /* the stack moves, nothing is called */
            if (cs_walk_funcs(&cs, pid, tid, fn, n, &none, NULL) != 0) {
                rc = STF_ERR_NOMEM;
                break;
            }
            continue;
        }
        if ((rc = stf_cursor_next(c, &it)) != STF_OK)
            break;
        s->h.items++;
        if (extent_kind(it.kind) && it.tsc > s->h.last)
            s->h.last = it.tsc;
        uint64_t pos;
        size_t blk = stf_cursor_where(c, &pos);
        stop = stop || (cs.nt && cs.t[0].switched);
        if (pos == 1 && blk > 0 && !stop && blk - last_point >= every) {
            if (add_point(s, cs.nt ? &cs.t[0] : NULL, (uint32_t)blk, key_raw, key_cor, &vc) != 0) {
                rc = STF_ERR_NOMEM;
                break;
            }
            st->npoints++;
            last_point = blk;
        }
        if (it.tsc > key_raw)
            key_raw = it.tsc;
        if (it.block == tr->calib_block)
            continue; /* as trace.c's walk: the runtime's block, never fed */
        vclock_item(&vc, &it);
        if (it.tsc > key_cor)
            key_cor = it.tsc;
        if (cs_feed(&cs, &it, NULL, NULL) != 0) {
            rc = STF_ERR_NOMEM;
            break;
        }
    }
    cs_free(&cs);
    return rc == STF_END ? STF_OK : rc;
}

static struct tool_seek *build(struct tool_trace *tr)
{
    struct tool_seek *s = calloc(1, sizeof *s);
    struct stf_cursor *c = NULL;
    size_t n = stf_cursor_threads(tr->c);
    if (!s || stf_cursor_clone(&c, tr->c) != STF_OK || !(s->t = calloc(n ? n : 1, sizeof *s->t))) {
        stf_cursor_close(c);
        tool_seek_free(s);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t pid, tid;
        if (stf_cursor_select(c, i, &pid, &tid, NULL) != STF_OK ||
            build_thread(s, c, tr, pid, tid) != STF_OK) {
            stf_cursor_close(c);
            tool_seek_free(s);
            return NULL;
        }
    }
    stf_cursor_close(c);
    return s;
}

static uint64_t min_size(void)
{
    const char *e = getenv("SLEDTRACE_SEEK_MIN");
    uint64_t v;
    return e && tool_parse_u64(e, &v) ? v : SEEK_MIN_DEFAULT;
}

struct tool_seek *tool_seek_open(struct tool_trace *t)
{
    struct stat sb;
    char dir[4096], path[4200];
    if (t->spool >= 0 || t->src[0] || stat(t->path, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        (uint64_t)sb.st_size < min_size())
        return NULL;
    struct head want = {.dev = (uint64_t)sb.st_dev,
                        .ino = (uint64_t)sb.st_ino,
                        .size = (uint64_t)sb.st_size,
                        .mtime_s = (uint64_t)sb.st_mtim.tv_sec,
                        .mtime_ns = (uint64_t)sb.st_mtim.tv_nsec};
    struct tool_seek *s = seek_cached(&want, t->c, path, sizeof path, dir, sizeof dir);
    if (s || !path[0])
        return s;
    if ((s = build(t)) != NULL)
        seek_store(dir, path, s, &want);
    return s;
}

void tool_trace_window(struct tool_trace *t, uint64_t from, uint64_t to)
{
    t->win = true;
    t->win_from = from;
    t->win_to = to;
    if (from > 0 && !t->seek)
        t->seek = tool_seek_open(t);
}
