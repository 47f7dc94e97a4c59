/* fork: the parent's side (prepare, parent), the child's (its state reset, a held child's hold
 * ended), a child's first event (str_fork_activate) and a process made without the atfork handlers
 * (str_new_process_check) (part of the buffers module: buffers.c lists its files).
 *
 * A fork child starts with a copy of its parent's state and one thread. Everything buffered is
 * the parent's and is dropped; the child's own trace starts lazily, at its first event, so that
 * fork + exec children that never trace leave no files behind (ST_FORKED). A fork from a signal
 * handler that interrupted the tracer makes the child `held` (fork_child below; hot.c, "Fork
 * from a signal handler").
 *
 * Threads and locks: str_fork_prepare takes the registry lock (queue.c) and slots.c's with the
 * asynchronous signals blocked, the parent gives them back, the child re-initialises them. The
 * child resets every flag the parent's flush thread may have held (the writer flag above all).
 * str_end_hold switches the cursor under the registry lock, pos and stable with release (paired
 * with the acquire in queue.c write_committed), end last. ST_FORKED -> ST_ACTIVE:
 * str_fork_activate's CAS (acq_rel) and str_start_flusher's seq_cst store, paired with the acquire
 * load in refill. Calls flusher.c, queue.c, marks.c, trace_file.c, freq.c.
 */
#include "str.h"
#include "bufs.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The (tsc, raw) pair str_fork_prepare takes in the parent, from which the child derives its
 * parent's calibration when the parent had no estimate yet. */
static uint64_t fork_tsc;
static struct timespec fork_raw;

/* Before fork: no thread may hold the registry lock across it; the forking thread holds it
 * (with asynchronous signals blocked: see block_async) until fork returns. */
static __thread sigset_t fork_mask __attribute__((tls_model("initial-exec")));

void str_fork_prepare(void)
{
    block_async(&fork_mask);
    pthread_mutex_lock(&str_registry_lock);
    str_slots_fork_prepare();
    str_tsc_pair(&fork_tsc, &fork_raw); /* the parent's clock, for the child's check */
}

