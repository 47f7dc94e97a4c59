/* str: the sledtrace runtime (libsledtrace.so), shared declarations of its source files.
 *
 * Files: hot.c (the per-event path, called by the trampolines), buffers.c (per-thread chunks,
 * their hand-over, the flush thread, the final flush), runtime.c (start-up, configuration,
 * patching, exit paths), log.c (messages and configuration parsing), calib.c (the tracer's own
 * cost, measured at start-up).
 *
 * Memory of a thread: one mapping holding its struct str_thread (cold state, side ring, chunk
 * descriptors) followed by `nchunks` chunks of `chunk_size` bytes. Chunks cycle FREE -> FILLING
 * (owned by the thread) -> QUEUED (handed to the flush thread) -> FREE.
 */
#ifndef SLEDTRACE_STR_H
#define SLEDTRACE_STR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#define STR_HIDDEN __attribute__((visibility("hidden")))

/* ---- configuration and messages (log.c) ---- */
enum str_level { STR_ERROR = 0, STR_WARN = 1, STR_INFO = 2, STR_DEBUG = 3 };

enum str_policy { STR_LOSSLESS = 0, STR_DISCARD = 1, STR_FLIGHT = 2 };
enum str_clock { STR_CLOCK_AUTO = 0, STR_CLOCK_TSC = 1, STR_CLOCK_MONOTONIC = 2 };

struct str_config {
    const char *output;       /* SLEDTRACE_OUTPUT, made absolute at start-up */
    int log_level;            /* SLEDTRACE_LOG */
    unsigned flush_ms;        /* SLEDTRACE_FLUSH_MS */
    size_t chunk_size;        /* SLEDTRACE_BUFFER_KB * 1024 */
    unsigned nchunks;         /* SLEDTRACE_BUFFERS */
    int disable;              /* SLEDTRACE_DISABLE */
    int policy;               /* SLEDTRACE_POLICY: enum str_policy */
    int clock;                /* SLEDTRACE_CLOCK: enum str_clock */
    int dump_signal;          /* SLEDTRACE_DUMP_SIGNAL (flight policy) */
    int toggle_signal;        /* SLEDTRACE_TOGGLE_SIGNAL, 0 = none */
    const char *filter;       /* SLEDTRACE_FILTER: comma-separated [LIB:]GLOB, NULL = everything */
    const char *exclude;      /* SLEDTRACE_EXCLUDE: same syntax */
    const char *exclude_text; /* SLEDTRACE_EXCLUDE_FILE's text, read at start-up; NULL = none */
    unsigned file_mode;       /* SLEDTRACE_FILE_MODE: the trace's and sidecar's mode (octal) */
    int max_size_set;         /* SLEDTRACE_MAX_SIZE given: */
    uint64_t max_size;        /* bytes, 0 = no cap; else half the free space at start-up */
    uint64_t min_duration_ns; /* SLEDTRACE_MIN_DURATION: shorter calls are counted, not recorded */
    const char *args;         /* SLEDTRACE_ARGS: functions recording their arguments (args.c) */
    const char *waits;     /* SLEDTRACE_WAITS: the waiting calls recorded (waits.c); NULL = all */
    const char *cache_dir; /* SLEDTRACE_CACHE, else the XDG cache directory; NULL = off */
    const char *run_id;    /* SLEDTRACE_RUN_ID (set by `sledtrace run`): written in the sidecar */
    int descendant;        /* SLEDTRACE_RUN_PID (set by `sledtrace run`) names another process */
};

STR_HIDDEN extern struct str_config str_cfg;
STR_HIDDEN void str_config_load(void);
STR_HIDDEN void str_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Warnings are held from start-up until the process is known to trace something (print = 1:
 * they are printed now) or nothing (print = 0: dropped); see log.c. Later calls do nothing. */
STR_HIDDEN void str_log_release(int print);
/* Moves a descriptor of the runtime's to the top of the program's range (log.c). */
STR_HIDDEN int str_fd_high(int fd);

/* ---- clock.c ---- */
/* Timestamps are TSC ticks (str_clock_tsc) or CLOCK_MONOTONIC nanoseconds, read through the vDSO
 * (str_vdso_gettime; NULL: raw syscall). str_clock_init chooses, once, before any event, and
 * returns the header's TSC bits. str_now (hot.c) reads the chosen clock. */
