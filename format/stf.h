/* stf: the XRay flight-data-recorder (FDR) trace format, as sledtrace writes and reads it.
 *
 * Depends on libc only; shared by the runtime (writer side: the inline encoders below, which the
 * hot path uses, so they must stay inline, allocation-free and libc-free) and the tools (the
 * reader, declared in the second half).
 *
 * File  := Header(32) Block*
 * Block := BufferExtents(n) NewBuffer(tid) Walltime(sec,usec) Pid(pid) NewCPUId(cpu,tsc) Body
 *          where n counts every byte of the block after the BufferExtents record.
 * Body  := ( Function(8) | TSCWrap | NewCPUId | CallArgument | CustomEvent payload
 *          | TypedEvent payload )*
 * A function record's u32 delta is relative to the TSC of the previous record that carried one
 * (NewCPUId, TSCWrap, Function, event markers). All integers are little-endian.
 */
#ifndef SLEDTRACE_STF_H
#define SLEDTRACE_STF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STF_EXPORT __attribute__((visibility("default")))

enum {
    STF_HEADER_SIZE = 32,
    STF_META_SIZE = 16,
    STF_FUNC_SIZE = 8,
    STF_VERSION = 5,
    STF_TYPE_FDR = 1,
    STF_BIT_CONSTANT_TSC = 1u << 0,
    STF_BIT_NONSTOP_TSC = 1u << 1,
    STF_MAX_FUNC_ID = (1u << 28) - 1,
};

/* Metadata record kinds (byte 0 = (kind << 1) | 1). */
enum stf_meta_kind {
    STF_M_NEW_BUFFER = 0,
    STF_M_END_OF_BUFFER = 1,
    STF_M_NEW_CPU = 2,
    STF_M_TSC_WRAP = 3,
    STF_M_WALLTIME = 4,
    STF_M_CUSTOM_EVENT = 5,
    STF_M_CALL_ARG = 6,
    STF_M_BUFFER_EXTENTS = 7,
    STF_M_TYPED_EVENT = 8,
    STF_M_PID = 9,
};

/* Function record actions (bits 1..3 of the first u32). */
enum stf_action {
    STF_ENTER = 0,
    STF_EXIT = 1,
    STF_TAIL_EXIT = 2,
    STF_ENTER_ARGS = 3,
};

/* Calls of the tracer itself. The runtime records the time its slow path takes inside a
 * thread (setting up the thread's buffers, moving to the next buffer, waiting for a free one
 * under the lossless policy, patching a dlopen'd library) as a call of one of these
 * pseudo-functions, so that no view charges that time to the program's function it happened
 * in: it is a callee there, with a name of its own. They are function ids of object 0 at the
 * top of its range, which no instrumented object reaches (the runtime refuses an object with
 * that many functions). Each call is an enter and an exit record, like any other. */
enum {
    STF_FID_TRACER_FIRST = 0xfffff0,
    STF_ID_TRACER_PATCHING = 0xfffffc,
    STF_ID_TRACER_WAIT = 0xfffffd,
    STF_ID_TRACER_SWITCH = 0xfffffe,
    STF_ID_TRACER_SETUP = 0xffffff,
};

/* The pseudo-function's name for a tracer id, NULL for any other id. */
static inline const char *stf_tracer_name(uint32_t id)
{
    switch (id) {
    case STF_ID_TRACER_SETUP:
        return "[sledtrace] thread set-up";
    case STF_ID_TRACER_SWITCH:
        return "[sledtrace] buffer switch";
    case STF_ID_TRACER_WAIT:
        return "[sledtrace] buffer wait";
    case STF_ID_TRACER_PATCHING:
        return "[sledtrace] patching";
    default:
        return NULL;
    }
}

/* Waiting (issue 28.1). The runtime interposes the common blocking calls of libc (condition
 * variables, contended mutexes and rwlocks, semaphores, joins, futex waits, poll and friends,
 * sleeps, waits for children, reads and writes on descriptors, accept...) and records the time a
 * thread spends in one as a call of a pseudo-function "[wait] NAME" in its caller's frame, so
 * that no view counts blocked time as the caller's self time. They are object 0's ids just below
 * the tracer's own; the numbering is part of the format (append only). A wait during which the
 * thread came back on another CPU has a NewCPUId record just before its exit record. */
enum {
    STF_FID_WAIT_FIRST = 0xffffc0,
    STF_FID_RESERVED_FIRST = STF_FID_WAIT_FIRST, /* object 0's ids from here on are pseudo */
};
enum stf_wait {
    STF_WAIT_COND_WAIT,
    STF_WAIT_COND_TIMEDWAIT,
    STF_WAIT_COND_CLOCKWAIT,
    STF_WAIT_MUTEX_LOCK,
    STF_WAIT_MUTEX_TIMEDLOCK,
    STF_WAIT_RWLOCK_RDLOCK,
    STF_WAIT_RWLOCK_WRLOCK,
    STF_WAIT_SEM_WAIT,
    STF_WAIT_SEM_TIMEDWAIT,
    STF_WAIT_SEM_CLOCKWAIT,
    STF_WAIT_JOIN,
    STF_WAIT_TIMEDJOIN,
    STF_WAIT_CLOCKJOIN,
    STF_WAIT_BARRIER,
    STF_WAIT_FUTEX,
    STF_WAIT_POLL,
    STF_WAIT_PPOLL,
    STF_WAIT_SELECT,
    STF_WAIT_PSELECT,
    STF_WAIT_EPOLL_WAIT,
    STF_WAIT_EPOLL_PWAIT,
    STF_WAIT_NANOSLEEP,
    STF_WAIT_CLOCK_NANOSLEEP,
    STF_WAIT_SLEEP,
    STF_WAIT_USLEEP,
    STF_WAIT_WAIT,
    STF_WAIT_WAITPID,
    STF_WAIT_WAIT4,
    STF_WAIT_WAITID,
    STF_WAIT_READ,
    STF_WAIT_WRITE,
    STF_WAIT_READV,
    STF_WAIT_WRITEV,
    STF_WAIT_RECV,
    STF_WAIT_RECVFROM,
    STF_WAIT_RECVMSG,
    STF_WAIT_SEND,
    STF_WAIT_SENDTO,
    STF_WAIT_SENDMSG,
    STF_WAIT_ACCEPT,
    STF_WAIT_ACCEPT4,
    STF_WAIT_CONNECT,
    STF_WAIT_PAUSE,
    STF_WAIT_SIGSUSPEND,
    STF_WAIT_SIGWAIT,
    STF_WAIT_SIGWAITINFO,
    STF_WAIT_SIGTIMEDWAIT,
    STF_WAIT_N
};
_Static_assert(STF_WAIT_N <= STF_FID_TRACER_FIRST - STF_FID_WAIT_FIRST, "wait ids overflow");

