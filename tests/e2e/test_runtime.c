/* End-to-end tests of the runtime's life cycle (same harness as test_e2e.c, e2e.c helpers):
 *
 *  - threads: 400 short-lived threads in 20 rounds of 20, every event of every thread in the
 *    trace; the ~1 MiB each traced thread is given comes back when it exits (the program
 *    measures its own VmRSS); 64 threads alive at once (threads64 in test_e2e.c).
 *  - files: an output directory that cannot be created; a file system that fills up during the
 *    run (RLIMIT_FSIZE, which works unprivileged, and a small tmpfs in a private mount
 *    namespace when the test may create one). The program must run as it would untraced, one
 *    message must say what was lost, and what was written must still be a valid trace.
 *  - configuration: SLEDTRACE_LOG=error silences warnings, debug says at least what info says.
 *
 * Tests marked REGRESSION failed when written, because of a runtime defect since fixed; their
 * comment says which.
 *
 * meson passes E2E_DIR, E2E_PRELOAD, E2E_LLVM_XRAY and E2E_SLEDTRACE (the command). */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

/* Value of the first line "<key> <n>" of text; -1 if there is none. */
static long keyed(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
            return strtol(p + kl + 1, NULL, 10);
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* Runs `sledtrace ARGS` through a script (e2e_run passes a single argument). */

/* `sledtrace info` and `sledtrace dump --verify` both accept the trace. */
static void check_tools_accept(const char *work, const char *trace)
{
    struct e2e_run r;
    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' info '%s'", trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
              "sledtrace info %s: status %#x\n%s%s", trace, r.status, r.out, r.err);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' dump '%s' --verify", trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
              "sledtrace dump --verify %s: status %#x\n%s", trace, r.status, r.err);
    e2e_run_free(&r);
}

/* ---- threads --------------------------------------------------------------------------------- */

/* 400 threads, 20 at a time: each one's calls are all in the trace, from its first to its exit
 * (exact counts per function and per thread, 401 distinct thread ids, balanced stacks). */
static void check_churn_counts(const char *bin)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x:\n%s", t.status,
              t.out);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    cr_assert_eq(e.threads, 401);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    e2e_check_trace(tr, &e, bin);
    free(tr);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(churn, threads400_pie_no_runtime)
{
    check_churn_counts(BIN("churn-pie-nort"));
}
Test(churn, threads400_nopie_xray_runtime)
{
    check_churn_counts(BIN("churn-nopie-rt"));
}
/* Small pools: each of the 400 threads waits for the flush thread on its way. */
Test(churn, threads400_small_buffers)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = BIN("churn-pie-nort"),
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_BUFFER_KB=4", "SLEDTRACE_BUFFERS=2"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    e2e_trace_path(trace, sizeof trace, out, s.prog, t.pid, "fdr");
    e2e_check_printed(trace, t.out, "churn, 4 KiB x 2");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Memory: with 16 chunks of 256 KiB a traced thread has 4 MiB of address space from its first
 * event until the flush thread has written its last chunk, of which only what it has used is
 * resident: for churn's threads, which record a few hundred events, the first 16 KiB of its
 * first chunk and its bookkeeping (about 24 KiB in all). The program measures its VmRSS before
 * the first thread, while the 20 threads of round 0 are alive, and after the 400th has exited
 * (it polls for up to 2 s). A thread's memory not given back would leave ~10 MiB (at most 16
 * exited threads' slots are kept warm for reuse, preload/slots.c); pools populated whole (as before issue 23.13)
 * would make 80 MiB live. */