struct timespec;
typedef int (*str_vdso_gettime_fn)(int, struct timespec *);
STR_HIDDEN extern int str_clock_tsc;
STR_HIDDEN extern str_vdso_gettime_fn str_vdso_gettime;
/* The vDSO's clock_gettime whatever the events' clock (NULL: none): str_clock_raw's, and the
 * wall time of a block switch.c starts. */
STR_HIDDEN extern str_vdso_gettime_fn str_vdso_clock;
STR_HIDDEN uint32_t str_clock_init(void);
/* CLOCK_MONOTONIC_RAW past any interposed clock_gettime (the vDSO's, else the system call): what
 * the TSC is calibrated against. After str_clock_init. */
STR_HIDDEN void str_clock_raw(struct timespec *ts);
/* The TSC's frequency in Hz as CPUID states it (leaf 0x15: *exact = 1; leaf 0x16's base
 * frequency: *exact = 0), or 0 when it does not. After str_clock_init. */
STR_HIDDEN uint64_t str_clock_cpuid_hz(int *exact);
STR_HIDDEN uint64_t str_now(void);

/* ---- signal masks without libc (hot.c's slow path, calib.c) ----
 * str_raw_sigmask is rt_sigprocmask as a raw system call: no libc, no vector register (how:
 * 0 SIG_BLOCK, 2 SIG_SETMASK). The set they block is the patcher's stp_async_signals (stp.h). */
static inline void str_raw_sigmask(long how, const uint64_t *set, uint64_t *old)
{
    register long len __asm__("r10") = 8;
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"((long)SYS_rt_sigprocmask), "D"(how), "S"(set), "d"(old), "r"(len)
                     : "rcx", "r11", "memory");
    (void)r;
}

/* ---- per-thread state ---- */
enum { STR_SIDE_N = 1024, STR_BLOCK_HEAD = 80, STR_FIRST_BYTES = 16384 };

/* One event recorded by a signal handler that interrupted the hot path (see hot.c). */
struct str_side_entry {
    uint64_t tsc;
    uint64_t arg;
    uint32_t word;
    _Atomic uint32_t seq; /* index + 1 once written */
};

/* A function's calls shorter than SLEDTRACE_MIN_DURATION (hot.c): how many, and their time. */
enum { STR_ELIDED_N = 256 };
struct str_elided {
    _Atomic uint32_t id; /* 0: free slot */
    _Atomic uint32_t count;
    _Atomic uint64_t ticks;
};

/* A chunk is FILLING from its block's start (its owner's), and FREE once written (lossless and
 * discard policies: a handed-over chunk stays FILLING until the writer is done; `handed` and
 * `taken` in struct str_thread say which is which). Flight policy: a full chunk is KEPT; its
 * owner reclaims it (KEPT -> FILLING) when it wraps around, and a dump writes it (KEPT ->
 * DUMPING -> KEPT); the CAS between them means a chunk being written is never overwritten. */
enum str_chunk_state {
    STR_FREE = 0,
    STR_FILLING = 1,
    STR_KEPT = 3,
    STR_DUMPING = 4,
};

struct str_thread;

struct str_chunk {
    struct str_thread *owner;
    uint8_t *base;
    size_t used;       /* bytes, set by the owner before handing it over */
    _Atomic int state; /* enum str_chunk_state */
    int final;         /* last chunk of an exiting thread: the flusher frees the thread */
    /* Its bytes that are present (populated by the owner: a fresh pool's first chunk
     * STR_FIRST_BYTES at set-up, growing as it fills; any other chunk whole when first taken). */
    size_t ready;
    /* How much of this chunk is already in the file (0: nothing, not even its header) and the
     * TSC of the last record written, the base of a continuation block. Written by the flush
     * thread; under the flight policy also reset by the owner when it reclaims the chunk. */
    size_t flushed;
    uint64_t flushed_tsc;
};

/* Per-thread state in initial-exec TLS: the recording cursor (hot, read and written on every
 * event) and the rest. Only the owning thread writes them; the flush thread reads the cursor's
 * `pos`. */
