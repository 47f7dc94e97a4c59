/* End-to-end tests: real programs built with clang at build time (meson.build), run with and
 * without LD_PRELOAD=libsledtrace.so; the trace must hold exactly the calls each program says
 * it made, the program must behave identically, and llvm-xray must accept the trace.
 *
 * meson passes E2E_DIR (where the programs are), E2E_PRELOAD (the runtime) and E2E_LLVM_XRAY. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

/* ---- llvm-xray helpers ------------------------------------------------------------------- */

struct extract {
    int nsleds, max_id;
    struct {
        char name[64];
        int tail, exit;
    } f[E2E_MAX_FUNCS];
    int nf;
};

static void run_extract(const char *work, const char *bin, struct extract *x)
{
    memset(x, 0, sizeof *x);
    struct e2e_run r;
    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' extract --symbolize '%s'", bin);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "llvm-xray extract %s: %s", bin,
              r.err);
    for (const char *p = r.out; p && *p;) {
        unsigned id;
        char kind[32], name[64];
        if (sscanf(p,
                   "- { id: %u, address: %*x, function: %*x, kind: %31[^,], "
                   "always-instrument: %*[^,], function-name: %63[^,],",
                   &id, kind, name) == 3) {
            x->nsleds++;
            if ((int)id > x->max_id)
                x->max_id = (int)id;
            int i = 0;
            while (i < x->nf && strcmp(x->f[i].name, name) != 0)
                i++;
            if (i == x->nf) {
                cr_assert_lt(x->nf, E2E_MAX_FUNCS);
                snprintf(x->f[x->nf++].name, sizeof x->f[0].name, "%s", name);
            }
            x->f[i].tail += strcmp(kind, "tail-exit") == 0;
            x->f[i].exit += strcmp(kind, "function-exit") == 0;
        }
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    cr_assert_gt(x->nsleds, 0, "llvm-xray extract %s listed no sleds", bin);
    e2e_run_free(&r);
}

/* llvm-xray on a single-threaded trace: fdr-dump --verify, convert, and account, whose
 * per-function counts must equal the program's. The tracer's pseudo-calls (stf.h; tr counts
 * their records) are records like any other to llvm-xray, under ids its -m cannot name. */
static void check_with_llvm_xray(const char *work, const char *bin, const char *trace,
                                 const struct e2e_expect *e, const struct e2e_trace *tr)
{
    struct e2e_run r;
    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' fdr-dump --verify '%s'", trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
              "llvm-xray fdr-dump --verify %s failed: %s", trace, r.err);
    e2e_run_free(&r);

    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' convert -m '%s' --output-format=yaml '%s'", bin,
               trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "llvm-xray convert %s failed: %s",
              trace, r.err);
    long events = e2e_count_lines(r.out, "  - { type: ");
    long want_events = tr->tracer_records;
    for (int j = 0; j < e->nfuncs; j++)
        want_events += 2 * e->f[j].count;
    /* and the runtime's calibration, a typed event of its own type (stf.h), first */
    want_events++;
    const char *first = strstr(r.out, "records:\n");
    char calib[64];
    snprintf(calib, sizeof calib, "  - { type: %u, ", (unsigned)STF_TYPED_CALIB);
    const char *nl = first ? strchr(first + 9, '\n') : NULL;
    const char *kind = first ? strstr(first, "kind: typed-event") : NULL;
    cr_assert(nl && kind && kind < nl && strncmp(first + 9, calib, strlen(calib)) == 0,
              "llvm-xray convert does not start with the calibration:\n%.400s", r.out);
    cr_assert_eq(events, want_events, "llvm-xray convert lists %ld records, expected %ld", events,
                 want_events);
    e2e_run_free(&r);

    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' account -m '%s' -format=csv '%s'", bin, trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "llvm-xray account %s failed: %s",
              trace, r.err);
    int seen = 0;
    for (const char *p = r.out; p && *p;) {
        unsigned id;
        long count;
        const char *nl = strchr(p, '\n');
        if (sscanf(p, "%u,%ld,", &id, &count) == 2 && !stf_tracer_name(id)) {
            /* The function name is the last quoted field. */
            const char *end = nl ? nl : p + strlen(p);
            const char *q2 = end;
            while (q2 > p && *q2 != '"')
                q2--;
            const char *q1 = q2 - 1;
            while (q1 > p && *q1 != '"')
                q1--;
            cr_assert_gt(q2, q1, "unparsable account line");
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(q2 - q1 - 1), q1 + 1);
            int found = 0;
            for (int j = 0; j < e->nfuncs; j++)
                if (strcmp(e->f[j].name, name) == 0) {
                    found = 1;
                    cr_expect_eq(count, e->f[j].count, "llvm-xray account: %s %ld, expected %ld",
                                 name, count, e->f[j].count);
                }
            cr_expect(found, "llvm-xray account lists %s, which the program does not count", name);
            seen++;
        }
        p = nl ? nl + 1 : NULL;
    }
    cr_assert_eq(seen, e->nfuncs, "llvm-xray account lists %d functions, expected %d", seen,
                 e->nfuncs);
    e2e_run_free(&r);

    /* sledtrace's own -m: --syms BINARY names the functions from the binary's map and symbol
     * table, exactly as the sidecar does (for traces without one, such as compiler-rt's). */
    struct e2e_run with_bin, with_sidecar;
    e2e_run_sh(work, &with_bin, "'" E2E_SLEDTRACE "' account '%s' --format csv --syms '%s'", trace,
               bin);
    e2e_run_sh(work, &with_sidecar, "'" E2E_SLEDTRACE "' account '%s' --format csv", trace);
    cr_assert(WIFEXITED(with_bin.status) && WEXITSTATUS(with_bin.status) == 0,
              "account --syms BINARY: %s", with_bin.err);
    cr_assert_str_eq(with_bin.out, with_sidecar.out, "names from %s differ from the sidecar's",
                     bin);
    e2e_run_free(&with_bin);
    e2e_run_free(&with_sidecar);
}