/* The pseudo-function's name for a wait id ("[wait] pthread_cond_wait"), NULL for any other. */
static inline const char *stf_wait_name(uint32_t id)
{
    static const char *const names[STF_WAIT_N] = {
        "[wait] pthread_cond_wait",
        "[wait] pthread_cond_timedwait",
        "[wait] pthread_cond_clockwait",
        "[wait] pthread_mutex_lock",
        "[wait] pthread_mutex_timedlock",
        "[wait] pthread_rwlock_rdlock",
        "[wait] pthread_rwlock_wrlock",
        "[wait] sem_wait",
        "[wait] sem_timedwait",
        "[wait] sem_clockwait",
        "[wait] pthread_join",
        "[wait] pthread_timedjoin_np",
        "[wait] pthread_clockjoin_np",
        "[wait] pthread_barrier_wait",
        "[wait] futex",
        "[wait] poll",
        "[wait] ppoll",
        "[wait] select",
        "[wait] pselect",
        "[wait] epoll_wait",
        "[wait] epoll_pwait",
        "[wait] nanosleep",
        "[wait] clock_nanosleep",
        "[wait] sleep",
        "[wait] usleep",
        "[wait] wait",
        "[wait] waitpid",
        "[wait] wait4",
        "[wait] waitid",
        "[wait] read",
        "[wait] write",
        "[wait] readv",
        "[wait] writev",
        "[wait] recv",
        "[wait] recvfrom",
        "[wait] recvmsg",
        "[wait] send",
        "[wait] sendto",
        "[wait] sendmsg",
        "[wait] accept",
        "[wait] accept4",
        "[wait] connect",
        "[wait] pause",
        "[wait] sigsuspend",
        "[wait] sigwait",
        "[wait] sigwaitinfo",
        "[wait] sigtimedwait",
    };
    uint32_t k = id - STF_FID_WAIT_FIRST;
    return k < STF_WAIT_N ? names[k] : NULL;
}

/* The name of any pseudo-function (the tracer's or a wait), NULL for a function of the program. */
static inline const char *stf_pseudo_name(uint32_t id)
{
    const char *n = stf_tracer_name(id);
    return n ? n : stf_wait_name(id);
}

struct stf_header {
    uint16_t version;
    uint16_t type;
    uint32_t bits;       /* STF_BIT_* */
    uint64_t cycle_freq; /* TSC ticks per second */
    uint64_t buffer_size;
};

/* ---- writer side: inline encoders (hot-path safe) ---------------------------------------- */

static inline void stf_put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}
static inline void stf_put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static inline void stf_put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static inline void stf_encode_header(uint8_t out[STF_HEADER_SIZE], const struct stf_header *h)
{
    memset(out, 0, STF_HEADER_SIZE);
    stf_put16(out, h->version);
    stf_put16(out + 2, h->type);
    stf_put32(out + 4, h->bits);
    stf_put64(out + 8, h->cycle_freq);
    stf_put64(out + 16, h->buffer_size);
}

/* First u32 of a function record. */
static inline uint32_t stf_func_word(uint32_t id, enum stf_action a)
{
    return (id << 4) | ((uint32_t)a << 1);
}

/* Function record as one little-endian u64: low half the id/action word, high half the delta. */
static inline uint64_t stf_func_record(uint32_t word, uint32_t delta)
{
    return (uint64_t)word | ((uint64_t)delta << 32);
}

static inline void stf_meta_begin(uint8_t p[STF_META_SIZE], enum stf_meta_kind k)
{
    memset(p, 0, STF_META_SIZE);
    p[0] = (uint8_t)(((unsigned)k << 1) | 1u);
}

static inline void stf_meta_u64(uint8_t p[STF_META_SIZE], enum stf_meta_kind k, uint64_t v)
{
    stf_meta_begin(p, k);
    stf_put64(p + 1, v);
}

static inline void stf_meta_new_buffer(uint8_t p[STF_META_SIZE], int32_t tid)
{
    stf_meta_begin(p, STF_M_NEW_BUFFER);
    stf_put32(p + 1, (uint32_t)tid);
}

static inline void stf_meta_pid(uint8_t p[STF_META_SIZE], int32_t pid)
{
    stf_meta_begin(p, STF_M_PID);
    stf_put32(p + 1, (uint32_t)pid);
}

static inline void stf_meta_walltime(uint8_t p[STF_META_SIZE], int64_t sec, uint32_t usec)
{
    stf_meta_begin(p, STF_M_WALLTIME);
    stf_put64(p + 1, (uint64_t)sec);
    stf_put32(p + 9, usec);
}