struct str_cursor {
    _Atomic uintptr_t pos; /* next free byte; 0 only together with end == 0 */
    _Atomic uintptr_t end; /* end of the writable area; 0 forces the slow path */
    uint64_t last_tsc;     /* TSC of the last record carrying one */
    /* Hot-path nesting (signal handlers, hot.c): 0 outside the tracer, else the outermost
     * level's stack pointer << 8 | the depth (1 for the outermost level). STR_NEST_STRICT is
     * set for good in a thread that entered SECCOMP_MODE_STRICT (threads.c): the kernel then
     * forbids rdtsc too, and its events are dropped before any clock is read. */
    uint64_t nest;
    uint32_t side_r;         /* side ring: read index (outermost level only) */
    _Atomic uint32_t side_w; /* side ring: write index (nested levels) */
    /* With SLEDTRACE_MIN_DURATION: nothing below `stable` is ever taken back (it ends at the
     * last exit recorded, or at the block's head); the flush thread writes a thread's current
     * chunk only up to it. Release by the owner, acquire by the flush thread. */
    _Atomic uintptr_t stable;
    /* The CPU of the last NewCPUId record written through this cursor (a block's head, a
     * wait's: waits.c): what a reader of the trace knows of the thread's CPU. Owner only; the
     * hot path never reads it. */
    uint32_t cpu;
};

enum { STR_NEST_STRICT = 0x80 };

struct str_tls {
    uint32_t dead;     /* thread has exited (TLS destructors may still run code) */
    uint32_t overhead; /* what the last slow path did: an STF_ID_TRACER_* id, 0 if nothing */
    uint64_t dropped;  /* events that found no buffer (disabled, dead, fork child) */
    struct str_thread *th;
    /* A clone(CLONE_VM) child without CLONE_SETTLS runs on this TLS too (vfork.c): the thread
     * is retired and every later event of either is counted in str_shared_dropped. */
    uint32_t shared;
    /* The thread is in vfork (vfork.c, buffers.c): its child runs on this TLS with a cursor and
     * a str_thread of its own until it execs or ends; the thread's own are kept here. */
    uint32_t vfork;
    struct str_cursor vfork_cursor;
    struct str_thread *vfork_th;
    uint64_t vfork_dropped;
    /* No memory for this thread's buffers (limits.c): its events are dropped and counted in
     * str_nomem_dropped without a slow path (hot.c). Set for good. */
    uint32_t nomem;
    /* A fork child whose fork interrupted the tracer (hot.c, "Fork from a signal handler"):
     * while `held`, the cursor and `th` are the parent's, left to the tracer code the fork
     * interrupted, and the child records through fork_cursor into fork_th; fork_tsc is the
     * clock just after the fork (an event whose clock was read before it is the parent's).
     * Written by the thread only (buffers.c str_fork_child, str_fork_takeover; hot.c). */
    uint32_t held;
    struct str_cursor fork_cursor;
    struct str_thread *fork_th;
    uint64_t fork_tsc;
};

STR_HIDDEN extern __thread struct str_cursor str_cursor __attribute__((tls_model("initial-exec")));
STR_HIDDEN extern __thread struct str_tls str_tls __attribute__((tls_model("initial-exec")));

struct str_thread {
    struct str_thread *next;   /* registry, under the registry lock */
    struct str_thread **pprev; /* the link that points at it (O(1) removal); NULL: not in it */
    struct str_cursor *cursor; /* owner's TLS cursor; NULL once the owner has exited */
    size_t map_size;
    int32_t tid;
    int32_t pid; /* the process the thread belongs to: a vfork child's is its own */
    uint32_t nchunks;
    /* Flight policy: the index of the chunk being filled (record.c str_next_chunk). */
    _Atomic uint32_t cur;
    /* Lossless and discard policies: the chunks are a ring, filled in turn. `handed` counts the
     * chunks the owner has handed over (release store by the owner: it publishes the chunk's
     * records, `used` and `final`; acquire by the writer), `taken` those the writer has written
     * (release store by the writer, after which the chunk is the owner's again; acquire by the
     * owner). The owner's current chunk is handed % nchunks, its to fill once handed - taken <
     * nchunks. One store hands a chunk over: a switch cut short by a signal handler that never
     * returns has either handed its chunk over or not (switch.c). Under the flight policy only
     * the final chunk is counted in `handed`. */
    _Atomic uint32_t handed, taken;
    uint32_t index; /* its mark (marks.c): set at every hand-over, so that the writer finds it */
    uint64_t lost_nested; /* side ring overflows */
    /* Discard policy (owner only): while `dropping` the thread has no chunk and counts its
     * events in `gap`; the next block it starts begins with a loss marker for them. */
    uint32_t dropping;
    uint64_t gap;
    uint64_t discarded; /* all events this thread dropped */
    pthread_t self;     /* the thread's pthread_t and birth (its name: names.c) */
    uint64_t birth;
    void *alt_map; /* its alternate signal stack's mapping (altstack.c), for memlock.c */
    size_t alt_size;
    uint8_t slot;      /* its memory is a slot (slots.c), else a mapping of its own */
    uint8_t slot_lost; /* its thread retired on the slot's alternate stack: never reused */
    struct str_side_entry side[STR_SIDE_N];
    /* SLEDTRACE_MIN_DURATION: calls taken back from the chunk, per function (owner writes,
     * relaxed; the flush thread reads them at the thread's or the process's end). */
    struct str_elided elided[STR_ELIDED_N];
    struct str_chunk chunks[];
};

