/* The tracer's own cost, measured at start-up where the program runs (format/stf.h,
 * STF_TYPED_CALIB; the tools take it out of every time they show: tools/vclock.h).
 *
 * What. Between two consecutive function records of a thread lies some of the tracer's time:
 * the part of the first event's cost after its clock read and the part of the second's before
 * its own. It depends only on the two records' kinds, E (entry), X (exit), T (tail exit). Six
 * pairs are measured, E->E, E->X, X->E, X->X, E->T and T->E; the tools derive the other three.
 * For a leaf, E->X is all the tracer time inside its entry..exit interval; the rest lands in
 * its caller.
 *
 * How. calib_funcs.S holds functions shaped exactly like patched instrumented code (the
 * runtime's sled bytes, a stub `jmp *slot(%rip)`, the plain trampolines and stp_event), and the
 * same functions unpatched. On the calling thread, with its asynchronous signals blocked (the
 * raw rt_sigprocmask of the slow path, str.h), the thread's cursor is saved and pointed at a
 * static scratch buffer, big enough that the fast path never leaves for the slow path (room()
 * would need 24 bytes: every record is given 24), and last_tsc set to now, so every delta fits
 * its 32 bits. Then one warm-up round and ROUNDS rounds, each of:
 *   - parent (E E X E X X per call): CALLS calls, recorded; gives E->E, E->X, X->E, X->X;
 *   - tail (E T E X per call: entry, tail exit, then the leaf it jumps to): gives E->T, T->E;
 *   - each shape unpatched, OFF_CALLS calls timed as a whole: the loop's own untraced cost per
 *     call (calls, returns, the unpatched sleds' jumps, the loop), which the program pays
 *     untraced too. It is taken off the gaps, spread evenly over the records of a call (the
 *     split between them is not measurable; the sum is exact).
 * The records are decoded from the scratch buffer (8-byte `word | delta << 32`); a round is
 * discarded, and another run in its place (at most EXTRA), when a record is not the one
 * expected (a TSCWrap after a stall of seconds), or when one delta is more than OUTLIER times
 * the round's mean (an interrupt or a preemption in the middle: one such delta would move that
 * round's mean by microseconds / CALLS). Per round and gap type: the mean of its deltas
 * (1/256 tick), less the untraced share. gap = the median over the rounds kept; spread = their
 * interquartile range (with 9 rounds, the 7th smallest less the 3rd: one disturbed round that
 * was kept moves neither). step = the smallest non-zero difference between consecutive clock
 * reads in a tight loop of STEP_READS reads, whose mean difference (the cost of one read) is
 * also taken off the unpatched loops' timing. The cursor is then restored exactly. Nothing
 * reaches the trace: the ids (CALIB_ID_*, object 0's top ids) only ever sit in the scratch
 * buffer. Rounds are means because one delta says little: rdtsc on the development VMs moves
 * in steps of 1 or of ~26 ticks (10 ns, as long as a whole event pair), depending on the CPU.
 *
 * When. Once per process (str_calib_measure, from str_buffers_start once the clock is chosen,
 * before any sled is patched: at start-up, or when dlopen brings the first instrumented
 * library); a fork child keeps its parent's result, an exec'd image measures its own. Every
 * trace file then starts with one block holding the result (str_calib_block; buffers.c's
 * begin_file writes it right after the header). A failure writes no block and says so at
 * SLEDTRACE_LOG=info only: the trace is then read as measured.
 *
 * Cost. The warm-up round has MIN_CALLS calls; the first round CALLS, and the others as many
 * as fit ROUNDS rounds in BUDGET_NS by the first kept one's time (62-64 with rdtsc on the
 * development VM when its host is quiet, about 45 when busy; about 26 with the monotonic clock,
 * whose reads cost three times as much). Each round also makes OFF_CALLS unpatched calls of
 * each shape. In all, medians of 20 runs there: 75-90 us with rdtsc, 94-103 us with the
 * monotonic clock (SLEDTRACE_LOG=info prints it), plus one round per disturbed one. A
 * measurement that keeps fewer than 3 rounds, or whose rounds disagree (a spread over its gap:
 * the rounds then say nothing; about 0.2 of it on a quiet machine, at most 0.5 of it under six
 * busy loops on the 2-CPU VM), is made again, up to ATTEMPTS in all, and the steadiest one is
 * kept: 4 or 5 in 30 runs of the calibration tests had failed so on a VM other sessions kept
 * at a load average of 4-8 (no block at all, or a spread over its gap).
 *
 * Limits. What is measured is the common path of the plain trampolines: under
 * SLEDTRACE_MIN_DURATION exits go through stp_event_min (a few loads more), and the slow
 * path's time is not in it (it is recorded as pseudo-calls of its own). Caches and branch
 * predictors are warm here; in a program whose code thrashes them each event costs more. The
 * trampoline's cost is that of one CPU at start-up: a frequency change later is not seen.
 */
