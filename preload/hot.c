/* The hot path: what runs on every instrumented function entry and exit.
 *
 * CONTRACT (keep it true; the benchmark and the signal tests depend on it)
 *  - Per event: no lock, no syscall, no malloc, no libc call, no call to anything instrumented.
 *    Thread state is initial-exec TLS (str_cursor and str_tls). Timestamps come from rdtsc.
 *    The one exception: without an invariant TSC (clock.c) they come from the vDSO's
 *    CLOCK_MONOTONIC, which makes a syscall only if the vDSO has no clock_gettime or the
 *    machine's clocksource cannot be read from user space. And one the user asks for: an
 *    argument recorded as a string (SLEDTRACE_ARGS argN/s, below: "arguments") is copied with
 *    one process_vm_readv, which cannot fault on a bad pointer where a load would. And one per
 *    several chunk switches at most: the common switch (switch.c) wakes a sleeping flush
 *    thread with a FUTEX_WAKE when half the thread's chunks wait to be written.
 *    stp_event's fast path keeps almost nothing alive across a call (it saves one callee-saved
 *    register, for the monotonic clock's call): everything unusual (nesting, a pending side
 *    ring, a full chunk, a TSCWrap) leaves it by a tail call to event_slow, which restores
 *    `nest` itself.
 *  - This file is compiled with -mgeneral-regs-only, so it never touches SSE/AVX/x87 state and
 *    the trampolines need not save it. The common chunk switch (a new chunk every
 *    chunk_size/8 events or so) is switch.c's str_fast_switch, built with this file on the same
 *    terms: no lock, no libc, signals deliverable, a system call only to wake the flush thread
 *    when half the thread's chunks wait for it. Anything else (the slow path: the switches it
 *    leaves, thread set-up, waiting for a free chunk) is reached only through slow_call() and
 *    stp_call_preserving_fpu(), which saves the whole extended state around it: the slow path
 *    is where system calls and libc calls happen.
 *  - errno is never written here; the slow path saves and restores it.
 *  - Signal safety. A handler that runs instrumented code may interrupt this path at any
 *    instruction. The cursor's `nest` counts how deep we are: it is incremented on entry and
 *    restored on exit, so an interrupting handler always leaves it as it found it, even if it
 *    lands between the load and the store of the increment. Only the outermost level (nest
 *    0 -> 1) touches the chunk (pos, end, last_tsc, the block being written) and only it takes
 *    the slow path. A nested level (nest >= 1 when it arrives) appends {tsc, word} to the
 *    thread's side ring: it reserves a slot with one atomic fetch_add (a single instruction, so
 *    handlers nested in handlers get distinct slots) and publishes it by storing seq = slot + 1.
 *    The outermost level drains the ring into the chunk before and after its own record, so
 *    nested events land in the trace right where they happened, with their own timestamps (a
 *    TSCWrap re-bases time if one is earlier than the record before it). Entries queued after
 *    the outermost level's last check are drained first thing by the thread's next event.
 *    A ring slot found unwritten when drained (ring overflow) is counted in lost_nested; events
 *    arriving before the thread has a chunk, after it exited, or while tracing is off are
 *    counted in `dropped`; both are reported at exit. A thread that got no buffers at all (a
 *    memory limit, limits.c: str_tls.nomem) drops its events in room() without a slow path,
 *    counted in str_nomem_dropped.
 *    The slow path (str_refill: thread set-up, the chunk switches switch.c leaves, lossless
 *    waits) runs on a stack of the runtime's own, with asynchronous signals blocked (slow_call:
 *    two raw system calls), so no handler nests inside it: they are delivered when it returns.
 *    The common switch (switch.c) runs at the outermost level with signals deliverable: a
 *    handler that interrupts it records into the side ring like any nested level, and one
 *    that never returns leaves it in a state the next switch completes (switch.c's top).
 *    The slow path's time is the tracer's: emit() records it as a call of a pseudo-function
 *    (thread set-up, buffer switch, lossless wait: stf.h) in the caller's frame, so that no
 *    view charges it to the function whose entry or exit it delayed.
 *    LIMIT: the ring holds STR_SIDE_N events. It overflows only if the outermost level stays
 *    inside the fast path while that many nested events arrive: a stall on a slow page
 *    (a chunk's pages are populated before the owner records into them, thread_pool.c).
 *  - Strict seccomp. A thread in SECCOMP_MODE_STRICT may not even read the TSC (the kernel
 *    turns rdtsc into a fault). Such a thread carries STR_NEST_STRICT in `nest` (threads.c);
 *    the fast path reads the clock only after its nest check, so those events go to
 *    event_slow, which counts and drops them before any clock is read.
 *  - Shared TLS. A clone(CLONE_VM) child made without CLONE_SETTLS runs on its parent
 *    thread's TLS, at the same time as that thread (vfork.c): the thread is retired at the
 *    clone and marked STR_NEST_STRICT and `shared`. Two threads then race on `nest`; the race
 *    can only leave it higher, never 0, so every event of either still goes to event_slow or
 *    to a path without a buffer, and is counted (atomically) in str_shared_dropped.
 *  - Leaving by longjmp. A handler that interrupted this path may leave with longjmp or
 *    siglongjmp: the interrupted level never restores `nest`. The outermost level puts its
 *    stack pointer into `nest` on entry (enter: no extra store), and the interposed longjmp
 *    family (signals.c) sets `nest` back to 0 when it jumps to an older frame. Every step
 *    outside the slow path leaves the cursor consistent, so cutting it anywhere is safe.
 *  - Fork from a signal handler (issue 23.7). A handler that interrupted this path may call
 *    fork(). In the child, fork() returns inside the handler, and the handler may return into
 *    the interrupted levels, which go on with what they hold in registers from the parent's
 *    cursor (a write position, a TSC, a side-ring index). So the child can neither take the
 *    cursor over at the fork (reset it and record through it: a resumed level would write its
 *    record over the child's and move `pos` back) nor leave `nest` as it is (every event of the
 *    child would go to the side ring, which holds STR_SIDE_N and which nothing drains if the
 *    child never returns: a child that called _exit from the handler left an empty trace).
 *    Instead the child is `held` (forks.c fork_child): the cursor and str_tls.th stay the
 *    interrupted code's, untouched but for end = 0, and the child records through a second
 *    cursor, str_tls.fork_cursor, into buffers of its own (fork_th), with the same protocol
 *    (its own `nest`, side ring and slow path). While any interrupted level lives, `nest` is
 *    not 0, so every event of the child reaches event_slow, where held_event sends it to the
 *    second cursor: the fast path is unchanged. What the interrupted levels do when the
 *    handler returns stays in the parent's buffers, which the child never writes out: their
 *    slow path gets no room (refill) and their drops are not counted (emit, payload). The
 *    first event that reaches event_slow as the outermost level (n == 0, nothing below it;
 *    end = 0 sends it there) proves that no interrupted level is left: the second cursor's
 *    state moves onto the thread's cursor and the parent's buffers are unmapped
 *    (str_fork_takeover, a slow path: a lock and a system call), and the thread records as
 *    usual from then on. The child's events are those whose clock was read after the fork
 *    (str_tls.fork_tsc, read right after it): the event the fork interrupted is the parent's
 *    when its clock was read before (the parent's copy of that level records it; the child
 *    drops it unsaid), the child's when after. A child's trace may so begin with the exit of
 *    the call whose entry the fork interrupted, as any fork child's may with the exits of the
 *    calls it was forked inside. The interposed longjmp family leaves the second cursor's
 *    levels as it leaves the thread's (signals.c). A fork that interrupts the second cursor
 *    in turn (a handler forking inside a handler inside the tracer, in a held child) makes a
 *    child that records nothing and says so. A held child's exit and sledtrace_flush drain the
 *    second cursor; a thread's exit, strict mode, and vfork outside the tracer end the hold
 *    first (buffers.c).
 *  - SLEDTRACE_MIN_DURATION (str_min_ticks != 0): an exit whose call was shorter may take its
 *    entry back (exit_elide: pos moves back 8 bytes, the call is counted in the thread's
 *    elided table). Only an entry that is the chunk's last record and lies at or above
 *    `stable` (the end of the last exit recorded) is taken back; the flush thread writes a
 *    live thread's chunk only up to `stable` (release by the owner after the exit's record,
 *    acquire in write_committed), so nothing written to the file is ever taken back. Entries
 *    only: one (plain) load of the previous record and of str_min_ticks per exit. A full
 *    table (256 functions) is written into the chunk as an elided-calls event and emptied
 *    (spill_elided), so a thread's short calls of any number of functions stay counted.
 *  - Memory ordering: `pos` is stored with release by the owner, pairing with the acquire load in
 *    write_committed (queue.c), which writes out only bytes below it. Under the discard
 *    policy, a thread in a gap reads its `taken` count with acquire (str_next_chunk_free),
 *    pairing with the writer's release when it has written the chunk. Nothing else here is
 *    shared with another thread (switch.c states its own).
 */