/* The chunk th fills, or would fill next if it is between two (handed over its last, waiting
 * for or dropping until the next is written). */
static inline struct str_chunk *str_cur_chunk(struct str_thread *th)
{
    if (str_cfg.policy == STR_FLIGHT)
        return &th->chunks[atomic_load_explicit(&th->cur, memory_order_relaxed)];
    return &th->chunks[atomic_load_explicit(&th->handed, memory_order_relaxed) % th->nchunks];
}

/* Whether the cursor position pos lies inside chunk c (past its start): the thread is filling
 * c, not between two chunks. */
static inline int str_in_chunk(const struct str_chunk *c, uintptr_t pos)
{
    return pos > (uintptr_t)c->base && pos <= (uintptr_t)c->base + str_cfg.chunk_size;
}

/* Discard policy: whether the thread's next chunk is free again (it then leaves its gap). The
 * acquire pairs with the writer's release of `taken` (queue.c). */
static inline int str_next_chunk_free(struct str_thread *th)
{
    if (str_cfg.policy == STR_FLIGHT) {
        uint32_t next = (atomic_load_explicit(&th->cur, memory_order_relaxed) + 1) % th->nchunks;
        return atomic_load_explicit(&th->chunks[next].state, memory_order_acquire) == STR_FREE;
    }
    return atomic_load_explicit(&th->handed, memory_order_relaxed) -
               atomic_load_explicit(&th->taken, memory_order_acquire) <
           th->nchunks;
}

/* ---- buffers.c ---- */
/* Slow path of the hot path: called (through stp_call_preserving_fpu, with a struct
 * str_refill_req: the event's TSC, which becomes the new block's NewCPUId time, and the cursor:
 * the thread's, or a held fork child's fork_cursor) when the cursor's chunk has no room or is
 * missing. On return the cursor's pos/end describe a chunk with room, or pos is 0 (drop); a held
 * fork child's own cursor is left as it is (its end is 0: drop). */
struct str_refill_req {
    uint64_t tsc;
    struct str_cursor *cursor;
};
STR_HIDDEN void str_refill(void *req);
/* The common chunk switch (switch.c), tried first by hot.c when the thread's own cursor has no
 * room: on the hot path's terms, no system call in the common case. 1: the cursor has a new
 * chunk (str_tls.overhead says a switch); 0: str_refill does it. */
STR_HIDDEN int str_fast_switch(struct str_cursor *cur, uint64_t tsc);
/* hot.c, from the outermost level of a held fork child (no level inherited from the parent is
 * left): the child's recording moves from fork_cursor and fork_th to the thread's cursor and
 * str_tls.th, and what was inherited is unmapped. Through stp_call_preserving_fpu, with the
 * asynchronous signals blocked; the argument is unused. */
STR_HIDDEN void str_fork_takeover(void *unused);
/* What buffers.c asks of runtime.c, the module above it: runtime.c hands these to
 * str_buffers_start, and buffers.c names none of runtime.c's functions (no circle).
 *   open: creates this process's trace and sidecar (their names carry the current pid; a fork
 *     child's at its first event); the trace descriptor, or -1 after one message.
 *   syms_finish: appends len bytes of whole lines to the sidecar (reopened by name, if it is
 *     still the file created). Async-signal-safe: system calls only; nothing under a seccomp
 *     filter (str_seccomp_filter), which may kill the process for opening a file.
 *   toggle: switches every sled (SLEDTRACE_TOGGLE_SIGNAL), on the flush thread. */
