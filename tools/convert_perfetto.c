/* sledtrace convert --format perfetto: Perfetto's own protobuf trace (a `Trace` message of
 * `TracePacket`s, protos/perfetto/trace/perfetto_trace.proto), which Perfetto's UI and
 * trace processor read natively and in a fraction of the Chrome JSON's size (issue 25.3).
 * Written by hand (varints and length-delimited fields): no protobuf library.
 *
 * What it holds, and how it maps the Chrome export (convert_chrome.c, whose semantics it keeps):
 *  - A call is a pair of TrackEvents, TYPE_SLICE_BEGIN when its frame is entered and
 *    TYPE_SLICE_END when it closes (callstack.h's walker with close_open, as the Chrome export):
 *    Perfetto nests them per track as a stack. A call closed by an outer exit carries the debug
 *    annotation closed: "repaired" on its end, one closed at a loss marker or at the end "gap" or
 *    "unfinished" (at the thread's last timestamp, as in the Chrome export). A logged argument is
 *    the annotation arg on its end (its CallArgument record follows the entry; Perfetto adds
 *    an end's annotations to the slice's args). The function id (the Chrome export's args.id) is left out:
 *    it would cost a third of the file; two functions of one name keep distinct interned ids.
 *  - Custom and typed events, context switches and loss markers are TYPE_INSTANT events of the
 *    same names and annotations as the Chrome export's instants ("custom event" payload,
 *    "typed event" type and payload, "context switch" from, to, how, "events lost" count). A
 *    payload is a string: printable ASCII as is, any other byte as \xNN (protobuf strings must
 *    be UTF-8).
 *  - Tracks: a process track per pid (ProcessDescriptor: pid and the executable's base name
 *    from the sidecar), a thread track per thread (ThreadDescriptor: pid, tid and the name the
 *    program gave it, none when the sidecar records none: the UI then shows "Thread T"), and
 *    for each coroutine context other than the thread's first (callstack.h, "Contexts") a
 *    track of its own, child of its thread's track (Perfetto shows it under the thread), named
 *    "context C" ("context at 0x..." for a context known by address).
 *  - One packet sequence (trusted_packet_sequence_id) per track: the walker's track number + 1.
 *    Its first packet clears the incremental state (SEQ_INCREMENTAL_STATE_CLEARED) and sets the
 *    sequence's defaults (TracePacketDefaults: the track's uuid for every TrackEvent, and the
 *    clock below); every event packet then depends on that state
 *    (SEQ_NEEDS_INCREMENTAL_STATE). Event names are interned per sequence (InternedData
 *    event_names): an iid per function over the whole file (its dense number + 1; the instants'
 *    names after the functions'), emitted in the first packet of the sequence that uses it.
 *    Names are the other commands' (the sidecar's, demangled as --names says, made printable:
 *    tool_printable), so the slices' names are account's.
 *  - Times: the Chrome export's nanoseconds (from 1 us before the earliest thread start, the
 *    virtual clock applied unless --raw-times), integers. They are delta-encoded per sequence,
 *    as the ClockSnapshot.Clock.is_incremental comment of the proto documents: each sequence
 *    defines clock 64 (sequence-scoped) as incremental in a ClockSnapshot that ties its value
 *    1000 to BOOTTIME 1000, and every packet's timestamp is the delta from the sequence's
 *    previous one. A call costs 2 x ~14 bytes instead of ~2 x 18 with absolute times, which
 *    keeps the file under a quarter of the Chrome JSON's size. Deltas cannot be negative, so a
 *    time that would step back on a track (a CPU change, a call the correction makes negative)
 *    is written at the track's last time: durations are clamped at 0, as the Chrome export
 *    clamps them, and equal times stay in file order (the trace processor's sorter breaks
 *    timestamp ties by position in the file), so nesting holds. Unlike the Chrome export no
 *    time is moved a step later: Perfetto reads integer nanoseconds exactly, and a call of
 *    length 0 still nests.
 *  - Not carried over: the Chrome export's otherData counts (calls, repairs, gaps, the times'
 *    kind); `sledtrace account` and `info` give them.
 *
 * Memory: the walker's, a few words per track, a bit per (track, name) interned and the names
 * (each once); packets are put together in a buffer flushed at 64 KiB. Nothing grows with the
 * calls: the trace is streamed, thread after thread, in one reading pass.
 *
 * --from/--to and the call filters (window.h) but --min-duration: a call's begin and end are
 * written or not as a pair, decided at its entry (cs_frame.mark), and its duration is not known
 * there. */