#include "str.h"
#include "stf.h"
#include "stp.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

__thread struct str_cursor str_cursor __attribute__((tls_model("initial-exec")));
__thread struct str_tls str_tls __attribute__((tls_model("initial-exec")));

_Atomic uint64_t str_strict_dropped;
_Atomic uint64_t str_after_exit_dropped;
_Atomic uint64_t str_shared_dropped;
_Atomic uint64_t str_nomem_dropped;
_Atomic uint64_t str_min_ticks;

/* An event that found no buffer. A thread that has already been retired (code run by pthread
 * key destructors after the runtime's own) has no later moment to report its count: those go
 * straight into a global counter, reported at exit with their cause. So do the events of a
 * thread whose TLS a clone child shares (two threads may be counting at once: atomic). */
static void drop_one(void)
{
    if (__builtin_expect(str_tls.shared, 0))
        atomic_fetch_add_explicit(&str_shared_dropped, 1, memory_order_relaxed);
    else if (__builtin_expect(str_tls.dead, 0))
        atomic_fetch_add_explicit(&str_after_exit_dropped, 1, memory_order_relaxed);
    else if (__builtin_expect(str_tls.nomem, 0))
        atomic_fetch_add_explicit(&str_nomem_dropped, 1, memory_order_relaxed);
    else
        str_tls.dropped++;
}

/* CLOCK_MONOTONIC in ns through the vDSO (built without vector registers, like this file), or
 * the raw syscall when the vDSO has no clock_gettime. Only without an invariant TSC. */
