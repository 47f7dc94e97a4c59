/* The runtime's calibration (preload/calib.c; format/stf.h, STF_TYPED_CALIB): every trace it
 * creates starts, right after the header, with a block of the thread that started it holding
 * nothing but one typed event with the tracer's own cost per pair of records.
 *
 * The values are measured on this machine, so only their sanity is asserted: version 1; 3 to 9
 * rounds of 16 to 64 calls (calib.c's bounds); a clock step of at least one tick; each of the six
 * gaps, at the header's frequency, between 0.5 ns and 2 us (a pair of events costs a few ns to a
 * few tens of ns: a trampoline, a handler, a clock read, a store); each spread (the rounds' IQR)
 * no larger than its gap. What is exact: where the block is and what it holds, that a fork child
 * keeps its parent's calibration byte for byte, and that the tools read the trace (sledtrace's
 * strict reader and info, llvm-xray's verifier, convert and account). Never timed here.
 *
 * meson passes E2E_DIR, E2E_PRELOAD, E2E_LLVM_XRAY and E2E_SLEDTRACE. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

struct calib_block {
    struct stf_calib c;
    uint8_t payload[STF_CALIB_PAYLOAD];
    int32_t tid, pid;
    uint64_t freq;
};

/* Reads the trace's first block (strict reader): BufferExtents at offset 32 covering 144 bytes,
 * NewBuffer, Walltime, Pid, NewCPUId and one typed event of type STF_TYPED_CALIB, whose TSC is the
 * NewCPUId's, and nothing else; the next block must start at offset 192. */
static void read_calib(const char *trace, struct calib_block *b)
{
    struct stf_reader *r = NULL;
    int rc = stf_reader_open(&r, trace, STF_READ_STRICT);
    cr_assert_eq(rc, STF_OK, "%s: %s", trace, r ? stf_reader_error(r, NULL) : stf_strerror(rc));
    b->freq = stf_reader_header(r)->cycle_freq;
    static const int kinds[] = {STF_M_BUFFER_EXTENTS, STF_M_NEW_BUFFER, STF_M_WALLTIME, STF_M_PID,
                                STF_M_NEW_CPU,        STF_M_TYPED_EVENT};
    static const uint64_t offsets[] = {32, 48, 64, 80, 96, 112};
    uint64_t cpu_tsc = 0;
    struct stf_item it;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        cr_assert_eq(stf_reader_next(r, &it), STF_OK, "%s: record %zu", trace, i);
        cr_assert_eq(it.block, 0u);
        cr_assert_eq(it.kind, kinds[i], "%s: record %zu is a %s", trace, i, stf_kind_name(it.kind));
        cr_assert_eq(it.offset, offsets[i]);
        if (it.kind == STF_M_BUFFER_EXTENTS)
            cr_assert_eq(it.value, 144u, "the calibration block's extents");
        if (it.kind == STF_M_NEW_CPU)
            cpu_tsc = it.tsc;
    }
    cr_assert_eq(it.event_type, STF_TYPED_CALIB);
    cr_assert_eq(it.event_delta, 0);
    cr_assert_eq(it.tsc, cpu_tsc);
    cr_assert_eq(it.payload_len, (size_t)STF_CALIB_PAYLOAD);
    cr_assert(stf_decode_calib(it.event_type, it.payload, it.payload_len, &b->c));
    memcpy(b->payload, it.payload, sizeof b->payload);
    b->tid = it.tid;
    b->pid = it.pid;
    rc = stf_reader_next(r, &it);
    cr_assert_eq(rc, STF_OK, "%s: nothing after the calibration", trace);
    cr_assert_eq(it.block, 1u, "%s: a %s in the calibration's block", trace,
                 stf_kind_name(it.kind));
    cr_assert_eq(it.offset, 192u);
    stf_reader_close(r);
}

static void check_values(const struct calib_block *b, const char *what)
{
    const struct stf_calib *c = &b->c;
    cr_assert_eq(c->version, 1u, "%s", what);
    cr_assert(c->rounds >= 3 && c->rounds <= 9, "%s: %u rounds", what, c->rounds);
    cr_assert(c->calls >= 16 && c->calls <= 64, "%s: %u calls", what, c->calls);
    cr_assert_geq(c->step, 1u, "%s", what);
    cr_assert_gt(b->freq, 0u, "%s", what);
    static const char *const names[STF_GAPS] = {"E->E", "E->X", "X->E", "X->X", "E->T", "T->E"};
    for (int g = 0; g < STF_GAPS; g++) {
        double ns = c->gap[g] / 256.0 * 1e9 / (double)b->freq;
        cr_assert(ns > 0.5 && ns < 2000, "%s: %s measured at %.2f ns", what, names[g], ns);
        cr_assert_leq(c->spread[g], c->gap[g], "%s: %s spread %u over its gap %u (1/256 tick)",
                      what, names[g], c->spread[g], c->gap[g]);
    }
    cr_assert_gt(c->gap[STF_GAP_EX], 0u, "%s", what);
}

/* Runs prog (argv1 optional) traced, expecting status 0 and an empty stderr. */
static void run_traced(const char *work, const char *out, const char *prog, const char *argv1,
                       const char *env, struct e2e_run *t)
{
    struct e2e_spec s = {.prog = prog, .argv1 = argv1, .preload = 1, .outdir = out, .env = {env}};
    e2e_run(work, &s, t);
    cr_assert(WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0, "%s: status %#x: %s", prog,
              t->status, t->err);
    cr_assert_str_empty(t->err, "%s: stderr:\n%s", prog, t->err);
}

