/* Corrected times: the tracer's own cost taken out of every timestamp the analysis reads.
 *
 * Every traced call runs the tracer twice (entry and exit: trampoline, handler, clock read,
 * store). Part of that time lies between the call's entry and exit records, part between the
 * exit and its caller's next record, and all of it is the tracer's. The runtime measures it at
 * start-up (format/stf.h, STF_TYPED_CALIB): gap[a][b] is the tracer time between two consecutive
 * records of a thread whose kinds are a and b (E entry, X exit, T tail exit). The virtual clock
 * of a thread subtracts, at each function record, the gap between it and the thread's previous
 * function record, accumulated: v = tsc - sum of the gaps so far. Any interval between two
 * records of the thread then loses exactly the tracer time inside it: a leaf's duration loses
 * gap[E][X]; a call with k callees, its own gaps and its callees' (tools/DESIGN.md, "Corrected
 * times", has the algebra). Other records (events, CPU changes, loss markers) take the current
 * correction. The tracer's pseudo-functions ([sledtrace] buffer switch...) are not events of
 * the trampolines: they add nothing and leave the previous kind as it was. A loss marker forgets
 * the previous kind (the events in between were not recorded, so neither is their cost).
 *
 * The correction is a mean; the time of one call is not. So a corrected duration may come out
 * below zero (a call measured at 0 clock steps, its entry and exit in one step of a 10 ns
 * clock): the walker keeps such durations signed (callstack.c, cs.signed_dur) so that sums -
 * total, self, stacks' weights - are unbiased, and only per-call figures are clamped at 0 for
 * display. The gaps are kept in 1/256 tick, so that a fraction of a tick per call does not
 * become milliseconds over millions of calls.
 *
 * Thread safety: a vclock belongs to one walk (one thread of the trace at a time). */
#ifndef SLEDTRACE_TOOLS_VCLOCK_H
#define SLEDTRACE_TOOLS_VCLOCK_H

#include "stf.h"

#include <stdbool.h>
#include <stdint.h>

/* --raw-times (every command that reads durations): times as measured, no correction. */
extern bool tool_raw_times;

enum { VC_E, VC_X, VC_T, VC_NONE };

struct vclock {
    uint32_t g[9]; /* gap[prev * 3 + cur], 1/256 tick */
    uint64_t acc;  /* the thread's correction so far, 1/256 tick */
    uint8_t prev;  /* kind of the thread's last trampoline record, VC_NONE at its start */
    bool on;
};

/* What a command says about its times (tool_times_note): taken from its trace once read
 * (tool_trace_times). */
struct vtimes {
    bool set;       /* filled */
    bool has_calib; /* the trace records its tracer cost */
    bool corrected; /* and the times were corrected */
    struct stf_calib calib;
    uint64_t removed; /* ticks taken out */
    uint64_t freq;
};

/* Reads the trace's calibration record (the first one before any function record); 1 with *c
 * filled and *block the index of its block in file order, 0 when there is none (compiler-rt's
 * traces, sledtrace's before it), -1 when the file cannot be read (the walk will say why). The
 * block is the runtime's, written at start-up before the program ran: the analyses skip it
 * whole, so that its time does not count as the thread's. */
int vclock_find(const char *path, struct stf_calib *c, uint64_t *block);
/* A vclock from the calibration (c NULL: off: times as measured). */
void vclock_init(struct vclock *v, const struct stf_calib *c);

/* A new thread's walk starts. */
static inline void vclock_thread(struct vclock *v)
{
    v->acc = 0;
    v->prev = VC_NONE;
}

/* The corrected time of a function record of the thread at tsc. */
static inline uint64_t vclock_func(struct vclock *v, uint64_t tsc, uint32_t id, uint8_t action)
{
    static const uint8_t kind[4] = {VC_E, VC_X, VC_T, VC_E};
    if (__builtin_expect(id - STF_FID_TRACER_FIRST < 16u, 0)) /* object 0's top 16 ids */
        return tsc - (v->acc >> 8);
    uint8_t k = kind[action & 3];
    if (v->prev != VC_NONE)
        v->acc += v->g[v->prev * 3 + k];
    v->prev = k;
    return tsc - (v->acc >> 8);
}

/* The corrected time of any other record. */
static inline uint64_t vclock_other(const struct vclock *v, uint64_t tsc)
{
    return tsc - (v->acc >> 8);
}

/* Corrects it (an item of the thread being walked) in place. */
void vclock_item(struct vclock *v, struct stf_item *it);
/* Corrects n function records in place. */
void vclock_funcs(struct vclock *v, struct stf_func *f, size_t n);

/* The whole tracer cost of one call of a leaf (gap[E][X] + gap[X][E]), in ticks (a double:
 * fractions kept); the larger spread of the two gaps, in ticks. */
double vclock_leaf_cost(const struct stf_calib *c);
double vclock_leaf_spread(const struct stf_calib *c);

#endif