struct str_outputs {
    int (*open)(char *trace_path, size_t tlen, char *syms_path, size_t slen);
    void (*syms_finish)(const char *text, size_t len);
    void (*toggle)(void);
};
STR_HIDDEN int str_buffers_start(int fd, const char *trace_path, const char *syms_path,
                                 const struct str_outputs *outputs);
STR_HIDDEN void str_fork_prepare(void);
STR_HIDDEN void str_fork_parent(void);
STR_HIDDEN void str_fork_child(void);
STR_HIDDEN void str_buffers_finish(void);
STR_HIDDEN void str_thread_exit(void *th);
/* The calling thread is about to enter SECCOMP_MODE_STRICT: it is retired now (its records go
 * out, it leaves the registry), and from then on drops its events without reading a clock
 * (STR_NEST_STRICT). str_thread_unstrict undoes the mark when entering strict mode failed. */
STR_HIDDEN void str_thread_strict(void);
STR_HIDDEN void str_thread_unstrict(void);
/* SLEDTRACE_MIN_DURATION in clock ticks, 0 while unknown (the flush thread sets it once it has
 * calibrated the clock) or when off. */
STR_HIDDEN extern _Atomic uint64_t str_min_ticks;
/* hot.c, for waits.c: an entry or exit (action) of wait pseudo-function id, the thread on CPU
 * cpu, another than the cursor's: a NewCPUId record (cpu) first. */
STR_HIDDEN void str_event_cpu(uint32_t id, uint32_t action, uint16_t cpu);
/* ---- waits.c ---- */
/* The runtime's own code range (calls from there are the runtime's, never recorded) and
 * SLEDTRACE_WAITS; at start-up, before any event. */
STR_HIDDEN void str_waits_early(void);
/* Resolves every interposed waiting call's libc definition now (the flush thread, at its start);
 * a wrapper called before resolves its own. */
STR_HIDDEN void str_waits_resolve(void);
/* One interposed call in progress (waits.c): begin says whether it is recorded. */
struct str_wait {
    uint32_t id; /* 0: not recorded */
};
STR_HIDDEN int str_wait_begin(struct str_wait *w, unsigned which, const void *ret_addr);
STR_HIDDEN void str_wait_end(struct str_wait *w);
/* The body of an interposed call (waits.c, threads.c): returns `call` (an expression calling
 * libc's definition) made between the entry and the exit of wait `which`'s pseudo-call. The exit
 * is a cancellation cleanup (pthread_cleanup_push: glibc runs it when a cancellation unwinds
 * through here, and pthread_cleanup_pop(1) on the way out). Not the cleanup attribute with
 * -fexceptions: that needs _Unwind_Resume, which made libgcc_s.so.1 a dependency of the runtime,
 * loaded and read by every traced process (about 0.3 ms each). */
STR_HIDDEN void str_wait_cleanup(void *w);
#define STR_WAITING(which, call)                                                                   \
    do {                                                                                           \
        __typeof__(call) r_;                                                                       \
        struct str_wait w_;                                                                        \
        str_wait_begin(&w_, (which), __builtin_return_address(0));                                 \
        pthread_cleanup_push(str_wait_cleanup, &w_);                                               \
        r_ = (call);                                                                               \
        pthread_cleanup_pop(1);                                                                    \
        return r_;                                                                                 \
    } while (0)
/* Whether a futex operation (its op argument) waits: threads.c's syscall() records those. */
STR_HIDDEN int str_wait_futex_op(long op);
/* The sleds were switched on or off (runtime.c): the waits follow. */
STR_HIDDEN void str_waits_switch(int on);
/* Events dropped by strict threads (hot.c), reported at exit. */
STR_HIDDEN extern _Atomic uint64_t str_strict_dropped;
/* Events of threads already retired (run from pthread key destructors), reported at exit. */
STR_HIDDEN extern _Atomic uint64_t str_after_exit_dropped;
/* The calling thread is about to make a clone(CLONE_VM) child that shares its TLS: it is
 * retired and marked (str_tls.shared); str_thread_unshare undoes that when the clone failed. */
