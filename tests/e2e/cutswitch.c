/* The chunk switch cut short at every instruction (issue 28.9): the common switch
 * (preload/switch.c str_fast_switch) runs with the asynchronous signals deliverable, so a
 * handler may arrive at any of its instructions and never return into it. This program makes
 * that happen at each instruction in turn, with the trap flag: the SIGTRAP handler counts the
 * instructions it steps on inside str_fast_switch and, at the k-th, leaves the switch:
 *   jump:    siglongjmp out of the handler back to main (the switch never resumes);
 *   fork:    fork(); the child returns into the switch (held: preload/hot.c, "Fork from a
 *            signal handler"), calls leaf() CHILD_LEAF times and _exit(0)s; the parent returns
 *            into the switch too and carries on;
 *   exit:    exit(0) from the handler at the K-th instruction only, K from CUT_EXIT (the final
 *            flush runs on a thread whose switch is cut); "leaf N" is printed before;
 *   thread:  pthread_exit() from the handler: each round runs on a thread of its own, which
 *            the cut ends (its exit hands its buffers over from a cut switch). CUT_WARM sets
 *            the calls that use the ring's chunks once (default 80000: 16 chunks of 64 KiB;
 *            fewer with smaller SLEDTRACE_BUFFERS).
 * Round k: one leaf() call (after a cut, its event finishes the switch the slow way), then
 * fill the current chunk with leaf() calls until its last byte (a call is 16 bytes:
 * the cursor's distance to its end, read through the runtime's TLS, is a multiple of 16), ask
 * the runtime to write what is handed over (sledtrace_flush, so the next chunk is free and
 * the switch is the common one), set the trap flag and call leaf(): its entry switches. A
 * round in which the switch ends before its k-th instruction ends the rounds: k is then the
 * number of instructions of the switch's path.
 * How it finds the runtime (test-only ways in, nothing the runtime exports for this):
 * CUT_CURSOR, the offset of str_cursor (pos, then end) in the runtime's TLS segment, and
 * CUT_LO / CUT_HI, str_fast_switch's range as offsets from the library's load address (nm).
 * Prints "rounds K", "cuts C", "leaf N" (the calls that completed: a call cut at its entry
 * never ran) and, in fork mode, one "forked PID" line per child; main and the handler are never
 * traced. Exit status 0 when every round did what it says. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "progs.h"

enum { WARM = 80000, CHILD_LEAF = 100, MAX_ROUNDS = 1000 };

long (*volatile leafp)(long);

KEEP long leaf(long x)
{
    BARRIER();
    return x + 1;
}

static uintptr_t lo, hi, cursor_off, lo_off, hi_off;
static const volatile uintptr_t *cursor; /* the stepping thread's: pos, end */
static volatile int stepping, mode_fork, mode_exit, mode_thread, target, seen, cut;
static volatile int round_k, round_error;
static long warm = WARM;
static int (*flush)(void);
static volatile pid_t child;
static sigjmp_buf env;
static volatile long completed;

struct found {
    void *tls;
    uintptr_t base;
};

__attribute__((xray_never_instrument)) static int find_runtime(struct dl_phdr_info *info,
                                                               size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libsledtrace") && info->dlpi_tls_data) {
        struct found *f = data;
        f->tls = info->dlpi_tls_data;
        f->base = info->dlpi_addr;
        return 1;
    }
    return 0;
}

__attribute__((xray_never_instrument)) static void on_trap(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    ucontext_t *uc = ucv;
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (!stepping || cut) {
        uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
        return;
    }
    if (pc < lo || pc >= hi)
        return;
    if (seen++ != target)
        return;
    cut = 1;
    stepping = 0;
    uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
    if (mode_exit)
        exit(0);
    if (mode_thread)
        pthread_exit(NULL);
    if (mode_fork) {
        pid_t pid = fork();
        if (pid == 0)
            child = -1; /* the child: returns into the switch, then calls leaf() in main */
        else
            child = pid;
        return;
    }
    siglongjmp(env, 1);
}

__attribute__((xray_never_instrument)) static long room(void)
{
    return (long)(cursor[1] - cursor[0]);
}

__attribute__((xray_never_instrument)) static void call_leaf(void)
{
    leafp(completed);
    completed++;
}

/* The calling thread's cursor, in the runtime's TLS block for it. */
__attribute__((xray_never_instrument)) static int find_cursor(void)
{
    struct found f = {0};
    dl_iterate_phdr(find_runtime, &f);
    if (!f.tls)
        return -1;
    cursor = (const volatile uintptr_t *)((char *)f.tls + cursor_off);
    lo = f.base + lo_off;
    hi = f.base + hi_off;
    return 0;
}