static void check_churn_memory(const char *bin, const char *env)
{
    char work[PATH_MAX], out[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {
        .prog = bin, .preload = 1, .outdir = out, .env = {"SLEDTRACE_BUFFER_KB=256", env}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    long before = keyed(t.out, "rss_kb_before"), live = keyed(t.out, "rss_kb_live"),
         after = keyed(t.out, "rss_kb_after");
    cr_assert(before > 0 && live > 0 && after > 0, "no VmRSS figures:\n%s", t.out);
    /* The measurement sees the tracing memory at all: 20 live traced threads hold >= 320 KiB
     * of first chunks... */
    cr_assert_geq(live - before, 300,
                  "VmRSS grew by only %ld KiB with 20 traced threads alive: the test cannot see "
                  "per-thread memory",
                  live - before);
    /* ...but only the chunk each has used, not its 4 MiB pool. */
    cr_assert_lt(live - before, 20 * 1024,
                 "VmRSS grew by %ld KiB with 20 traced threads alive: their pools are resident "
                 "whole",
                 live - before);
    cr_assert_lt(after - before, 4 * 1024,
                 "VmRSS grew by %ld KiB across 400 traced threads (before %ld, with 20 alive %ld, "
                 "after %ld KiB): thread memory is not given back",
                 after - before, before, live, after);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(churn, memory_returned_pie)
{
    check_churn_memory(BIN("churn-pie-nort"), NULL);
}
Test(churn, memory_returned_nopie_xray_runtime)
{
    check_churn_memory(BIN("churn-nopie-rt"), NULL);
}

/* Issue 24.2: 1000 threads alive at once, 100 calls each (liveprog.c): the runtime's memory is
 * in proportion to what they record, not 1 MiB of chunks (nor a whole first chunk) per thread.
 * Peak RSS (VmHWM) beyond the untraced run's: 1.03 GiB when pools were populated whole, about
 * 95 MiB when each thread's first 64 KiB chunk was, 30 MiB now; at most 48 MiB (48 KiB a
 * thread) is allowed. Counts exact. */
Test(churn, thousand_live_threads_memory)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec u = {.prog = BIN("liveprog")};
    struct e2e_run b, t;
    e2e_run(work, &u, &b);
    struct e2e_spec s = {.prog = BIN("liveprog"), .preload = 1, .outdir = out};
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(b.status) && WEXITSTATUS(b.status) == 0, "untraced: %#x", b.status);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "traced: %#x: %s", t.status,
              t.err);
    cr_assert_str_empty(t.err, "%s", t.err);
    long plain = keyed(b.out, "vmhwm_kb"), traced = keyed(t.out, "vmhwm_kb");
    cr_assert(plain > 0 && traced > 0, "no VmHWM:\n%s", t.out);
    cr_assert_lt(traced - plain, 48 * 1024,
                 "peak RSS %ld KiB traced against %ld untraced: %ld KiB a thread", traced, plain,
                 (traced - plain) / 1000);
    e2e_trace_path(trace, sizeof trace, out, BIN("liveprog"), t.pid, "fdr");
    e2e_check_printed(trace, t.out, "1000 live threads");
    e2e_run_free(&b);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Issue 24: a burst of 1000 live threads leaves no address space behind once they have gone.
 * liveprog polls its VmSize for up to 2 s after the joins until it is within 256 MiB of the
 * untraced run's (its 1000 slots are 1.1 GiB while alive). Before: the slots' regions were
 * never unmapped (+1.1 GiB), and the pthread_create wrapper's free() in each new thread gave
 * threads that never allocate a malloc arena each (64 MiB of address space, up to 16 on two
 * processors: +1 GiB even for 16 threads). Now wholly free regions are unmapped once more than
 * 64 slots are free (preload/slots.c) and the wrapper's records are freed by the creator
 * (preload/threads.c): about +75 MiB left. Counts exact. */
Test(churn, address_space_returned_after_a_burst)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], below[64];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec u = {.prog = BIN("liveprog")};
    struct e2e_run b, t;
    e2e_run(work, &u, &b);
    cr_assert(WIFEXITED(b.status) && WEXITSTATUS(b.status) == 0, "untraced: %#x", b.status);
    long plain = keyed(b.out, "vmsize_after_kb");
    cr_assert(plain > 0, "no vmsize_after_kb:\n%s", b.out);
    snprintf(below, sizeof below, "LIVE_VMSIZE_BELOW_KB=%ld", plain + 256 * 1024);
    struct e2e_spec s = {.prog = BIN("liveprog"), .preload = 1, .outdir = out, .env = {below}};
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "traced: %#x: %s", t.status,
              t.err);
    cr_assert_str_empty(t.err, "%s", t.err);
    long traced = keyed(t.out, "vmsize_after_kb");
    cr_assert(traced > 0 && traced < plain + 256 * 1024,
              "address space after the threads: %ld KiB traced, %ld untraced (+%ld MiB)", traced,
              plain, (traced - plain) / 1024);
    e2e_trace_path(trace, sizeof trace, out, BIN("liveprog"), t.pid, "fdr");
    e2e_check_printed(trace, t.out, "1000 live threads, address space");
    e2e_run_free(&b);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Runs bin traced with mmapcount.so preloaded before the runtime, which counts the mmap calls
 * of 64 KiB or more made through libc (glibc maps thread stacks internally, uncounted); checks
 * the run (exit 0, nothing on stderr, counts exact) and returns the count. */
