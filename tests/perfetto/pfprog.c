/* pfprog.c - the program the perfetto test (check.py) records and converts: a bit of everything
 * the Perfetto export maps, in one trace.
 *   - two worker threads named "pf-fib-1" and "pf-fib-2" (pthread_setname_np), each computing
 *     fib(FIB) recursively: 2 * F(FIB + 1) - 1 nested calls of fib each;
 *   - a tail call: scale() ends in `jmp mix` (a tail exit), as scripts/sample/sample.c;
 *   - a coroutine (makecontext/swapcontext): co_body() calls co_step() and yields back to
 *     main ROUNDS times, so its calls sit on a track of their own;
 *   - custom and typed events (__xray_customevent, __xray_typedevent), one per round;
 *   - an argument logged by __attribute__((xray_log_args(1))) (logged()).
 * Prints "pfprog ok" and exits 0. Build: clang -O2 -fxray-instrument
 * -fxray-instruction-threshold=1 -fnoxray-link-deps -pthread. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#define KEEP __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")

enum { FIB = 18, ROUNDS = 4, STACK = 64 * 1024 };

/* The event sleds call these when unpatched; sledtrace patches the sleds, so they never run. */
__attribute__((xray_never_instrument)) void __xray_CustomEvent(void) {}
__attribute__((xray_never_instrument)) void __xray_TypedEvent(void) {}

static ucontext_t main_uc, co_uc;
static char co_stack[STACK];
static volatile long sink;

KEEP long fib(int n)
{
    BARRIER();
    if (n < 2)
        return n;
    long a = fib(n - 1);
    BARRIER();
    return a + fib(n - 2);
}

KEEP long mix(long x)
{
    BARRIER();
    return x * 31 + 7;
}

KEEP long scale(long x)
{
    BARRIER();
    return mix(x * 3);
}

__attribute__((xray_always_instrument, xray_log_args(1))) KEEP long logged(long x)
{
    BARRIER();
    return x + 1;
}

static void *worker(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "pf-fib-%d", (int)(long)arg);
    pthread_setname_np(pthread_self(), name);
    sink = fib(FIB);
    return NULL;
}

KEEP void co_step(int i)
{
    BARRIER();
    sink += i;
}

KEEP void co_body(void)
{
    for (int i = 0; i < ROUNDS; i++) {
        co_step(i);
        swapcontext(&co_uc, &main_uc);
    }
}

KEEP void emit(int i)
{
    char msg[24];
    int len = snprintf(msg, sizeof msg, "round %d", i);
    __xray_customevent(msg, (unsigned long)len);
    __xray_typedevent(9, msg, (unsigned long)len);
    BARRIER();
}

KEEP void rounds(void)
{
    getcontext(&co_uc);
    co_uc.uc_stack.ss_sp = co_stack;
    co_uc.uc_stack.ss_size = sizeof co_stack;
    co_uc.uc_link = &main_uc;
    makecontext(&co_uc, co_body, 0);
    for (int i = 0; i <= ROUNDS; i++) { /* the last resume lets co_body return */
        swapcontext(&main_uc, &co_uc);
        emit(i);
        sink += scale(i) + logged(i);
    }
}

int main(void)
{
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(i + 1)) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    rounds();
    puts("pfprog ok");
    return 0;
}
