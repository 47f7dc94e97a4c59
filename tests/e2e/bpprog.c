/* A debugger's breakpoint on a sled, as gdb's `break *bp_target` sets one: an int3 (0xcc)
 * written over the function's first byte, the byte it replaced kept to be put back when the
 * breakpoint is removed (issue 23.6). The program plays the debugger itself (mprotect and a
 * store, where gdb uses ptrace), and never runs bp_target while the int3 is there.
 *   before  the int3 is written from .preinit_array, before any constructor (the runtime's
 *           included), and removed in main: the runtime must leave bp_target alone, and say so.
 *   after   bp_target is called once (traced), then the int3 is written, tracing is switched off
 *           (sledtrace_unpatch, found with dlsym), the saved byte is put back, both functions
 *           are called, tracing is switched on again and both are called again. A switch must
 *           not write over the int3 (the saved byte, put back over a switched head, would make
 *           garbage code): bp_target stays as it was, traced throughout.
 * Prints the counts the trace must hold. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "progs.h"

KEEP long bp_target(long x)
{
    BARRIER();
    return x + 1;
}

KEEP long bp_other(long x)
{
    BARRIER();
    return x + 2;
}

static uint8_t saved;

/* Writes b over bp_target's first byte; returns the byte it replaced. */
__attribute__((xray_never_instrument)) static uint8_t poke(uint8_t b)
{
    uint8_t *p = (uint8_t *)(uintptr_t)bp_target;
    long page = sysconf(_SC_PAGESIZE);
    void *start = (void *)((uintptr_t)p & ~(uintptr_t)(page - 1));
    mprotect(start, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC);
    uint8_t was = *(volatile uint8_t *)p;
    *(volatile uint8_t *)p = b;
    mprotect(start, (size_t)page, PROT_READ | PROT_EXEC);
    return was;
}

static int mode_before;

__attribute__((xray_never_instrument)) static void early(int argc, char **argv, char **envp)
{
    (void)envp;
    if (argc > 1 && strcmp(argv[1], "before") == 0) {
        mode_before = 1;
        saved = poke(0xcc);
    }
}
__attribute__((section(".preinit_array"), used)) static void (*early_p)(int, char **,
                                                                        char **) = early;

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    enum { N = 7, M = 5, K = 3 };
    long sum = 0;
    if (mode_before) {
        poke(saved); /* the breakpoint removed */
        for (int i = 0; i < N; i++)
            sum += bp_target(i);
        for (int i = 0; i < M; i++)
            sum += bp_other(i);
        printf("count bp_other %d\nthreads 1\nthreadwork %d\n", M, M);
        return sum == N * (N - 1) / 2 + N + M * (M - 1) / 2 + 2 * M ? 0 : 1;
    }
    if (argc < 2 || strcmp(argv[1], "after") != 0)
        return 2;
    int (*patch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_patch");
    int (*unpatch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_unpatch");
    sum += bp_target(0);
    saved = poke(0xcc); /* break *bp_target */
    if (unpatch)
        unpatch();
    poke(saved); /* the breakpoint removed: its saved byte put back */
    for (int i = 0; i < N; i++)
        sum += bp_target(i) + bp_other(i);
    if (patch)
        patch();
    for (int i = 0; i < K; i++)
        sum += bp_target(i) + bp_other(i);
    printf("count bp_target %d\ncount bp_other %d\nthreads 1\nthreadwork %d\n", 1 + N + K, K,
           1 + N + 2 * K);
    return 0;
}