#include "callstack_walk.h"
#include "convert.h"
#include "ticks.h"
#include "seek.h"
#include "window.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum {
    OFFSET_NS = 1000, /* time 0 is 1 us before the earliest thread start (as the Chrome export) */
    OUT_BUF = 1 << 16,
    SEQ_CLOCK = 64, /* the first sequence-scoped clock id */
    BOOTTIME = 6,   /* BuiltinClock BUILTIN_CLOCK_BOOTTIME */
    /* TracePacket.sequence_flags */
    SEQ_CLEARED = 1,
    SEQ_NEEDS = 2,
    /* TrackEvent.Type */
    SLICE_BEGIN = 1,
    SLICE_END = 2,
    INSTANT = 3,
};

/* Field numbers, from perfetto_trace.proto. */
enum {
    TRACE_PACKET = 1,       /* Trace.packet */
    PKT_TIMESTAMP = 8,      /* TracePacket */
    PKT_SEQ_ID = 10,        /* trusted_packet_sequence_id */
    PKT_TRACK_EVENT = 11,   /* TrackEvent */
    PKT_INTERNED = 12,      /* InternedData */
    PKT_SEQ_FLAGS = 13,     /* sequence_flags */
    PKT_CLOCK_SNAPSHOT = 6, /* ClockSnapshot */
    PKT_DEFAULTS = 59,      /* TracePacketDefaults */
    PKT_TRACK_DESC = 60,    /* TrackDescriptor */
    DEF_CLOCK_ID = 58,      /* TracePacketDefaults.timestamp_clock_id */
    DEF_TRACK_EVENT = 11,   /* TracePacketDefaults.track_event_defaults */
    TED_TRACK_UUID = 11,    /* TrackEventDefaults.track_uuid */
    CS_CLOCKS = 1,          /* ClockSnapshot.clocks */
    CLK_ID = 1,             /* ClockSnapshot.Clock.clock_id */
    CLK_TIMESTAMP = 2,      /* ClockSnapshot.Clock.timestamp */
    CLK_INCREMENTAL = 3,    /* ClockSnapshot.Clock.is_incremental */
    TE_ANNOTATION = 4,      /* TrackEvent.debug_annotations */
    TE_TYPE = 9,            /* TrackEvent.type */
    TE_NAME_IID = 10,       /* TrackEvent.name_iid */
    ID_EVENT_NAMES = 2,     /* InternedData.event_names */
    EN_IID = 1,             /* EventName.iid */
    EN_NAME = 2,            /* EventName.name */
    DA_UINT = 3,            /* DebugAnnotation.uint_value */
    DA_STRING = 6,          /* DebugAnnotation.string_value */
    DA_NAME = 10,           /* DebugAnnotation.name */
    TD_UUID = 1,            /* TrackDescriptor.uuid */
    TD_NAME = 2,            /* TrackDescriptor.name */
    TD_PROCESS = 3,         /* TrackDescriptor.process */
    TD_THREAD = 4,          /* TrackDescriptor.thread */
    TD_PARENT = 5,          /* TrackDescriptor.parent_uuid */
    PD_PID = 1,             /* ProcessDescriptor.pid */
    PD_NAME = 6,            /* ProcessDescriptor.process_name */
    THD_PID = 1,            /* ThreadDescriptor.pid */
    THD_TID = 2,            /* ThreadDescriptor.tid */
    THD_NAME = 5,           /* ThreadDescriptor.thread_name */
};

