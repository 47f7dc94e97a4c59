/* The seek tests' trace (seekgen.c; the layout is described in test_seek.c). */
#ifndef SLEDTRACE_TESTS_SEEKGEN_H
#define SLEDTRACE_TESTS_SEEKGEN_H

#include <stdbool.h>

enum { ITERS = 60000, PER_BLOCK = 300, LONG_EVERY = 700, LONG_FOR = 450 };

/* The function names of its ids, as a sidecar's text. */
#define SEEKGEN_SYMS                                                                               \
    "sledtrace-syms\t1\no\t0\t0x0\t/bin/prog\nf\t0\t1\t0x1000\tmain\nf\t0\t2\t0x1010\touter\n"     \
    "f\t0\t3\t0x1020\tmid\nf\t0\t4\t0x1030\tleaf\nf\t0\t5\t0x1040\tlong\n"

/* Writes the trace (with calib, the runtime's calibration block first) to path: 0 or -1. */
int seekgen_write(const char *path, bool calib);

#endif