static uint64_t __attribute__((noinline)) monotonic_ns(void)
{
    struct timespec ts;
    if (str_vdso_gettime) {
        str_vdso_gettime(CLOCK_MONOTONIC, &ts);
    } else {
        long r;
        __asm__ volatile("syscall"
                         : "=a"(r)
                         : "a"((long)SYS_clock_gettime), "D"((long)CLOCK_MONOTONIC), "S"(&ts)
                         : "rcx", "r11", "memory");
        (void)r;
    }
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t rdtsc(void)
{
    if (__builtin_expect(str_clock_tsc, 1))
        return __builtin_ia32_rdtsc();
    return monotonic_ns();
}

uint64_t str_now(void)
{
    return rdtsc();
}

/* ---- the slow path's stack and signal mask ----
 * The slow path XSAVEs up to 11 KiB (AMX) and then runs ordinary C: far more than a signal
 * handler's alternate stack may have left (the kernel's minimum leaves about 1 KiB). It runs on
 * a stack of the runtime's own, one of SLOW_STACKS (512 KiB of .bss in all, committed only where
 * touched) claimed with one atomic operation (if all
 * are in use, on the current stack, as before), and with the asynchronous signals blocked (a
 * raw rt_sigprocmask: no libc, no vector register), so that no handler of the program ever
 * runs on the runtime's stack, and none can leave the slow path half done by longjmp (see
 * signals.c). The synchronous signals stay deliverable: blocked, a fault would kill. What the
 * tracer then uses of the program's stack: the trampoline's 88 bytes and the fast path's few
 * frames (measured by tests/e2e/hostile.c small-altstack). */
enum { SLOW_STACKS = 8, SLOW_STACK = 64 * 1024 };
static _Alignas(64) uint8_t slow_stacks[SLOW_STACKS][SLOW_STACK];
/* Bit i set: stack i in use. Claimed with an acquire CAS, given back with a release fetch_and
 * (pairing with the next claimer's acquire). */
static _Atomic uint32_t slow_busy;

static void *slow_stack_claim(void)
{
    uint32_t busy = atomic_load_explicit(&slow_busy, memory_order_relaxed);
    while (busy != (1u << SLOW_STACKS) - 1) {
        unsigned i = (unsigned)__builtin_ctz(~busy);
        if (atomic_compare_exchange_weak_explicit(&slow_busy, &busy, busy | (1u << i),
                                                  memory_order_acquire, memory_order_relaxed))
            return slow_stacks[i] + SLOW_STACK;
    }
    return NULL;
}

static void slow_stack_release(void *top)
{
    if (!top)
        return;
    unsigned i = (unsigned)(((uint8_t *)top - SLOW_STACK - slow_stacks[0]) / SLOW_STACK);
    atomic_fetch_and_explicit(&slow_busy, ~(1u << i), memory_order_release);
}

/* Runs fn(arg), a slow path (str_refill, str_fork_takeover), the way the block above says. */
static void __attribute__((noinline)) slow_call(void (*fn)(void *), void *arg)
{
    uint64_t old = 0;
    str_raw_sigmask(0 /* SIG_BLOCK */, &stp_async_signals, &old);
    void *stack = slow_stack_claim();
    stp_call_preserving_fpu(fn, arg, stack);
    slow_stack_release(stack);
    str_raw_sigmask(2 /* SIG_SETMASK */, &old, NULL);
}

/* The buffers a cursor records into: the thread's (str_tls.th) for its cursor, a held fork
 * child's (fork_th) for fork_cursor. */
static inline struct str_thread *owner_of(const struct str_cursor *c)
{
    return __builtin_expect(c == &str_cursor, 1) ? str_tls.th : str_tls.fork_th;
}

/* A held fork child's own cursor: what the tracer code its fork interrupted works on. */
static inline int inherited(const struct str_cursor *c)
{
    return __builtin_expect(str_tls.held, 0) && c == &str_cursor;
}

/* Room a slow path's pseudo-call takes: two function records, each after a possible TSCWrap. */
enum { OVERHEAD_ROOM = 2 * (16 + 8) };

/* Makes room for `need` bytes; returns the write position or 0 (drop). When a slow path ran and
 * oh is not NULL, *oh is what it did (an STF_ID_TRACER_* id, or 0 when there is no room left for
 * recording it) and *t1 the time it ended. */
static inline uintptr_t room(struct str_cursor *c, size_t need, uint64_t tsc, uint32_t *oh,
                             uint64_t *t1)
{
    uintptr_t p = atomic_load_explicit(&c->pos, memory_order_relaxed);
    if (__builtin_expect(p + need > atomic_load_explicit(&c->end, memory_order_relaxed), 0)) {
        /* Discard policy, inside a gap: a dropped event costs this check, not a slow path. */
        struct str_thread *th = owner_of(c);
        if (th && th->dropping && !str_next_chunk_free(th))
            return 0;
        /* A thread without buffers (memory limit): no slow path per event either. */
        if (!th && str_tls.nomem)
            return 0;
        str_tls.overhead = 0;
        if (!str_fast_switch(c, tsc)) {
            struct str_refill_req req = {tsc, c};
            slow_call(str_refill, &req);
        }
        p = atomic_load_explicit(&c->pos, memory_order_relaxed);
        /* The slow path may leave without room (a vfork child must not touch its parent's
         * cursor): drop. */
        uintptr_t end = atomic_load_explicit(&c->end, memory_order_relaxed);
        if (p + need > end)
            return 0;
        if (oh && str_tls.overhead && p + need + OVERHEAD_ROOM <= end) {
            *oh = str_tls.overhead;
            *t1 = rdtsc();
        }
    }
    return p;
}

/* Writes one function record at p (after a TSCWrap when its delta does not fit in 32 bits, or
 * time went backwards: a drained nested event); returns the next position. */
static inline uintptr_t put_function(struct str_cursor *c, uintptr_t p, uint32_t word, uint64_t tsc)
{
    uint64_t delta = tsc - c->last_tsc;
    if (__builtin_expect(delta > UINT32_MAX, 0)) {
        ((uint64_t *)p)[0] = 0x07u | (tsc << 8);
        ((uint64_t *)p)[1] = tsc >> 56;
        p += 16;
        delta = 0;
    }
    *(uint64_t *)p = (uint64_t)word | (delta << 32);
    c->last_tsc = tsc;
    return p + 8;
}

/* The start of an event marker (custom, typed) at tsc, written at *p: a TSCWrap first when the
 * delta from the last record does not fit the marker's signed 32 bits (it then moves *p past
 * it); returns the marker's delta. */
static inline uint32_t marker_delta(struct str_cursor *c, uintptr_t *p, uint64_t tsc)
{
    uint64_t delta = tsc - c->last_tsc;
    if (delta > INT32_MAX) {
        ((uint64_t *)*p)[0] = 0x07u | (tsc << 8); /* TSCWrap */
        ((uint64_t *)*p)[1] = tsc >> 56;
        *p += 16;
        delta = 0;
    }
    return (uint32_t)delta;
}

/* A v5 event marker of `kind` (custom: 5, typed: 8) at p: payload size, TSC delta, type; the
 * payload follows it, 16 bytes on. */
static inline void put_marker(uintptr_t p, unsigned kind, uint32_t size, uint32_t delta,
                              uint16_t type)
{
    uint8_t m[16] = {(uint8_t)((kind << 1) | 1u)};
    memcpy(m + 1, &size, 4);
    memcpy(m + 5, &delta, 4);
    memcpy(m + 9, &type, 2);
    memcpy((void *)p, m, 8);
    memcpy((void *)(p + 8), m + 8, 8);
}

/* An event that found no room (room() returned 0): the parent's in a held fork child (see the
 * header) is not counted; a thread in a gap (discard policy) counts it in the gap; any other is
 * dropped and counted. */
static void __attribute__((noinline)) no_room(struct str_cursor *c)
{
    if (inherited(c))
        return;
    struct str_thread *th = owner_of(c);
    if (th && th->dropping)
        th->gap++;
    else
        drop_one();
}

/* Appends one function record (and `arg` as a CallArgument when word says enter-with-args).
 *
 * The time a slow path takes (thread set-up, buffer switch, lossless wait) is the tracer's: it
 * is recorded as a call of its pseudo-function (stf.h) in the caller's frame, never inside the
 * function whose entry or exit it delays. An entry is recorded after it (the pseudo-call, then
 * the entry at the time the slow path ended); an exit before it (the exit at its own time, then
 * the pseudo-call). */
static void emit(struct str_cursor *c, uint32_t word, uint64_t tsc, uint64_t arg)
{
    unsigned action = (word >> 1) & 7;
    int with_arg = action == 3;
    uint32_t oh = 0;
    uint64_t t1 = tsc;
    uintptr_t p = room(c, 16 + 8 + (with_arg ? 16 : 0), tsc, &oh, &t1);
    if (__builtin_expect(p == 0, 0)) {
        no_room(c);
        return;
    }
    int entry = action == 0 || with_arg;
    if (__builtin_expect(oh != 0 && entry, 0)) {
        p = put_function(c, p, oh << 4, tsc);
        p = put_function(c, p, (oh << 4) | (1u << 1), t1);
        tsc = t1;
    }
    p = put_function(c, p, word, tsc);
    if (__builtin_expect(oh != 0 && !entry, 0)) {
        p = put_function(c, p, oh << 4, tsc);
        p = put_function(c, p, (oh << 4) | (1u << 1), t1);
    }
    if (with_arg) {
        ((uint64_t *)p)[0] = 0x0du | (arg << 8); /* CallArgument: kind 6 */
        ((uint64_t *)p)[1] = arg >> 56;
        p += 16;
    }
    atomic_store_explicit(&c->pos, p, memory_order_release);
}

static inline int side_pending(struct str_cursor *c)
{
    return c->side_r != atomic_load_explicit(&c->side_w, memory_order_relaxed);
}

static void nested(struct str_cursor *c, uint32_t word, uint64_t tsc, uint64_t arg)
{
    struct str_thread *th = owner_of(c);
    if (!th) {
        drop_one();
        return;
    }
    uint32_t w = atomic_fetch_add_explicit(&c->side_w, 1, memory_order_relaxed);
    if (w - c->side_r >= STR_SIDE_N)
        return; /* full: the slot stays unwritten and the drain counts it */
    struct str_side_entry *e = &th->side[w % STR_SIDE_N];
    e->tsc = tsc;
    e->word = word;
    e->arg = arg;
    /* Same thread: the drain runs only after this handler returns, so relaxed is enough. */
    atomic_store_explicit(&e->seq, w + 1, memory_order_relaxed);
}

/* Moves side-ring entries into the chunk. Outermost level only (nest == 1). */
void str_drain_side(struct str_cursor *c)
{
    for (;;) {
        uint32_t r = c->side_r;
        if (r == atomic_load_explicit(&c->side_w, memory_order_relaxed))
            return;
        struct str_thread *th = owner_of(c);
        if (!th) {
            drop_one();
        } else {
            struct str_side_entry *e = &th->side[r % STR_SIDE_N];
            if (atomic_load_explicit(&e->seq, memory_order_relaxed) == r + 1)
                emit(c, e->word, e->tsc, e->arg);
            else
                th->lost_nested++;
        }
        c->side_r = r + 1;
    }
}

static inline uint64_t enter(struct str_cursor *c);

/* One event at level n of cursor c (n: the cursor's `nest` before this level entered): the
 * outermost level records it in the chunk, between side-ring drains; a nested one queues it. */
static void record(struct str_cursor *c, uint64_t n, uint32_t word, uint64_t tsc, uint64_t arg)
{
    if (n != 0) {
        nested(c, word, tsc, arg);
    } else {
        if (side_pending(c))
            str_drain_side(c);
        emit(c, word, tsc, arg);
        atomic_signal_fence(memory_order_seq_cst);
        if (side_pending(c))
            str_drain_side(c);
    }
}

/* An event of a held fork child, at level n of the thread's cursor (see the header). Returns 1
 * when it is done with: the parent's (its clock was read before the fork), or recorded through
 * fork_cursor, at that cursor's own level; 0 when the caller is to record it as usual, through
 * the thread's cursor: an outermost level (n == 0) proves that no level inherited from the
 * parent is left, so the child's recording has been moved there first (str_fork_takeover). */
static int held_event(uint64_t n, uint32_t word, uint64_t tsc, uint64_t arg)
{
    if (tsc < str_tls.fork_tsc)
        return 1;
    if (n == 0) {
        slow_call(str_fork_takeover, NULL);
        return 0;
    }
    struct str_cursor *a = &str_tls.fork_cursor;
    uint64_t m = enter(a);
    record(a, m, word, tsc, arg);
    atomic_signal_fence(memory_order_seq_cst);
    a->nest = m;
    return 1;
}

/* Everything the fast path leaves out. Restores `nest` itself, so that the fast path reaches it
 * by a tail call. */

/* tsc == 0: not read yet (the fast path leaves the clock to this path when it is nested: a
 * strict thread must not read it at all). */
static void __attribute__((noinline))
event_slow(struct str_cursor *c, uint64_t n, uint32_t word, uint64_t tsc, uint64_t arg)
{
    if (__builtin_expect(n & STR_NEST_STRICT, 0)) {
        atomic_fetch_add_explicit(str_tls.shared ? &str_shared_dropped : &str_strict_dropped, 1,
                                  memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        c->nest = n;
        return;
    }
    if (tsc == 0)
        tsc = rdtsc();
    if (!__builtin_expect(str_tls.held, 0) || !held_event(n, word, tsc, arg))
        record(c, n, word, tsc, arg);
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}

static void __attribute__((noinline)) finish_slow(struct str_cursor *c, uint64_t n)
{
    str_drain_side(c);
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}

/* Enters the tracer: one level deeper. `nest` is 0 outside the tracer; the outermost level
 * makes it (its stack pointer << 8) | 1 and each nested level adds 1 (str.h). The stack pointer
 * rides along in the word that is stored anyway, and lets a longjmp out of a handler that
 * interrupted this level see that the level's frame is gone (signals.c). Cost: about 0.9 ns
 * per traced call on the development VM (a separate store, or a cmov, cost more). Returns the
 * previous value, which the caller stores back on leaving. */
static inline uint64_t enter(struct str_cursor *c)
{
    uint64_t n = c->nest;
    if (__builtin_expect(n == 0, 1)) {
        uintptr_t sp;
        __asm__("mov %%rsp, %0" : "=r"(sp));
        c->nest = ((uint64_t)sp << 8) | 1;
    } else {
        c->nest = n + 1;
    }
    atomic_signal_fence(memory_order_seq_cst);
    return n;
}

/* Leaves the fast path through a tail call (the callee restores `nest`). */
#define EXIT_VIA(call)                                                                             \
    do {                                                                                           \
        call;                                                                                      \
        return;                                                                                    \
    } while (0)

/* Counts an elided call of function id lasting dur ticks in th's table; 0 when the table has
 * no room for id (the call is then recorded). Open addressing, 8 probes. */
static int elided_add(struct str_thread *th, uint32_t id, uint64_t dur)
{
    uint32_t h = (id * 0x9e3779b1u) >> 24;
    for (uint32_t k = 0; k < 8; k++) {
        struct str_elided *e = &th->elided[(h + k) % STR_ELIDED_N];
        uint32_t have = atomic_load_explicit(&e->id, memory_order_relaxed);
        if (have == 0) {
            atomic_store_explicit(&e->id, id, memory_order_relaxed);
            have = id;
        }
        if (have == id) {
            atomic_store_explicit(&e->count,
                                  atomic_load_explicit(&e->count, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            atomic_store_explicit(&e->ticks,
                                  atomic_load_explicit(&e->ticks, memory_order_relaxed) + dur,
                                  memory_order_relaxed);
            return 1;
        }
    }
    return 0;
}

/* The elided table of th is full (elided_add found no slot for another function): its counts go
 * into the trace now, as the same typed event a thread's end writes (STF_TYPED_ELIDED: account
 * adds up every one of them), written in place in the chunk, and the table is emptied for the
 * functions that follow (issue 27.5: it was never reset, so past 256 functions a thread's short
 * calls were all recorded in full). The event is a record that cannot be taken back: `stable`
 * moves past it. No stack buffer (the payload, up to 4 KiB, is encoded in the chunk). The
 * flush thread may read the table at the same time at the process's end (trace_file.c,
 * str_write_elided_block): a table emptied under it can be counted twice there, as one filled
 * under it can miss its last calls. */
static void spill_elided(struct str_cursor *c, struct str_thread *th, uint64_t tsc)
{
    uint32_t n = 0;
    for (unsigned i = 0; i < STR_ELIDED_N; i++)
        n += atomic_load_explicit(&th->elided[i].id, memory_order_relaxed) != 0 &&
             atomic_load_explicit(&th->elided[i].count, memory_order_relaxed) != 0;
    uint32_t len = n * STF_ELIDED_ENTRY;
    uintptr_t p = room(c, 16 + 16 + len, tsc, NULL, NULL);
    if (p == 0)
        return; /* no room: the table stays full, the calls are recorded */
    uint32_t d = marker_delta(c, &p, tsc);
    put_marker(p, STF_M_TYPED_EVENT, len, d, STF_TYPED_ELIDED);
    uint8_t *e = (uint8_t *)p + 16;
    for (unsigned i = 0; i < STR_ELIDED_N; i++) {
        struct str_elided *x = &th->elided[i];
        uint32_t id = atomic_load_explicit(&x->id, memory_order_relaxed);
        uint32_t count = atomic_load_explicit(&x->count, memory_order_relaxed);
        if (id && count) {
            stf_encode_elided(e, id, count, atomic_load_explicit(&x->ticks, memory_order_relaxed));
            e += STF_ELIDED_ENTRY;
        }
        atomic_store_explicit(&x->count, 0, memory_order_relaxed);
        atomic_store_explicit(&x->ticks, 0, memory_order_relaxed);
        atomic_store_explicit(&x->id, 0, memory_order_relaxed);
    }
    c->last_tsc = tsc;
    atomic_store_explicit(&c->pos, (uintptr_t)e, memory_order_release);
    /* Release: pairs with the flush thread's acquire (write_committed); the event is below. */
    atomic_store_explicit(&c->stable, (uintptr_t)e, memory_order_release);
}

/* An exit under SLEDTRACE_MIN_DURATION (the fast path found room, and a delta that fits). A
 * call shorter than the threshold whose entry is the chunk's last record, above `stable`, is
 * taken back: its entry is erased (pos moves back over it, last_tsc to the record before it) and
 * the call counted in the thread's elided table, as compiler-rt's FDR mode rewinds, but counted.
 * Its callees, if it had any, were taken back before it (else its entry would not be last).
 * Any other exit is recorded and makes `stable` its end: nothing before it can be taken back,
 * and the flush thread may write up to it. A handler interrupting this sees nest != 0 and only
 * uses the side ring, as everywhere on this path. */
static void __attribute__((noinline))
exit_elide(struct str_cursor *c, uint64_t n, uint32_t word, uint64_t tsc, uintptr_t p)
{
    uint64_t min = atomic_load_explicit(&str_min_ticks, memory_order_relaxed);
    uint64_t dur = tsc - c->last_tsc;
    struct str_thread *th = str_tls.th;
    if (th && dur < min && p >= atomic_load_explicit(&c->stable, memory_order_relaxed) + 8) {
        uint64_t prev = *(uint64_t *)(p - 8);
        if ((uint32_t)prev == (word & ~0xeu) && !elided_add(th, word >> 4, dur)) {
            /* the table is full: emptied into the trace; this call, whose entry is no longer
             * the last record, is recorded (a plain exit), the next ones elided again */
            spill_elided(c, th, tsc);
            EXIT_VIA(event_slow(c, n, word, tsc, 0));
        }
        if ((uint32_t)prev == (word & ~0xeu)) {
            c->last_tsc -= prev >> 32;
            atomic_store_explicit(&c->pos, p - 8, memory_order_release);
            atomic_signal_fence(memory_order_seq_cst);
            if (side_pending(c))
                EXIT_VIA(finish_slow(c, n));
            atomic_signal_fence(memory_order_seq_cst);
            c->nest = n;
            return;
        }
    }
    *(uint64_t *)p = (uint64_t)word | (dur << 32);
    c->last_tsc = tsc;
    atomic_store_explicit(&c->pos, p + 8, memory_order_release);
    /* Release: pairs with the flush thread's acquire (write_committed); the record is below. */
    atomic_store_explicit(&c->stable, p + 8, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    if (side_pending(c))
        EXIT_VIA(finish_slow(c, n));
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}

/* The fast path: one function record appended to the current chunk. The slow path keeps
 * pos == 0 implying end == 0, so the room check alone proves there is a chunk. */
void stp_event(uint32_t id, uint32_t action)
{
    struct str_cursor *c = &str_cursor;
    uint64_t n = enter(c);
    uint32_t word = (id << 4) | (action << 1);
    if (__builtin_expect(n != 0 || side_pending(c), 0))
        EXIT_VIA(event_slow(c, n, word, 0, 0));
    uint64_t tsc = rdtsc();
    uintptr_t p = atomic_load_explicit(&c->pos, memory_order_relaxed);
    uint64_t delta = tsc - c->last_tsc;
    if (__builtin_expect(
            p + 8 > atomic_load_explicit(&c->end, memory_order_relaxed) || delta > UINT32_MAX, 0))
        EXIT_VIA(event_slow(c, n, word, tsc, 0));
    *(uint64_t *)p = (uint64_t)word | (delta << 32);
    c->last_tsc = tsc;
    atomic_store_explicit(&c->pos, p + 8, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(side_pending(c), 0))
        EXIT_VIA(finish_slow(c, n));
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}

/* The exits under SLEDTRACE_MIN_DURATION: the runtime patches exit and tail sleds to call this
 * (stp_tramp_exit_min, stp_tramp_tail_min) instead of stp_event, which so pays nothing for the
 * threshold. The fast path's checks, then exit_elide. */
void stp_event_min(uint32_t id, uint32_t action)
{
    struct str_cursor *c = &str_cursor;
    uint64_t n = enter(c);
    uint32_t word = (id << 4) | (action << 1);
    if (__builtin_expect(n != 0 || side_pending(c), 0))
        EXIT_VIA(event_slow(c, n, word, 0, 0));
    uint64_t tsc = rdtsc();
    uintptr_t p = atomic_load_explicit(&c->pos, memory_order_relaxed);
    if (__builtin_expect(p + 8 > atomic_load_explicit(&c->end, memory_order_relaxed) ||
                             tsc - c->last_tsc > UINT32_MAX,
                         0))
        EXIT_VIA(event_slow(c, n, word, tsc, 0));
    EXIT_VIA(exit_elide(c, n, word, tsc, p));
}

/* Custom and typed events: a v5 CustomEventMarker (kind 5: size, TSC delta) or TypedEventMarker
 * (kind 8: size, TSC delta, type), then the payload itself (no padding: the next record follows
 * it). Copied 8 bytes at a time with fixed-size memcpy (inlined as moves; this file is built with
 * -fno-tree-loop-distribute-patterns, so the loop never becomes a libc call). A payload larger
 * than an empty chunk can hold is dropped and counted; so is an event raised by a signal
 * handler nested in the tracer (the side ring's entries are fixed-size). One such event at
 * level n of cursor c. */
static void payload(struct str_cursor *c, uint64_t n, unsigned kind, uint16_t type,
                    const void *data, uint64_t len, uint64_t tsc)
{
    if (n != 0 || len > str_cfg.chunk_size - STR_BLOCK_HEAD - 2 * 16) {
        struct str_thread *th = owner_of(c);
        if (n != 0 && th)
            th->lost_nested++;
        else
            drop_one();
        return;
    }
    if (side_pending(c))
        str_drain_side(c);
    uintptr_t p = room(c, 16 + 16 + len, tsc, NULL, NULL);
    if (p == 0) {
        if (!inherited(c))
            drop_one();
        return;
    }
    uint32_t d = marker_delta(c, &p, tsc);
    put_marker(p, kind, (uint32_t)len, d, type);
    p += 16;
    const uint8_t *src = data;
    uint64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        memcpy((void *)(p + i), &w, 8);
    }
    for (; i < len; i++)
        ((uint8_t *)p)[i] = src[i];
    c->last_tsc = tsc;
    atomic_store_explicit(&c->pos, p + len, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    if (side_pending(c))
        str_drain_side(c);
}

/* A held fork child's events go as held_event says of function records. */
static void event_payload(unsigned kind, uint16_t type, const void *data, uint64_t len)
{
    struct str_cursor *c = &str_cursor;
    uint64_t n = enter(c);
    if (n & STR_NEST_STRICT) {
        atomic_fetch_add_explicit(str_tls.shared ? &str_shared_dropped : &str_strict_dropped, 1,
                                  memory_order_relaxed);
    } else {
        uint64_t tsc = rdtsc();
        if (!__builtin_expect(str_tls.held, 0)) {
            payload(c, n, kind, type, data, len, tsc);
        } else if (tsc >= str_tls.fork_tsc && n == 0) {
            slow_call(str_fork_takeover, NULL);
            payload(c, n, kind, type, data, len, tsc);
        } else if (tsc >= str_tls.fork_tsc) {
            struct str_cursor *a = &str_tls.fork_cursor;
            uint64_t m = enter(a);
            payload(a, m, kind, type, data, len, tsc);
            atomic_signal_fence(memory_order_seq_cst);
            a->nest = m;
        }
    }
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}

void stp_event_custom(const void *data, uint64_t len)
{
    event_payload(STF_M_CUSTOM_EVENT, 0, data, len);
}

void stp_event_typed(uint64_t type, const void *data, uint64_t len)
{
    event_payload(STF_M_TYPED_EVENT, (uint16_t)type, data, len);
}

void stp_event_arg(uint32_t id, uint64_t arg)
{
    struct str_cursor *c = &str_cursor;
    uint64_t n = enter(c);
    event_slow(c, n, (id << 4) | (3u << 1), 0, arg);
}

/* ---- arguments and return values (SLEDTRACE_ARGS: args.c; format/stf.h, "Arguments") ---------
 * Only the functions args.c marked reach these, through their own trampolines: the others'
 * path above is untouched. An outermost level records the entry with its CallArguments and
 * strings, or the return value before the exit; a nested level, a held fork child, a strict
 * thread take event_slow's path with the plain record (no arguments: the side ring holds fixed
 * entries). A string is copied with one process_vm_readv system call on the process's own
 * memory, which reports an unreadable address (EFAULT) instead of faulting: the one system
 * call of an event, made only for the arguments a user asked to see as strings (argN/s), and
 * never under a seccomp filter (the filter may forbid it), where the string is marked skipped.
 * errno is untouched (a raw system call). */

/* The spec of function id (args.c's table), 0 if it has none. */
static uint16_t args_spec(uint32_t id)
{
    /* Acquire: pairs with args.c's release stores of the table and of each slot's id. */
    const struct str_args_table *t = atomic_load_explicit(&str_args_table, memory_order_acquire);
    if (!t)
        return 0;
    for (uint32_t h = (id * 0x9e3779b1u) & t->mask;; h = (h + 1) & t->mask) {
        uint32_t have = atomic_load_explicit(&t->slot[h].id, memory_order_acquire);
        if (have == id)
            return t->slot[h].spec;
        if (have == 0)
            return 0;
    }
}

/* process_vm_readv(pid, {dst, n}, 1, {src, n}, 1, 0): bytes read (fewer up to an unreadable
 * page), or a negative errno. */
static long read_own(int32_t pid, void *dst, const void *src, size_t n)
{
    struct {
        const void *base;
        size_t len;
    } local = {dst, n}, remote = {src, n};
    register long r10 __asm__("r10") = (long)&remote;
    register long r8 __asm__("r8") = 1;
    register long r9 __asm__("r9") = 0;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"((long)SYS_process_vm_readv), "D"((long)pid), "S"(&local), "d"(1L),
                       "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

/* Argument k's string (pointer ptr) as a typed event at p, time delta 0: returns its end. */
static uintptr_t put_string(const struct str_cursor *c, uintptr_t p, unsigned k, uint64_t ptr)
{
    uint8_t *pay = (uint8_t *)p + 16;
    unsigned max = str_args_strlen, flags = 0;
    long got = 0;
    if (ptr == 0) {
        flags = STF_ARGSTR_NULL;
    } else if (ptr < 65536 || ptr >= (1ull << 47)) {
        /* never a user-space mapping (below vm.mmap_min_addr's floor, or past the canonical
         * user half): said unreadable without the system call (an integer argument given /s
         * costs nothing then) */
        flags = STF_ARGSTR_FAULT;
    } else if (atomic_load_explicit(&str_seccomp_filter, memory_order_relaxed)) {
        flags = STF_ARGSTR_SKIPPED;
    } else {
        struct str_thread *th = owner_of(c);
        got = th ? read_own(th->pid, pay + STF_ARGSTR_HEAD, (const void *)(uintptr_t)ptr, max + 1)
                 : -1;
        if (got < 0) {
            got = 0;
            flags = STF_ARGSTR_FAULT;
        } else {
            long i = 0;
            while (i < got && pay[STF_ARGSTR_HEAD + i] != 0)
                i++;
            if (i < got)
                got = i; /* its NUL */
            else if (got > (long)max)
                got = max, flags = STF_ARGSTR_TRUNCATED;
            else
                flags = STF_ARGSTR_FAULT; /* unreadable before a NUL: what was read, unended */
        }
    }
    uint32_t size = STF_ARGSTR_HEAD + (uint32_t)got;
    put_marker(p, STF_M_TYPED_EVENT, size, 0, STF_TYPED_ARGSTR); /* delta 0: the entry's time */
    pay[0] = (uint8_t)k;
    pay[1] = (uint8_t)flags;
    pay[2] = pay[3] = 0;
    return p + 16 + size;
}

/* The entry of a function recording its arguments: saved as stp_tramp_entry_args pushed them. */
static void emit_args(struct str_cursor *c, uint32_t word, uint64_t tsc, const uint64_t *saved,
                      unsigned spec)
{
    static const unsigned at[6] = {4, 3, 7, 6, 2, 1}; /* rdi rsi rdx rcx r8 r9 in saved[] */
    unsigned nargs = spec & STR_ARGS_N, strs = (spec >> STR_ARGS_STR_SHIFT) & 63;
    size_t need = 16 + 8 + 16 * (size_t)nargs;
    for (unsigned k = 0; k < nargs; k++)
        if (strs >> k & 1)
            need += 16 + STF_ARGSTR_HEAD + str_args_strlen + 1;
    uint32_t oh = 0;
    uint64_t t1 = tsc;
    uintptr_t p = room(c, need, tsc, &oh, &t1);
    if (__builtin_expect(p == 0, 0)) {
        no_room(c);
        return;
    }
    if (__builtin_expect(oh != 0, 0)) {
        p = put_function(c, p, oh << 4, tsc);
        p = put_function(c, p, (oh << 4) | (1u << 1), t1);
        tsc = t1;
    }
    p = put_function(c, p, word, tsc);
    for (unsigned k = 0; k < nargs; k++) {
        uint64_t v = saved[at[k]];
        ((uint64_t *)p)[0] = 0x0du | (v << 8); /* CallArgument: kind 6 */
        ((uint64_t *)p)[1] = v >> 56;
        p += 16;
    }
    for (unsigned k = 0; k < nargs; k++)
        if (strs >> k & 1)
            p = put_string(c, p, k + 1, saved[at[k]]);
    atomic_store_explicit(&c->pos, p, memory_order_release);
}

/* The exit of a function recording its return value: saved as stp_tramp_exit_args left them
 * (xmm0 xmm1 pad rdx rax). The value goes before the exit record, at the exit's time. */
static void emit_ret(struct str_cursor *c, uint32_t word, uint64_t tsc, const uint64_t *saved)
{
    uint32_t oh = 0;
    uint64_t t1 = tsc;
    uintptr_t p = room(c, 16 + 16 + STF_RETVAL_PAYLOAD + 8, tsc, &oh, &t1);
    if (__builtin_expect(p == 0, 0)) {
        no_room(c);
        return;
    }
    uint32_t d = marker_delta(c, &p, tsc);
    put_marker(p, STF_M_TYPED_EVENT, STF_RETVAL_PAYLOAD, d, STF_TYPED_RETVAL);
    const uint64_t regs[4] = {saved[4], saved[3], saved[0], saved[1]}; /* rax rdx xmm0 xmm1 */
    memcpy((void *)(p + 16), regs, sizeof regs);
    p += 16 + STF_RETVAL_PAYLOAD;
    c->last_tsc = tsc;
    p = put_function(c, p, word, tsc);
    if (__builtin_expect(oh != 0, 0)) {
        p = put_function(c, p, oh << 4, tsc);
        p = put_function(c, p, (oh << 4) | (1u << 1), t1);
    }
    atomic_store_explicit(&c->pos, p, memory_order_release);
}

void stp_event_args(uint32_t id, const uint64_t *saved)
{
    struct str_cursor *c = &str_cursor;
    uint64_t n = enter(c);
    unsigned spec = args_spec(id);
    if (__builtin_expect(n != 0 || str_tls.held || !(spec & STR_ARGS_N), 0))
        EXIT_VIA(event_slow(c, n, id << 4, 0, 0)); /* a plain entry */
    uint64_t tsc = rdtsc();
    if (side_pending(c))
        str_drain_side(c);
    emit_args(c, (id << 4) | (3u << 1), tsc, saved, spec);
    atomic_signal_fence(memory_order_seq_cst);
    if (side_pending(c))
        EXIT_VIA(finish_slow(c, n));
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}

void stp_event_ret(uint32_t id, const uint64_t *saved)
{
    struct str_cursor *c = &str_cursor;
    uint64_t n = enter(c);
    if (__builtin_expect(n != 0 || str_tls.held, 0))
        EXIT_VIA(event_slow(c, n, (id << 4) | (1u << 1), 0, 0)); /* a plain exit */
    uint64_t tsc = rdtsc();
    if (side_pending(c))
        str_drain_side(c);
    emit_ret(c, (id << 4) | (1u << 1), tsc, saved);
    atomic_signal_fence(memory_order_seq_cst);
    if (side_pending(c))
        EXIT_VIA(finish_slow(c, n));
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}

/* ---- waits (waits.c) ----------------------------------------------------------------------
 * An entry or exit of a wait pseudo-call when the thread is on another CPU than the trace last
 * said (the cursor's cpu): a NewCPUId record (cpu, now) goes just before it, which so has a
 * delta of 0 from it (a NewCPUId sets the delta base, as at a block's start). So the reader knows
 * the CPU at each end of the wait: one that differs was descheduled and moved. Only when the
 * chunk has room for both without a slow path: otherwise the record alone (a block that a switch
 * starts has a NewCPUId of its own). A nested level, a held fork child, a strict thread:
 * event_slow's plain record. */
void str_event_cpu(uint32_t id, uint32_t action, uint16_t cpu)
{
    struct str_cursor *c = &str_cursor;
    uint64_t n = enter(c);
    uint32_t word = (id << 4) | (action << 1);
    if (__builtin_expect(n != 0 || str_tls.held, 0))
        EXIT_VIA(event_slow(c, n, word, 0, 0));
    uint64_t tsc = rdtsc();
    if (side_pending(c))
        str_drain_side(c);
    uintptr_t p = atomic_load_explicit(&c->pos, memory_order_relaxed);
    if (p + STF_META_SIZE + 24 <= atomic_load_explicit(&c->end, memory_order_relaxed)) {
        stf_meta_new_cpu((uint8_t *)p, cpu, tsc);
        c->last_tsc = tsc;
        c->cpu = cpu;
        atomic_store_explicit(&c->pos, p + STF_META_SIZE, memory_order_release);
    }
    record(c, 0, word, tsc, 0);
    atomic_signal_fence(memory_order_seq_cst);
    c->nest = n;
}