static inline void stf_meta_new_cpu(uint8_t p[STF_META_SIZE], uint16_t cpu, uint64_t tsc)
{
    stf_meta_begin(p, STF_M_NEW_CPU);
    stf_put16(p + 1, cpu);
    stf_put64(p + 3, tsc);
}

/* CustomEventMarker (v5): payload size and TSC delta; `size` payload bytes follow. */
static inline void stf_meta_custom_event(uint8_t p[STF_META_SIZE], int32_t size, int32_t delta)
{
    stf_meta_begin(p, STF_M_CUSTOM_EVENT);
    stf_put32(p + 1, (uint32_t)size);
    stf_put32(p + 5, (uint32_t)delta);
}

/* TypedEventMarker (v5): payload size, TSC delta, event type; `size` payload bytes follow. */
static inline void stf_meta_typed_event(uint8_t p[STF_META_SIZE], int32_t size, int32_t delta,
                                        uint16_t type)
{
    stf_meta_begin(p, STF_M_TYPED_EVENT);
    stf_put32(p + 1, (uint32_t)size);
    stf_put32(p + 5, (uint32_t)delta);
    stf_put16(p + 9, type);
}

/* Loss marker: where the runtime dropped events (discard policy), it starts the thread's next
 * block with a v5 CustomEventMarker whose payload is STF_LOSS_MAGIC, NUL-padded to 16 bytes,
 * then the number of events lost there as a little-endian u64. llvm-xray reads it as an ordinary
 * custom event; sledtrace's tools show it and never join call stacks across it. */
#define STF_LOSS_MAGIC "sledtrace:lost"
enum { STF_LOSS_PAYLOAD = 24, STF_LOSS_SIZE = STF_META_SIZE + STF_LOSS_PAYLOAD };

static inline void stf_encode_loss(uint8_t p[STF_LOSS_SIZE], uint64_t lost)
{
    stf_meta_custom_event(p, STF_LOSS_PAYLOAD, 0);
    memset(p + STF_META_SIZE, 0, 16);
    memcpy(p + STF_META_SIZE, STF_LOSS_MAGIC, sizeof STF_LOSS_MAGIC - 1);
    stf_put64(p + STF_META_SIZE + 16, lost);
}

/* Elided calls (SLEDTRACE_MIN_DURATION): calls shorter than the threshold leave no records; at a
 * thread's end (or the process's) the runtime writes a block holding one v5 TypedEventMarker of
 * type STF_TYPED_ELIDED whose payload lists, per function, the calls taken back and their time:
 * entries of STF_ELIDED_ENTRY bytes, {u32 function id, u32 calls, u64 ticks}, little-endian.
 * llvm-xray reads it as an ordinary typed event; sledtrace's account adds the calls and the
 * time to the function's. */
enum { STF_TYPED_ELIDED = 0x5e1d, STF_ELIDED_ENTRY = 16 };

static inline void stf_encode_elided(uint8_t p[STF_ELIDED_ENTRY], uint32_t id, uint32_t calls,
                                     uint64_t ticks)
{
    stf_put32(p, id);
    stf_put32(p + 4, calls);
    stf_put64(p + 8, ticks);
}

/* Entry i of an elided-calls payload; 0 when i is past its end. */
static inline int stf_decode_elided(const uint8_t *payload, size_t len, size_t i, uint32_t *id,
                                    uint32_t *calls, uint64_t *ticks)
{
    if ((i + 1) * STF_ELIDED_ENTRY > len)
        return 0;
    const uint8_t *e = payload + i * STF_ELIDED_ENTRY;
    memcpy(id, e, 4);
    memcpy(calls, e + 4, 4);
    memcpy(ticks, e + 8, 8);
    return 1;
}

/* The tracer's own cost (calibration). At start-up the runtime calls functions of its own through
 * the very trampolines and handler the patched sleds use, into a scratch buffer, and measures the
 * time its events add between two consecutive records of a thread. That time depends on the two
 * records' kinds: E (an entry), X (an exit), T (a tail exit); the runtime measures six pairs
 * (STF_GAP_*), each the mean over a round of calls, the median over rounds (gap) and half the
 * range of the rounds' means (spread), in 1/256 tick (so a few ns of cost keep their fraction
 * over millions of calls). `step` is the smallest non-zero step the clock took (ticks).
 * Every trace the runtime creates starts with a block holding one v5 TypedEventMarker of type
 * STF_TYPED_CALIB and this payload (STF_CALIB_PAYLOAD bytes, little-endian):
 *   u32 version (1), u32 rounds, u32 calls per round, u32 step, u32 gap[6], u32 spread[6].
 * llvm-xray reads it as an ordinary typed event. The tools take the tracer's time out of every
 * duration with it (tools/DESIGN.md, "Corrected times"). */
enum { STF_TYPED_CALIB = 0x5e1c, STF_CALIB_PAYLOAD = 64, STF_CALIB_VERSION = 1 };
enum { STF_GAP_EE, STF_GAP_EX, STF_GAP_XE, STF_GAP_XX, STF_GAP_ET, STF_GAP_TE, STF_GAPS };

struct stf_calib {
    uint32_t version, rounds, calls, step;
    uint32_t gap[STF_GAPS];    /* 1/256 tick */
    uint32_t spread[STF_GAPS]; /* 1/256 tick */
};

static inline void stf_encode_calib(uint8_t p[STF_CALIB_PAYLOAD], const struct stf_calib *c)
{
    stf_put32(p, c->version);
    stf_put32(p + 4, c->rounds);
    stf_put32(p + 8, c->calls);
    stf_put32(p + 12, c->step);
    for (int i = 0; i < STF_GAPS; i++) {
        stf_put32(p + 16 + 4 * i, c->gap[i]);
        stf_put32(p + 40 + 4 * i, c->spread[i]);
    }
}