STR_HIDDEN void str_thread_share(void);
STR_HIDDEN void str_thread_unshare(void);
/* Events of threads sharing their TLS with a clone child, and of those children (hot.c). */
STR_HIDDEN extern _Atomic uint64_t str_shared_dropped;
/* vfork (vfork.c): before the system call, the calling thread's cursor and str_thread are put
 * aside, so that the child, which runs on this thread's TLS, records into a str_thread of its
 * own (its pid and tid); after it (in the parent, the child having exec'd or ended), the
 * child's records are handed over and the thread's own state is put back. */
STR_HIDDEN void str_vfork_begin(void);
STR_HIDDEN void str_vfork_end(void);
STR_HIDDEN void str_crash_flush(void);
STR_HIDDEN void str_checkpoint(void);
/* sledtrace_flush: writes everything every thread has recorded so far (queued chunks and the
 * committed part of each thread's current one; flight policy: every ring, as a dump) before it
 * returns. 0, or -1 with errno (ENODEV: not tracing here; a write error). Not from a signal
 * handler: it waits for the writer flag and the registry lock. */
STR_HIDDEN int str_flush_now(void);
/* Flight policy: asks the flush thread to write every thread's ring (async-signal-safe). */
STR_HIDDEN void str_request_dump(void);
/* SLEDTRACE_TOGGLE_SIGNAL: asks the flush thread to switch every sled (async-signal-safe); it
 * then calls str_outputs.toggle. */
STR_HIDDEN void str_request_toggle(void);
/* The program's pthread_create or fork failed with EAGAIN or ENOMEM: exited threads' memory is
 * freed now and the flush thread stopped (the process goes on without one); 1 if a retry may
 * succeed (buffers.c). */
STR_HIDDEN int str_reclaim(void);
/* mlockall(MCL_CURRENT) locked the runtime's memory: unlock the threads' pools, their
 * alternate stacks and the flush thread's stack (buffers.c, for memlock.c). */
STR_HIDDEN void str_buffers_munlock(void);
/* limits.c: the memory and task limits the process lives under, read at start-up and again in
 * a fork child (str_limits_read). The thread buffers' budget: str_mem_take counts `bytes` in if
 * they fit (1) or not (0), str_mem_give takes them out; str_mem_short notes a thread that got
 * `got` chunks (0: none) for a cause (0: the budget, STR_SHORT_INDEX: more than STR_MAX_THREADS
 * threads with buffers at once, marks.c, else the mapping's errno); str_mem_report
 * is the exit's one warning about it; str_mem_reset starts a fork child's count at what it
 * holds. str_tasks_tight: the task limits leave little room (*why says which). */
STR_HIDDEN void str_limits_read(void);
STR_HIDDEN int str_mem_take(size_t bytes);
/* slots.c: per-thread memory, [pool | guard page | alternate stack], carved from large
 * regions. str_slot_take: a slot whose pool is `pool` bytes (the first call fixes the size;
 * another size, no room in the budget or no address space: NULL); *was_warm: its pages are as
 * an exited thread left them (else zero). str_slot_give: a slot no thread uses any more; kept
 * warm (past STR_KEEP its pages are given back, in batches). str_slot_stack: the slot's alternate
 * stack. str_slots_warm_bytes: the budget warm slots hold (a fork child's count).
 * str_slots_munlock: unlock every region (memlock.c). Callers block asynchronous signals. */
enum { STR_KEEP = 16 };
STR_HIDDEN void *str_slot_take(size_t pool, int *was_warm);
STR_HIDDEN void str_slot_give(void *slot);
/* Gives back the pages of the warm slots past STR_KEEP (the flush thread, after each pass). */
STR_HIDDEN void str_slots_cool(void);
STR_HIDDEN void str_slot_stack(void *slot, void **stack, size_t *size);
STR_HIDDEN size_t str_slots_warm_bytes(void);
STR_HIDDEN void str_slots_munlock(void);
STR_HIDDEN void str_slots_fork_prepare(void);
STR_HIDDEN void str_slots_fork_parent(void);
STR_HIDDEN void str_slots_fork_child(void);
STR_HIDDEN void str_mem_give(size_t bytes);
enum { STR_SHORT_INDEX = -2, STR_MAX_THREADS = 65536 };
STR_HIDDEN void str_mem_short(unsigned got, int cause);
STR_HIDDEN void str_mem_report(void);
STR_HIDDEN void str_mem_reset(size_t in_use);
STR_HIDDEN int str_tasks_tight(const char **why);
/* Events of threads without buffers (str_tls.nomem), counted by hot.c. */
STR_HIDDEN extern _Atomic uint64_t str_nomem_dropped;
/* memlock.c: the program called mlockall(MCL_FUTURE) (new mappings are locked); unlock a new
 * mapping of the runtime's, or the calling thread's stack, when it is so. */