void str_fork_parent(void)
{
    str_slots_fork_parent();
    pthread_mutex_unlock(&str_registry_lock);
    pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

/* A fork child's buffers th, recorded into through cursor c, emptied of what they hold (the
 * parent's) for the child. */
static void reset_for_child(struct str_cursor *c, struct str_thread *th)
{
    atomic_store_explicit(&c->end, 0, memory_order_relaxed);
    atomic_store_explicit(&c->pos, 0, memory_order_relaxed);
    c->side_r = atomic_load_explicit(&c->side_w, memory_order_relaxed);
    if (!th)
        return;
    th->next = NULL;
    th->pprev = &str_registry;
    th->tid = (int32_t)syscall(SYS_gettid);
    th->pid = (int32_t)getpid();
    atomic_store_explicit(&th->cur, 0, memory_order_relaxed);
    atomic_store_explicit(&th->handed, 0, memory_order_relaxed);
    atomic_store_explicit(&th->taken, 0, memory_order_relaxed);
    th->lost_nested = 0;
    th->dropping = 0;
    th->gap = 0;
    th->discarded = 0;
    memset(th->elided, 0, sizeof th->elided); /* the parent's counts */
    for (unsigned i = 0; i < th->nchunks; i++) {
        atomic_store_explicit(&th->chunks[i].state, STR_FREE, memory_order_relaxed);
        th->chunks[i].flushed = 0;
    }
}

/* In the child (one thread, a copy of the parent's memory). Everything buffered belongs to the
 * parent: the marks are dropped, the other threads' memory unmapped, this thread's chunks all
 * freed and its cursor emptied; every flag the parent's flush thread may have held at the fork
 * (the writer flag above all: the child's own flush thread would wait for it forever) is
 * cleared. The parent's trace descriptor is closed. The child's own trace starts at its first
 * event (str_fork_activate).
 * When the fork interrupted the tracer (a signal handler forked while its thread was inside
 * the hot path: the cursor's `nest` is not 0), the thread's cursor and buffers are left as they
 * are to the code the fork interrupted, which the child runs again if the handler returns, and
 * the child records through fork_cursor into buffers of its own until no such level is left
 * (hot.c, "Fork from a signal handler"): the child is `held`. A fork that interrupts a held
 * child's second cursor in turn (a handler forking inside a handler inside the tracer, in a
 * child made so) leaves nothing safe to record through: that child records nothing, and says
 * so. in_refill: called by the slow path of the child's outermost level (a child made without
 * the atfork handlers, str_new_process_check), whose own level that is, not an interrupted one.
 * The TSC's calibration starts again here, in the child's own clock (issue 23.10): a child in
 * a new time namespace reads CLOCK_MONOTONIC_RAW at an offset from its parent's, and its
 * parent's start pair would give it an absurd frequency. What the parent had calibrated (its
 * flush thread's estimate; else what its start pair and the pair str_fork_prepare took give,
 * over at least a millisecond) is kept to check the child's own against (plausible). */
static void fork_child(int in_refill)
{
    pthread_mutex_init(&str_registry_lock, NULL);
    pthread_mutex_init(&str_drop_lock, NULL);
    str_slots_fork_child();
    str_flusher_live = 0;
    atomic_store_explicit(&str_flusher_tid, 0, memory_order_relaxed);
    atomic_store_explicit(&str_mlock_future, 0, memory_order_relaxed); /* not inherited */
    /* The flush thread does not exist here: whatever it held or was asked for at the fork
     * (writing the file, a dump, a toggle) is the parent's. */
    atomic_store_explicit(&str_writer, 0, memory_order_relaxed);
    atomic_store_explicit(&str_dump_requested, 0, memory_order_relaxed);
    atomic_store_explicit(&str_toggle_requested, 0, memory_order_relaxed);
    atomic_store_explicit(&str_wake_seq, 0, memory_order_relaxed);
    int st = atomic_load_explicit(&str_state, memory_order_relaxed);
    if (st != ST_ACTIVE && st != ST_FORKED) {
        atomic_store_explicit(&str_state, ST_OFF, memory_order_relaxed);
        if (!in_refill)
            pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
        return;
    }
    if (st == ST_ACTIVE)
        str_close_trace_fd(); /* the parent's: the child's own comes with its first event */
    str_trace_fd = -1;
    atomic_store_explicit(&str_flusher_sleeping, 0, memory_order_relaxed);
    atomic_store_explicit(&str_exited_lost_nested, 0, memory_order_relaxed);
    atomic_store_explicit(&str_exited_dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&str_exited_discarded, 0, memory_order_relaxed);
    /* The parent's drops, counted process-wide (hot.c): not the child's to report (a child used
     * to print its parent's "events recorded by threads after the runtime retired them" on its
     * own stderr at its exit: signal handlers run on the parent's exiting threads) */
    atomic_store_explicit(&str_after_exit_dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&str_strict_dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&str_shared_dropped, 0, memory_order_relaxed);
    str_nnamed = 0; /* the parent's exited threads */
    atomic_store_explicit(&str_end_kind, 0, memory_order_relaxed);
    struct str_tls *t = &str_tls;
    struct str_cursor *c = &str_cursor, *a = &t->fork_cursor;
    /* Everything registered is the parent's but this thread's buffers (the ones it records
     * into, and, held, the ones the interrupted code writes, which are not registered). */
    for (struct str_thread *th = str_registry, *next; th; th = next) {
        next = th->next;
        if (th != t->th && th != t->fork_th)
            str_free_thread(th);
    }
    str_registry = NULL;
    t->dropped = 0;
    /* The budget is read again at the first event; in use: this thread's buffers. */
    str_mem_reset((t->th ? t->th->map_size : 0) + (t->fork_th ? t->fork_th->map_size : 0) +
                  str_slots_warm_bytes());
    t->nomem = 0;
    str_pid = (int32_t)getpid();
    int refused = 0;
    if (!t->held && !in_refill && c->nest != 0 && !(c->nest & STR_NEST_STRICT) && !t->vfork) {
        /* The fork interrupted the tracer: the cursor (pos, last_tsc, the side ring's indices)
         * and t->th stay the interrupted code's; end = 0 sends every later use of the cursor to
         * the slow path, where the child's events go to fork_cursor (hot.c). */
        atomic_store_explicit(&c->end, 0, memory_order_relaxed);
        memset(a, 0, sizeof *a);
        t->fork_th = NULL;
        t->held = 1;
    } else if (t->held && !in_refill && a->nest != 0) {
        refused = 1;
        atomic_store_explicit(&a->end, 0, memory_order_relaxed);
        atomic_store_explicit(&a->pos, 0, memory_order_relaxed);
    } else {
        struct str_cursor *rc = t->held ? a : c;
        struct str_thread *th = t->held ? t->fork_th : t->th;
        reset_for_child(rc, th);
        str_registry = th;
    }
    /* The parent's marks and indices go; the registered buffers keep theirs. A held child's
     * interrupted code may still mark the parent's buffers it works on: unknown here, ignored. */
    str_marks_fork_child(str_registry);
    /* Right after the fork: an event whose clock was read before this is the parent's. */
    t->fork_tsc = str_now();
    str_parent_freq = str_freq_estimate
                          ? str_freq_estimate
                          : str_freq_between(str_tsc0, &str_raw0, fork_tsc, &fork_raw, 1000000u);
    fork_tsc = 0; /* the parent's pair: never mixed with a later clock (a _Fork made here) */
    fork_raw = (struct timespec){0, 0};
    str_tsc_pair(&str_tsc0, &str_raw0);
    str_implausible_said = 0;
    atomic_store_explicit(&str_state, refused ? ST_OFF : ST_FORKED, memory_order_release);
    if (refused)
        str_log(STR_WARN,
                "this process records nothing: it was forked by a signal handler that had "
                "interrupted the tracer, in a process itself forked so, while the tracer was "
                "recording that one's events (see preload/hot.c)");
    if (!in_refill)
        pthread_sigmask(SIG_SETMASK, &fork_mask, NULL);
}

void str_fork_child(void)
{
    fork_child(0);
}

/* Ends a held fork child's hold: its recording moves from fork_cursor and fork_th to the
 * thread's cursor and str_tls.th (under the registry lock, which orders th->cursor for the flush
 * thread; pos and stable with release, pairing with its acquire in write_committed; end last,
 * as everywhere), and what the interrupted code had, the parent's buffers, goes: unmapped when
 * `unmap` (nothing of that code can run any more), else left mapped (it might). Asynchronous
 * signals are blocked by the caller. */
void str_end_hold(int unmap)
{
    struct str_tls *t = &str_tls;
    struct str_cursor *c = &str_cursor, *a = &t->fork_cursor;
    if (!t->held)
        return;
    struct str_thread *inherited = t->th;
    pthread_mutex_lock(&str_registry_lock);
    atomic_store_explicit(&c->end, 0, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    c->last_tsc = a->last_tsc;
    c->side_r = a->side_r;
    atomic_store_explicit(&c->side_w, atomic_load_explicit(&a->side_w, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&c->stable, atomic_load_explicit(&a->stable, memory_order_relaxed),
                          memory_order_release);
    atomic_store_explicit(&c->pos, atomic_load_explicit(&a->pos, memory_order_relaxed),
                          memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&c->end, atomic_load_explicit(&a->end, memory_order_relaxed),
                          memory_order_relaxed);
    t->th = t->fork_th;
    if (t->th)
        t->th->cursor = c;
    pthread_mutex_unlock(&str_registry_lock);
    t->fork_th = NULL;
    memset(a, 0, sizeof *a);
    t->held = 0;
    if (inherited && unmap)
        str_free_thread(inherited);
}

void str_fork_takeover(void *unused)
{
    (void)unused;
    int saved = errno;
    str_end_hold(1); /* hot.c calls it from an outermost level: no interrupted level is left */
    errno = saved;
}

/* First event of a fork child: open its own trace and start its flush thread. Returns the new
 * state. Another thread racing with the one doing this drops its event. The release store of
 * ST_ACTIVE (str_start_flusher, seq_cst) pairs with the acquire load in str_refill. */
int str_fork_activate(void)
{
    int expect = ST_FORKED;
    if (!atomic_compare_exchange_strong_explicit(&str_state, &expect, ST_OFF, memory_order_acq_rel,
                                                 memory_order_acquire))
        return expect;
    char path[sizeof str_trace_path], spath[sizeof str_syms_path];
    int fd = str_outs.open(path, sizeof path, spath, sizeof spath);
    /* This process's own limits (its cgroup's usage, the rlimits it inherited); under a
     * seccomp filter, which may kill for an open, the parent's. */
    if (fd >= 0 && !atomic_load_explicit(&str_seccomp_filter, memory_order_relaxed))
        str_limits_read();
    if (fd < 0 || str_begin_file(fd, path, spath) != 0 || str_start_flusher() != 0)
        return ST_OFF;
    return ST_ACTIVE;
}

/* The same-process marker: one page of its own, MADV_WIPEONFORK, holding the pid of the process
 * whose state this is once a getpid has confirmed it (0: not confirmed, or unusable). The kernel
 * zeroes such a page in every child that does not share the memory (fork, _Fork, any clone
 * without CLONE_VM, raw or not), whoever made it; a child that shares it (vfork, CLONE_VM) sees
 * its parent's value. `str_proc_marker` is the page, published with a release CAS (the acquire load in
 * str_new_process_check), MARKER_NONE when the page cannot be had (mmap or madvise refused:
 * every check then makes the system call, as before). */
_Atomic(_Atomic int32_t *) str_proc_marker;

static _Atomic int32_t *marker_page(void)
{
    _Atomic int32_t *m = atomic_load_explicit(&str_proc_marker, memory_order_acquire);
    if (m)
        return m;
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    _Atomic int32_t *mine = MARKER_NONE;
    if (p != MAP_FAILED) {
        if (madvise(p, 4096, MADV_WIPEONFORK) == 0) {
            mine = p;
            str_munlock_new(p, 4096); /* under mlockall(MCL_FUTURE): memlock.c */
        } else {
            munmap(p, 4096);
        }
    }
    if (!atomic_compare_exchange_strong_explicit(&str_proc_marker, &m, mine, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        if (mine != MARKER_NONE)
            munmap((void *)mine, 4096); /* another thread's won */
        return m;
    }
    return mine;
}

/* A process made without fork's atfork handlers (_Fork, clone without CLONE_VM) runs with a
 * copy of its parent's state and no flush thread: it would wait for a free chunk forever.
 * Every slow path checks that this is still the process the state belongs to and treats such a
 * child as fork's child handler would have (PROC_SAME after that). A vfork or CLONE_VM child
 * also has a new pid but shares the parent's memory: nothing of it may be reset, so kcmp asks
 * the kernel whether the memory is shared (assumed not where kcmp is unavailable): PROC_SHARED.
 *
 * The check takes no system call in the common case, a chunk switch of a thread that has
 * buffers (issue 28.9: it was one getpid per switch): the marker above still holds str_pid, so
 * this is no child made without sharing the memory. The shortcut is not taken by a thread
 * without buffers (a CLONE_VM child with a TLS of its own starts there), nor while the thread's
 * state is put aside for vfork (the vfork child, which shares the marker, must be told from its
 * parent), nor in a held fork child. What it does not see: a child made by a raw
 * clone(CLONE_VM) system call that shares the thread's TLS too, which the interposed clone and
 * vfork never saw either (vfork.c): it records into its parent's chunks, as its parent. */
int str_new_process_check(void)
{
    const struct str_tls *t = &str_tls;
    _Atomic int32_t *m = atomic_load_explicit(&str_proc_marker, memory_order_acquire);
    if (m && m != MARKER_NONE && t->th && !t->vfork && !t->held && str_pid > 0 &&
        atomic_load_explicit(m, memory_order_relaxed) == str_pid)
        return PROC_SAME;
    int32_t now = (int32_t)syscall(SYS_getpid);
    int st = atomic_load_explicit(&str_state, memory_order_relaxed);
    if (now == str_pid || now <= 0 || (st != ST_ACTIVE && st != ST_FORKED)) {
        /* Same process (or a sandbox that refuses getpid: then assume so, without the marker). */
        if (now == str_pid && now > 0 && st == ST_ACTIVE && t->th && !t->vfork && !t->held &&
            (m = marker_page()) != MARKER_NONE)
            atomic_store_explicit(m, now, memory_order_relaxed);
        return PROC_SAME;
    }
    enum { KCMP_VM_ = 1 };
    if (syscall(SYS_kcmp, (long)now, (long)str_pid, KCMP_VM_, 0L, 0L) == 0)
        return PROC_SHARED; /* vfork / CLONE_VM: the parent's memory */
    fork_child(1);
    return PROC_SAME;
}