/* If a typed event of `type` with payload[0..len) is a calibration, fills *c and returns 1. A
 * later version's payload may be longer: its first STF_CALIB_PAYLOAD bytes keep this layout. */
static inline int stf_decode_calib(uint16_t type, const uint8_t *payload, size_t len,
                                   struct stf_calib *c)
{
    if (type != STF_TYPED_CALIB || len < STF_CALIB_PAYLOAD)
        return 0;
    uint32_t w[16];
    memcpy(w, payload, sizeof w);
    if (w[0] < 1)
        return 0;
    c->version = w[0];
    c->rounds = w[1];
    c->calls = w[2];
    c->step = w[3];
    for (int i = 0; i < STF_GAPS; i++) {
        c->gap[i] = w[4 + i];
        c->spread[i] = w[10 + i];
    }
    return 1;
}

/* Context switches (ucontext coroutines: preload/context.c). A thread that switches to another
 * context with swapcontext or setcontext, or whose context's function returns to its uc_link,
 * records one v5 TypedEventMarker of type STF_TYPED_CONTEXT, at the switch, whose payload
 * (STF_CONTEXT_PAYLOAD bytes, little-endian) says which context runs from then on:
 *   u64 to      the context the thread runs now;
 *   u64 from    the context it ran until then;
 *   u32 how     STF_CTX_* (never 0);
 *   u32 zero.
 * A context's id is the runtime's, one number per execution context of the process, never
 * reused: a thread's own stack gets one at its first switch, a makecontext a new one (a
 * ucontext_t made again for another coroutine is another context), and a ucontext_t saved by
 * swapcontext or getcontext stands for the context that saved itself into it. Ids below 2^63
 * are such numbers; an id with bit 63 set is the ucontext_t's address (the runtime's table of
 * contexts was full). Records of the thread after the event belong to `to` until its next one,
 * so the tools keep one call stack per (thread, context); a thread without the event runs one
 * context. llvm-xray reads it as an ordinary typed event. */
enum { STF_TYPED_CONTEXT = 0x5e1e, STF_CONTEXT_PAYLOAD = 24 };
enum stf_ctx_how {
    STF_CTX_SWAP = 1,   /* swapcontext */
    STF_CTX_SET = 2,    /* setcontext */
    STF_CTX_RETURN = 3, /* the context's function returned: its uc_link resumes */
    STF_CTX_RESUME = 4, /* a correction: the thread found itself in `to` (a switch that failed,
                           or swapcontext returning in a context other than the one announced) */
};
#define STF_CTX_ADDRESS ((uint64_t)1 << 63)

static inline void stf_encode_context(uint8_t p[STF_CONTEXT_PAYLOAD], uint64_t to, uint64_t from,
                                      uint32_t how)
{
    stf_put64(p, to);
    stf_put64(p + 8, from);
    stf_put32(p + 16, how);
    stf_put32(p + 20, 0);
}

/* If a typed event of `type` with payload[0..len) is a context switch, fills *to, *from and *how
 * and returns 1. A later version's payload may be longer: its first STF_CONTEXT_PAYLOAD bytes
 * keep this layout. */
static inline int stf_decode_context(uint16_t type, const uint8_t *payload, size_t len,
                                     uint64_t *to, uint64_t *from, uint32_t *how)
{
    if (type != STF_TYPED_CONTEXT || len < STF_CONTEXT_PAYLOAD)
        return 0;
    uint32_t h;
    memcpy(&h, payload + 16, 4);
    if (h == 0)
        return 0;
    memcpy(to, payload, 8);
    memcpy(from, payload + 8, 8);
    *how = h;
    return 1;
}

/* Arguments and return values (SLEDTRACE_ARGS: preload/args.c). A function chosen to record its
 * arguments is entered with a Function record of action STF_ENTER_ARGS followed by one
 * CallArgument record per integer argument register it records, in register order (rdi rsi
 * rdx rcx r8 r9: the first n of them, n 1..6), as XRay's own log-args entries are (llvm-xray
 * reads them). For each argument recorded as a string, a v5 TypedEventMarker of type
 * STF_TYPED_ARGSTR follows, at the entry's time, whose payload is
 *   u8  the argument's number (1..6);
 *   u8  STF_ARGSTR_* flags;
 *   u16 zero;
 *   the string's bytes up to its terminating NUL (not included) or a bound (SLEDTRACE_ARGS_STRLEN,
 *   default 64), whichever comes first: payload length - 4 of them.
 * A function chosen to record its return value has, just before its exit record (not a tail
 * exit's: the callee returns for it), a TypedEventMarker of type STF_TYPED_RETVAL at the exit's
 * time whose payload (STF_RETVAL_PAYLOAD bytes, little-endian) is the return registers as the
 * function left them: u64 rax, u64 rdx, u64 xmm0 (low 8 bytes), u64 xmm1 (low 8 bytes). Which of
 * them hold the value is the function's type's business (the tools read it from DWARF). */
enum { STF_TYPED_ARGSTR = 0x5e1f, STF_TYPED_RETVAL = 0x5e20, STF_RETVAL_PAYLOAD = 32 };
enum {
    STF_ARGSTR_TRUNCATED = 1, /* the bound was reached before a NUL */
    STF_ARGSTR_FAULT = 2,     /* the memory could not be read from the first byte (or a later
                                 one: then the bytes before it are given, without a NUL) */
    STF_ARGSTR_NULL = 4,      /* the pointer was NULL */
    STF_ARGSTR_SKIPPED = 8,   /* not read: a seccomp filter is installed (the copy is a system
                                 call that the filter may forbid), or in a signal handler nested
                                 in the tracer */
};
enum { STF_ARGSTR_HEAD = 4 };