/* ---- the core check ---------------------------------------------------------------------- */

struct opts {
    const char *arg;
    int status;         /* expected exit status */
    int llvm;           /* also check with llvm-xray (single-threaded programs) */
    const char *env[4]; /* for both runs */
};

static void check_program(const char *bin, const struct opts *o)
{
    char work[PATH_MAX];
    e2e_workdir(work, sizeof work);

    struct e2e_spec base = {.prog = bin, .argv1 = o->arg};
    struct e2e_spec traced = {.prog = bin, .argv1 = o->arg, .preload = 1};
    for (int i = 0; i < 4 && o->env[i]; i++)
        base.env[i] = traced.env[i] = o->env[i];
    struct e2e_run b, t;
    e2e_run(work, &base, &b);
    e2e_run(work, &traced, &t);
    cr_assert(WIFEXITED(b.status), "%s did not exit normally (status %#x)", bin, b.status);
    cr_assert_eq(WEXITSTATUS(b.status), o->status, "%s exited %d without the preload: %s", bin,
                 WEXITSTATUS(b.status), b.out);
    cr_assert_eq(t.status, b.status, "%s: wait status %#x under the preload, %#x without", bin,
                 t.status, b.status);
    cr_assert_str_eq(t.out, b.out, "%s: stdout differs under the preload", bin);
    cr_assert_str_empty(t.err, "%s: unexpected stderr under the preload:\n%s", bin, t.err);

    char outdir[PATH_MAX], trace[PATH_MAX];
    snprintf(outdir, sizeof outdir, "%s/out", work);
    e2e_trace_path(trace, sizeof trace, outdir, bin, t.pid, "fdr");
    cr_assert_eq(access(trace, R_OK), 0, "no trace %s", trace);
    cr_assert_eq(e2e_dir_entries(outdir), 2, "expected exactly the .fdr and .syms files");

    struct e2e_expect e;
    e2e_parse_expect(b.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, bin);

    /* Functions announced as leaving only by tail calls must have tail sleds (and no exit
     * sleds): otherwise clang did not emit the tail call and the test lost its point. */
    int want_tail = 0;
    for (int j = 0; j < e.nfuncs; j++)
        want_tail |= e.f[j].tail > 0;
    if (want_tail || o->llvm) {
        struct extract x;
        run_extract(work, bin, &x);
        for (int j = 0; j < e.nfuncs; j++) {
            if (!e.f[j].tail)
                continue;
            int i = 0;
            while (i < x.nf && strcmp(x.f[i].name, e.f[j].name) != 0)
                i++;
            cr_assert_lt(i, x.nf, "%s has no sleds", e.f[j].name);
            cr_assert_gt(x.f[i].tail, 0, "%s: no TAIL sled for %s", bin, e.f[j].name);
            cr_assert_eq(x.f[i].exit, 0, "%s: %s has EXIT sleds too", bin, e.f[j].name);
        }
    }

    if (o->llvm) {
        /* llvm-xray 14 sorts each thread's blocks with a broken comparator: a thread with more
         * than 16 blocks may be reordered and `account` then fails on a correct trace. One block
         * per chunk (64 KiB by default) or per flush period, so these runs use 16 MiB chunks to
         * keep every thread at a few blocks. Our own reader checked the default-size run above. */
        struct e2e_spec big = traced;
        char dir2[PATH_MAX], trace2[PATH_MAX];
        snprintf(dir2, sizeof dir2, "%s/out-big", work);
        big.outdir = dir2;
        int k = 0;
        while (k < 4 && big.env[k] && strncmp(big.env[k], "SLEDTRACE_BUFFER_KB=", 20) != 0)
            k++;
        big.env[k] = "SLEDTRACE_BUFFER_KB=16384"; /* replaces a smaller setting */
        struct e2e_run t2;
        e2e_run(work, &big, &t2);
        cr_assert_eq(t2.status, b.status);
        cr_assert_str_eq(t2.out, b.out);
        e2e_trace_path(trace2, sizeof trace2, dir2, bin, t2.pid, "fdr");
        e2e_read_trace(trace2, &tr);
        e2e_check_trace(&tr, &e, bin);
        check_with_llvm_xray(work, bin, trace2, &e, &tr);
        e2e_run_free(&t2);
    }
    e2e_run_free(&b);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* ---- the programs, four builds each ------------------------------------------------------ */

#define VARIANTS(prog, ...)                                                                        \
    Test(prog, pie_no_runtime)                                                                     \
    {                                                                                              \
        check_program(BIN(#prog "-pie-nort"), &(struct opts){__VA_ARGS__});                        \
    }                                                                                              \
    Test(prog, pie_xray_runtime)                                                                   \
    {                                                                                              \
        check_program(BIN(#prog "-pie-rt"), &(struct opts){__VA_ARGS__});                          \
    }                                                                                              \
    Test(prog, nopie_no_runtime)                                                                   \
    {                                                                                              \
        check_program(BIN(#prog "-nopie-nort"), &(struct opts){__VA_ARGS__});                      \
    }                                                                                              \
    Test(prog, nopie_xray_runtime)                                                                 \
    {                                                                                              \
        check_program(BIN(#prog "-nopie-rt"), &(struct opts){__VA_ARGS__});                        \
    }

VARIANTS(fib, .llvm = 1)
VARIANTS(mix, .llvm = 1)
/* (g) every argument/return register survives the trampolines. */
VARIANTS(regs, .llvm = 1)
/* (c) errno survives, including the slow path at each 4 KiB chunk boundary; exit status 7. */
VARIANTS(errprog, .status = 7, .llvm = 1, .env = {"SLEDTRACE_BUFFER_KB=4"})

#define THREAD_VARIANTS(name, n, ...)                                                              \
    Test(name, pie_no_runtime)                                                                     \
    {                                                                                              \
        check_program(BIN("threads-pie-nort"), &(struct opts){.arg = n, __VA_ARGS__});             \
    }                                                                                              \
    Test(name, pie_xray_runtime)                                                                   \
    {                                                                                              \
        check_program(BIN("threads-pie-rt"), &(struct opts){.arg = n, __VA_ARGS__});               \
    }                                                                                              \
    Test(name, nopie_no_runtime)                                                                   \
    {                                                                                              \
        check_program(BIN("threads-nopie-nort"), &(struct opts){.arg = n, __VA_ARGS__});           \
    }                                                                                              \
    Test(name, nopie_xray_runtime)                                                                 \
    {                                                                                              \
        check_program(BIN("threads-nopie-rt"), &(struct opts){.arg = n, __VA_ARGS__});             \
    }

THREAD_VARIANTS(threads2, "2", .status = 0)
THREAD_VARIANTS(threads8, "8", .status = 0)
/* 64 workers, all alive at once (threads.c releases them together from a barrier). */
THREAD_VARIANTS(threads64, "64", .status = 0)

/* Small chunks: every thread crosses many chunk boundaries and competes for the flusher. */
Test(stress, threads8_small_buffers)
{
    check_program(BIN("threads-pie-nort"),
                  &(struct opts){.arg = "8", .env = {"SLEDTRACE_BUFFER_KB=4"}});
}

Test(stress, threads8_small_buffers_few_chunks)
{
    check_program(
        BIN("threads-nopie-nort"),
        &(struct opts){.arg = "8", .env = {"SLEDTRACE_BUFFER_KB=4", "SLEDTRACE_BUFFERS=2"}});
}

Test(stress, threads64_small_buffers_few_chunks)
{
    check_program(
        BIN("threads-pie-rt"),
        &(struct opts){.arg = "64", .env = {"SLEDTRACE_BUFFER_KB=4", "SLEDTRACE_BUFFERS=2"}});
}

Test(stress, regs_small_buffers)
{
    /* The slow path (a new chunk every ~500 events) runs while argument registers are live. */
    check_program(BIN("regs-pie-nort"), &(struct opts){.env = {"SLEDTRACE_BUFFER_KB=4"}});
}

Test(stress, fast_flush)
{
    check_program(BIN("fib-pie-nort"),
                  &(struct opts){.arg = "22", .env = {"SLEDTRACE_FLUSH_MS=1"}});
}

/* compiler-rt patched the sleds before us (patch_premain): we must take them over with the
 * same ids. */
Test(xray_runtime, patch_premain_first)
{
    check_program(BIN("fib-pie-rt"),
                  &(struct opts){.llvm = 1, .env = {"XRAY_OPTIONS=patch_premain=true"}});
}

Test(xray_runtime, patch_premain_first_nopie_tail_calls)
{
    check_program(BIN("mix-nopie-rt"),
                  &(struct opts){.llvm = 1, .env = {"XRAY_OPTIONS=patch_premain=true"}});
}

/* ---- host safety --------------------------------------------------------------------------- */

/* Runs bin with and without the preload; asserts identical status and stdout; returns the
 * preloaded run (caller frees) and fills `outdir`. */
static void run_both(const char *work, const char *bin, const char *outdir, const char *const *env,
                     struct e2e_run *t, void (*pre)(void *), void *ctx)
{
    struct e2e_spec base = {.prog = bin};
    struct e2e_spec traced = {
        .prog = bin, .preload = 1, .outdir = outdir, .pre_exec = pre, .ctx = ctx};
    for (int i = 0; env && env[i]; i++)
        traced.env[i] = env[i];
    struct e2e_run b;
    e2e_run(work, &base, &b);
    e2e_run(work, &traced, t);
    cr_assert(WIFEXITED(b.status) && WEXITSTATUS(b.status) == 0);
    cr_assert_eq(t->status, b.status, "wait status %#x under the preload, %#x without", t->status,
                 b.status);
    cr_assert_str_eq(t->out, b.out, "stdout differs under the preload");
    e2e_run_free(&b);
}

/* (a) */
static void check_uninstrumented(const char *bin)
{
    char work[PATH_MAX], out[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    run_both(work, bin, out, NULL, &t, NULL, NULL);
    /* Nothing to trace: stderr as untraced (empty) at the default level (log.c). */
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    cr_assert_leq(e2e_dir_entries(out), 0, "an untraced run left files in %s", out);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(host, uninstrumented_pie)
{
    check_uninstrumented(BIN("plain-pie"));
}
Test(host, uninstrumented_nopie)
{
    check_uninstrumented(BIN("plain-nopie"));
}

/* (b) and the other variables: a bad value costs exactly one warning, never the trace. */
static void check_bad_value(const char *kv)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *env[] = {kv, NULL};
    struct e2e_run t;
    run_both(work, BIN("fib-pie-nort"), out, env, &t, NULL, NULL);
    cr_assert_eq(e2e_count_lines(t.err, "sledtrace: warning: "), 1, "%s: stderr:\n%s", kv, t.err);
    cr_assert_eq(e2e_nlines(t.err), 1, "%s: exactly one line expected on stderr:\n%s", kv, t.err);
    e2e_trace_path(trace, sizeof trace, out, BIN("fib-pie-nort"), t.pid, "fdr");
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, kv);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(config, flush_ms_abc)
{
    check_bad_value("SLEDTRACE_FLUSH_MS=abc");
}
Test(config, flush_ms_zero)
{
    check_bad_value("SLEDTRACE_FLUSH_MS=0");
}
Test(config, flush_ms_too_big)
{
    check_bad_value("SLEDTRACE_FLUSH_MS=60001");
}
Test(config, flush_ms_trailing_junk)
{
    check_bad_value("SLEDTRACE_FLUSH_MS=10x");
}
Test(config, buffer_kb_too_small)
{
    check_bad_value("SLEDTRACE_BUFFER_KB=3");
}
Test(config, buffer_kb_too_big)
{
    check_bad_value("SLEDTRACE_BUFFER_KB=16385");
}
Test(config, buffers_too_few)
{
    check_bad_value("SLEDTRACE_BUFFERS=1");
}
Test(config, buffers_too_many)
{
    check_bad_value("SLEDTRACE_BUFFERS=4097");
}
Test(config, buffers_negative)
{
    check_bad_value("SLEDTRACE_BUFFERS=-16");
}
Test(config, log_unknown)
{
    check_bad_value("SLEDTRACE_LOG=loud");
}
Test(config, disable_unknown)
{
    check_bad_value("SLEDTRACE_DISABLE=yes");
}
Test(config, policy_unknown)
{
    check_bad_value("SLEDTRACE_POLICY=fast");
}
Test(config, dump_signal_fatal)
{
    check_bad_value("SLEDTRACE_DUMP_SIGNAL=SEGV");
}
Test(config, dump_signal_unknown)
{
    check_bad_value("SLEDTRACE_DUMP_SIGNAL=99999");
}
Test(config, clock_unknown)
{
    check_bad_value("SLEDTRACE_CLOCK=hpet");
}

/* (d) */
Test(host, disable_creates_nothing)
{
    char work[PATH_MAX], out[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    const char *env[] = {"SLEDTRACE_DISABLE=1", NULL};
    struct e2e_run t;
    run_both(work, BIN("fib-pie-nort"), out, env, &t, NULL, NULL);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    cr_assert_eq(e2e_dir_entries(out), -1, "SLEDTRACE_DISABLE=1 created %s", out);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* (e) */
Test(host, nested_output_directory_is_created)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/a/b/c", work);
    struct e2e_run t;
    run_both(work, BIN("mix-nopie-nort"), out, NULL, &t, NULL, NULL);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    e2e_trace_path(trace, sizeof trace, out, BIN("mix-nopie-nort"), t.pid, "fdr");
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "nested");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* (f) file modes and ownership */
static void set_umask(void *ctx)
{
    umask((mode_t)(uintptr_t)ctx);
}

static void check_mode(mode_t mask, mode_t want)
{
    char work[PATH_MAX], out[PATH_MAX], path[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    run_both(work, BIN("fib-pie-nort"), out, NULL, &t, set_umask, (void *)(uintptr_t)mask);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    const char *exts[] = {"fdr", "syms"};
    for (int i = 0; i < 2; i++) {
        e2e_trace_path(path, sizeof path, out, BIN("fib-pie-nort"), t.pid, exts[i]);
        struct stat st;
        cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
        cr_assert(S_ISREG(st.st_mode), "%s is not a regular file", path);
        cr_assert_eq(st.st_mode & 07777, want, "%s: mode %o, expected %o (umask %03o)", path,
                     st.st_mode & 07777, want, mask);
        cr_assert_eq(st.st_uid, getuid());
        cr_assert_eq(st.st_nlink, 1);
        cr_assert_gt(st.st_size, 0);
    }
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* 0600 by default (SLEDTRACE_FILE_MODE sets another), whatever the umask lets through. */
Test(host, file_mode_umask_0)
{
    check_mode(0, 0600);
}
Test(host, file_mode_umask_022)
{
    check_mode(022, 0600);
}
Test(host, file_mode_umask_027)
{
    check_mode(027, 0600);
}
Test(host, file_mode_umask_077)
{
    check_mode(077, 0600);
}

/* Something already at the trace path (we know the pid: it is the child's own, kept by exec). */
struct squat {
    const char *dir, *ext, *victim;
    int symlink; /* else a regular file with content "precious" */
};

static void squat_path(void *ctx)
{
    const struct squat *s = ctx;
    char p[PATH_MAX];
    e2e_trace_path(p, sizeof p, s->dir, BIN("fib-pie-nort"), getpid(), s->ext);
    if (s->symlink) {
        if (symlink(s->victim, p) != 0)
            _exit(124);
    } else {
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || write(fd, "precious", 8) != 8)
            _exit(124);
        close(fd);
    }
}

static void check_squat(const char *ext, int is_symlink)
{
    char work[PATH_MAX], out[PATH_MAX], victim[PATH_MAX], path[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(victim, sizeof victim, "%s/victim", work);
    cr_assert_eq(mkdir(out, 0700), 0);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("victim", f);
    fclose(f);
    struct squat s = {out, ext, victim, is_symlink};
    struct e2e_run t;
    run_both(work, BIN("fib-pie-nort"), out, NULL, &t, squat_path, &s);
    /* A squatted .fdr name is skipped silently for the next free one (PID.1.fdr, as for an
     * image exec'd with the same pid); a squatted .syms costs one warning. */
    int squat_fdr = strcmp(ext, "fdr") == 0;
    cr_assert_eq(e2e_count_lines(t.err, "sledtrace: warning: "), squat_fdr ? 0 : 1, "stderr:\n%s",
                 t.err);
    cr_assert_eq(e2e_nlines(t.err), squat_fdr ? 0 : 1, "stderr:\n%s", t.err);

    size_t len;
    char *v = e2e_slurp(victim, &len);
    cr_assert_str_eq(v, "victim", "the symlink target was written to");
    free(v);
    e2e_trace_path(path, sizeof path, out, BIN("fib-pie-nort"), t.pid, ext);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    if (is_symlink) {
        cr_assert(S_ISLNK(st.st_mode), "the symlink at %s was replaced", path);
    } else {
        char *c = e2e_slurp(path, &len);
        cr_assert_str_eq(c, "precious", "a pre-existing file was overwritten");
        free(c);
    }
    if (strcmp(ext, "syms") == 0) {
        /* The trace itself is still written, to a fresh regular file. */
        e2e_trace_path(path, sizeof path, out, BIN("fib-pie-nort"), t.pid, "fdr");
        cr_assert_eq(lstat(path, &st), 0, "no trace written");
        cr_assert(S_ISREG(st.st_mode));
        cr_assert_gt(st.st_size, 32);
    } else {
        /* The trace and its sidecar go to the next free name, as regular files. */
        const char *exts[] = {"1.fdr", "1.syms"};
        for (int i = 0; i < 2; i++) {
            e2e_trace_path(path, sizeof path, out, BIN("fib-pie-nort"), t.pid, exts[i]);
            cr_assert_eq(lstat(path, &st), 0, "no %s written", path);
            cr_assert(S_ISREG(st.st_mode));
            cr_assert_gt(st.st_size, 32);
        }
        cr_assert_eq(e2e_dir_entries(out), 3, "expected the squatter, PID.1.fdr and PID.1.syms");
    }
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(host, symlink_at_trace_path_is_not_followed)
{
    check_squat("fdr", 1);
}
Test(host, symlink_at_syms_path_is_not_followed)
{
    check_squat("syms", 1);
}
Test(host, existing_trace_file_is_not_overwritten)
{
    check_squat("fdr", 0);
}

/* (h) */
static void check_info(const char *bin)
{
    char work[PATH_MAX], out[PATH_MAX], want[PATH_MAX + 128];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct extract x;
    run_extract(work, bin, &x);
    const char *env[] = {"SLEDTRACE_LOG=info", NULL};
    struct e2e_run t;
    run_both(work, bin, out, env, &t, NULL, NULL);
    char real[PATH_MAX];
    cr_assert_not_null(realpath(bin, real));
    /* The second run takes every proof from the first one's cache (the test's own) and
     * patches the same sleds. */
    for (int run = 0; run < 2; run++) {
        if (run) {
            e2e_run_free(&t);
            e2e_rmtree(out);
            run_both(work, bin, out, env, &t, NULL, NULL);
        }
        snprintf(want, sizeof want,
                 "sledtrace: info: %s: %d functions (%d proven, %d by the cache), %d sleds, %d "
                 "patched\n",
                 real, x.max_id, x.max_id, run ? x.max_id : 0, x.nsleds, x.nsleds);
        cr_assert_not_null(strstr(t.err, want), "expected \"%s\" in:\n%s", want, t.err);
        cr_assert_eq(e2e_count_lines(t.err, "sledtrace: warning: "), 0, "stderr:\n%s", t.err);
        cr_assert_null(strstr(t.err, "left untouched"), "stderr:\n%s", t.err);
        cr_assert_eq(e2e_count_lines(t.err, "sledtrace: "), e2e_nlines(t.err),
                     "every stderr line must be a sledtrace message:\n%s", t.err);
    }
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(host, log_info_counts_pie)
{
    check_info(BIN("mix-pie-nort"));
}
Test(host, log_info_counts_nopie_runtime)
{
    check_info(BIN("regs-nopie-rt"));
}

/* ---- fork and signals ---------------------------------------------------------------------- */

/* A fork child stops tracing: only the parent's calls are in the trace, all of them. */
/* fork: the child writes sledtrace.<prog>.<childpid>.fdr holding exactly what it did after the
 * fork (it leaves through _exit, whose interposer must complete the trace); the parent's trace
 * holds exactly the parent's calls and nothing of the child. */
static void check_fork(const char *bin)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.out);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    cr_assert_eq(e2e_dir_entries(out), 4, "expected the parent's and the child's .fdr and .syms");

    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "parent");

    int child = -1;
    long child_fib = -1;
    const char *p = strstr(t.out, "forked ");
    cr_assert(p && sscanf(p, "forked %d\nchild fib %ld", &child, &child_fib) == 2,
              "no child line in:\n%s", t.out);
    struct e2e_expect ce;
    memset(&ce, 0, sizeof ce);
    ce.nfuncs = 1;
    snprintf(ce.f[0].name, sizeof ce.f[0].name, "fib");
    ce.f[0].count = child_fib;
    ce.threads = 1;
    ce.nwork = 1;
    ce.work[0] = child_fib;
    e2e_trace_path(trace, sizeof trace, out, bin, child, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &ce, "child");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* exec: the first image's trace (PID.fdr) is complete before exec replaces it; the second
 * image, same pid, writes its own (PID.1.fdr). */
static void check_exec(const char *bin)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.out);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    cr_assert_eq(e2e_dir_entries(out), 4, "expected both images' .fdr and .syms");

    long first = -1;
    const char *p = strstr(t.out, "first fib ");
    cr_assert(p && sscanf(p, "first fib %ld", &first) == 1, "no first-image line:\n%s", t.out);
    struct e2e_expect fe;
    memset(&fe, 0, sizeof fe);
    fe.nfuncs = 1;
    snprintf(fe.f[0].name, sizeof fe.f[0].name, "fib");
    fe.f[0].count = first;
    fe.threads = 1;
    fe.nwork = 1;
    fe.work[0] = first;
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &fe, "first image");

    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "1.fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "second image");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(execprog, pie_no_runtime)
{
    check_exec(BIN("execprog-pie-nort"));
}
Test(execprog, pie_xray_runtime)
{
    check_exec(BIN("execprog-pie-rt"));
}
Test(execprog, nopie_no_runtime)
{
    check_exec(BIN("execprog-nopie-nort"));
}
Test(execprog, nopie_xray_runtime)
{
    check_exec(BIN("execprog-nopie-rt"));
}

Test(forkprog, pie_no_runtime)
{
    check_fork(BIN("forkprog-pie-nort"));
}
Test(forkprog, pie_xray_runtime)
{
    check_fork(BIN("forkprog-pie-rt"));
}
Test(forkprog, nopie_no_runtime)
{
    check_fork(BIN("forkprog-nopie-nort"));
}
Test(forkprog, nopie_xray_runtime)
{
    check_fork(BIN("forkprog-nopie-rt"));
}

/* Asynchronous signals (every 20 us) whose handler runs instrumented code, landing anywhere,
 * the tracer's hot path included. The program's counts vary per run, so stdout is not compared
 * with an untraced run; they are exact for the traced run itself. */
static void check_signals(const char *bin, const char *env)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out, .env = {env}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.out);
    cr_assert_str_empty(t.err, "stderr:\n%s", t.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    long handled = -1;
    for (int j = 0; j < e.nfuncs; j++)
        if (strcmp(e.f[j].name, "on_signal") == 0)
            handled = e.f[j].count;
    cr_assert_geq(handled, 100, "only %ld signals handled: the test proves nothing", handled);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, bin);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(signals, pie_no_runtime)
{
    check_signals(BIN("sig-pie-nort"), NULL);
}
Test(signals, nopie_xray_runtime)
{
    check_signals(BIN("sig-nopie-rt"), NULL);
}
Test(signals, small_buffers)
{
    /* Handlers also land in the slow path (a new 4 KiB chunk every ~500 events). */
    check_signals(BIN("sig-pie-rt"), "SLEDTRACE_BUFFER_KB=4");
}