/* The instants' names, interned after the functions' (key NAME_KEY + k). */
enum { N_CUSTOM, N_TYPED, N_SWITCH, N_LOST, N_NAMES };
static const char *const inst_names[N_NAMES] = {"custom event", "typed event", "context switch",
                                                "events lost"};
#define NAME_KEY ((uint64_t)1 << 32)

/* A growable byte buffer; err once an allocation failed (then nothing more is added). */
struct pb {
    uint8_t *p;
    size_t n, cap;
    bool err;
};

static bool pb_room(struct pb *b, size_t more)
{
    if (b->err)
        return false;
    if (b->n + more <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    uint8_t *n = realloc(b->p, cap);
    if (!n) {
        b->err = true;
        return false;
    }
    b->p = n;
    b->cap = cap;
    return true;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
    if (!pb_room(b, 10))
        return;
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}

/* A varint field (wire type 0). */
static void pb_uint(struct pb *b, uint32_t field, uint64_t v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

/* A length-delimited field (wire type 2) holding len bytes of s. */
static void pb_bytes(struct pb *b, uint32_t field, const void *s, size_t len)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, len);
    if (len && pb_room(b, len)) {
        memcpy(b->p + b->n, s, len);
        b->n += len;
    }
}

static void pb_str(struct pb *b, uint32_t field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

/* A nested message: pb_open writes its tag and returns where its body starts; pb_close, once
 * the body is written, puts its length in front of it. */
static size_t pb_open(struct pb *b, uint32_t field)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    return b->n;
}

static void pb_close(struct pb *b, size_t start)
{
    if (b->err)
        return;
    size_t len = b->n - start, k = varint_len(len);
    if (!pb_room(b, k))
        return;
    memmove(b->p + start + k, b->p + start, len);
    for (size_t i = 0; i < k; i++, len >>= 7)
        b->p[start + i] = (uint8_t)((len & 0x7f) | (i + 1 < k ? 0x80 : 0));
    b->n += k;
}

/* A packet sequence: one per track (see the top). */
struct seq {
    bool started;
    uint64_t last;      /* its last timestamp written, ns */
    uint64_t *interned; /* a bit per name index: its interning emitted on this sequence */
    size_t ninterned;   /* words */
};

struct perfetto {
    FILE *f;
    const struct stf_syms *syms;
    uint64_t freq, base;
    const struct callstack *cs;
    struct seq *seq; /* by track */
    size_t nseq;
    int32_t *procs; /* pids given a process track */
    size_t nprocs, capprocs;
    struct u64map names; /* function id (or NAME_KEY + k) -> name index; iid = index + 1 */
    char **name;         /* printable names by index */
    size_t nname, capname;
    struct pb ob;  /* packets put together, written out at OUT_BUF */
    struct pb pkt; /* the packet being put together */
    bool nomem;
    const struct tool_window *filt; /* call filters (window.h), NULL: none */
};

/* Nanoseconds from 1 us before the base (convert_chrome.c's at_ns). */
static uint64_t at_ns(const struct perfetto *c, uint64_t tsc)
{
    uint64_t ns = tsc > c->base ? tool_ticks_ns(tsc - c->base, c->freq) : 0;
    return ns > UINT64_MAX - OFFSET_NS ? UINT64_MAX : ns + OFFSET_NS;
}

static uint64_t process_uuid(int32_t pid)
{
    return (uint64_t)1 << 40 | (uint32_t)pid;
}

static uint64_t track_uuid(uint32_t track)
{
    return (uint64_t)2 << 40 | track;
}

