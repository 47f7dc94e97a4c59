/* Test helper for `sledtrace convert --format chrome`: reads a JSON file back the way trace
 * viewers do and checks that every thread's calls nest as numbers, and crafted traces whose
 * times are hard to write as decimals, with what each holds.
 *
 * The check (cc_check) takes each complete event's ts and dur with strtod and computes its end in
 * IEEE double as the viewers do: ts + dur (Chrome DevTools, Perfetto's legacy importer) and, as
 * speedscope 1.25 does, (ts - the thread's first ts) + dur. Per thread, events sorted by start
 * (ties: the longer first, then file order, as DevTools sorts), a call that starts at or after
 * the end of the call on top of the stack closes that call (a sibling or a later call); else it
 * is that call's child and must end at or before its parent's end. Every start and end of a
 * thread must differ from all its others (no tie left for a viewer to break) and every call must
 * last more than 0. Failures are Criterion assertions, so these only run inside a test. */
#ifndef SLEDTRACE_TESTS_CHROMECHECK_H
#define SLEDTRACE_TESTS_CHROMECHECK_H

#include <stddef.h>
#include <stdint.h>

#define CC_DEPTHS 32

/* Calls of one thread, per depth (0 = top-level), as a trace holds them or as a check found. */
struct cc_thread {
    int32_t pid, tid;
    uint64_t calls;
    uint64_t depth[CC_DEPTHS];
};

struct cc_result {
    struct cc_thread t[16];
    size_t nt;
    double first, last; /* earliest start and latest end (ts + dur) of any call, microseconds */
    uint64_t events;    /* all events of traceEvents, metadata included */
};

/* Checks the complete events of the Chrome JSON file at path (see the top); fills out with the
 * depths it found. */
void cc_check(const char *path, struct cc_result *out);
/* Asserts that got holds the threads of want (same pid, tid, calls and calls per depth) and no
 * other, and, when want->last is not 0, the time range of want: got's first start within half
 * a nanosecond of want's, its last end from want's to 5 ns later (frames closed together at a
 * thread's end are written a grid step apart, see convert_chrome.c). what names the trace in
 * the messages. */
void cc_expect(const char *what, const struct cc_result *got, const struct cc_result *want);
/* The expectation for (pid, tid) in r, added if new. */
struct cc_thread *cc_thread_of(struct cc_result *r, int32_t pid, int32_t tid);

/* The traces the nesting check and the viewer tests read, CC_CASES of them: crafted ones
 * (cc_rounding_trace, cc_shapes_trace, cc_span_trace over 30 days and over 2^63 ticks), the
 * checked-in real traces in $SLEDTRACE_DATA, and the shapes trace with a calibration whose
 * corrected times put calls below zero (issue 22: the export must still nest). Case i
 * writes its trace (crafted ones to a temporary file, removed again), converts it with
 * `sledtrace convert --format chrome` ($SLEDTRACE_BIN) into a new temporary JSON file and returns
 * its path (malloc'd); want gets what the trace holds: calls per thread and depth, the first
 * call's start and the last call's end in microseconds after the trace's base, plus the 1 us
 * the export adds (none for the 2^63-tick trace, whose times are written on a coarse grid).
 * name gets the case's name. */
#define CC_CASES 8
char *cc_case(int i, struct cc_result *want, const char **name);

struct tg;
/* Three threads of process 9 at cycle_freq 2596118422 Hz (a tick is about 0.385 ns, so times
 * in microseconds are decimals that binary doubles do not hold), busy about 2439.05 us after the
 * trace's base: pseudo-random call trees whose records are 0 to 3 ticks apart as often as
 * further (touching siblings, children that end when their parent does, calls of 0 or 1 ns),
 * a CPU change that steps the counter back in the middle of one thread, logged arguments,
 * custom events and frames still open at the end. want gets what the trace holds: per thread,
 * calls per depth. */
void cc_rounding_trace(struct tg *g, struct cc_result *want);
/* At 1 GHz (1 tick = 1 ns), the shapes that meet at one nanosecond: a call and its child that
 * start and end at the same tick (both of length 0), a chain of three calls entered at one tick,
 * a zero-length call at its parent's start, siblings that touch, a repair, a CPU change that
 * steps the counter back inside a call, calls entered by a thread's last record (left open: they
 * end where they start, at their parents' end), and frames open at a loss marker. */
void cc_shapes_trace(struct tg *g, struct cc_result *want);
/* At 1 GHz: calls at the base, then, span ticks later (a TSC wrap record), calls one tick apart
 * or less (touching, of length 0, one left open), so that the trace's last time is span. */
void cc_span_trace(struct tg *g, struct cc_result *want, uint64_t span);

#endif
