/* The end of a trace: the final flush, the crash path's emergency write, the sidecar's end and
 * the exit's loss report (part of the buffers module: buffers.c lists its files).
 *
 * Exit. str_buffers_finish() (buffers.c, called once, from the exit path) stops the flush thread,
 * then str_final_flush writes what is handed over and, for every registered thread, the committed part
 * of its current chunk, then rewrites the header with the TSC frequency calibrated over the whole
 * run. When the main thread has called pthread_exit and every other thread has exited, the
 * flush thread does the same itself and ends (flusher.c), so that glibc's last-thread exit(0) is
 * not held up by it. A fatal signal (or a checkpoint) writes everything with str_emergency_write,
 * which is async-signal-safe: no lock is waited for, nothing is allocated or logged.
 *
 * State. The state machine (`state`, ST_*), whether the process is solo (flusher.c), the
 * services of runtime.c (`outputs`) and the exited threads' counts and names are defined here,
 * the lowest file that uses them; bufs.h says who writes and reads each. `state` and `solo` are
 * seq_cst where the flush thread's sleep and end depend on them, else as each use says.
 * All of it runs under the writer flag (trace_file.c). Calls queue.c, marks.c, trace_file.c, freq.c.
 */
#include "str.h"

#include <errno.h>
#include "stf.h"
#include "bufs.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

_Atomic int str_state = ST_OFF;
/* runtime.c's services (str.h), set by str_buffers_start before the flush thread exists. */
struct str_outputs str_outs;
/* Events lost by exited threads: side-ring overflows and events that found no buffer. Added to
 * at thread exit, read at the final flush. */
_Atomic uint64_t str_exited_lost_nested, str_exited_dropped, str_exited_discarded;
/* Solo (flusher.c): no flush thread. */
_Atomic int str_solo;

/* ---- the sidecar's end: how the process ended, and its threads' names ----
 * A thread's name (names.c) is taken when it is retired, and for the threads still running
 * at the end; the final flush (or the crash path) appends an `exit` line and one
 * `thread<TAB>pid<TAB>tid<TAB>name` line per traced thread to the sidecar. No allocation and
 * no stdio: the crash path runs it from a signal handler. */
struct str_named str_named[MAX_NAMED]; /* exited threads, under the registry lock */
size_t str_nnamed;
_Atomic int str_end_kind;
static _Atomic int end_value;

void str_set_end(int kind, int value)
{
    atomic_store_explicit(&end_value, value, memory_order_relaxed);
    atomic_store_explicit(&str_end_kind, kind, memory_order_relaxed);
}