/* The track's sequence, its slot made if new; NULL when out of memory. */
static struct seq *seq_of(struct perfetto *c, uint32_t track)
{
    while (c->nseq <= track) {
        size_t old = c->nseq;
        struct seq *n = tool_grow(c->seq, &c->nseq, sizeof *n, 16);
        if (!n) {
            c->nomem = true;
            return NULL;
        }
        memset(n + old, 0, (c->nseq - old) * sizeof *n);
        c->seq = n;
    }
    return &c->seq[track];
}

/* The packet put together in c->pkt, as a Trace.packet field of the output. */
static void emit(struct perfetto *c)
{
    if (c->pkt.err) {
        c->nomem = true;
        return;
    }
    if (c->ob.n + c->pkt.n + 10 > OUT_BUF && c->ob.n) {
        fwrite(c->ob.p, 1, c->ob.n, c->f);
        c->ob.n = 0;
    }
    pb_bytes(&c->ob, TRACE_PACKET, c->pkt.p, c->pkt.n);
    if (c->ob.err)
        c->nomem = true;
    c->pkt.n = 0;
}

static void flush_out(struct perfetto *c)
{
    if (c->ob.n)
        fwrite(c->ob.p, 1, c->ob.n, c->f);
    c->ob.n = 0;
}

/* The process's track, once per pid: the executable's base name from the sidecar. */
static void describe_process(struct perfetto *c, int32_t pid, uint32_t seq_id)
{
    for (size_t i = 0; i < c->nprocs; i++)
        if (c->procs[i] == pid)
            return;
    if (c->nprocs == c->capprocs) {
        int32_t *n = tool_grow(c->procs, &c->capprocs, sizeof *n, 8);
        if (!n) {
            c->nomem = true;
            return;
        }
        c->procs = n;
    }
    c->procs[c->nprocs++] = pid;
    const char *exe = stf_syms_object(c->syms, 0);
    const char *base = exe ? strrchr(exe, '/') : NULL;
    base = base ? base + 1 : exe;
    struct pb *b = &c->pkt;
    pb_uint(b, PKT_SEQ_ID, seq_id);
    size_t td = pb_open(b, PKT_TRACK_DESC);
    pb_uint(b, TD_UUID, process_uuid(pid));
    size_t pd = pb_open(b, TD_PROCESS);
    pb_uint(b, PD_PID, (uint64_t)(int64_t)pid);
    if (base && *base) {
        char *shown = tool_printable(base);
        pb_str(b, PD_NAME, shown ? shown : base);
        free(shown);
    }
    pb_close(b, pd);
    pb_close(b, td);
    emit(c);
}

/* The running context's track of t, its sequence started (descriptors, defaults, clock) the
 * first time; NULL when out of memory. */