static long traced_mmaps(const char *bin, const char *what)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], preload[2 * PATH_MAX + 32],
        output[PATH_MAX + 32], count[PATH_MAX + 32];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s %s", E2E_MMAPCOUNT, E2E_PRELOAD);
    snprintf(output, sizeof output, "SLEDTRACE_OUTPUT=%s", out);
    snprintf(count, sizeof count, "MMAPCOUNT_OUT=%s/mmaps", work);
    struct e2e_spec s = {.prog = bin, .env = {preload, output, count, "MMAPCOUNT_MIN=65536"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    cr_assert_str_empty(t.err, "%s", t.err);
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/mmaps", work);
    char *n = e2e_slurp(path, NULL);
    cr_assert_not_null(n, "mmapcount.so wrote no %s", path);
    long calls = atol(n);
    free(n);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_check_printed(trace, t.out, what);
    e2e_run_free(&t);
    e2e_rmtree(work);
    return calls;
}

/* Issues 23.13 and 24.2: threads take their buffers and alternate stacks from slots carved out
 * of regions of 1, 1, 2, 4 ... 64 slots (preload/slots.c), reused once their threads exit,
 * rather than mapping their own. churn's 400 threads come 20 at a time: 802 calls when each
 * mapped a pool and a stack (and the main thread its pool), 42 to 307 with up to 16 exited
 * threads' kept; now at most 13 regions hold 400 slots even if none were ever reused, however
 * the flush thread keeps up: at most 24 calls are allowed. Counts exact. */
Test(churn, buffers_of_exited_threads_are_reused)
{
    long calls = traced_mmaps(BIN("churn-pie-nort"), "churn, reused buffers");
    cr_assert(calls >= 1 && calls <= 24,
              "%ld mmap calls of 64 KiB or more for 400 threads, 20 at a time", calls);
}

/* Issue 24.2: 1000 threads alive at once (liveprog.c) map no memory of their own: their slots
 * come from 17 regions (1, 1, 2 ... 64, 64 ...). Before, two mmap calls a thread (a pool and an
 * alternate stack): 2001 and more; at most 24 are allowed. Counts exact. */
Test(churn, live_threads_share_regions)
{
    long calls = traced_mmaps(BIN("liveprog"), "1000 live threads, regions");
    cr_assert(calls >= 1 && calls <= 24, "%ld mmap calls of 64 KiB or more for 1000 live threads",
              calls);
}

/* ---- files ----------------------------------------------------------------------------------- */

/* Runs bin untraced and traced (with env and pre_exec); the traced run must have the same wait
 * status and stdout. Returns the traced run. */
static void run_same(const char *work, const char *bin, const char *arg, const char *outdir,
                     const char *const *env, void (*pre)(void *), void *ctx, struct e2e_run *t)
{
    struct e2e_spec base = {.prog = bin, .argv1 = arg};
    struct e2e_spec traced = {
        .prog = bin, .argv1 = arg, .preload = 1, .outdir = outdir, .pre_exec = pre, .ctx = ctx};
    for (int i = 0; env && env[i]; i++)
        traced.env[i] = env[i];
    struct e2e_run b;
    e2e_run(work, &base, &b);
    e2e_run(work, &traced, t);
    cr_assert(WIFEXITED(b.status) && WEXITSTATUS(b.status) == 0);
    cr_assert_eq(t->status, b.status,
                 "wait status %#x under the preload, %#x without (signal %d)\nstderr:\n%s",
                 t->status, b.status, WIFSIGNALED(t->status) ? WTERMSIG(t->status) : 0, t->err);
    cr_assert_str_eq(t->out, b.out, "stdout differs under the preload");
    e2e_run_free(&b);
}

static void make_file(const char *path, const char *content)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(content, f);
    fclose(f);
}

/* Root ignores permission bits, so the directory is made impossible instead: a path below a
 * regular file (ENOTDIR), or in /proc. */
