/* The clock's resolution as a trace's records show it, for info (which prints it) and diff
 * (whose noise floor is made of it).
 *
 * Two figures over the non-zero time steps between a thread's consecutive function records (a
 * function record's delta): their greatest common divisor, and the smallest of them. The gcd is
 * the resolution: a clock that advances in coarse steps (a VM's TSC in steps of 26 ticks, a
 * clock of nanoseconds that moves every 4 ms) shows its step, because every step between two
 * readings is a whole number of its steps; a TSC that counts every tick shows 1 tick as soon as
 * two steps are coprime, in practice within the first records. The smallest step is not the
 * resolution on such a TSC (it is the least time between two records, the tracer's own cost),
 * which is why info shows both. Steps of 0 (two records at one time) say nothing and are left
 * out; a trace with no step at all has neither figure (0).
 *
 * Both are exact and need every function record (the last one may hold the only odd step),
 * except that a gcd of 1 tick is final: tool_trace_resolution stops there when the smallest
 * step is not wanted, so on a TSC it reads a few blocks, not the trace. */
#ifndef SLEDTRACE_TOOLS_RESOLUTION_H
#define SLEDTRACE_TOOLS_RESOLUTION_H

#include <stdbool.h>
#include <stdint.h>

struct tool_res {
    uint64_t gcd; /* ticks; 0: no non-zero step yet */
    uint64_t min; /* ticks; 0: no non-zero step yet */
};

/* Takes one function record's delta (its step from the thread's previous record). */
void tool_res_add(struct tool_res *r, uint64_t delta);

/* The resolution of the trace at path, read with the streaming reader (*freq: the header's
 * cycle frequency). With want_min false, the reading stops once the gcd is 1 tick, and r->min
 * is then only the smallest step seen so far. The reader's warnings are not printed (the
 * command's own reading of the trace prints them); an error is, with file and offset. Returns
 * EXIT_OK or EXIT_BAD_TRACE. A pipe cannot be read twice: the caller decides what to do with
 * "-" before calling. */
int tool_trace_resolution(const char *path, bool want_min, struct tool_res *r, uint64_t *freq);

/* ticks as nanoseconds at freq (0: ticks are ns), unrounded: a resolution of 1 tick of a
 * 2.6 GHz TSC is 0.385 ns, not 0. */
double tool_res_ns(uint64_t ticks, uint64_t freq);

#endif