static struct seq *start(struct perfetto *c, const struct cs_thread *t)
{
    struct seq *s = seq_of(c, t->track);
    if (!s || s->started)
        return s;
    s->started = true;
    s->last = OFFSET_NS;
    uint32_t id = t->track + 1;
    struct pb *b = &c->pkt;
    if (t->track == t->track0)
        describe_process(c, t->pid, id);
    /* The track, and the sequence's state: cleared, then its defaults. */
    pb_uint(b, PKT_SEQ_ID, id);
    pb_uint(b, PKT_SEQ_FLAGS, SEQ_CLEARED);
    size_t d = pb_open(b, PKT_DEFAULTS);
    pb_uint(b, DEF_CLOCK_ID, SEQ_CLOCK);
    size_t ted = pb_open(b, DEF_TRACK_EVENT);
    pb_uint(b, TED_TRACK_UUID, track_uuid(t->track));
    pb_close(b, ted);
    pb_close(b, d);
    size_t td = pb_open(b, PKT_TRACK_DESC);
    pb_uint(b, TD_UUID, track_uuid(t->track));
    const char *nm = stf_syms_thread_name(c->syms, t->pid, t->tid);
    if (t->track == t->track0) {
        size_t th = pb_open(b, TD_THREAD);
        pb_uint(b, THD_PID, (uint64_t)(int64_t)t->pid);
        pb_uint(b, THD_TID, (uint64_t)(int64_t)t->tid);
        if (nm) {
            char *shown = tool_printable(nm);
            pb_str(b, THD_NAME, shown ? shown : nm);
            free(shown);
        }
        pb_close(b, th);
    } else {
        pb_uint(b, TD_PARENT, track_uuid(t->track0));
        char name[64];
        if (t->ctx & STF_CTX_ADDRESS)
            snprintf(name, sizeof name, "context at 0x%" PRIx64, t->ctx & ~STF_CTX_ADDRESS);
        else
            snprintf(name, sizeof name, "context %" PRIu64, t->ctx);
        pb_str(b, TD_NAME, name);
    }
    pb_close(b, td);
    emit(c);
    /* Its clock: incremental, tied to BOOTTIME (see the top). */
    pb_uint(b, PKT_SEQ_ID, id);
    size_t cs = pb_open(b, PKT_CLOCK_SNAPSHOT);
    size_t k = pb_open(b, CS_CLOCKS);
    pb_uint(b, CLK_ID, SEQ_CLOCK);
    pb_uint(b, CLK_TIMESTAMP, OFFSET_NS);
    pb_uint(b, CLK_INCREMENTAL, 1);
    pb_close(b, k);
    k = pb_open(b, CS_CLOCKS);
    pb_uint(b, CLK_ID, BOOTTIME);
    pb_uint(b, CLK_TIMESTAMP, OFFSET_NS);
    pb_close(b, k);
    pb_close(b, cs);
    emit(c);
    return c->nomem ? NULL : s;
}

/* The name index of key (a function id, or NAME_KEY + k), its printable name made the first
 * time; -1 when out of memory. */
static long name_index(struct perfetto *c, uint64_t key)
{
    bool added;
    long i = u64map_get(&c->names, key, &added);
    if (i < 0 || !added)
        return i;
    if (c->nname == c->capname) {
        char **n = tool_grow(c->name, &c->capname, sizeof *n, 64);
        if (!n)
            return -1;
        c->name = n;
    }
    const char *raw;
    char buf[24];
    if (key >= NAME_KEY)
        raw = inst_names[key - NAME_KEY];
    else
        raw = stf_syms_name(c->syms, (uint32_t)key, buf, sizeof buf);
    char *shown = tool_printable(raw);
    if (!shown)
        shown = strdup(raw);
    if (!shown)
        return -1;
    c->name[c->nname++] = shown;
    return i;
}

/* Begins an event packet on sequence s of track (timestamp tsc, never before the sequence's
 * last), interning the name of key on it first if needed. Returns where the TrackEvent's body
 * starts (pb_close it, then end_packet), with its type and name written. */
static size_t begin_packet(struct perfetto *c, struct seq *s, uint64_t tsc, int type, long name)
{
    struct pb *b = &c->pkt;
    uint64_t ns = at_ns(c, tsc);
    if (ns < s->last)
        ns = s->last;
    pb_uint(b, PKT_TIMESTAMP, ns - s->last);
    s->last = ns;
    if (name >= 0) {
        size_t w = (size_t)name / 64;
        while (w >= s->ninterned) {
            size_t old = s->ninterned;
            uint64_t *n = tool_grow(s->interned, &s->ninterned, sizeof *n, 4);
            if (!n) {
                b->err = true;
                return b->n;
            }
            memset(n + old, 0, (s->ninterned - old) * sizeof *n);
            s->interned = n;
        }
        uint64_t bit = (uint64_t)1 << (name % 64);
        if (!(s->interned[w] & bit)) {
            s->interned[w] |= bit;
            size_t id = pb_open(b, PKT_INTERNED);
            size_t en = pb_open(b, ID_EVENT_NAMES);
            pb_uint(b, EN_IID, (uint64_t)name + 1);
            pb_str(b, EN_NAME, c->name[name]);
            pb_close(b, en);
            pb_close(b, id);
        }
    }
    size_t te = pb_open(b, PKT_TRACK_EVENT);
    pb_uint(b, TE_TYPE, (uint64_t)type);
    if (name >= 0)
        pb_uint(b, TE_NAME_IID, (uint64_t)name + 1);
    return te;
}