Test(files, output_dir_below_a_regular_file)
{
    char work[PATH_MAX], file[PATH_MAX], dir[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(file, sizeof file, "%s/afile", work);
    snprintf(dir, sizeof dir, "%s/sub", file);
    make_file(file, "precious");
    struct e2e_run t;
    run_same(work, BIN("mix-pie-nort"), NULL, dir, NULL, NULL, NULL, &t);
    cr_assert_eq(e2e_count_lines(t.err, "sledtrace: warning: "), 1, "stderr:\n%s", t.err);
    cr_assert_eq(e2e_nlines(t.err), 1, "exactly one line expected on stderr:\n%s", t.err);
    char *c = e2e_slurp(file, NULL);
    cr_assert_str_eq(c, "precious", "the file in the way was changed");
    free(c);
    struct stat st;
    cr_assert_neq(stat(dir, &st), 0, "%s exists", dir);
    /* afile, the stdout/stderr of the two runs and the proof cache (e2e.c), no trace anywhere. */
    cr_assert_eq(e2e_dir_entries(work), 6);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(files, output_dir_in_proc)
{
    char work[PATH_MAX];
    e2e_workdir(work, sizeof work);
    const char *dir = "/proc/sledtrace-e2e/out";
    struct e2e_run t;
    run_same(work, BIN("mix-pie-nort"), NULL, dir, NULL, NULL, NULL, &t);
    cr_assert_eq(e2e_count_lines(t.err, "sledtrace: warning: "), 1, "stderr:\n%s", t.err);
    cr_assert_eq(e2e_nlines(t.err), 1, "exactly one line expected on stderr:\n%s", t.err);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(files, output_dir_uncreatable_log_error_is_silent)
{
    char work[PATH_MAX], file[PATH_MAX], dir[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(file, sizeof file, "%s/afile", work);
    snprintf(dir, sizeof dir, "%s/sub", file);
    make_file(file, "x");
    const char *env[] = {"SLEDTRACE_LOG=error", NULL};
    struct e2e_run t;
    run_same(work, BIN("mix-pie-nort"), NULL, dir, env, NULL, NULL, &t);
    cr_assert_str_empty(t.err, "SLEDTRACE_LOG=error printed:\n%s", t.err);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* -- a full file system -- */

/* Offsets where the blocks of a trace end: ends[0] = 32 (the header), ends[k] = end of block k. */
static int block_ends(const char *trace, long *ends, int max, long *size)
{
    size_t len;
    char *buf = e2e_slurp(trace, &len);
    cr_assert_not_null(buf, "%s: %s", trace, strerror(errno));
    int n = 0;
    long off = STF_HEADER_SIZE;
    ends[n++] = off;
    while (off + 16 <= (long)len && n < max) {
        const uint8_t *p = (const uint8_t *)buf + off;
        cr_assert_eq(p[0], (STF_M_BUFFER_EXTENTS << 1) | 1, "no BufferExtents at %ld", off);
        uint64_t ext;
        memcpy(&ext, p + 1, 8);
        off += 16 + (long)ext;
        ends[n++] = off;
    }
    free(buf);
    *size = (long)len;
    return n;
}

/* Function records before `limit` in a valid trace (strict reader). */
static long records_before(const char *trace, long limit)
{
    struct stf_reader *r = NULL;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK);
    struct stf_item it;
    long n = 0;
    int rc;
    while ((rc = stf_reader_next(r, &it)) == STF_OK)
        if (it.kind == STF_K_FUNCTION && !stf_tracer_name(it.func_id) && (long)it.offset < limit)
            n++;
    cr_assert_eq(rc, STF_END, "%s", stf_reader_error(r, NULL));
    stf_reader_close(r);
    return n;
}

static void limit_fsize(void *ctx)
{
    /* The program must meet EFBIG with SIGXFSZ at its default action (terminate), as it would in
     * a shell with `ulimit -f`: only then does the test show the runtime never writes from a
     * thread that can receive it. */
    signal(SIGXFSZ, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    rlim_t lim = (rlim_t) * (long *)ctx;
    struct rlimit rl = {lim, lim};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(124);
}

/* One line "sledtrace: error: trace incomplete: N bytes not written: <reason>" and nothing
 * else on stderr; returns N. */
static long incomplete_line(const char *err, const char *reason)
{
    cr_assert_eq(e2e_nlines(err), 1, "exactly one line expected on stderr:\n%s", err);
    unsigned long long lost = 0;
    int used = 0;
    cr_assert_eq(
        sscanf(err, "sledtrace: error: trace incomplete: %llu bytes not written: %n", &lost, &used),
        1, "unexpected stderr:\n%s", err);
    cr_assert_gt(used, 0, "unexpected stderr:\n%s", err);
    char want[128];
    snprintf(want, sizeof want, "%s\n", reason);
    cr_assert_str_eq(err + used, want, "unexpected reason in:\n%s", err);
    cr_assert_gt(lost, 0ull);
    return (long)lost;
}

/* A file-size limit (RLIMIT_FSIZE) `extra` bytes past the end of block `nblocks` of a reference
 * run. fib(25) with one flush a minute: the thread fills ~60 full 64 KiB chunks, and the flush
 * thread writes them whenever 8 are queued, so the limit is met by the flush thread, during the
 * run. Block sizes are those of an unlimited reference run (a single thread, no periodic
 * rotation: the same every run). */
static void check_fsize(int nblocks, long extra, const char *log)
{
    char work[PATH_MAX], ref[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(ref, sizeof ref, "%s/ref", work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *bin = BIN("fib-pie-nort");
    const char *env[] = {"SLEDTRACE_FLUSH_MS=60000", log, NULL};

    struct e2e_run t;
    run_same(work, bin, "25", ref, env, NULL, NULL, &t);
    cr_assert_str_empty(t.err, "reference run: stderr:\n%s", t.err);
    char reftrace[PATH_MAX];
    e2e_trace_path(reftrace, sizeof reftrace, ref, bin, t.pid, "fdr");
    e2e_run_free(&t);
    long ends[64], refsize;
    int n = block_ends(reftrace, ends, 64, &refsize);
    cr_assert_gt(n, 24 + 1, "the reference trace has only %d blocks", n - 1);
    cr_assert_eq(ends[n - 1], refsize, "the reference trace does not end at a block boundary");
    long limit = ends[nblocks] + extra;

    run_same(work, bin, "25", out, env, limit_fsize, &limit, &t);
    long lost = incomplete_line(t.err, "File too large");
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct stat st;
    cr_assert_eq(stat(trace, &st), 0);
    cr_assert_leq(st.st_size, limit);
    cr_assert_eq(st.st_size + lost, refsize,
                 "%lld bytes written + %ld reported lost, but the full trace has %ld",
                 (long long)st.st_size, lost, refsize);

    /* What was written is a valid trace: the reference's first blocks, whole. */
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    cr_assert_str_empty(tr->error,
                        "the truncated trace (%lld bytes, limit %ld = end of block %d "
                        "+ %ld) is not valid: %s",
                        (long long)st.st_size, limit, nblocks, extra, tr->error);
    cr_assert_eq(tr->blocks, nblocks);
    cr_assert_eq(tr->records, records_before(reftrace, ends[nblocks]));
    free(tr);
    check_tools_accept(work, trace);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* The limit falls exactly at the end of block 8: the next write fails whole. */
Test(disk_full, fsize_limit_at_block_boundary)
{
    check_fsize(8, 0, NULL);
}
/* SLEDTRACE_LOG=error still reports the loss. */
Test(disk_full, fsize_limit_log_error)
{
    check_fsize(8, 0, "SLEDTRACE_LOG=error");
}
/* REGRESSION (torn block): the limit falls 1000 bytes into block 9. write(2) writes those 1000
 * bytes, then fails; the runtime used to leave them, so the file ended inside a block and the
 * strict reader rejected it. The file must end at the last whole block, 1000 more bytes reported
 * lost. */
Test(disk_full, fsize_limit_inside_a_block)
{
    check_fsize(8, 1000, NULL);
}

/* REGRESSION (SIGXFSZ killed the program): the limit is met at exit, by the final flush, which
 * runs in the program's own thread (the destructor), not in the flush thread that blocks every
 * signal. fib(20) with the default flush period: ~6 chunks, fewer than the 8 that wake the flush
 * thread and a run far shorter than a period, so everything is written at exit. The EFBIG write
 * raised SIGXFSZ in the main thread and the program died of it (status 153) instead of exiting
 * 0. */
Test(disk_full, fsize_limit_met_by_final_flush)
{
    char work[PATH_MAX], ref[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(ref, sizeof ref, "%s/ref", work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *bin = BIN("fib-pie-nort");
    struct e2e_run t;
    run_same(work, bin, NULL, ref, NULL, NULL, NULL, &t);
    char reftrace[PATH_MAX];
    e2e_trace_path(reftrace, sizeof reftrace, ref, bin, t.pid, "fdr");
    e2e_run_free(&t);
    long ends[64], refsize;
    int n = block_ends(reftrace, ends, 64, &refsize);
    cr_assert_geq(n, 4);
    cr_assert_lt(n - 1, 8, "%d blocks: the flush thread would write some during the run", n - 1);
    long limit = ends[2];

    run_same(work, bin, NULL, out, NULL, limit_fsize, &limit, &t);
    long lost = incomplete_line(t.err, "File too large");
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct stat st;
    cr_assert_eq(stat(trace, &st), 0);
    cr_assert_eq(st.st_size, limit);
    cr_assert_eq(st.st_size + lost, refsize);
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    cr_assert_str_empty(tr->error, "%s", tr->error);
    cr_assert_eq(tr->blocks, 2);
    free(tr);
    check_tools_accept(work, trace);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* A real full file system: a 256 KiB tmpfs, mounted in a private mount namespace of this test's
 * own process (Criterion runs each test in its own process), so nothing outlives the test.
 * Skipped where mounting is not allowed. REGRESSION (torn block) as fsize_limit_inside_a_block:
 * tmpfs fills page by page, so the failing write(2) is a short one. */
Test(disk_full, tmpfs_enospc)
{
    char work[PATH_MAX], fs[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(fs, sizeof fs, "%s/fs", work);
    snprintf(out, sizeof out, "%s/out", fs);
    cr_assert_eq(mkdir(fs, 0755), 0);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", fs, "tmpfs", 0, "size=256k") != 0) {
        int err = errno;
        e2e_rmtree(work);
        cr_skip_test("cannot mount a tmpfs here: %s", strerror(err));
    }
    const char *bin = BIN("fib-pie-nort");
    /* no size cap: its default (half the free space) would stop the trace before the disk fills */
    const char *env[] = {"SLEDTRACE_FLUSH_MS=60000", "SLEDTRACE_MAX_SIZE=0", NULL};
    struct e2e_run t;
    run_same(work, bin, "25", out, env, NULL, NULL, &t);
    incomplete_line(t.err, "No space left on device");
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct stat st;
    cr_assert_eq(stat(trace, &st), 0);
    cr_assert_gt(st.st_size, 65536, "only %lld bytes written", (long long)st.st_size);
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    cr_assert_str_empty(tr->error,
                        "the trace on the full file system (%lld bytes) is not valid: %s",
                        (long long)st.st_size, tr->error);
    cr_assert_geq(tr->blocks, 1);
    free(tr);
    check_tools_accept(work, trace);
    e2e_run_free(&t);
    umount2(fs, MNT_DETACH);
    e2e_rmtree(work);
}

/* ---- configuration --------------------------------------------------------------------------- */

/* SLEDTRACE_LOG is read before the other variables, so at `error` a bad value costs no message
 * at all; the run is traced as usual. */
static void check_silent_bad_value(const char *kv)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *env[] = {"SLEDTRACE_LOG=error", kv, NULL};
    struct e2e_run t;
    run_same(work, BIN("fib-pie-nort"), NULL, out, env, NULL, NULL, &t);
    cr_assert_str_empty(t.err, "%s with SLEDTRACE_LOG=error printed:\n%s", kv, t.err);
    e2e_trace_path(trace, sizeof trace, out, BIN("fib-pie-nort"), t.pid, "fdr");
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, kv);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(log_level, error_silences_bad_flush_ms)
{
    check_silent_bad_value("SLEDTRACE_FLUSH_MS=abc");
}
Test(log_level, error_silences_bad_buffers)
{
    check_silent_bad_value("SLEDTRACE_BUFFERS=1");
}
Test(log_level, error_silences_bad_disable)
{
    check_silent_bad_value("SLEDTRACE_DISABLE=yes");
}

/* The lines a run prints at SLEDTRACE_LOG=level (the trace is checked too). */
/* The runtime's stderr at `level`; with `extra` (another VAR=VALUE, e.g. a filter that changes
 * what is traced) the trace itself is not checked against the program's counts. */
static char *log_lines_with(const char *bin, const char *level, const char *extra)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], kv[64];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(kv, sizeof kv, "SLEDTRACE_LOG=%s", level);
    const char *env[] = {kv, extra, NULL};
    struct e2e_run t;
    run_same(work, bin, NULL, out, env, NULL, NULL, &t);
    if (!extra) {
        e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
        struct e2e_expect e;
        e2e_parse_expect(t.out, &e);
        struct e2e_trace tr;
        e2e_read_trace(trace, &tr);
        e2e_check_trace(&tr, &e, kv);
    }
    char *err = t.err;
    t.err = NULL;
    e2e_run_free(&t);
    e2e_rmtree(work);
    return err;
}

static char *log_lines(const char *bin, const char *level)
{
    return log_lines_with(bin, level, NULL);
}

/* Every "info" line is also printed at "debug" (a few vary per run: pid, TSC, byte counts, so
 * lines are compared up to their first digit), and debug prints only sledtrace lines. */
static void check_debug_covers_info(const char *info, const char *debug)
{
    cr_assert_eq(e2e_count_lines(debug, "sledtrace: "), e2e_nlines(debug), "%s", debug);
    cr_assert_eq(e2e_count_lines(debug, "sledtrace: info: "),
                 e2e_count_lines(info, "sledtrace: info: "), "info:\n%s\ndebug:\n%s", info, debug);
    cr_assert_eq(e2e_count_lines(info, "sledtrace: debug: "), 0, "%s", info);
    for (const char *p = info; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = strcspn(p, "0123456789\n");
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(len < 255 ? len : 255), p);
        cr_assert_geq(e2e_count_lines(debug, prefix), 1, "\"%s\" missing at debug:\n%s", prefix,
                      debug);
        p = nl ? nl + 1 : NULL;
    }
}

/* Sleds left unpatched are listed at debug, so it prints strictly more than info: here emit()'s
 * four (entry, exit, custom event, typed event), left out by SLEDTRACE_EXCLUDE. */
Test(log_level, debug_lists_unpatched_sleds)
{
    const char *ex = "SLEDTRACE_EXCLUDE=emit";
    char *info = log_lines_with(BIN("events-pie-nort"), "info", ex);
    char *debug = log_lines_with(BIN("events-pie-nort"), "debug", ex);
    check_debug_covers_info(info, debug);
    cr_assert_gt(e2e_nlines(debug), e2e_nlines(info), "info:\n%s\ndebug:\n%s", info, debug);
    cr_assert_eq(e2e_count_lines(debug, "sledtrace: debug: "), 5,
                 "expected the refusals header and 4 left-out sleds:\n%s", debug);
    cr_assert_not_null(strstr(debug, "custom-event sled"), "%s", debug);
    cr_assert_not_null(strstr(debug, "typed-event sled"), "%s", debug);
    cr_assert_not_null(strstr(info, "4 sleds left untouched"), "%s", info);
    free(info);
    free(debug);
}

/* A program whose sleds are all patched: debug says everything info says (today nothing more:
 * the only debug messages list refused sleds). */
Test(log_level, debug_covers_info)
{
    char *info = log_lines(BIN("mix-nopie-rt"), "info");
    char *debug = log_lines(BIN("mix-nopie-rt"), "debug");
    check_debug_covers_info(info, debug);
    cr_assert_geq(e2e_nlines(debug), e2e_nlines(info));
    cr_assert_geq(e2e_nlines(info), 3, "%s", info);
    free(info);
    free(debug);
}

/* warn (the default) prints nothing for a clean run, info prints something. */
Test(log_level, warn_is_quiet_info_is_not)
{
    char *warn = log_lines(BIN("fib-nopie-nort"), "warn");
    char *info = log_lines(BIN("fib-nopie-nort"), "info");
    cr_assert_str_empty(warn, "%s", warn);
    cr_assert_geq(e2e_nlines(info), 3, "%s", info);
    cr_assert_eq(e2e_count_lines(info, "sledtrace: info: "), e2e_nlines(info), "%s", info);
    free(warn);
    free(info);
}

/* 10.6: a symbol name holding a newline (tests/format/hostile_names.c: "forge\nf\t0\t1\t0x0\t
 * forged") must not end its sidecar line and forge a line naming another id: it is written
 * empty, so that function shows as #2 and function 1 keeps its own name. */
Test(runtime, sidecar_names_never_span_lines)
{
    char work[PATH_MAX], out[PATH_MAX], syms[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *bin = E2E_HOSTILE_NAMES;
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    e2e_trace_path(syms, sizeof syms, out, bin, t.pid, "syms");
    size_t len;
    char *text = e2e_slurp(syms, &len);
    cr_assert_not_null(text, "no sidecar %s", syms);
    cr_assert_null(strstr(text, "forged"), "a forged line in the sidecar:\n%s", text);
    cr_assert_not_null(strstr(text, "\tshout\x1b[2J\a\n"), "%s", text);
    cr_assert_not_null(strstr(text, "\nf\t0\t2\t0x"), "%s", text);
    const char *f2 = strstr(text, "\nf\t0\t2\t0x");
    const char *eol = strchr(f2 + 1, '\n');
    cr_assert(eol && eol[-1] == '\t', "function 2's name is not empty:\n%s", text);
    free(text);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* 10.6: the runtime's own messages carry names it did not choose (here the output directory):
 * their control bytes reach stderr as \xNN, never raw. */
Test(runtime, log_messages_escape_control_bytes)
{
    char work[PATH_MAX], file[PATH_MAX], outdir[PATH_MAX + 32], want[2 * PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(file, sizeof file, "%s/file", work);
    make_file(file, "not a directory\n");
    snprintf(outdir, sizeof outdir, "%s/\x1b]0;title\a\x1b[2Jx\xc2\x9b", file);
    struct e2e_spec s = {.prog = BIN("fib-pie-nort"), .argv1 = "3", .preload = 1, .outdir = outdir};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    snprintf(want, sizeof want,
             "sledtrace: warning: cannot create output directory "
             "%s/\\x1b]0;title\\x07\\x1b[2Jx\\xc2\\x9b (Not a directory); running untraced\n",
             file);
    cr_assert_str_eq(t.err, want);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* 12.5: a program that cannot be traced gets one sentence from `sledtrace run` saying why, at
 * the default log level, where there used to be "no trace found": static (no dynamic loader to
 * read LD_PRELOAD), no sleds at all, or sleds but a filter that leaves every function out. The
 * program's own output and status are untouched. */
static void check_run_says(const char *bin, const char *env, const char *want_fmt)
{
    char work[PATH_MAX], want[2 * PATH_MAX];
    e2e_workdir(work, sizeof work);
    struct e2e_run r;
    e2e_run_sh(work, &r, "%s '" E2E_SLEDTRACE "' run -o '%s/out' -- '%s' 5", env, work, bin);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %#x: %s", r.status, r.err);
    cr_assert(strstr(r.out, "fib(5) = 5\n") != NULL, "%s", r.out);
    snprintf(want, sizeof want, want_fmt, bin);
    cr_assert_str_eq(r.err, want);
    e2e_run_free(&r);
    e2e_rmtree(work);
}

Test(runtime, run_says_why_a_static_program_has_no_trace)
{
    check_run_says(
        BIN("fib-static"), "",
        "sledtrace: no trace: %s is statically linked, so no dynamic loader runs to load "
        "the runtime (LD_PRELOAD); link it dynamically to trace it\n");
}

Test(runtime, run_says_why_a_program_without_sleds_has_no_trace)
{
    check_run_says(BIN("plain-pie"), "",
                   "sledtrace: no trace: %s has no XRay sleds (no xray_instr_map section) and no "
                   "instrumented library it loaded recorded a call; build it with clang "
                   "-fxray-instrument -fxray-instruction-threshold=1\n");
}

Test(runtime, run_says_why_a_filtered_program_has_no_trace)
{
    check_run_says(BIN("fib-pie-nort"), "env SLEDTRACE_FILTER=fbi",
                   "sledtrace: warning: SLEDTRACE_FILTER: 'fbi' matches no function (patterns are "
                   "shell globs on function names, C++ names demangled or not; LIB:GLOB limits "
                   "one to an object)\n"
                   "sledtrace: no trace: %s has XRay sleds but recorded no call (its runtime's "
                   "messages above say why, if any: SLEDTRACE_FILTER or SLEDTRACE_EXCLUDE may "
                   "leave out every function, or the program never called one)\n");
}