/* If a typed event is an argument's string: its argument number, flags, bytes and length. */
static inline int stf_decode_argstr(uint16_t type, const uint8_t *payload, size_t len,
                                    unsigned *argno, unsigned *flags, const uint8_t **bytes,
                                    size_t *n)
{
    if (type != STF_TYPED_ARGSTR || len < STF_ARGSTR_HEAD || payload[0] < 1 || payload[0] > 6)
        return 0;
    *argno = payload[0];
    *flags = payload[1];
    *bytes = payload + STF_ARGSTR_HEAD;
    *n = len - STF_ARGSTR_HEAD;
    return 1;
}

/* If a typed event is a return value: the four registers (rax, rdx, xmm0, xmm1). */
static inline int stf_decode_retval(uint16_t type, const uint8_t *payload, size_t len,
                                    uint64_t regs[4])
{
    if (type != STF_TYPED_RETVAL || len < STF_RETVAL_PAYLOAD)
        return 0;
    memcpy(regs, payload, 32);
    return 1;
}

/* If payload[0..len) is a loss marker's, stores the count and returns 1. */
static inline int stf_decode_loss(const uint8_t *payload, size_t len, uint64_t *lost)
{
    if (len != STF_LOSS_PAYLOAD || memcmp(payload, STF_LOSS_MAGIC, sizeof STF_LOSS_MAGIC) != 0)
        return 0;
    memcpy(lost, payload + 16, 8);
    return 1;
}

/* ---- reader side ------------------------------------------------------------------------- */
/* Implemented in format/reader.c and format/syms.c; used by the tools, never by the runtime.
 * Hidden visibility (static library): nothing here is exported from the runtime .so.
 *
 * Every function returning int returns STF_OK (0), STF_END (1, no more records) or a negative
 * STF_ERR_* code; stf_strerror() names the code, stf_reader_error() gives the precise message and
 * byte offset of a reader failure. */

enum stf_status {
    STF_OK = 0,
    STF_END = 1,
    STF_ERR_IO = -1, /* open/read failed (errno preserved in the message) */
    STF_ERR_NOMEM = -2,
    STF_ERR_HEADER = -3,    /* short, or not an FDR header */
    STF_ERR_VERSION = -4,   /* FDR version outside 1..5 */
    STF_ERR_FORMAT = -5,    /* grammar violation / undecodable record */
    STF_ERR_TRUNCATED = -6, /* file ends inside a record or block */
    STF_ERR_ARG = -7,       /* invalid argument (NULL pointer, bad flag) */
    STF_ERR_SYMS = -8,      /* malformed symbols sidecar */
};

const char *stf_strerror(int code);

/* Decode a 32-byte file header. Checks type == 1 (FDR) and 1 <= version <= 5. */
int stf_header_decode(const uint8_t *buf, size_t len, struct stf_header *out);

/* Item kinds: the metadata kinds keep their stf_meta_kind numbers; function records are
 * STF_K_FUNCTION. */
enum { STF_K_FUNCTION = 16 };

/* Returns "NewBuffer", "Function", ... ("?" for unknown kinds). */
const char *stf_kind_name(int kind);
/* Returns "enter", "exit", "tail-exit", "enter-args" ("?" otherwise). */
const char *stf_action_name(int action);

/* One decoded record. The block-state fields (block, tid, pid, cpu, tsc) describe the state after
 * this record was applied. Fields that a kind does not carry are zero. */
struct stf_item {
    int kind;        /* enum stf_meta_kind or STF_K_FUNCTION */
    uint64_t offset; /* byte offset of the record in the file */
    uint32_t size;   /* bytes the record occupies, payload included */
    uint64_t block;  /* 0-based index of the enclosing block in file order */
    int32_t tid;     /* current thread (NewBuffer) */
    int32_t pid;     /* current process (Pid record; 0 before one / in v1-v2) */
    uint16_t cpu;    /* current CPU (NewCPUId) */
    uint64_t tsc;    /* absolute TSC: function records, NewCPUId, TSCWrap, events */

    /* Function records. */
    uint32_t func_id; /* 28-bit id */
    uint8_t action;   /* enum stf_action */
    uint32_t delta;   /* raw delta as stored */

    /* Metadata payloads. */
    uint64_t value;         /* BufferExtents: byte count; CallArgument: argument */
    int64_t wall_sec;       /* WalltimeMarker */
    uint32_t wall_usec;     /* WalltimeMarker (second field, microseconds as compiler-rt writes) */
    int32_t event_size;     /* Custom/Typed event payload size */
    int32_t event_delta;    /* v5 custom/typed: TSC delta (signed) */
    uint16_t event_type;    /* TypedEventMarker */
    const uint8_t *payload; /* event payload; valid until the next stf_reader_next() call */
    size_t payload_len;
};

/* Reader flags. Lenient (the default) is what analysis tools use: a torn last block is reported
 * once as a warning and its incomplete tail skipped; an undecodable block is skipped (warning) from
 * the bad record to its end; order violations are delivered with a warning; zero bytes between or
 * after blocks are skipped. Strict stops at the first violation of the grammar with
 * STF_ERR_FORMAT / STF_ERR_TRUNCATED; stf_reader_error() then names offset and rule.
 * STF_READ_TORN_END (with STF_READ_STRICT, for the reader only; dump --verify) accepts a file
 * cut inside its last block, see stf_reader_torn. */
enum { STF_READ_LENIENT = 0, STF_READ_STRICT = 1, STF_READ_TORN_END = 2 };

struct stf_reader;

/* Warning callback (lenient mode): offset of the offending bytes and a one-line message. */
typedef void (*stf_warn_fn)(void *ctx, uint64_t offset, const char *msg);

