/* The trace file: its descriptor, the one writer at a time, the blocks the runtime writes
 * (a chunk or its continuation, a loss marker, elided calls), the header, the size cap
 * (part of the buffers module: buffers.c lists its files).
 *
 * Blocks. Every block is appended whole or not at all (write_block cuts a partial one off
 * again), so the file always ends on a block boundary and stays readable; str_bytes_written is the
 * file's size (the runtime only appends, and rewrites the header in place). After the first
 * failed write, later ones are only counted as lost (str_write_error is sticky). Past
 * SLEDTRACE_MAX_SIZE nothing more is written and the events left out are counted.
 *
 * The descriptor is the program's to take (dup2, close_range): it is checked before each use,
 * and the trace reopened by its path when it no longer names it (trace_fd_ours).
 *
 * Threads and memory ordering. Everything here but str_begin_file runs under the writer flag: the
 * flush thread, a solo thread (flusher.c), sledtrace_flush, the final flush or the crash path.
 * The flag is taken with an acquire CAS and given back with a release store that pairs with the
 * next taker's acquire, passing the file offset, the counters and the cap between writers.
 * str_begin_file runs before the process has a flush thread (start-up, a fork child's first event).
 * The SIGXFSZ guard (str_xfsz_block) is for a writer that is one of the program's threads.
 * Calls no other file of the module; reads freq.c's estimate (continuation blocks).
 */
#include "str.h"
#include "stf.h"
#include "bufs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int str_trace_fd = -1;
char str_trace_path[4096], str_syms_path[4096];
static struct stat trace_st;
uint64_t str_bytes_written, str_bytes_lost, str_chunks_written;
int str_write_error;
/* Without SLEDTRACE_MAX_SIZE: the disk's free space must not fall below str_disk_floor (0: no
 * floor): half of what was free when the run started (SLEDTRACE_DISK_FLOOR, which `sledtrace
 * run` sets once for every process of its run), else half of what was free when this process
 * started. Every block's write first asks the file system (one fstatvfs: the flush thread's, never
 * the hot path's); so processes writing at the same time, each stopping at a floor above zero,
 * never fill the disk together (issue 27.6: each capped its own trace at half the free space it
 * saw, and a suite's processes filled an 8 GB disk). str_floor_hit: the trace stopped there. */
uint64_t str_disk_floor;
int str_floor_hit;

/* SLEDTRACE_MAX_SIZE: past str_max_size (0: none) nothing more is written; the events of what was
 * not written are counted (str_capped_events) and a loss marker says so at the end. */
uint64_t str_max_size, str_capped_events;
int str_capped, str_over_cap;
uint32_t str_header_bits;
int32_t str_pid;
/* The header carries a first frequency estimate (5 ms after start-up); under the writer flag. */
int str_freq_written;

/* One writer of the file at a time: the flush thread, the final flush, or the crash path.
 * Taken with an acquire CAS, given back with a release store that pairs with the next taker's
 * acquire (the file offset and the counters pass between them). The crash path waits for it a
 * bounded time and never gives it back: the process is about to die. */
_Atomic int str_writer;