/* Every chunk of the thread's ring used once: from then on each is present, and a switch that
 * finds its next chunk written is the common one. */
__attribute__((xray_never_instrument)) static void warm_up(void)
{
    for (long i = 0; i < warm; i++)
        call_leaf();
}

/* Round k (see the top): -1 if the cursor could not be brought to its chunk's end, 1 if the
 * switch was cut at its k-th instruction (and came back: fork), 0 if it ended before. */
__attribute__((xray_never_instrument)) static int one_round(int k)
{
    call_leaf(); /* after a cut, the slow path takes the switch over */
    while (room() > 0)
        call_leaf();
    if (room() != 0 || flush() != 0) {
        printf("round %d: the cursor is %ld bytes from its end\n", k, room());
        return -1;
    }
    if (mode_exit) {
        printf("leaf %ld\n", completed);
        fflush(stdout);
    }
    target = k;
    seen = 0;
    cut = 0;
    stepping = 1;
    if (sigsetjmp(env, 1) == 0) {
        __asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
        call_leaf();
    }
    stepping = 0;
    __asm__ volatile("" ::: "memory");
    return cut;
}

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    (void)arg;
    if (find_cursor() != 0) {
        round_error = 1;
        return NULL;
    }
    warm_up();
    /* Every other round a chunk's worth more: the chunk the cut leaves and the one after it
     * take turns in the ring (below or above each other). */
    for (long i = 0; i < (round_k & 1) * 4100; i++)
        call_leaf();
    if (one_round(round_k) < 0)
        round_error = 1;
    return NULL;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    leafp = leaf;
    const char *c = getenv("CUT_CURSOR"), *l = getenv("CUT_LO"), *h = getenv("CUT_HI");
    flush = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_flush");
    mode_fork = argc > 1 && strcmp(argv[1], "fork") == 0;
    mode_exit = argc > 1 && strcmp(argv[1], "exit") == 0;
    mode_thread = argc > 1 && strcmp(argv[1], "thread") == 0;
    int exit_at = mode_exit && getenv("CUT_EXIT") ? atoi(getenv("CUT_EXIT")) : -1;
    if (getenv("CUT_WARM"))
        warm = atol(getenv("CUT_WARM"));
    if (c && l && h) {
        cursor_off = strtoull(c, NULL, 0);
        lo_off = strtoull(l, NULL, 0);
        hi_off = strtoull(h, NULL, 0);
    }
    if (argc < 2 || !c || !l || !h || find_cursor() != 0 || !flush || (mode_exit && exit_at < 0)) {
        fprintf(stderr, "usage: CUT_CURSOR= CUT_LO= CUT_HI= [CUT_EXIT=K] [CUT_WARM=N] cutswitch "
                        "jump|fork|exit|thread, under the runtime\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGTRAP, &sa, NULL);
    int rounds = 0, cuts = 0, forked = 0;
    pid_t pids[MAX_ROUNDS];
    if (!mode_thread)
        warm_up();
    for (int k = mode_exit ? exit_at : 0; k < MAX_ROUNDS; k++) {
        int r;
        if (mode_thread) {
            /* Each round on a thread of its own, which the cut ends. */
            pthread_t w;
            round_k = k;
            cut = 0;
            if (pthread_create(&w, NULL, worker, NULL) != 0 || pthread_join(w, NULL) != 0)
                return 4;
            r = round_error ? -1 : cut;
        } else {
            r = one_round(k);
        }
        if (r < 0)
            return 1;
        if (child == -1) { /* a fork child, out of the switch */
            for (int i = 0; i < CHILD_LEAF; i++)
                leafp(i);
            _exit(0);
        }
        if (child > 0 && forked < MAX_ROUNDS)
            pids[forked++] = child;
        child = 0;
        if (!r)
            break; /* the switch ended before its k-th instruction: all of them were cut */
        cuts++;
        rounds = k + 1;
        if (mode_exit)
            return 3; /* exit() did not end the process */
    }
    int failed = 0;
    for (int i = 0; i < forked; i++) {
        int st;
        if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("child %d failed (%#x)\n", (int)pids[i], st);
            failed = 1;
        }
        printf("forked %d\n", (int)pids[i]);
    }
    printf("rounds %d\ncuts %d\nleaf %ld\n", rounds, cuts, completed);
    return failed;
}
