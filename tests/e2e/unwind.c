/* Unwinding from every instruction of the tracer (issue 9.2): a sampling profiler or a crash
 * reporter calls backtrace() from a signal handler that can land anywhere, the trampolines
 * included, and asynchronous cancellation unwinds from there too.
 *
 * drive() runs with the trap flag set (EFLAGS.TF): every instruction it executes raises
 * SIGTRAP, whose handler, for each instruction inside libsledtrace.so, calls backtrace() and
 * checks that the frames reach drive() (its return address into main). drive() calls traced
 * functions through every kind of sled: entry and exit (leaf), tail exit (tail -> leaf),
 * entry with a logged argument (logged), custom and typed events (events), on a thread whose
 * first event also takes the slow path (thread set-up, behind an XSAVE). The program prints,
 * for every distinct instruction of the runtime it stepped on, its offset from the library's
 * load address and whether the unwind reached drive(): "pc 0x1234 ok" or "pc 0x1234 BAD".
 * The test compares those offsets with the trampolines' instructions (objdump).
 * Then "steps N" and the call counts. main, drive and the handler are never traced. */
#define _GNU_SOURCE /* REG_RIP, REG_EFL */
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "progs.h"

#ifndef WITH_XRAY_RUNTIME
__attribute__((xray_never_instrument)) void __xray_CustomEvent(void) {}
__attribute__((xray_never_instrument)) void __xray_TypedEvent(void) {}
#endif

enum { MAX_PCS = 8192 };

static uintptr_t rt_lo, rt_hi, rt_base;
static volatile int stepping;
static long steps;
static uintptr_t pcs[MAX_PCS];
static unsigned char pc_ok[MAX_PCS];
static int npcs, overflow;

long (*volatile leafp)(long);
long (*volatile tailp)(long);
long (*volatile loggedp)(long);
void (*volatile eventsp)(long);

KEEP long leaf(long x)
{
    BARRIER();
    return x + 1;
}

/* A real tail call (clang -O2 emits jmp with a TAIL sled before it). */
KEEP long tail(long x)
{
    return leafp(x * 2);
}

__attribute__((xray_always_instrument, xray_log_args(1), noinline)) long logged(long x)
{
    BARRIER();
    return x - 1;
}

KEEP void events(long i)
{
    char msg[8] = "unwind";
    __xray_customevent(msg, 6);
    __xray_typedevent(3, msg, (unsigned long)(i & 7));
    BARRIER();
}

__attribute__((xray_never_instrument, noinline)) static void drive(void)
{
    __asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
    leafp(1);
    tailp(2);
    loggedp(3);
    eventsp(4);
    stepping = 0; /* the next trap clears TF */
    __asm__ volatile("" ::: "memory");
}

__attribute__((xray_never_instrument)) static void on_trap(int sig, siginfo_t *si, void *ucv)
{
    (void)sig, (void)si;
    ucontext_t *uc = ucv;
    if (!stepping) {
        uc->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
        return;
    }
    steps++;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (pc >= rt_lo && pc < rt_hi) {
        int i = 0;
        while (i < npcs && pcs[i] != pc)
            i++;
        void *frames[64];
        int n = backtrace(frames, 64), ok = 0;
        for (int k = 0; k < n; k++) {
            uintptr_t f = (uintptr_t)frames[k];
            if (f > (uintptr_t)drive && f < (uintptr_t)drive + 256) /* a return into drive */
                ok = 1;
        }
        if (i == npcs && npcs < MAX_PCS) {
            pcs[npcs] = pc;
            pc_ok[npcs++] = (unsigned char)ok;
        } else if (i == npcs) {
            overflow = 1;
        } else if (!ok) {
            pc_ok[i] = 0;
        }
    }
    uc->uc_mcontext.gregs[REG_EFL] |= 0x100;
}

/* The text mapping of the runtime, from /proc/self/maps. */
__attribute__((xray_never_instrument)) static int find_runtime(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        char perms[8];
        if (!strstr(line, "libsledtrace.so") ||
            sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) != 4)
            continue;
        if (!rt_base || lo - off < rt_base)
            rt_base = lo - off;
        if (perms[2] == 'x') {
            rt_lo = lo;
            rt_hi = hi;
        }
    }
    fclose(f);
    return rt_lo ? 0 : -1;
}

__attribute__((xray_never_instrument)) int main(void)
{
    leafp = leaf;
    tailp = tail;
    loggedp = logged;
    eventsp = events;
    if (find_runtime() != 0) {
        printf("no runtime\n");
        return 0;
    }
    void *warm[4];
    backtrace(warm, 4); /* loads libgcc_s now, not inside the handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGTRAP, &sa, NULL);
    stepping = 1;
    drive();
    for (int i = 0; i < npcs; i++)
        printf("pc %#lx %s\n", (unsigned long)(pcs[i] - rt_base), pc_ok[i] ? "ok" : "BAD");
    printf("steps %ld%s\n", steps, overflow ? " (pc table full)" : "");
    printf("count leaf 2\ncount tail 1\ntail tail 1\ncount logged 1\ncount events 1\n");
    printf("threads 1\nthreadwork 5\n");
    return 0;
}