STR_HIDDEN extern _Atomic int str_mlock_future;
STR_HIDDEN void str_munlock_new(void *addr, size_t len);
STR_HIDDEN void str_munlock_stack(void);
/* tasks.c: fork's retry; resolved at start-up (census.c). */
STR_HIDDEN void str_tasks_early(void);
/* calib.c: the tracer's own cost per pair of records, measured once per process on the calling
 * thread, which must not be recording (its cursor is borrowed), after str_clock_init and before
 * any sled is patched; a fork child keeps its parent's result. Failures are logged at info level
 * only. str_calib_block fills the block every trace starts with (format/stf.h, STF_TYPED_CALIB)
 * for thread tid of process pid and returns its size, or 0 when there is no calibration. */
enum { STR_CALIB_BLOCK = STR_BLOCK_HEAD + 16 + 64 };
STR_HIDDEN void str_calib_measure(void);
STR_HIDDEN size_t str_calib_block(uint8_t b[STR_CALIB_BLOCK], int32_t tid, int32_t pid);
/* threads.c: the program's threads without /proc, and strict seccomp */
STR_HIDDEN void str_threads_early(void);
/* context.c: swapcontext, setcontext, makecontext and getcontext, recorded as context switches
 * (STF_TYPED_CONTEXT); str_context_early resolves glibc's functions once at start-up. */
STR_HIDDEN void str_context_early(void);
/* buffers.c: the process is being traced (or is a fork child that will be at its first event):
 * a relaxed look, for context.c, which records nothing otherwise. */
STR_HIDDEN int str_tracing(void);
/* census.c: what threads.c counts, for buffers.c. str_threads_live: threads created by the
 * program, still running; str_main_exited: the main thread called pthread_exit;
 * str_thread_birth: the calling thread's birth (its pthread_create's sequence number, names.c;
 * 0 for the main thread and threads made otherwise). */
STR_HIDDEN extern _Atomic long str_threads_live;
STR_HIDDEN extern _Atomic int str_main_exited;
STR_HIDDEN extern __thread uint64_t str_thread_birth __attribute__((tls_model("initial-exec")));
STR_HIDDEN void str_census_early(void);
/* The main thread called pthread_exit and every thread the program created has ended. */
STR_HIDDEN int str_threads_alone(void);
/* pthread_create for the runtime's own threads, which the program's count leaves out. */
STR_HIDDEN int str_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);
/* names.c: thread names as the program sets them (pthread_setname_np, prctl PR_SET_NAME). */
STR_HIDDEN void str_names_set(pthread_t t, const char *name);
/* The name given to t after sequence number birth (else the program's). */
STR_HIDDEN void str_names_get(pthread_t t, uint64_t birth, char out[16]);
STR_HIDDEN void str_names_get_unlocked(pthread_t t, uint64_t birth, char out[16]);
/* The next sequence number (taken by pthread_create before the thread exists). */
STR_HIDDEN uint64_t str_names_seq(void);
/* How the process ends, for the sidecar's `exit` line (buffers.c writes it with the final
 * flush): the exit status (exit, _exit), the fatal signal, or an exec. The last call wins. */
enum { STR_END_STATUS = 1, STR_END_SIGNAL = 2, STR_END_EXEC = 3 };
STR_HIDDEN void str_set_end(int kind, int value);
/* threads.c: the program installed a seccomp filter (prctl or the seccomp system call). */
STR_HIDDEN extern _Atomic int str_seccomp_filter;
/* filter.c: SLEDTRACE_FILTER / SLEDTRACE_EXCLUDE / SLEDTRACE_EXCLUDE_FILE. str_filter_keep:
 * whether function `name` of object `lib` (its file's base name) is patched; str_filter_report
 * warns once about each pattern that has matched no function so far. Under the runtime's
 * objs_lock. */
