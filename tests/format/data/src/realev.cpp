/* realev.cpp - the program that recorded tests/format/data/real-events.fdr (and .syms), by
 * scripts/record-test-traces.sh:
 *   clang++ -O2 -g0 -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps -pthread
 *   run under LD_PRELOAD=libsledtrace.so with the default (lossless) policy.
 *
 * Real control flow that leaves frames without an exit record, in instrumented functions:
 *   - a C++ exception thrown by rt::thrower3 through rt::thrower2 and rt::thrower1, caught in
 *     rt::catcher (3 frames entered, never exited, per throw);
 *   - a longjmp from rt::deep3 through rt::deep2 and rt::deep1 back to rt::jumper's setjmp
 *     (3 frames entered, never exited, per jump);
 *   - real tail calls: rt::chain `jmp`s to rt::tailer, which `jmp`s to rt::leaf (tail exits);
 *   - a signal handler (raise(SIGUSR1), delivered before raise returns) that calls instrumented
 *     functions while rt::sigouter is on the stack;
 *   - custom and typed events (__xray_customevent / __xray_typedevent);
 *   - names to demangle: namespace rt, templates rt::twice<long>, rt::twice<double> and
 *     rt::Acc<long>::add, overloads rt::mix(long) and rt::mix(double);
 *   - a second thread (pthread, joined) making a few known calls.
 * Prints nothing; exits 0.
 *
 * Calls per function (entries; all of them are closed, by an exit, a tail exit or a repair):
 *   main                      1   main thread
 *   rt::chain(long)           3   main; 3 tail exits
 *   rt::tailer(long)          3   main; 3 tail exits
 *   rt::leaf(long)            7   main: 3 through tailer's tail call, 2 in sigouter after raise,
 *                                 2 in on_usr1
 *   rt::catcher(int)          4   main, n = 0..3
 *   rt::thrower1(int)         4   2 exits + 2 left by the exception (n even throws)
 *   rt::thrower2(int)         4   2 exits + 2 left by the exception
 *   rt::thrower3(int)         4   2 exits + 2 throws
 *   rt::jumper(int)           3   main, n = 1, 0, 1
 *   rt::deep1(int)            3   1 exit + 2 left by longjmp
 *   rt::deep2(int)            3   1 exit + 2 left by longjmp
 *   rt::deep3(int)            3   1 exit + 2 longjmps
 *   rt::sigouter(long)        2   main; each raises SIGUSR1 once
 *   rt::on_usr1(int)          2   the SIGUSR1 handler, nested in sigouter
 *   rt::mix(double)           2   1 per on_usr1
 *   rt::mix(long)             2   worker thread
 *   rt::twice<double>(double) 2   main
 *   rt::twice<long>(long)     3   worker thread
 *   rt::Acc<long>::add(long)  4   main
 *   rt::emit(int)             4   3 on main, 1 on the worker; each emits 1 custom + 1 typed event
 *   worker(void*)             1   worker thread
 * Totals: 64 calls, 57 on the main thread, 7 on the worker; repairs 12 (6 exception frames,
 * 6 longjmp frames); 8 events (4 custom, 4 typed, type 7). */
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <pthread.h>

#define KEEP __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

/* The event sleds call these when unpatched; sledtrace patches the sleds, so they never run. */
extern "C" {
__attribute__((xray_never_instrument)) void __xray_CustomEvent(void) {}
__attribute__((xray_never_instrument)) void __xray_TypedEvent(void) {}
}

volatile long sink;

namespace rt
{

struct Boom {
    int n;
};

KEEP long leaf(long x)
{
    BARRIER();
    return x * 3 + 1;
}

/* Leaves only through its tail call to leaf. */
KEEP long tailer(long x)
{
    BARRIER();
    return leaf(x + 1);
}

/* Leaves only through its tail call to tailer. */
KEEP long chain(long x)
{
    BARRIER();
    return tailer(x ^ 0x55);
}

KEEP long mix(long x)
{
    BARRIER();
    return x + 7;
}

KEEP double mix(double x)
{
    BARRIER();
    return x * 0.5;
}

template <typename T> KEEP T twice(T x)
{
    BARRIER();
    return x + x;
}

template <typename T> struct Acc {
    T total;
    KEEP void add(T x)
    {
        BARRIER();
        total += x;
    }
};

KEEP void emit(int i)
{
    char msg[24];
    int len = snprintf(msg, sizeof msg, "realev %d", i);
    __xray_customevent(msg, (unsigned long)len);
    __xray_typedevent(7, msg, (unsigned long)len);
    BARRIER();
}

/* Exception: thrower3 throws for even n; the exception crosses thrower2 and thrower1. */
KEEP void thrower3(int n)
{
    BARRIER();
    if (n % 2 == 0)
        throw Boom{n};
    BARRIER();
}

KEEP void thrower2(int n)
{
    thrower3(n);
    BARRIER();
}

KEEP void thrower1(int n)
{
    thrower2(n);
    BARRIER();
}

KEEP int catcher(int n)
{
    try {
        thrower1(n);
    } catch (const Boom &b) {
        return 100 + b.n;
    }
    return n;
}

/* longjmp: deep3 jumps for n != 0, out of deep2 and deep1, back into jumper. */
static jmp_buf jb;

KEEP void deep3(int n)
{
    BARRIER();
    if (n)
        longjmp(jb, n);
    BARRIER();
}

KEEP void deep2(int n)
{
    deep3(n);
    BARRIER();
}

KEEP void deep1(int n)
{
    deep2(n);
    BARRIER();
}

KEEP int jumper(int n)
{
    if (setjmp(jb) != 0)
        return 1;
    deep1(n);
    return 0;
}

/* Signal: the handler runs inside raise(), i.e. above sigouter. */
KEEP void on_usr1(int sig)
{
    sink = leaf(sig);
    double d = mix(2.0 * sig);
    sink = (long)d;
}

KEEP long sigouter(long x)
{
    raise(SIGUSR1);
    long r = leaf(x);
    BARRIER();
    return r;
}

} // namespace rt

long (*volatile chainp)(long) = rt::chain;
int (*volatile catcherp)(int) = rt::catcher;
int (*volatile jumperp)(int) = rt::jumper;
long (*volatile sigouterp)(long) = rt::sigouter;
void (*volatile emitp)(int) = rt::emit;

KEEP void *worker(void *arg)
{
    long s = (long)arg;
    for (long i = 0; i < 3; i++)
        s += rt::twice<long>(i);
    s += rt::mix(s);
    s += rt::mix(s + 1);
    emitp(100);
    sink = s;
    return nullptr;
}

int main()
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rt::on_usr1;
    sigaction(SIGUSR1, &sa, nullptr);

    pthread_t th;
    if (pthread_create(&th, nullptr, worker, nullptr) != 0)
        return 2;

    long s = 0;
    for (long i = 0; i < 3; i++)
        s += chainp(i);
    for (int n = 0; n < 4; n++)
        s += catcherp(n);
    s += jumperp(1);
    s += jumperp(0);
    s += jumperp(1);
    for (long i = 0; i < 2; i++)
        s += sigouterp(i);
    s += (long)rt::twice<double>(1.5);
    s += (long)rt::twice<double>(2.5);
    rt::Acc<long> acc{0};
    for (long i = 1; i <= 4; i++)
        acc.add(i);
    s += acc.total;
    for (int i = 0; i < 3; i++)
        emitp(i);

    pthread_join(th, nullptr);
    sink = s;
    return 0;
}