/* Open a trace by path (the reader owns the descriptor) or over an existing descriptor (not
 * closed by stf_reader_close). Reads and validates the header. On failure *out is still set (if
 * allocation succeeded) so that stf_reader_error() can describe the problem; close it after. */
int stf_reader_open(struct stf_reader **out, const char *path, int flags);
int stf_reader_open_fd(struct stf_reader **out, int fd, int flags);
void stf_reader_close(struct stf_reader *r);

void stf_reader_set_warn(struct stf_reader *r, stf_warn_fn fn, void *ctx);
const struct stf_header *stf_reader_header(const struct stf_reader *r);

/* Next record: STF_OK (item filled), STF_END, or a negative error (sticky). */
int stf_reader_next(struct stf_reader *r, struct stf_item *item);

/* Message for the last error ("" if none); *offset (if non-NULL) gets its byte offset. */
const char *stf_reader_error(const struct stf_reader *r, uint64_t *offset);

/* A torn end (STF_READ_STRICT | STF_READ_TORN_END, what dump --verify reads with). A process
 * killed while its trace was being written (SIGKILL during the flush thread's write(2), which
 * the kernel may cut short) leaves a file that ends inside its last block: inside a record,
 * inside the block's BufferExtents record, or at a record boundary short of what the extents
 * announce. Plain strict reading fails there with STF_ERR_TRUNCATED. With STF_READ_TORN_END the
 * reader instead checks every complete record up to the end of the file as strictly as any
 * other (so a damaged block, or an extents field that swallows the blocks after it, still fails
 * at its offset), and ends with STF_END; stf_reader_torn then says where the file was cut:
 *   block:   offset of the torn block's BufferExtents record;
 *   offset:  where the last complete record ends (the incomplete bytes start here);
 *   partial: bytes from offset to the end of the file, which are no whole record (0: the file
 *            ends at a record boundary);
 *   missing: bytes the block's extents announce past the end of the file (0 when the file ends
 *            inside the BufferExtents record itself, which announces nothing readable).
 * Returns false (and leaves *out alone) when the reading has not ended at a torn end. */
struct stf_torn {
    uint64_t block, offset, partial, missing;
};
bool stf_reader_torn(const struct stf_reader *r, struct stf_torn *out);

struct stf_reader_stats {
    uint64_t records;   /* items returned */
    uint64_t blocks;    /* non-empty blocks entered */
    uint64_t warnings;  /* lenient-mode warnings issued */
    uint64_t bytes;     /* bytes consumed so far */
    uint64_t file_size; /* 0 if not a regular file */
};
void stf_reader_stats(const struct stf_reader *r, struct stf_reader_stats *out);

/* Random access, for the cursor. stf_reader_seek moves to a block start found earlier (the
 * offset stf_reader_block_span gave for it) between blocks, numbering that block `block`; an
 * end reached before is forgotten (errors stay), and from then on the reader returns STF_END
 * at the end of that one block. The descriptor must be seekable unless the
 * offset is still in the reader's window. stf_reader_skip_block passes over the rest of the
 * current block unread (no-op between blocks). stf_reader_block_span gives the current (or
 * last) block's start offset (its BufferExtents record in v2+) and end (clamped to the file). */
int stf_reader_seek(struct stf_reader *r, uint64_t offset, uint64_t block);
int stf_reader_skip_block(struct stf_reader *r);
void stf_reader_block_span(const struct stf_reader *r, uint64_t *start, uint64_t *end);

/* Function records in bulk, for the analysis tools' inner loops: a function record reduced to
 * what a call-stack walk needs. tsc is absolute, as stf_item.tsc. */
struct stf_func {
    uint64_t tsc;
    uint32_t id;    /* 28-bit function id */
    uint8_t action; /* enum stf_action */
};
/* Decodes the function records that follow, up to max of them into out, and returns how many:
 * exactly what as many stf_reader_next calls would return as items (same checks, counted in
 * the stats alike), without the rest of struct stf_item. It stops before any other record,
 * before a record stf_reader_next would warn about or fail on, and at the end of the block;
 * 0 means the next item is not such a record (or there is none, or an error is pending): ask
 * stf_reader_next. */
size_t stf_reader_funcs(struct stf_reader *r, struct stf_func *out, size_t max);
/* Byte offset of the next record (the end of the last item read). */
uint64_t stf_reader_offset(const struct stf_reader *r);
/* A second reader of r's file, for another thread: its own descriptor (a dup) and window, the
 * same flags and header, positioned after the header (move it with stf_reader_seek); no
 * warning callback. Only for a reader of a regular file opened at its start (read with pread:
 * see reader.c); else STF_ERR_ARG. The two may be used at the same time, one thread each. */
int stf_reader_dup(struct stf_reader **out, const struct stf_reader *r);

/* ---- cursor (format/cursor.c) ------------------------------------------------------------ */
/* Per-thread access for programs and the analysis tools. Opening reads only the blocks' headers
 * and keeps an index of each (pid, tid)'s blocks (about 64 bytes per block); records are decoded
 * when walked, at most one block is held in memory, so memory does not grow with the records.
 * Every record is an item except BufferExtents framing: function records, and CPU changes, TSC
 * wraps, walltime, custom/typed events and loss markers (custom events, see stf_decode_loss) as
 * items of their own. Select a thread, then walk with next/prev from any position or seek by
 * time; items carry the pid and tid of their thread. A payload pointer stays valid until the
 * next call that moves the cursor. A forward walk reads each of the thread's blocks once;
 * prev and seek decode one block into memory. */
struct stf_cursor;

/* flags: as stf_reader_open (0 = lenient). On failure err gets "PATH: offset N: reason", or
 * "PATH: reason" for I/O and memory errors. The _warn form passes lenient-mode warnings to
 * warn (framing and block headers while opening, the rest of a block the first time the block
 * is decoded; never twice). */
