/* fork() from a signal handler that interrupted the tracer (issue 23.7). A 50 us SIGPROF timer
 * interrupts main, which calls spin() in a loop, so most signals land inside the tracer's hot
 * path. The handler forks only when they do: it reads the tracer's nesting word (`nest` of the
 * runtime's TLS cursor, hot.c) and forks when it is not 0. That makes the case certain rather
 * than lucky. How it reads it (a test-only way in, nothing the runtime exports): the test passes
 * FORKSIG_NEST, the offset of that word in the runtime's TLS segment (str_cursor's .symtab entry,
 * `nm`, plus offsetof(struct str_cursor, nest), preload/str.h), and the program adds it to the
 * runtime's TLS block for this thread (dl_iterate_phdr's dlpi_tls_data).
 *
 * Each child calls leaf() exactly CHILD_LEAF times in the handler (2000 events: more than the
 * tracer's side ring for signal handlers holds, 1024), then:
 *   argument "exit":   _exit(0) from the handler (it never returns into the tracer);
 *   argument "return": returns from the handler, back into the interrupted tracer code, and main
 *                      then calls leaf() CHILD_MORE times more and calls _exit(0).
 * The parent makes CHILDREN children, waits for them (each must exit 0) and prints its own exact
 * counts (progs.h), one "forked PID" line per child and "child leaf N". leaf() is called by the
 * children only; spin() by main, in the parent and (return) in the child between the handler's
 * return and its leaf() calls. */
#define _GNU_SOURCE
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

enum { CHILDREN = 50, CHILD_LEAF = 1000, CHILD_MORE = 25 };

void (*volatile spinp)(void);
void (*volatile leafp)(void);

static const volatile uint64_t *nest; /* the runtime's nesting word for the main thread */
static volatile int return_mode, in_child;
static volatile int nforked, misses;
static pid_t pids[CHILDREN];

KEEP void spin(void)
{
    BARRIER();
}

KEEP void leaf(void)
{
    BARRIER();
}

__attribute__((xray_never_instrument)) static int find_runtime(struct dl_phdr_info *info,
                                                               size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libsledtrace") && info->dlpi_tls_data) {
        *(void **)data = info->dlpi_tls_data;
        return 1;
    }
    return 0;
}

__attribute__((xray_never_instrument)) static void on_prof(int sig)
{
    (void)sig;
    if (nforked >= CHILDREN || in_child)
        return;
    if (*nest == 0) { /* not inside the tracer this time */
        misses++;
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < CHILD_LEAF; i++)
            leafp();
        if (!return_mode)
            _exit(0);
        in_child = 1;
        return;
    }
    if (pid > 0)
        pids[nforked++] = pid;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    spinp = spin;
    leafp = leaf;
    const char *off = getenv("FORKSIG_NEST");
    void *tls = NULL;
    dl_iterate_phdr(find_runtime, &tls);
    if (argc < 2 || !off || !tls) {
        fprintf(stderr, "usage: FORKSIG_NEST=OFFSET forksig exit|return, under the runtime\n");
        return 2;
    }
    return_mode = strcmp(argv[1], "return") == 0;
    nest = (const volatile uint64_t *)((char *)tls + strtoull(off, NULL, 0));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_PROF, &it, NULL);
    long spins = 0;
    /* At most a few seconds: each signal that lands in the tracer forks. */
    for (long round = 0; nforked < CHILDREN && round < 400000000; round++) {
        spinp();
        spins++;
        if (in_child) {
            for (int i = 0; i < CHILD_MORE; i++)
                leafp();
            _exit(0);
        }
    }
    struct itimerval off_timer = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off_timer, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int failed = 0;
    for (int i = 0; i < nforked; i++) {
        int st;
        if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("child %d failed (%#x)\n", (int)pids[i], st);
            failed = 1;
        }
    }
    printf("count spin %ld\nthreads 1\nthreadwork %ld\n", spins, spins);
    for (int i = 0; i < nforked; i++)
        printf("forked %d\n", (int)pids[i]);
    printf("children %d\nchild leaf %d\n", nforked, CHILD_LEAF + (return_mode ? CHILD_MORE : 0));
    return failed || nforked != CHILDREN;
}