/* Appends "prefix" + a decimal to p. */
static char *put_dec(char *p, const char *prefix, int64_t v)
{
    while (*prefix)
        *p++ = *prefix++;
    char d[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do
        d[n++] = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = d[--n];
    return p;
}

static char *put_thread(char *p, int32_t pid, int32_t tid, const char *name)
{
    p = put_dec(p, "thread\t", pid);
    p = put_dec(p, "\t", tid);
    *p++ = '\t';
    for (size_t i = 0; i < 15 && name[i]; i++)
        *p++ = name[i];
    *p++ = '\n';
    return p;
}

/* with_registry: the caller holds the registry lock (the live threads' names can be read). */
static void sidecar_end(int with_registry, int crash)
{
    static char buf[64 + (MAX_NAMED + 256) * 48];
    char *p = buf, *end = buf + sizeof buf - 64;
    switch (atomic_load_explicit(&str_end_kind, memory_order_relaxed)) {
    case STR_END_STATUS:
        p = put_dec(p, "exit\tstatus\t", atomic_load_explicit(&end_value, memory_order_relaxed));
        *p++ = '\n';
        break;
    case STR_END_SIGNAL:
        p = put_dec(p, "exit\tsignal\t", atomic_load_explicit(&end_value, memory_order_relaxed));
        *p++ = '\n';
        break;
    case STR_END_EXEC:
        memcpy(p, "exit\texec\n", 10);
        p += 10;
        break;
    }
    for (size_t i = 0; i < str_nnamed && p < end; i++)
        p = put_thread(p, str_named[i].pid, str_named[i].tid, str_named[i].name);
    for (struct str_thread *th = with_registry ? str_registry : NULL; th && p < end;
         th = th->next) {
        char name[16];
        if (crash)
            str_names_get_unlocked(th->self, th->birth, name);
        else
            str_names_get(th->self, th->birth, name);
        p = put_thread(p, th->pid, th->tid, name);
    }
    if (str_outs.syms_finish)
        str_outs.syms_finish(buf, (size_t)(p - buf));
}

/* CPU time the flush thread used, noted as it ends (reported at the info level: what tracing
 * costs beyond the traced threads' own time). */
uint64_t str_flusher_cpu_ns;

static void final_flush_writes(void);

/* Writes everything left and finalises the file. The flush thread is not running (or is the
 * caller); the state is ST_STOPPING. */
void str_final_flush(void)
{
    struct str_xfsz_guard g;
    str_xfsz_block(&g);
    str_writer_take_for(0);
    final_flush_writes();
    str_writer_give();
    str_xfsz_unblock(&g);
}

/* Writes everything handed over and every thread's committed records, and the header with the
 * frequency calibrated so far. Async-signal-safe: no lock is waited for (the registry is only
 * tried: the interrupted thread may hold it), no thread is joined, nothing is allocated or
 * logged. The caller holds the writer flag. */
void str_emergency_write(void)
{
    struct str_xfsz_guard g;
    str_xfsz_block(&g);
    atomic_store_explicit(&str_dying, 1, memory_order_relaxed);
    str_write_marked();
    int locked = pthread_mutex_trylock(&str_registry_lock) == 0;
    str_flushing_whole = 1; /* the process is about to die: nothing will be taken back */
    if (locked)
        str_flush_committed_locked(NULL);
    for (struct str_thread *th = locked ? str_registry : NULL; th; th = th->next)
        str_write_elided_block(th);
    sidecar_end(locked, 1);
    if (locked)
        pthread_mutex_unlock(&str_registry_lock);
    str_write_marked();
    str_write_header(str_calibrate(0, 0));
    str_xfsz_unblock(&g);
}

static void report_losses(const struct str_losses *lost, uint64_t dropped)
{
    uint64_t late = atomic_load_explicit(&str_after_exit_dropped, memory_order_relaxed);
    if (late)
        str_log(STR_WARN,
                "trace incomplete: %llu events recorded by threads after the runtime retired them "
                "(code run from pthread key destructors, or signal handlers while it exited) were "
                "not recorded",
                (unsigned long long)late);
    if (str_capped && str_floor_hit) /* the run's own limit: in the trace, not on stderr */
        str_log(STR_INFO,
                "trace incomplete: it stopped when the disk's free space fell to %llu bytes "
                "(half of it when the run started); %llu events after that were not written (a "
                "loss marker at its end says so)",
                (unsigned long long)str_disk_floor, (unsigned long long)str_capped_events);
    else if (str_capped)
        str_log(STR_WARN,
                "trace incomplete: it stopped at SLEDTRACE_MAX_SIZE (%llu bytes); %llu events "
                "after that were not written (a loss marker at its end says so)",
                (unsigned long long)str_max_size, (unsigned long long)str_capped_events);
    uint64_t shared = atomic_load_explicit(&str_shared_dropped, memory_order_relaxed);
    if (shared)
        str_log(STR_WARN,
                "trace incomplete: %llu events were not recorded: a thread made a "
                "clone(CLONE_VM) child without CLONE_SETTLS, which shares its TLS; neither "
                "is traced from that clone on",
                (unsigned long long)shared);
    uint64_t strict = atomic_load_explicit(&str_strict_dropped, memory_order_relaxed);
    if (strict)
        str_log(STR_WARN,
                "trace incomplete: %llu events of threads in strict seccomp mode were not "
                "recorded (the kernel denies them the clock)",
                (unsigned long long)strict);
    /* each cause only when it happened: no "0 events ..." clause */
    if (lost->lost_nested)
        str_log(STR_WARN,
                "trace incomplete: %llu events recorded by signal handlers while their thread "
                "was stalled inside the tracer were lost (side ring full)",
                (unsigned long long)lost->lost_nested);
    if (dropped)
        str_log(STR_WARN, "trace incomplete: %llu events found no buffer",
                (unsigned long long)dropped);
    if (lost->discarded && str_cfg.policy == STR_DISCARD)
        str_log(STR_WARN, "discard policy: %llu events dropped; the trace marks each gap",
                (unsigned long long)lost->discarded);
    else if (lost->discarded)
        str_log(STR_WARN,
                "trace incomplete: %llu events of vfork children were dropped (their chunks were "
                "all full, and without a flush thread only their parent could write them); the "
                "trace marks each gap",
                (unsigned long long)lost->discarded);
    str_mem_report();
}

static void final_flush_writes(void)
{
    struct str_tls *t = &str_tls;
    struct str_losses lost = {
        atomic_load_explicit(&str_exited_lost_nested, memory_order_relaxed),
        atomic_load_explicit(&str_exited_discarded, memory_order_relaxed),
    };
    uint64_t dropped = t->dropped + atomic_load_explicit(&str_exited_dropped, memory_order_relaxed);
    str_write_marked();
    str_flushing_whole = 1; /* the end: what the threads still running do next is not recorded */
    str_flush_committed(&lost);
    str_write_marked();
    pthread_mutex_lock(&str_registry_lock);
    sidecar_end(1, 0);
    pthread_mutex_unlock(&str_registry_lock);
    if (str_capped) {
        str_over_cap = 1; /* the marker goes past the cap by its 96 bytes */
        str_capped = 0;
        str_write_loss_block(str_pid, str_capped_events);
        str_capped = 1;
    }
    atomic_store_explicit(&str_state, ST_DONE, memory_order_seq_cst);
    if (str_chunks_written == 0) {
        /* Nothing was recorded, or nothing could be written (a full disk: issue 27.6): no file
         * is left, neither a header alone nor an empty sidecar. Events lost on the way are
         * still said (below); a disk without room is the trace's to say only when the process
         * recorded something (every process of a run on that disk would say it). */
        str_close_trace_fd();
        unlink(str_trace_path);
        unlink(str_syms_path);
        int full = str_write_error == ENOSPC || str_write_error == EDQUOT || str_floor_hit;
        str_log(!full && (lost.lost_nested || dropped || str_write_error) ? STR_WARN : STR_INFO,
                "no events %s; removed %s", full ? "written (no room on the disk)" : "recorded",
                str_trace_path);
        if (!full)
            report_losses(&lost, dropped);
        return;
    }
    /* The whole run's interval, without waiting: each clock read is bracketed within ~50 ns,
     * so even a run of 1 ms gets a frequency good to ~100 ppm, finer than anything it can time
     * (a 10 us call is off by 1 ns); plausible() checks it against the references it has.
     * Waiting for 2 ms of interval, as before (20 ms before that), held up the exit of every
     * short traced process (a shell's every command) by up to that much (issue 24.3). */
    uint64_t freq = str_calibrate(0, 1);
    str_write_header(freq);
    if (atomic_load_explicit(&str_solo, memory_order_relaxed) && !str_flusher_cpu_ns)
        str_log(STR_INFO, "trace: %llu bytes in %llu blocks, TSC %llu Hz; no flush thread",
                (unsigned long long)str_bytes_written, (unsigned long long)str_chunks_written,
                (unsigned long long)freq);
    else
        str_log(STR_INFO,
                "trace: %llu bytes in %llu blocks, TSC %llu Hz; the flush thread used %.1f ms "
                "of CPU",
                (unsigned long long)str_bytes_written, (unsigned long long)str_chunks_written,
                (unsigned long long)freq, (double)str_flusher_cpu_ns / 1e6);
    if (str_write_error)
        str_log(STR_ERROR, "trace incomplete: %llu bytes not written: %s",
                (unsigned long long)str_bytes_lost, strerror(str_write_error));
    report_losses(&lost, dropped);
    str_close_trace_fd();
}
