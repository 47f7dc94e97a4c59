/* bufs: what the files of the buffers module (buffers.c lists them) share with each other, and
 * only with each other: the rest of the runtime sees str.h. Each variable is defined in the
 * lowest file that uses it (no file refers to one above it); its comment says who writes it, who
 * reads it, and under which lock or ordering. Everything is STR_HIDDEN.
 */
#ifndef SLEDTRACE_BUFS_H
#define SLEDTRACE_BUFS_H

#include "str.h"
#include "stf.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ST_FORKED: a fork child that has not recorded an event yet; its first event opens its own
 * trace and starts its flush thread (lazily, so that fork + exec children that never trace leave
 * no files behind). */
enum { ST_OFF = 0, ST_ACTIVE = 1, ST_STOPPING = 2, ST_DONE = 3, ST_FORKED = 4 };

/* str_new_process_check (forks.c): the calling process is the one the state belongs to, or a vfork
 * / CLONE_VM child sharing its memory. */
enum { PROC_SAME, PROC_SHARED };

/* Sleeps ns nanoseconds (up to a second; the whole time even if a signal interrupts it). Not
 * a cancellation point, unlike libc's nanosleep: deferred cancellation must never act inside
 * the tracer (a thread cancelled while waiting for a chunk would leave it handed over twice),
 * and the exit paths that wait run in the program's threads. */
static inline void pause_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, &ts) != 0 && errno == EINTR)
        ;
}