/* A single-threaded program's trace: the block, sane values, the main thread's, and every tool
 * reads it (the calibration is a typed event to llvm-xray: convert lists it first). */
Test(calib, trace_starts_with_it)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("fib-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t, r;
    run_traced(work, out, bin, NULL, NULL, &t);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct calib_block b;
    read_calib(trace, &b);
    check_values(&b, "fib");
    cr_assert_eq(b.tid, (int32_t)t.pid, "the block is the main thread's");
    cr_assert_eq(b.pid, (int32_t)t.pid);

    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' dump --verify '%s'", trace);
    cr_assert_eq(r.status, 0, "%s", r.err);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'" E2E_SLEDTRACE "' info '%s'", trace);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\ntracer cost:   entry->exit "), "%s", r.out);
    char want[96];
    snprintf(want, sizeof want,
             "(calibrated at start-up: %u rounds of %u calls; clock step %u tick", b.c.rounds,
             b.c.calls, b.c.step);
    cr_assert(strstr(r.out, want), "no '%s' in:\n%s", want, r.out);
    e2e_run_free(&r);

    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' fdr-dump --verify '%s'", trace);
    cr_assert_eq(r.status, 0, "llvm-xray fdr-dump --verify: %s", r.err);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' convert -m '%s' --output-format=yaml '%s'", bin,
               trace);
    cr_assert_eq(r.status, 0, "llvm-xray convert: %s", r.err);
    snprintf(want, sizeof want, "records:\n  - { type: %u, ", (unsigned)STF_TYPED_CALIB);
    const char *first = strstr(r.out, want);
    const char *nl = first ? strchr(first + 9, '\n') : NULL;
    const char *kind = first ? strstr(first, "kind: typed-event") : NULL;
    cr_assert(nl && kind && kind < nl,
              "llvm-xray convert does not list the calibration first:\n%.600s", r.out);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'" E2E_LLVM_XRAY "' account -m '%s' -format=csv '%s'", bin, trace);
    cr_assert_eq(r.status, 0, "llvm-xray account: %s", r.err);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    snprintf(want, sizeof want, "\n1,%ld,", e.f[0].count); /* fib, function 1 */
    cr_assert_str_eq(e.f[0].name, "fib");
    cr_assert(strstr(r.out, want), "llvm-xray account: no '%s' in:\n%s", want + 1, r.out);
    e2e_run_free(&r);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* With CLOCK_MONOTONIC timestamps (ns, 1e9 Hz in the header) the same. */
Test(calib, monotonic_clock)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("fib-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    run_traced(work, out, bin, NULL, "SLEDTRACE_CLOCK=monotonic", &t);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct calib_block b;
    read_calib(trace, &b);
    cr_assert_eq(b.freq, 1000000000u);
    check_values(&b, "monotonic");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    e2e_check_trace(&tr, &e, "monotonic");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* A fork child's trace starts with its parent's calibration (not measured again: the same
 * payload, byte for byte), in a block of the child's own thread. */
Test(calib, fork_child_keeps_the_parents)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("forkprog-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    run_traced(work, out, bin, NULL, NULL, &t);
    int child = -1;
    const char *p = strstr(t.out, "forked ");
    cr_assert(p && sscanf(p, "forked %d", &child) == 1, "%s", t.out);
    struct calib_block parent, kid;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    read_calib(trace, &parent);
    check_values(&parent, "parent");
    e2e_trace_path(trace, sizeof trace, out, bin, child, "fdr");
    read_calib(trace, &kid);
    cr_assert_eq(memcmp(parent.payload, kid.payload, STF_CALIB_PAYLOAD), 0,
                 "the child measured its own");
    cr_assert_eq(kid.tid, child);
    cr_assert_eq(kid.pid, child);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* exec: the new image (same pid, PID.1.fdr) measures its own and starts its trace with it. */
Test(calib, exec_image_has_its_own)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("execprog-pie-nort");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    run_traced(work, out, bin, NULL, NULL, &t);
    struct calib_block b;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    read_calib(trace, &b);
    check_values(&b, "first image");
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "1.fdr");
    read_calib(trace, &b);
    check_values(&b, "second image");
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* An uninstrumented host whose first instrumented library comes by dlopen: the trace created
 * then starts with the calibration too, measured in that dlopen on the thread calling it. */
Test(calib, lazy_start_on_dlopen)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("plugprog");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_run t;
    run_traced(work, out, bin, BIN("libslb.so"), NULL, &t);
    struct calib_block b;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    read_calib(trace, &b);
    check_values(&b, "dlopen");
    cr_assert_eq(b.tid, (int32_t)t.pid, "the main thread's (it calls dlopen)");
    cr_assert_eq(b.pid, (int32_t)t.pid);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* SLEDTRACE_LOG=info says what was measured and how long it took, in one line. */
Test(calib, log_info_line)
{
    char work[PATH_MAX], out[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {
        .prog = BIN("fib-pie-nort"), .preload = 1, .outdir = out, .env = {"SLEDTRACE_LOG=info"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert_eq(t.status, 0, "%s", t.err);
    cr_assert_eq(e2e_count_lines(t.err, "sledtrace: info: calibration: tracer cost per pair of "
                                        "records E->E "),
                 1, "%s", t.err);
    cr_assert(strstr(t.err, " rounds of ") && strstr(t.err, " us\n"), "%s", t.err);
    e2e_run_free(&t);
    e2e_rmtree(work);
}