static void end_packet(struct perfetto *c, const struct seq *s, size_t te)
{
    struct pb *b = &c->pkt;
    pb_close(b, te);
    pb_uint(b, PKT_SEQ_ID, (uint64_t)(s - c->seq) + 1);
    pb_uint(b, PKT_SEQ_FLAGS, SEQ_NEEDS);
    emit(c);
}

/* Debug annotations: NAME = unsigned, NAME = string. */
static void note_uint(struct pb *b, const char *name, uint64_t v)
{
    size_t a = pb_open(b, TE_ANNOTATION);
    pb_str(b, DA_NAME, name);
    pb_uint(b, DA_UINT, v);
    pb_close(b, a);
}

static void note_str(struct pb *b, const char *name, const char *v, size_t len)
{
    size_t a = pb_open(b, TE_ANNOTATION);
    pb_str(b, DA_NAME, name);
    pb_bytes(b, DA_STRING, v, len);
    pb_close(b, a);
}

static int on_thread(void *ctx, const struct cs_thread *t)
{
    struct perfetto *c = ctx;
    return start(c, t) ? 0 : -1;
}

static int on_enter(void *ctx, const struct cs_thread *t, struct cs_frame *f, size_t depth)
{
    struct perfetto *c = ctx;
    struct seq *s = start(c, t);
    /* call filters: decided at the entry (the begin is written there); cs_frame.mark says
     * whether the end is to be written */
    f->mark = !c->filt || tool_window_enter(c->filt, c->syms, t, f, depth);
    if (!f->mark)
        return s ? 0 : -1;
    long name = s ? name_index(c, f->id) : -1;
    if (name < 0) {
        c->nomem = true;
        return -1;
    }
    end_packet(c, s, begin_packet(c, s, f->start, SLICE_BEGIN, name));
    return c->nomem ? -1 : 0;
}

static int on_close(void *ctx, const struct cs_close *cl)
{
    struct perfetto *c = ctx;
    struct seq *s = start(c, cl->t);
    if (!s)
        return -1;
    if (!cl->f->mark)
        return 0; /* hidden at its entry */
    size_t te = begin_packet(c, s, cl->end, SLICE_END, -1);
    if (cl->f->nargs) /* known once the CallArgument records after the entry are read */
        note_uint(&c->pkt, "arg", cl->f->arg);
    static const char *const closed[] = {NULL, "repaired", "gap", "unfinished"};
    if (closed[cl->why])
        note_str(&c->pkt, "closed", closed[cl->why], strlen(closed[cl->why]));
    end_packet(c, s, te);
    return c->nomem ? -1 : 0;
}

/* A payload as a string: printable ASCII as is (a backslash doubled), other bytes \xNN. */
static void note_payload(struct perfetto *c, const uint8_t *p, size_t n)
{
    struct pb *b = &c->pkt;
    size_t a = pb_open(b, TE_ANNOTATION);
    pb_str(b, DA_NAME, "payload");
    size_t v = pb_open(b, DA_STRING);
    for (size_t i = 0; i < n && pb_room(b, 4); i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
            b->p[b->n++] = p[i];
        } else if (p[i] == '\\') {
            b->p[b->n++] = '\\';
            b->p[b->n++] = '\\';
        } else {
            static const char hex[] = "0123456789abcdef";
            b->p[b->n++] = '\\';
            b->p[b->n++] = 'x';
            b->p[b->n++] = (uint8_t)hex[p[i] >> 4];
            b->p[b->n++] = (uint8_t)hex[p[i] & 15];
        }
    }
    pb_close(b, v);
    pb_close(b, a);
}