int str_writer_take_for(unsigned ms)
{
    for (unsigned waited = 0;; waited++) {
        int expect = 0;
        if (atomic_compare_exchange_weak_explicit(&str_writer, &expect, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return 1;
        if (ms && waited >= ms * 10)
            return 0;
        pause_ns(100000);
    }
}

void str_writer_give(void)
{
    atomic_store_explicit(&str_writer, 0, memory_order_release);
}

/* The trace's descriptor is the program's to take: it may dup2 a file of its own onto that
 * number, or close every descriptor (close_range). Before each use the runtime checks that the
 * number still names its file (device and inode); when it does not, that number is never
 * touched again (no write, no close) and the trace is reopened by its path, at the offset it
 * had reached, into a fresh number at the top of the range. */
static int fd_still_ours(void)
{
    struct stat st;
    return str_trace_fd >= 0 && fstat(str_trace_fd, &st) == 0 && st.st_dev == trace_st.st_dev &&
           st.st_ino == trace_st.st_ino;
}

/* 0 when str_trace_fd names the trace (again), -1 when it cannot. */
static int trace_fd_ours(void)
{
    if (fd_still_ours())
        return 0;
    str_trace_fd = -1;
    int fd = open(str_trace_path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != trace_st.st_dev || st.st_ino != trace_st.st_ino ||
        lseek(fd, (off_t)str_bytes_written, SEEK_SET) != (off_t)str_bytes_written) {
        close(fd);
        return -1;
    }
    str_trace_fd = str_fd_high(fd);
    str_log(STR_INFO, "the trace's descriptor was taken over by the program; reopened %s",
            str_trace_path);
    return 0;
}

/* Closes the trace's descriptor if it still names the trace. */
void str_close_trace_fd(void)
{
    if (fd_still_ours())
        close(str_trace_fd);
    str_trace_fd = -1;
}

/* Appends len bytes; returns 0, or -1 after the first failure (sticky: later writes are only
 * counted as lost). str_bytes_written is the file size: the runtime only appends (and rewrites the
 * header in place). */
static int write_all(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    if (str_write_error) {
        str_bytes_lost += len;
        return -1;
    }
    if (trace_fd_ours() != 0) {
        str_write_error = EBADF;
        str_bytes_lost += len;
        return -1;
    }
    while (len > 0) {
        ssize_t n = write(str_trace_fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            str_write_error = n < 0 ? errno : EIO;
            str_bytes_lost += len;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        str_bytes_written += (uint64_t)n;
    }
    return 0;
}

/* Events in [p, p + len) of what the runtime writes: function records and custom/typed events
 * count one each, a loss marker the events it stands for; block headers none. */
static uint64_t events_in(const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint64_t n = 0;
    while (p < end) {
        if (!(p[0] & 1)) {
            uint32_t w;
            memcpy(&w, p, 4);
            n += !stf_tracer_name(w >> 4); /* the tracer's own pseudo-calls are not events */
            p += STF_FUNC_SIZE;
            continue;
        }
        unsigned kind = p[0] >> 1;
        if (kind == STF_M_CUSTOM_EVENT || kind == STF_M_TYPED_EVENT) {
            int32_t size;
            memcpy(&size, p + 1, 4);
            size_t sz = size > 0 ? (size_t)size : 0;
            uint64_t lost;
            if (sz > (size_t)(end - p) - STF_META_SIZE)
                break;
            n += kind == STF_M_CUSTOM_EVENT && stf_decode_loss(p + STF_META_SIZE, sz, &lost) ? lost
                                                                                             : 1;
            p += sz;
        }
        p += STF_META_SIZE;
    }
    return n;
}

/* Writes one block from two pieces. A block that cannot be written whole (disk full, file size
 * limit) is cut off again, so the file always ends on a block boundary and stays readable. */
/* Would writing n more bytes take the disk's free space below the floor? */
static int below_floor(uint64_t n)
{
    struct statvfs vfs;
    /* under a seccomp filter fstatfs may kill the process (threads.c): the floor is not asked */
    if (!str_disk_floor || str_over_cap ||
        atomic_load_explicit(&str_seccomp_filter, memory_order_relaxed) ||
        fstatvfs(str_trace_fd, &vfs) != 0)
        return 0;
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    return avail < str_disk_floor + n;
}

static int write_block(const void *a, size_t alen, const void *b, size_t blen)
{
    if (!str_capped && below_floor(alen + blen)) {
        str_capped = str_floor_hit = 1;
        str_log(STR_INFO,
                "the disk's free space reached the run's floor (%llu bytes): nothing more "
                "is written to the trace",
                (unsigned long long)str_disk_floor);
    }
    if (str_capped ||
        (str_max_size && !str_over_cap && str_bytes_written + alen + blen > str_max_size)) {
        if (!str_capped)
            str_log(STR_WARN,
                    "the trace reached SLEDTRACE_MAX_SIZE (%llu bytes): nothing more is "
                    "written; the program runs on, and the events left out are counted",
                    (unsigned long long)str_max_size);
        str_capped = 1;
        str_capped_events += events_in(a, alen) + events_in(b, blen);
        return -1;
    }
    uint64_t start = str_bytes_written;
    if (write_all(a, alen) == 0 && (blen == 0 || write_all(b, blen) == 0))
        return 0;
    if (str_bytes_written > start && fd_still_ours() &&
        ftruncate(str_trace_fd, (off_t)start) == 0) {
        str_bytes_lost += str_bytes_written - start;
        str_bytes_written = start;
    }
    return -1;
}

/* TSC after the records in [p, end) of a chunk, starting from `tsc`: function records add their
 * delta; TSCWrap and NewCPUId set it. Only what the runtime itself writes can be there. */
static uint64_t tsc_after(const uint8_t *p, const uint8_t *end, uint64_t tsc)
{
    while (p < end) {
        if (!(p[0] & 1)) {
            uint32_t d;
            memcpy(&d, p + 4, 4);
            tsc += d;
            p += STF_FUNC_SIZE;
            continue;
        }
        unsigned kind = p[0] >> 1;
        if (kind == STF_M_TSC_WRAP) {
            memcpy(&tsc, p + 1, 8);
        } else if (kind == STF_M_NEW_CPU) {
            memcpy(&tsc, p + 3, 8);
        } else if (kind == STF_M_CUSTOM_EVENT || kind == STF_M_TYPED_EVENT) {
            /* v5: size and TSC delta; the payload follows (loss markers are custom events). */
            int32_t size, delta;
            memcpy(&size, p + 1, 4);
            memcpy(&delta, p + 5, 4);
            tsc += (uint64_t)(int64_t)delta;
            p += size > 0 ? (size_t)size : 0;
        }
        p += STF_META_SIZE;
    }
    return tsc;
}

/* Writes the bytes of chunk `c` (of thread `th`) below `upto` that are not in the file yet. The
 * first piece is the chunk itself as a block (BufferExtents, its own NewBuffer, Walltime, Pid and
 * NewCPUId, then records). A later piece gets a header of its own: NewBuffer, a Walltime derived
 * from the chunk's by the TSC elapsed, Pid, and a NewCPUId carrying the TSC of the last record
 * already written, so that its first delta applies. */
void str_write_chunk(struct str_thread *th, struct str_chunk *c, size_t upto)
{
    uint8_t *base = c->base;
    if (upto <= STR_BLOCK_HEAD || upto <= c->flushed)
        return;
    uint64_t start_tsc;
    memcpy(&start_tsc, base + 64 + 3, 8); /* the chunk's NewCPUId */
    if (c->flushed == 0) {
        stf_meta_u64(base, STF_M_BUFFER_EXTENTS, upto - STF_META_SIZE);
        write_block(base, upto, NULL, 0);
        c->flushed_tsc = tsc_after(base + STR_BLOCK_HEAD, base + upto, start_tsc);
    } else {
        uint8_t h[STR_BLOCK_HEAD];
        stf_meta_u64(h, STF_M_BUFFER_EXTENTS, STR_BLOCK_HEAD - STF_META_SIZE + upto - c->flushed);
        stf_meta_new_buffer(h + 16, th->tid);
        int64_t sec;
        uint32_t usec;
        memcpy(&sec, base + 32 + 1, 8);
        memcpy(&usec, base + 32 + 9, 4);
        uint64_t us = (uint64_t)sec * 1000000u + usec;
        if (str_freq_estimate >= 1000000u)
            us += (c->flushed_tsc - start_tsc) / (str_freq_estimate / 1000000u);
        stf_meta_walltime(h + 32, (int64_t)(us / 1000000u), (uint32_t)(us % 1000000u));
        memcpy(h + 48, base + 48, STF_META_SIZE); /* Pid */
        uint16_t cpu;
        memcpy(&cpu, base + 64 + 1, 2);
        stf_meta_new_cpu(h + 64, cpu, c->flushed_tsc);
        write_block(h, sizeof h, base + c->flushed, upto - c->flushed);
        c->flushed_tsc = tsc_after(base + c->flushed, base + upto, c->flushed_tsc);
    }
    c->flushed = upto;
    str_chunks_written++;
}

/* At the end, a thread still inside a gap (discard policy) gets a block of its own holding just
 * the loss marker, so the trace says where its records stop. */
void str_write_loss_block(int32_t tid, uint64_t lost)
{
    uint8_t b[STR_BLOCK_HEAD + STF_LOSS_SIZE];
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    stf_meta_u64(b, STF_M_BUFFER_EXTENTS, sizeof b - STF_META_SIZE);
    stf_meta_new_buffer(b + 16, tid);
    stf_meta_walltime(b + 32, wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
    stf_meta_pid(b + 48, str_pid);
    stf_meta_new_cpu(b + 64, 0, str_now());
    stf_encode_loss(b + STR_BLOCK_HEAD, lost);
    if (write_block(b, sizeof b, NULL, 0) == 0)
        str_chunks_written++;
}

void str_write_gap_block(struct str_thread *th)
{
    str_write_loss_block(th->tid, th->gap);
}

void str_write_header(uint64_t freq)
{
    uint8_t h[STF_HEADER_SIZE];
    struct stf_header hd = {STF_VERSION, STF_TYPE_FDR, str_header_bits, freq, str_cfg.chunk_size};
    stf_encode_header(h, &hd);
    if (trace_fd_ours() != 0) {
        if (!str_write_error)
            str_write_error = EBADF;
        return;
    }
    if (pwrite(str_trace_fd, h, sizeof h, 0) != (ssize_t)sizeof h && !str_write_error)
        str_write_error = errno ? errno : EIO;
}

/* A block of its own for th's elided calls (SLEDTRACE_MIN_DURATION): one typed event
 * (STF_TYPED_ELIDED) listing, per function, how many calls were taken back and their time. At
 * the thread's end (its last chunk written) or the process's (every live thread); the owner
 * may still be adding to the table then (a thread running at exit): its last few calls can be
 * missing. Async-signal-safe (the crash path): a buffer on the stack, no allocation. */
void str_write_elided_block(struct str_thread *th)
{
    enum { ROOM = STF_ELIDED_ENTRY * STR_ELIDED_N };
    uint8_t b[STR_BLOCK_HEAD + 16 + ROOM];
    size_t n = 0;
    for (unsigned i = 0; i < STR_ELIDED_N; i++) {
        uint32_t id = atomic_load_explicit(&th->elided[i].id, memory_order_relaxed);
        uint32_t count = atomic_load_explicit(&th->elided[i].count, memory_order_relaxed);
        if (!id || !count)
            continue;
        uint64_t ticks = atomic_load_explicit(&th->elided[i].ticks, memory_order_relaxed);
        stf_encode_elided(b + STR_BLOCK_HEAD + 16 + n * STF_ELIDED_ENTRY, id, count, ticks);
        n++;
    }
    if (!n)
        return;
    size_t len = n * STF_ELIDED_ENTRY;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t tsc = str_now();
    stf_meta_u64(b, STF_M_BUFFER_EXTENTS, STR_BLOCK_HEAD + 16 + len - STF_META_SIZE);
    stf_meta_new_buffer(b + 16, th->tid);
    stf_meta_walltime(b + 32, wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
    stf_meta_pid(b + 48, th->pid);
    stf_meta_new_cpu(b + 64, 0, tsc);
    uint8_t *m = b + STR_BLOCK_HEAD;
    memset(m, 0, 16);
    m[0] = (uint8_t)((STF_M_TYPED_EVENT << 1) | 1u);
    uint32_t size = (uint32_t)len;
    uint16_t type = STF_TYPED_ELIDED;
    memcpy(m + 1, &size, 4); /* TSC delta 0: at the block's NewCPUId time */
    memcpy(m + 9, &type, 2);
    if (write_block(b, STR_BLOCK_HEAD + 16 + len, NULL, 0) == 0)
        str_chunks_written++;
}

/* Takes over a freshly created trace file: resets the counters and writes a provisional header
 * (frequency unknown yet), which moves the file offset past itself; blocks are appended after it
 * and the header is rewritten in place with pwrite at the end. */
int str_begin_file(int fd, const char *path, const char *spath)
{
    str_trace_fd = fd;
    if (fstat(fd, &trace_st) != 0)
        return -1;
    snprintf(str_trace_path, sizeof str_trace_path, "%s", path);
    snprintf(str_syms_path, sizeof str_syms_path, "%s", spath);
    str_pid = (int32_t)getpid();
    str_bytes_written = str_bytes_lost = str_chunks_written = 0;
    str_write_error = 0;
    str_capped = str_over_cap = 0;
    str_capped_events = 0;
    str_freq_written = 0;
    str_max_size = str_cfg.max_size;
    str_disk_floor = 0;
    str_floor_hit = 0;
    struct statvfs vfs;
    if (!str_cfg.max_size_set) {
        const char *e = getenv("SLEDTRACE_DISK_FLOOR");
        char *end;
        unsigned long long f = e && *e ? strtoull(e, &end, 10) : 0;
        if (e && *e && !*end)
            str_disk_floor = f;
        else if (fstatvfs(fd, &vfs) == 0)
            str_disk_floor = (uint64_t)vfs.f_bavail * vfs.f_frsize / 2;
    }
    uint8_t h[STF_HEADER_SIZE];
    struct stf_header hd = {STF_VERSION, STF_TYPE_FDR, str_header_bits, 0, str_cfg.chunk_size};
    stf_encode_header(h, &hd);
    write_all(h, sizeof h);
    /* The tracer's own cost (calib.c) in a block of its own, first; not counted as a chunk, so
     * that a run that recorded nothing still leaves no file. */
    uint8_t cb[STR_CALIB_BLOCK];
    if (str_calib_block(cb, (int32_t)syscall(SYS_gettid), str_pid))
        write_block(cb, sizeof cb, NULL, 0);
    return 0;
}

/* The final flush runs in one of the program's threads (exit, _exit, exec). A write past a file
 * size limit must not kill the program with SIGXFSZ there: the signal is blocked around the
 * writes, and one that they raised (none was pending before) is consumed. */

void str_xfsz_block(struct str_xfsz_guard *g)
{
    struct rlimit rl;
    g->active = getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur != RLIM_INFINITY;
    if (!g->active)
        return;
    sigset_t s, pend;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &s, &g->old);
    sigpending(&pend);
    g->was_pending = sigismember(&pend, SIGXFSZ);
}

void str_xfsz_unblock(struct str_xfsz_guard *g)
{
    if (!g->active)
        return;
    sigset_t s, pend;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    sigpending(&pend);
    if (!g->was_pending && sigismember(&pend, SIGXFSZ)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&s, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}
