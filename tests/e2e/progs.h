/* Shared by the e2e test programs. Each program prints the exact number of calls it makes to
 * each of its instrumented functions, computed from the math, never measured:
 *     count <function> <n>    n enters and n exits (exit + tail exit) of <function>
 *     tail <function> <n>     n of those exits are tail exits (the function only leaves by one)
 *     threads <n>             n threads run instrumented code (main included)
 *     threadwork <n>          one line per such thread: the enters it records
 * Every instrumented function is noinline and reached in a way clang cannot fold (volatile
 * function pointers, compiler barriers), so the counts hold at any optimisation level. */
#ifndef E2E_PROGS_H
#define E2E_PROGS_H

#define KEEP __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

/* F(k), the Fibonacci numbers, by a loop (no calls). */
static inline long fibonacci(long k)
{
    long a = 0, b = 1;
    for (long i = 0; i < k; i++) {
        long t = a + b;
        a = b;
        b = t;
    }
    return a;
}

/* Calls made by the naive recursive fib(n) (fib(0) and fib(1) are leaves): 2 F(n+1) - 1. */
static inline long fib_calls(long n)
{
    return 2 * fibonacci(n + 1) - 1;
}

#endif