int stf_cursor_open(struct stf_cursor **out, const char *path, int flags, char *err, size_t errlen);
int stf_cursor_open_warn(struct stf_cursor **out, const char *path, int flags, stf_warn_fn warn,
                         void *warn_ctx, char *err, size_t errlen);
void stf_cursor_close(struct stf_cursor *c);
const struct stf_header *stf_cursor_header(const struct stf_cursor *c);
size_t stf_cursor_threads(const struct stf_cursor *c);
/* Select thread i (0-based, first-seen order) and move before its first item; pid, tid and
 * items (its record count; decodes the thread's blocks not yet seen) are filled when non-NULL.
 * STF_ERR_ARG if i is out of range. */
int stf_cursor_select(struct stf_cursor *c, size_t i, int32_t *pid, int32_t *tid, uint64_t *items);
/* The item after / before the position, moving over it: STF_OK, STF_END at either end, or a
 * negative error (I/O; strict mode: the first grammar violation), sticky, described by
 * stf_cursor_error. A next after a prev returns the same item again. */
int stf_cursor_next(struct stf_cursor *c, struct stf_item *out);
int stf_cursor_prev(struct stf_cursor *c, struct stf_item *out);
const char *stf_cursor_error(const struct stf_cursor *c, uint64_t *offset);
/* Move before the first item, or after the last one (to walk backward with prev). */
void stf_cursor_rewind(struct stf_cursor *c, bool to_end);
/* Move dst, a second cursor on the same trace, to src's thread and position, e.g. to look ahead
 * without moving src. dst decodes src's block into its own cache (once: a sync within the block
 * it holds costs nothing). STF_ERR_ARG if the two do not index the same trace. */
int stf_cursor_sync(struct stf_cursor *dst, const struct stf_cursor *src);
/* Move before the first item whose time is >= tsc, where an item's time is the largest TSC of
 * its thread up to and including it (non-decreasing, so records without a TSC sort with the
 * record before them). Returns the new position (0 = before the first item). */
uint64_t stf_cursor_seek(struct stf_cursor *c, uint64_t tsc);
/* The position by block, for an index of the tools' own (a walk's state at a block's start):
 * stf_cursor_where gives the selected thread's block the position is in (0-based, among the
 * thread's blocks) and the items of that block before the position (*pos); stf_cursor_goto
 * moves before the first item of the selected thread's block `block` (STF_ERR_ARG past its
 * last block). */
size_t stf_cursor_where(const struct stf_cursor *c, uint64_t *pos);
int stf_cursor_goto(struct stf_cursor *c, size_t block);
/* The selected thread's blocks, and their bytes in the file. */
size_t stf_cursor_blocks(const struct stf_cursor *c, uint64_t *bytes);
/* The function records after the position, in bulk (stf_reader_funcs): up to max of them into
 * out, moving over them; returns how many. The same records, in the same order, as as many
 * stf_cursor_next calls would give (warnings and statistics alike); it stops before any other
 * item and at the end of a block. 0 means the next item is not a function record (or there is
 * none, or an error is pending): ask stf_cursor_next, which also moves to the next block. */
size_t stf_cursor_funcs(struct stf_cursor *c, struct stf_func *out, size_t max);
/* A second cursor on c's trace, for walking another of its threads on another thread of the
 * program: the same index (copied: nothing is read again) and flags, its own reader
 * (stf_reader_dup), no selection and no warning callback until stf_cursor_set_warn. The
 * clone and c are independent: each may be used by one thread at a time. Blocks c decoded
 * before the clone was made do not warn again in it. STF_ERR_ARG when c's reader cannot be
 * duplicated (see stf_reader_dup). */
int stf_cursor_clone(struct stf_cursor **out, const struct stf_cursor *c);
void stf_cursor_set_warn(struct stf_cursor *c, stf_warn_fn warn, void *warn_ctx);
/* What has been read: records and bytes (file header included) of the blocks decoded so far
 * (each block counted once), all blocks indexed, warnings passed on, the file size. For
 * progress, bytes / file_size. */
void stf_cursor_stats(const struct stf_cursor *c, struct stf_reader_stats *out);

/* ---- symbols sidecar (format/syms.c) ----------------------------------------------------- */
/* Text file written next to the trace:
 *     sledtrace-syms<TAB>1
 *     run<TAB>id          (optional: the `sledtrace run` that made the trace)
 *     cmd<TAB>command line (the program's arguments, quoted for a shell)
 *     exit<TAB>status<TAB>N | exit<TAB>signal<TAB>N | exit<TAB>exec   (appended at the end)
 *     thread<TAB>pid<TAB>tid<TAB>name                                   (appended at the end)
 *     o<TAB>objid<TAB>0xbias<TAB>path
 *     b<TAB>objid<TAB>buildid
 *     f<TAB>objid<TAB>fid<TAB>0xaddress<TAB>name
 *     r<TAB>objid<TAB>first     (objects from the 15th on: their ids are first + fid)
 * Lookups are keyed on (objid, fid). Unknown line types are ignored. A 'b' line gives the GNU
 * build id of an object's file (its NT_GNU_BUILD_ID note's bytes, two hex digits each, 1 to
 * STF_BUILD_ID_MAX bytes; fields after it are ignored); an object without one has no 'b' line,
 * nor have the sidecars of runtimes older than the line (readers older than it ignore it, as an
 * unknown type). A malformed 'o', 'b' or 'f' line (wrong field count, bad number, NUL byte) is
 * skipped with a warning, and the ids it may have named (its id fields, when they parse) are
 * left unnamed; a function or object id given twice is left unnamed / without a path or build
 * id, with a warning (which line is right cannot be told). Only a bad first line, an empty
 * file, I/O errors and running out of memory fail a load. */