static void instant(struct perfetto *c, const struct stf_item *it)
{
    const struct cs_thread *t = cs_find(c->cs, it->pid, it->tid);
    struct seq *s = t ? start(c, t) : NULL;
    if (!s)
        return;
    uint64_t lost, to, from;
    uint32_t how;
    int k;
    bool is_loss = false, is_switch = false;
    if (it->kind == STF_M_CUSTOM_EVENT && stf_decode_loss(it->payload, it->payload_len, &lost)) {
        k = N_LOST;
        is_loss = true;
    } else if (it->kind == STF_M_TYPED_EVENT &&
               stf_decode_context(it->event_type, it->payload, it->payload_len, &to, &from, &how)) {
        /* on the track of the context that runs from here (the walker has switched already) */
        k = N_SWITCH;
        is_switch = true;
    } else {
        k = it->kind == STF_M_TYPED_EVENT ? N_TYPED : N_CUSTOM;
    }
    long name = name_index(c, NAME_KEY + (uint64_t)k);
    if (name < 0) {
        c->nomem = true;
        return;
    }
    size_t te = begin_packet(c, s, it->tsc, INSTANT, name);
    if (is_loss) {
        note_uint(&c->pkt, "count", lost);
    } else if (is_switch) {
        static const char *const hows[] = {"?", "swapcontext", "setcontext", "return", "resume"};
        const char *h = hows[how < 5 ? how : 0];
        note_uint(&c->pkt, "from", from);
        note_uint(&c->pkt, "to", to);
        note_str(&c->pkt, "how", h, strlen(h));
    } else {
        if (it->kind == STF_M_TYPED_EVENT)
            note_uint(&c->pkt, "type", it->event_type);
        note_payload(c, it->payload, it->payload_len);
    }
    end_packet(c, s, te);
}

int convert_perfetto(const char *path, const char *out, const char *syms_opt,
                     const struct tool_window *win, const int32_t *tid)
{
    struct tool_trace tr;
    struct tool_out o;
    FILE *f = conv_begin(&tr, &o, path, out, syms_opt, tid);
    if (!f)
        return EXIT_BAD_TRACE;
    static const struct cs_ops ops = {.thread = on_thread, .enter = on_enter, .close = on_close};
    struct callstack cs = {.close_open = true, .signed_dur = tool_trace_corrected(&tr)};
    struct perfetto c = {
        .f = f, .syms = tr.syms, .freq = tr.freq, .base = tool_trace_base(&tr), .cs = &cs};
    c.filt = tool_window_filtered(win) ? win : NULL;
    tool_window_begin(win, &tr, &cs, c.base, NULL, NULL);
    tool_trace_prefetch(&tr);

    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = cs_walk_next_item(&cs, &tr, &ops, &c, &it)) == STF_OK) {
        if (cs_feed(&cs, &it, &ops, &c) != 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
        if ((it.kind == STF_M_CUSTOM_EVENT || it.kind == STF_M_TYPED_EVENT) &&
            (!cs.win || (it.tsc >= cs.win_from && it.tsc <= cs.win_to)))
            instant(&c, &it);
        if (c.nomem) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
    }
    if (rc == CS_NOMEM) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
        rc = STF_END;
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK && (cs_finish(&cs, &ops, &c) != 0 || c.nomem)) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    flush_out(&c);
    int st = tool_out_close(&o, status == EXIT_OK) ? EXIT_BAD_TRACE : EXIT_OK;
    if (status == EXIT_OK)
        status = st;
    cs_free(&cs);
    for (size_t i = 0; i < c.nseq; i++)
        free(c.seq[i].interned);
    free(c.seq);
    free(c.procs);
    for (size_t i = 0; i < c.nname; i++)
        free(c.name[i]);
    free(c.name);
    u64map_free(&c.names);
    free(c.ob.p);
    free(c.pkt.p);
    tool_trace_close(&tr);
    return status;
}