#include "str.h"
#include "stf.h"
#include "stp.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

/* calib_funcs.S (its CALIB_ID_* must be these). */
enum { CALIB_ID_PARENT = 0xfffff0, CALIB_ID_LEAF = 0xfffff1, CALIB_ID_TAIL = 0xfffff2 };
STR_HIDDEN void str_calib_parent_on(void);
STR_HIDDEN void str_calib_parent_off(void);
STR_HIDDEN void str_calib_tail_on(void);
STR_HIDDEN void str_calib_tail_off(void);
STR_HIDDEN void str_calib_loop(void (*fn)(void), unsigned n);

enum {
    ROUNDS = 9,
    CALLS = 64, /* per round, at most: fewer with a slow clock (BUDGET_NS) */
    MIN_CALLS = 16,
    OFF_CALLS = 128, /* unpatched calls timed per round and shape */
    EXTRA = 3,       /* rounds run in place of disturbed ones, at most */
    OUTLIER = 16,
    ATTEMPTS = 3, /* measurements, at most, when one is disturbed (ROUGH) */
    STEP_READS = 32,
    MAX_RECORDS = 6,   /* per call */
    BUDGET_NS = 70000, /* for the ROUNDS rounds */
};
/* A measurement whose roughness (below) is over this is made again. */
#define ROUGH 1.0

_Static_assert(STR_CALIB_BLOCK == STR_BLOCK_HEAD + STF_META_SIZE + STF_CALIB_PAYLOAD,
               "str.h's STR_CALIB_BLOCK");

/* Every record may take 24 bytes (a TSCWrap and itself), and room() asks for 24 more than the
 * current position: the slow path is never reached. */
static _Alignas(64) uint8_t scratch[MAX_RECORDS * CALLS * 24 + 64];

/* Written once, by the thread that starts tracing, before begin_file reads them on that thread
 * and before the flush thread exists; a fork child reads its copy. */
static struct stf_calib result;
static int measured; /* 0: not yet, 1: result holds it, -1: failed */

struct shape {
    void (*on)(void), (*off)(void);
    unsigned n;                 /* records per call */
    uint32_t word[MAX_RECORDS]; /* each record's id << 4 | action << 1 */
    int8_t gap[MAX_RECORDS];    /* STF_GAP_* between record k - 1 (mod n) and k, or -1 */
};

#define W(id, action) (((uint32_t)(id) << 4) | ((uint32_t)(action) << 1))

/* The gaps each shape gives (the parent's E->X and X->E are the ones kept; the tail's are
 * measured but not used). Record 0's gap is the one from the previous call's last record. */
static const struct shape shapes[2] = {
    {str_calib_parent_on,
     str_calib_parent_off,
     6,
     {W(CALIB_ID_PARENT, STF_ENTER), W(CALIB_ID_LEAF, STF_ENTER), W(CALIB_ID_LEAF, STF_EXIT),
      W(CALIB_ID_LEAF, STF_ENTER), W(CALIB_ID_LEAF, STF_EXIT), W(CALIB_ID_PARENT, STF_EXIT)},
     {STF_GAP_XE, STF_GAP_EE, STF_GAP_EX, STF_GAP_XE, STF_GAP_EX, STF_GAP_XX}},
    {str_calib_tail_on,
     str_calib_tail_off,
     4,
     {W(CALIB_ID_TAIL, STF_ENTER), W(CALIB_ID_TAIL, STF_TAIL_EXIT), W(CALIB_ID_LEAF, STF_ENTER),
      W(CALIB_ID_LEAF, STF_EXIT)},
     {-1, STF_GAP_ET, STF_GAP_TE, -1}},
};