enum { STF_BUILD_ID_MAX = 64 };

struct stf_syms;

/* Path of the sidecar for a trace path: ".fdr" suffix replaced by ".syms", else ".syms"
 * appended. Returns a malloc'd string or NULL. */
char *stf_syms_path_for(const char *trace_path);

/* Load a sidecar. STF_ERR_IO if it cannot be opened (errno kept; ENOENT = missing),
 * STF_ERR_SYMS if not a sidecar (first line) or empty: err receives "FILE:LINE: reason".
 * Lines skipped and ids named twice are warnings, see stf_syms_warnings. */
int stf_syms_load(struct stf_syms **out, const char *path, char *err, size_t errlen);
/* The same from an open stream (closed here); path only names it in messages. */
int stf_syms_load_stream(struct stf_syms **out, FILE *fp, const char *path, char *err,
                         size_t errlen);
void stf_syms_free(struct stf_syms *s);

/* Warnings of the load: how many there were, and message i (0-based) for the first
 * STF_SYMS_WARNINGS_KEPT of them, else NULL. Messages are "FILE:LINE: reason, line skipped"
 * or "FILE:LINE: function F of object O named twice, it is left unnamed" (or the same for an
 * object); they stay valid until stf_syms_free. */
enum { STF_SYMS_WARNINGS_KEPT = 10 };
size_t stf_syms_warnings(const struct stf_syms *s);
const char *stf_syms_warning(const struct stf_syms *s, size_t i);

/* The process the trace is of, as the sidecar records it: its command line (NULL if not
 * recorded), how it ended (STF_END_*, with the status or signal number in *value), and the
 * name of thread tid of process pid (pid 0: any; NULL if not recorded). s may be NULL. */
enum stf_end { STF_END_UNKNOWN = 0, STF_END_STATUS = 1, STF_END_SIGNAL = 2, STF_END_EXEC = 3 };
const char *stf_syms_command(const struct stf_syms *s);
int stf_syms_end(const struct stf_syms *s, int *value);
const char *stf_syms_thread_name(const struct stf_syms *s, int32_t pid, int32_t tid);
/* Moves what src records of the process (command, end, thread names) to dst, replacing dst's:
 * names read from a binary, the process from the sidecar beside the trace. */
void stf_syms_take_process(struct stf_syms *dst, struct stf_syms *src);

/* Name for (objid, fid), or NULL if unknown or empty. s may be NULL. */
const char *stf_syms_lookup(const struct stf_syms *s, uint32_t objid, uint32_t fid);
/* Address recorded for (objid, fid); 0 if unknown. */
uint64_t stf_syms_address(const struct stf_syms *s, uint32_t objid, uint32_t fid);
/* Functions named or with an empty name (ids left unnamed as ambiguous are not counted). */
size_t stf_syms_count(const struct stf_syms *s);
/* Functions of object objid listed with an empty name (its file had no symbol for them: a
 * stripped binary), and in *total (if not NULL) all its functions listed. */
size_t stf_syms_unnamed(const struct stf_syms *s, uint32_t objid, size_t *total);
/* Path of object objid as the sidecar gives it (object 0 is the executable), or NULL. */
const char *stf_syms_object(const struct stf_syms *s, uint32_t objid);
/* Its load bias when traced ('o' line): a function's address there less it is the file's own
 * (link-time) address. 0 if unknown (or not relocated). */
uint64_t stf_syms_object_bias(const struct stf_syms *s, uint32_t objid);
/* Build id of object objid's file when it was traced, as lower-case hex (two digits a byte),
 * or NULL: none recorded (the file had none, or the sidecar predates 'b' lines) or not known
 * (given twice, or on a line skipped). */
const char *stf_syms_build_id(const struct stf_syms *s, uint32_t objid);
/* Objects the sidecar describes (by an 'o' or 'b' line), in the order of their first line:
 * how many, and the id of object i (UINT32_MAX if i is out of range). */
size_t stf_syms_objects(const struct stf_syms *s);
uint32_t stf_syms_object_id(const struct stf_syms *s, size_t i);
/* Replace names: fn gets each non-empty name and returns a malloc'd replacement (which s then
 * owns) or NULL to keep the name. Used by the tools to demangle; format/ stays libc-only.
 * Returns the number of names replaced. */
size_t stf_syms_rename(struct stf_syms *s, char *(*fn)(const char *name, void *arg), void *arg);
/* The same for the object paths (e.g. to escape control bytes before they are shown). */
size_t stf_syms_rename_objects(struct stf_syms *s, char *(*fn)(const char *path, void *arg),
                               void *arg);

/* Map a trace function id to (objid, fid): the runtime packs the object number (0: the
 * executable, then shared objects in the order they were found) into the top 4 of the 28 bits,
 * for objects 0 to 14. From the 15th on, each object has a range of its own among the ids from
 * STF_ID_RANGES_FIRST, given by its sidecar's 'r' line: stf_syms_split knows them. */
enum { STF_ID_RANGES_FIRST = 15u << 24 };

static inline void stf_split_id(uint32_t id, uint32_t *objid, uint32_t *fid)
{
    *objid = id >> 24;
    *fid = id & 0xffffffu;
}

/* stf_split_id with s's ranges ('r' lines); s may be NULL. */
void stf_syms_split(const struct stf_syms *s, uint32_t id, uint32_t *objid, uint32_t *fid);

/* Name for a trace function id: a tracer pseudo-function's name (stf_tracer_name), the
 * symbol, or "#<id>" formatted into buf. */
const char *stf_syms_name(const struct stf_syms *s, uint32_t id, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif
#endif