static inline long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static inline uint64_t ns_of(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Blocks every asynchronous signal of the calling thread (old mask in *old): no handler of the
 * program runs on a thread while the runtime's lock or a half-made change is in its hands. The
 * synchronous ones (a fault, a trap, a seccomp SIGSYS) stay deliverable: blocked, the kernel
 * would kill the process on them. */
static inline void block_async(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++)
        sigdelset(&all, sync_signals[i]);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

/* ---- freq.c ---- */
/* The start pair (start-up; a fork child's, forks.c), the flush thread's first estimate (under
 * the writer flag: flusher.c first_frequency; read by trace_file.c str_write_chunk), a fork child's
 * parent's calibration (0: unknown), and whether the implausible calibration was said (reset in
 * a fork child). */
STR_HIDDEN extern uint64_t str_tsc0;
STR_HIDDEN extern uint64_t str_freq_estimate;
STR_HIDDEN extern struct timespec str_raw0;
STR_HIDDEN extern uint64_t str_parent_freq;
STR_HIDDEN extern int str_implausible_said;
STR_HIDDEN void str_tsc_pair(uint64_t *tsc, struct timespec *raw);
STR_HIDDEN uint64_t str_freq_between(uint64_t t0, const struct timespec *r0, uint64_t t1,
                                     const struct timespec *r1, uint64_t min_ns);
STR_HIDDEN uint64_t str_calibrate(unsigned min_ms, int say);
STR_HIDDEN void str_set_min_ticks(uint64_t freq);

/* ---- trace_file.c ---- */
/* The trace's descriptor and names (str_begin_file; the descriptor reset in a fork child, forks.c;
 * the names unlinked by final.c when nothing was recorded). */
STR_HIDDEN extern int str_trace_fd;
STR_HIDDEN extern char str_trace_path[4096], str_syms_path[4096];
/* The file's size, what could not be written, the blocks written, the first write error: under
 * the writer flag (final.c reports them; flusher.c logs str_bytes_written). */
STR_HIDDEN extern uint64_t str_bytes_written, str_bytes_lost, str_chunks_written;
STR_HIDDEN extern int str_write_error;
/* SLEDTRACE_MAX_SIZE's cap, under the writer flag (final.c writes the cap's loss marker). */
STR_HIDDEN extern uint64_t str_max_size, str_capped_events;
/* trace_file.c: the disk floor (without SLEDTRACE_MAX_SIZE), and whether the trace stopped at it */
STR_HIDDEN extern uint64_t str_disk_floor;
STR_HIDDEN extern int str_floor_hit;
STR_HIDDEN extern int str_capped, str_over_cap;
/* The header's TSC bits (set once at start-up, buffers.c) and this process's pid (str_begin_file;
 * a fork child's, forks.c): read by every file. */
STR_HIDDEN extern uint32_t str_header_bits;
STR_HIDDEN extern int32_t str_pid;
/* The header carries a first frequency (flusher.c first_frequency); under the writer flag. */
STR_HIDDEN extern int str_freq_written;
/* The writer flag (trace_file.c's top): 0 free, 1 taken. Reset in a fork child (forks.c). */
STR_HIDDEN extern _Atomic int str_writer;
/* Takes the writer flag (acquire), waiting at most ms milliseconds (0: for ever): 1, or 0. */
STR_HIDDEN int str_writer_take_for(unsigned ms);
/* Gives it back (release, pairs with the next str_writer_take_for). */
STR_HIDDEN void str_writer_give(void);
STR_HIDDEN void str_close_trace_fd(void);
STR_HIDDEN void str_write_chunk(struct str_thread *th, struct str_chunk *c, size_t upto);
STR_HIDDEN void str_write_loss_block(int32_t tid, uint64_t lost);
STR_HIDDEN void str_write_gap_block(struct str_thread *th);
STR_HIDDEN void str_write_elided_block(struct str_thread *th);
STR_HIDDEN void str_write_header(uint64_t freq);
STR_HIDDEN int str_begin_file(int fd, const char *path, const char *spath);
/* SIGXFSZ held off around writes made by one of the program's threads (see trace_file.c). */
struct str_xfsz_guard {
    sigset_t old;
    int was_pending;
    int active; /* only under a finite RLIMIT_FSIZE: nothing to guard against otherwise, and a
                   sandbox need not allow rt_sigpending */
};
STR_HIDDEN void str_xfsz_block(struct str_xfsz_guard *g);
STR_HIDDEN void str_xfsz_unblock(struct str_xfsz_guard *g);

/* ---- marks.c ---- */
/* Which threads have chunks handed over and not written (marks.c's top). STR_MARKS indices:
 * a thread that finds none free gets no buffers (its events are dropped and counted). */
enum { STR_MARKS = STR_MAX_THREADS };
#define STR_NO_INDEX 0xffffffffu
STR_HIDDEN extern _Atomic uint64_t str_marks[STR_MARKS / 64];
STR_HIDDEN extern _Atomic uint64_t str_marks_sum[STR_MARKS / 64 / 64];
/* Marks thread index i as having handed a chunk over (after the release store of its
 * `handed`): release, pairing with the writer's acquire exchanges (str_marks_take). No lock, no
 * system call, general registers only (switch.c calls it); safe to repeat or to cut short. */
static inline void str_mark(uint32_t i)
{
    if (i >= STR_MARKS)
        return;
    atomic_fetch_or_explicit(&str_marks[i / 64], 1ull << (i % 64), memory_order_release);
    atomic_fetch_or_explicit(&str_marks_sum[i / 4096], 1ull << ((i / 64) % 64),
                             memory_order_release);
}
STR_HIDDEN uint32_t str_index_take(struct str_thread *th);
STR_HIDDEN void str_index_give(struct str_thread *th);
STR_HIDDEN int str_marks_any(void);
/* Writer only: clears every mark and calls fn for each marked thread that still has buffers. */
STR_HIDDEN void str_marks_take(void (*fn)(struct str_thread *));
STR_HIDDEN void str_marks_fork_child(struct str_thread *keep);

/* ---- queue.c ---- */
/* The registry of threads with buffers: linked by thread_pool.c str_new_thread, unlinked by
 * retire.c, walked by queue.c, final.c and buffers.c, all under str_registry_lock (taken over fork
 * by forks.c). */
STR_HIDDEN extern pthread_mutex_t str_registry_lock;
STR_HIDDEN extern struct str_thread *str_registry;
/* The final flush or the crash path (final.c): up to pos, whatever stable says. */
STR_HIDDEN extern int str_flushing_whole;
/* Set by the crash path (final.c): nothing is freed any more. */
STR_HIDDEN extern _Atomic int str_dying;
/* Final flush only: losses to report (final.c). */
struct str_losses {
    uint64_t lost_nested, discarded;
};
/* Writes every marked thread's handed-over chunks (under the writer flag). */
STR_HIDDEN void str_write_marked(void);
STR_HIDDEN void str_flush_committed_locked(struct str_losses *final);
STR_HIDDEN void str_flush_committed(struct str_losses *final);
STR_HIDDEN void str_free_thread(struct str_thread *th);

/* ---- final.c ---- */
/* The state machine: set by buffers.c (start, finish, crash), flusher.c (str_start_flusher, the
 * flush thread's own end), forks.c and final.c (ST_DONE); read by every file. */
STR_HIDDEN extern _Atomic int str_state;
/* No flush thread (flusher.c's top): set once, seq_cst (flusher.c; inherited by a fork child);
 * read with acquire by the threads that would wait for the flush thread. */
STR_HIDDEN extern _Atomic int str_solo;
/* runtime.c's services: set by str_buffers_start before the flush thread exists. */
STR_HIDDEN extern struct str_outputs str_outs;
/* Events lost by exited threads: added to by retire.c (relaxed), read at the final flush,
 * reset in a fork child. */
STR_HIDDEN extern _Atomic uint64_t str_exited_lost_nested, str_exited_dropped, str_exited_discarded;
/* Exited threads' names for the sidecar: appended by retire.c under the registry lock, reset in
 * a fork child; how the process ended (str_set_end; reset in a fork child). */
enum { MAX_NAMED = 4096 };
struct str_named {
    int32_t pid, tid;
    char name[16];
};
STR_HIDDEN extern struct str_named str_named[MAX_NAMED];
STR_HIDDEN extern size_t str_nnamed;
STR_HIDDEN extern _Atomic int str_end_kind;
/* CPU time the flush thread used (flusher.c notes it as it ends; reported at the end). */
STR_HIDDEN extern uint64_t str_flusher_cpu_ns;
STR_HIDDEN void str_final_flush(void);
STR_HIDDEN void str_emergency_write(void);

/* ---- flusher.c ---- */
/* Requests from the dump and toggle signals' handlers (release; taken with acq_rel). */
STR_HIDDEN extern _Atomic int str_dump_requested, str_toggle_requested;
/* The flush thread's sleep and wake-ups (seq_cst); reset in a fork child. */
STR_HIDDEN extern _Atomic uint32_t str_wake_seq;
STR_HIDDEN extern _Atomic int str_flusher_sleeping;
/* The flush thread: started by str_start_flusher, joined by str_drop_flusher or str_buffers_finish;
 * str_flusher_live under str_drop_lock once the process runs. */
STR_HIDDEN extern pthread_t str_flusher;
STR_HIDDEN extern int str_flusher_live;
STR_HIDDEN extern _Atomic int32_t str_flusher_tid;
STR_HIDDEN extern pthread_mutex_t str_drop_lock;
/* Wakes the flush thread if it sleeps: the sequence first (a sleep that began before sees it
 * changed), then one FUTEX_WAKE as a raw system call, so that switch.c may call it on the hot
 * path's terms (no libc, general registers only). */
static inline void str_wake_flusher(void)
{
    atomic_fetch_add_explicit(&str_wake_seq, 1, memory_order_seq_cst);
    if (!atomic_load_explicit(&str_flusher_sleeping, memory_order_seq_cst))
        return;
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"((long)SYS_futex), "D"(&str_wake_seq), "S"((long)FUTEX_WAKE_PRIVATE),
                       "d"(1L)
                     : "rcx", "r11", "memory");
    (void)r;
}
STR_HIDDEN int str_start_flusher(void);
STR_HIDDEN int str_drop_flusher(void);
STR_HIDDEN int str_solo_write(void);
STR_HIDDEN void str_solo_requests(void);
STR_HIDDEN int str_reclaim_exited(void);

