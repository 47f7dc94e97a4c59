/* The program's signal flags reach the kernel: a garbage collector's way of probing memory.
 *
 * A SIGSEGV handler installed with SA_SIGINFO | SA_NODEFER (| SA_ONSTACK with argv[1] "onstack")
 * and sa_mask = {SIGUSR1}. The program probes PROBES pages of a PROT_NONE region; each probe
 * faults, the handler calls the traced hit() and leaves with siglongjmp(env, 1) from a
 * sigsetjmp(env, 0): the signal mask is NOT restored, so only SA_NODEFER keeps SIGSEGV deliverable
 * for the next probe. Every tenth probe the handler itself faults once more (a nested SIGSEGV,
 * delivered only thanks to SA_NODEFER) and the nested handler leaves by siglongjmp too.
 * Inside the first handler the program records what the kernel did: whether SIGSEGV and SIGUSR1
 * are blocked, and whether it runs on the alternate stack. It prints those facts, so a traced run
 * must print exactly what an untraced one prints, and its call counts. main and the handler are
 * not instrumented. */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "progs.h"

enum { PROBES = 200, NESTED_EVERY = 10 };

static sigjmp_buf env, nested_env;
static char *region;
static long page;
static char altstack[1 << 16];
static volatile int in_handler, nested_hits, first_seen;
static int segv_blocked, usr1_blocked, on_alt;

long (*volatile hitp)(long);
long (*volatile nestedp)(long);

KEEP long hit(long i)
{
    BARRIER();
    return i + 1;
}

KEEP long nested_hit(long i)
{
    BARRIER();
    return i + 2;
}

__attribute__((xray_never_instrument)) static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (in_handler) {
        /* The nested fault: delivered inside the handler only with SA_NODEFER. */
        nested_hits++;
        nestedp((long)(uintptr_t)si->si_addr);
        siglongjmp(nested_env, 1);
    }
    in_handler = 1;
    if (!first_seen) {
        first_seen = 1;
        sigset_t cur;
        sigprocmask(SIG_SETMASK, NULL, &cur);
        segv_blocked = sigismember(&cur, SIGSEGV);
        usr1_blocked = sigismember(&cur, SIGUSR1);
        char here;
        on_alt = &here >= altstack && &here < altstack + sizeof altstack;
    }
    long i = ((char *)si->si_addr - region) / page;
    hitp(i);
    if (i % NESTED_EVERY == 0 && sigsetjmp(nested_env, 0) == 0)
        (void)*(volatile char *)(region + page * PROBES); /* the guard page after the probes */
    in_handler = 0;
    siglongjmp(env, 1);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    int onstack = argc > 1 && strcmp(argv[1], "onstack") == 0;
    hitp = hit;
    nestedp = nested_hit;
    page = sysconf(_SC_PAGESIZE);
    region = mmap(NULL, (size_t)page * (PROBES + 1), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
        return 1;
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
    if (sigaltstack(&ss, NULL) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | (onstack ? SA_ONSTACK : 0);
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR1);
    if (sigaction(SIGSEGV, &sa, NULL) != 0)
        return 1;
    struct sigaction back;
    sigaction(SIGSEGV, NULL, &back);
    long faults = 0;
    for (long i = 0; i < PROBES; i++) {
        if (sigsetjmp(env, 0) == 0)
            (void)*(volatile char *)(region + page * i);
        else
            faults++;
    }
    sigset_t cur;
    sigprocmask(SIG_SETMASK, NULL, &cur);
    printf("faults %ld nested %d\n", faults, nested_hits);
    printf("in handler: SIGSEGV %s, SIGUSR1 %s, %s stack\n", segv_blocked ? "blocked" : "open",
           usr1_blocked ? "blocked" : "open", on_alt ? "alternate" : "normal");
    printf("after: SIGUSR1 %s; flags read back %#x\n",
           sigismember(&cur, SIGUSR1) ? "blocked" : "open", (unsigned)back.sa_flags);
    printf("count hit %d\ncount nested_hit %d\nthreads 1\nthreadwork %d\n", PROBES,
           PROBES / NESTED_EVERY, PROBES + PROBES / NESTED_EVERY);
    return 0;
}