/* CLOCK_MONOTONIC_RAW in ns, as the TSC's own calibration reads it (str_clock_raw). */
static uint64_t raw_ns(void)
{
    struct timespec ts;
    str_clock_raw(&ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The clock's smallest non-zero step (ticks) and the mean cost of one read (1/256 tick). */
static void clock_step(uint32_t *step, uint64_t *read256)
{
    uint64_t t[STEP_READS];
    for (int i = 0; i < STEP_READS; i++)
        t[i] = str_now();
    uint64_t min = 0;
    for (int i = 1; i < STEP_READS; i++) {
        uint64_t d = t[i] - t[i - 1];
        if (d && (min == 0 || d < min))
            min = d;
    }
    *step = min == 0 ? 1 : min > UINT32_MAX ? UINT32_MAX : (uint32_t)min;
    *read256 = 256 * (t[STEP_READS - 1] - t[0]) / (STEP_READS - 1);
}

/* One round of shape s: the mean of each of its gap types, less the untraced share, in 1/256
 * tick, into m[]. 0 when the round is disturbed (see the top). */
static int run_round(const struct shape *s, unsigned calls, uint64_t read256, int64_t m[STF_GAPS])
{
    struct str_cursor *c = &str_cursor;
    uint64_t t0 = str_now();
    str_calib_loop(s->off, OFF_CALLS);
    uint64_t t1 = str_now();
    int64_t off = (int64_t)(256 * (t1 - t0)) - (int64_t)read256;
    int64_t untraced = off > 0 ? off / OFF_CALLS / (int64_t)s->n : 0; /* per gap */

    atomic_store_explicit(&c->pos, (uintptr_t)scratch, memory_order_relaxed);
    c->last_tsc = str_now();
    str_calib_loop(s->on, calls);
    uintptr_t end = atomic_load_explicit(&c->pos, memory_order_relaxed);
    if (end != (uintptr_t)scratch + (uintptr_t)calls * s->n * 8)
        return 0; /* a TSCWrap, or nothing recorded */
    uint64_t sum[STF_GAPS] = {0}, all = 0, max = 0;
    uint32_t cnt[STF_GAPS] = {0};
    for (size_t i = 0, k = 0; i < (size_t)calls * s->n; i++, k = k + 1 == s->n ? 0 : k + 1) {
        uint64_t r;
        memcpy(&r, scratch + 8 * i, 8);
        if ((uint32_t)r != s->word[k])
            return 0;
        if (i == 0)
            continue; /* its delta is from before the loop */
        uint64_t d = r >> 32;
        all += d;
        if (d > max)
            max = d;
        if (s->gap[k] >= 0) {
            sum[s->gap[k]] += d;
            cnt[s->gap[k]]++;
        }
    }
    if (max * ((uint64_t)calls * s->n - 1) > OUTLIER * all)
        return 0;
    for (int g = 0; g < STF_GAPS; g++)
        if (cnt[g])
            m[g] = (int64_t)(256 * sum[g] / cnt[g]) - untraced;
    return 1;
}

/* Sorts v[0..n), n <= ROUNDS. */
static void sort_i64(int64_t *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

static uint32_t clamp_u32(int64_t v)
{
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Runs the rounds with the cursor pointed at the scratch buffer. Returns the number of rounds
 * kept (gap means in m[gap][round]), counts the discarded ones and sets the calls per round:
 * CALLS, or fewer when the first round kept (after a short warm-up) says that ROUNDS of them
 * would take more than BUDGET_NS (the monotonic clock's reads cost several times rdtsc's); the
 * rounds after it then have that many. */
static int measure_rounds(uint64_t read256, int64_t m[STF_GAPS][ROUNDS], int *discarded,
                          uint32_t *calls)
{
    int kept = 0;
    *discarded = 0;
    *calls = MIN_CALLS;
    memset(scratch, 0, (size_t)CALLS * MAX_RECORDS * 8); /* its page faults, before the rounds */
    for (int r = -1; r < ROUNDS + EXTRA && kept < ROUNDS; r++) {
        int64_t mr[STF_GAPS];
        for (int g = 0; g < STF_GAPS; g++)
            mr[g] = INT64_MIN;
        uint64_t t0 = raw_ns();
        int ok = run_round(&shapes[0], *calls, read256, mr) &&
                 run_round(&shapes[1], *calls, read256, mr);
        uint64_t took = raw_ns() - t0;
        if (r < 0) { /* warm-up: MIN_CALLS */
            *calls = CALLS;
            continue;
        }
        for (int g = 0; g < STF_GAPS && ok; g++)
            ok = mr[g] != INT64_MIN;
        if (!ok) {
            ++*discarded;
            continue;
        }
        if (kept == 0 && took * ROUNDS > BUDGET_NS) {
            uint64_t c = CALLS * (uint64_t)BUDGET_NS / (took * ROUNDS);
            *calls = c < MIN_CALLS ? MIN_CALLS : (uint32_t)c;
        }
        for (int g = 0; g < STF_GAPS; g++)
            m[g][kept] = mr[g];
        kept++;
    }
    return kept;
}

/* One measurement, the cursor on the scratch buffer: 1 with *k's rounds, calls, step, gaps and
 * spreads; 0 when fewer than 3 rounds were quiet, -1 when a pair of events measured at no
 * cost. *discarded counts its disturbed rounds. */
static int measure_once(struct stf_calib *k, int *discarded)
{
    uint64_t read256;
    clock_step(&k->step, &read256);
    int64_t m[STF_GAPS][ROUNDS];
    int kept = measure_rounds(read256, m, discarded, &k->calls);
    if (kept < 3)
        return 0;
    k->rounds = (uint32_t)kept;
    for (int g = 0; g < STF_GAPS; g++) {
        sort_i64(m[g], kept);
        int64_t med = kept % 2 ? m[g][kept / 2] : (m[g][kept / 2 - 1] + m[g][kept / 2]) / 2;
        k->gap[g] = clamp_u32(med);
        k->spread[g] = clamp_u32(m[g][kept * 3 / 4] - m[g][kept / 4]); /* the IQR */
        if (k->gap[g] == 0)
            return -1;
    }
    return 1;
}

/* How much a measurement's rounds disagree: its largest spread as a share of its gap. */
static double roughness(const struct stf_calib *k)
{
    double r = 0;
    for (int g = 0; g < STF_GAPS; g++) {
        double x = k->gap[g] ? (double)k->spread[g] / k->gap[g] : 1e9;
        if (x > r)
            r = x;
    }
    return r;
}

void str_calib_measure(void)
{
    if (measured)
        return;
    measured = -1;
    struct str_cursor *c = &str_cursor;
    /* Only a thread that records nothing yet: its cursor is free to borrow, and no flush thread
     * reads it. */
    if (c->nest != 0 || atomic_load_explicit(&c->pos, memory_order_relaxed) != 0 || str_tls.th) {
        str_log(STR_INFO, "calibration skipped: this thread records already; traces will not "
                          "record the tracer's cost");
        return;
    }
    uint64_t old_mask = 0;
    str_raw_sigmask(0 /* SIG_BLOCK */, &stp_async_signals, &old_mask);
    uint64_t ns0 = raw_ns(), tick0 = str_now();

    uintptr_t pos0 = atomic_load_explicit(&c->pos, memory_order_relaxed);
    uintptr_t end0 = atomic_load_explicit(&c->end, memory_order_relaxed);
    uintptr_t stable0 = atomic_load_explicit(&c->stable, memory_order_relaxed);
    uint64_t last0 = c->last_tsc;
    atomic_store_explicit(&c->pos, (uintptr_t)scratch, memory_order_relaxed);
    atomic_store_explicit(&c->end, (uintptr_t)scratch + sizeof scratch, memory_order_relaxed);

    /* A disturbed measurement (too few quiet rounds, or rounds that disagree) is made again,
     * up to ATTEMPTS in all; the steadiest one made is kept. */
    struct stf_calib k = {.version = STF_CALIB_VERSION};
    int have = 0, discarded = 0, attempts = 0, zero = 0;
    while (attempts < ATTEMPTS && !(have && roughness(&k) <= ROUGH)) {
        struct stf_calib a = {.version = STF_CALIB_VERSION};
        int d = 0, r = measure_once(&a, &d);
        attempts++;
        discarded += d;
        zero |= r < 0;
        if (r > 0 && (!have || roughness(&a) < roughness(&k))) {
            k = a;
            have = 1;
        }
    }

    /* pos == 0 only together with end == 0 (str.h): end first. */
    atomic_store_explicit(&c->end, end0, memory_order_relaxed);
    atomic_store_explicit(&c->pos, pos0, memory_order_relaxed);
    atomic_store_explicit(&c->stable, stable0, memory_order_relaxed);
    c->last_tsc = last0;

    uint64_t ns1 = raw_ns(), tick1 = str_now();
    str_raw_sigmask(2 /* SIG_SETMASK */, &old_mask, NULL);

    double us = (double)(ns1 - ns0) / 1e3;
    if (!have) {
        if (zero)
            str_log(STR_INFO, "calibration failed: a pair of events measured at no cost; traces "
                              "will not record the tracer's cost");
        else
            str_log(STR_INFO,
                    "calibration failed: %d attempts, %d rounds disturbed (%.0f us); traces will "
                    "not record the tracer's cost",
                    attempts, discarded, us);
        return;
    }
    result = k;
    measured = 1;
    /* ns: the clock's rate over the calibration itself (the header's comes later) */
    double ns_per_tick =
        str_clock_tsc && tick1 > tick0 ? (double)(ns1 - ns0) / (double)(tick1 - tick0) : 1.0;
    double ns[STF_GAPS], spread = 0;
    for (int g = 0; g < STF_GAPS; g++) {
        ns[g] = k.gap[g] / 256.0 * ns_per_tick;
        double s = k.spread[g] / 256.0 * ns_per_tick;
        if (s > spread)
            spread = s;
    }
    str_log(STR_INFO,
            "calibration: tracer cost per pair of records E->E %.1f ns, E->X %.1f, X->E %.1f, "
            "X->X %.1f, E->T %.1f, T->E %.1f (spread up to %.1f ns); %u rounds of %u calls (%d "
            "discarded, %d attempt%s), clock step %u ticks; took %.0f us",
            ns[STF_GAP_EE], ns[STF_GAP_EX], ns[STF_GAP_XE], ns[STF_GAP_XX], ns[STF_GAP_ET],
            ns[STF_GAP_TE], spread, k.rounds, k.calls, discarded, attempts,
            attempts == 1 ? "" : "s", k.step, us);
}

size_t str_calib_block(uint8_t b[STR_CALIB_BLOCK], int32_t tid, int32_t pid)
{
    if (measured != 1)
        return 0;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    stf_meta_u64(b, STF_M_BUFFER_EXTENTS, STR_CALIB_BLOCK - STF_META_SIZE);
    stf_meta_new_buffer(b + 16, tid);
    stf_meta_walltime(b + 32, wall.tv_sec, (uint32_t)(wall.tv_nsec / 1000));
    stf_meta_pid(b + 48, pid);
    stf_meta_new_cpu(b + 64, 0, str_now());
    stf_meta_typed_event(b + STR_BLOCK_HEAD, STF_CALIB_PAYLOAD, 0, STF_TYPED_CALIB);
    stf_encode_calib(b + STR_BLOCK_HEAD + STF_META_SIZE, &result);
    return STR_CALIB_BLOCK;
}