STR_HIDDEN int str_filter_active(void);
/* The names a function is tested under (filter.c, at its top): names[0] = name, then its
 * demangled form and that form without parameters when it is a C++ symbol; how many. The others
 * are allocated: str_filter_names_free. */
STR_HIDDEN size_t str_filter_names(const char *name, char *names[3]);
STR_HIDDEN void str_filter_names_free(char *names[3], size_t n);
/* args.c: SLEDTRACE_ARGS. A function's spec: the integer argument registers it records (1..n,
 * n = spec & STR_ARGS_N), which of them as strings (bit STR_ARGS_STR_SHIFT + k - 1 for argument
 * k), and STR_ARGS_RET for its return value. str_args_mark marks the matching functions of an
 * object about to be patched (their ids: id_base + function id) and returns how many;
 * str_args_spec (hot.c) looks a function's spec up. */
enum { STR_ARGS_N = 7, STR_ARGS_STR_SHIFT = 3, STR_ARGS_RET = 1 << 9, STR_ARGS_STRLEN_MAX = 256 };
struct str_args_table {
    uint32_t mask;
    struct {
        _Atomic uint32_t id; /* 0: empty */
        uint16_t spec;
    } slot[];
};
STR_HIDDEN extern _Atomic(struct str_args_table *) str_args_table;
STR_HIDDEN extern unsigned str_args_strlen; /* SLEDTRACE_ARGS_STRLEN, set before patching */
struct stp_object;
STR_HIDDEN int str_args_active(void);
STR_HIDDEN size_t str_args_mark(struct stp_object *obj, const char *lib, uint32_t id_base);
STR_HIDDEN void str_args_report(void);
STR_HIDDEN int str_filter_keep(const char *lib, const char *name);
STR_HIDDEN void str_filter_report(void);
/* altstack.c: the runtime's alternate signal stack for a traced thread that has none (set up
 * with the thread's buffers, given back at its exit), so that a stack overflow still completes
 * the trace. str_altstack_thread: `stack` (size bytes, a guard page below it: a slot's), or,
 * NULL, one mapped for the thread. str_altstack_thread_exit: disables it; 0 when the thread
 * runs on it (its memory must then never be reused), else 1. */
STR_HIDDEN void str_altstack_thread(void *stack, size_t size);
STR_HIDDEN int str_altstack_thread_exit(void);
/* The calling thread's runtime alternate stack mapping (NULL, 0: none). */
STR_HIDDEN void str_altstack_range(void **map, size_t *len);
/* signals.c */
/* Resolves what the signal paths call later (the interposed longjmp family's targets), so that
 * they never call dlsym from a handler. Called once at start-up, before any tracing. */
STR_HIDDEN void str_signals_early(void);
STR_HIDDEN void str_signals_install(void);
STR_HIDDEN void str_signals_before_exec(void);
/* Moves cursor c's side-ring entries into its chunk; its outermost level only (hot.c). */
STR_HIDDEN void str_drain_side(struct str_cursor *c);
/* sanitizers.c: a sanitizer in the process the runtime cannot run beside (ThreadSanitizer,
 * MemorySanitizer): its name, else NULL; str_sanitizer_why says why, for the one message.
 * str_sanitizer_death_hook: an error report of AddressSanitizer or UBSan that ends the process
 * (the sanitizer's own exit system call) completes the trace first. */
STR_HIDDEN const char *str_sanitizer_unsupported(void);
STR_HIDDEN const char *str_sanitizer_why(const char *name);
STR_HIDDEN void str_sanitizer_death_hook(void);
/* deepbind.c: objects loaded by a dlopen with RTLD_DEEPBIND bind the functions the runtime
 * interposes to libc's; str_deepbind_fix points their GOT slots back at the runtime's.
 * str_deepbind_loads: the dynamic loader's count of objects loaded so far (taken before the
 * dlopen, to tell which objects it loaded). Under runtime.c's objs_lock. */
STR_HIDDEN unsigned long long str_deepbind_loads(void);
STR_HIDDEN void str_deepbind_fix(void *handle, unsigned long long loads_before);

#endif