/* ---- forks.c ---- */
STR_HIDDEN void str_end_hold(int unmap);
STR_HIDDEN int str_fork_activate(void);
STR_HIDDEN int str_new_process_check(void);
/* The same-process marker (forks.c): a MADV_WIPEONFORK page holding the pid whose state this
 * is, MARKER_NONE when there is none, NULL before the first check. */
#define MARKER_NONE ((_Atomic int32_t *)1)
STR_HIDDEN extern _Atomic(_Atomic int32_t *) str_proc_marker;
/* Whether the marker says, without a system call, that this is still the process the state
 * belongs to (0: ask str_new_process_check). Acquire: pairs with the marker's release CAS. */
static inline int str_same_process_marked(void)
{
    _Atomic int32_t *m = atomic_load_explicit(&str_proc_marker, memory_order_acquire);
    return m && m != MARKER_NONE && str_pid > 0 &&
           atomic_load_explicit(m, memory_order_relaxed) == str_pid;
}

/* ---- thread_pool.c ---- */
/* The key whose destructor retires an exiting thread (created by str_buffers_start; set by
 * str_new_thread). */
STR_HIDDEN extern pthread_key_t str_exit_key;
STR_HIDDEN struct str_thread *str_new_thread(int vfork_child, struct str_cursor *cur);
STR_HIDDEN void str_make_ready(struct str_chunk *c);
STR_HIDDEN void str_populate(void *p, size_t len);

/* ---- record.c ---- */
/* Starts a block in chunk c, th's current one, at tsc (its NewCPUId time) and wall (its
 * WallTimeMarker): the block's head, the chunk FILLING, the cursor's pos on it (published after
 * the head: release, pairing with the writer's acquire). Not `end`, which the caller stores
 * last (pos == 0 must imply end == 0: struct str_cursor in str.h). Inline and without a libc
 * call: switch.c runs it on the hot path's terms. */
static inline void str_block_head(struct str_cursor *cur, struct str_chunk *c,
                                  const struct str_thread *th, uint64_t tsc,
                                  const struct timespec *wall)
{
    uint8_t *p = c->base;
    unsigned aux;
    __builtin_ia32_rdtscp(&aux);
    memset(p, 0, STF_META_SIZE); /* BufferExtents, filled when written */
    stf_meta_new_buffer(p + 16, th->tid);
    stf_meta_walltime(p + 32, wall->tv_sec, (uint32_t)(wall->tv_nsec / 1000));
    stf_meta_pid(p + 48, th->pid);
    stf_meta_new_cpu(p + 64, (uint16_t)(aux & 0xfff), tsc);
    cur->cpu = aux & 0xfff;
    cur->last_tsc = tsc;
    atomic_store_explicit(&c->state, STR_FILLING, memory_order_relaxed);
    atomic_store_explicit(&cur->stable, (uintptr_t)p + STR_BLOCK_HEAD, memory_order_release);
    atomic_store_explicit(&cur->pos, (uintptr_t)p + STR_BLOCK_HEAD, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
}
STR_HIDDEN void str_start_block(struct str_cursor *cur, struct str_thread *th, uint64_t tsc);
STR_HIDDEN void str_hand_over_at(struct str_thread *th, uintptr_t pos, int final);
STR_HIDDEN int str_next_chunk(struct str_thread *th, int wait);
STR_HIDDEN void str_end_gap(struct str_cursor *cur, struct str_thread *th);

#endif
