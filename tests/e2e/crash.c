/* Fatal signals: the program makes a known number of calls (fib), prints its counts (flushed),
 * then dies the way argv[1] says. Under sledtrace it must die exactly the same way (same wait
 * status, core flag included) with every call in the trace. main and the crash sites are never
 * instrumented, so the trace has no frame left open. The run is far shorter than a flush period:
 * without the crash path the trace would hold nothing.
 *   segv bus fpe ill   a fault raised by the CPU
 *   abort assert       abort(), a failed assert
 *   raise              SIGSEGV sent by the program to itself
 *   handler            the program's own SIGSEGV handler (installed with sigaction) runs and
 *                      leaves with _exit(3)
 *   signal             the same handler installed with signal(), and SIGSEGV sent with kill
 *   overflow           unbounded recursion (not instrumented) overflows the stack; the program
 *                      has no alternate signal stack and prints what sigaltstack reports
 *   altstack           no crash: sets, queries, refuses and disables alternate stacks, printing
 *                      what sigaltstack says each time (the runtime's own must not show), exits 0
 * Signals whose default action ends the process (no handler of the program's):
 *   term int hup alrm usr1 quit   SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGQUIT sent with kill();
 *                      SIGALRM from alarm() while the program waits in pause()
 *   pipe               write() to a pipe whose reader is gone (SIGPIPE from the kernel)
 *   term-threads pipe-threads   the same with three more threads that made their calls and wait
 *   int-ignored        SIGINT ignored, then sent: the program carries on and exits 3
 *   pipe-ignored-spawn SIGPIPE ignored; a child started by posix_spawn (which never passes
 *                      through the runtime's exec wrappers) says it inherited SIG_IGN; a write to
 *                      a closed pipe then fails with EPIPE and the program exits 3 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);
static volatile int zero;

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) static void on_segv(int sig)
{
    static const char msg[] = "caught\n";
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
    _exit(sig == SIGSEGV ? 3 : 4);
}

/* Recurses until the stack runs out: 1 KiB a frame that the compiler cannot fold away. */
__attribute__((xray_never_instrument, noinline)) static long descend(long n)
{
    volatile char pad[1024];
    pad[n % sizeof pad] = (char)n;
    return descend(n + 1) + pad[(n + 1) % sizeof pad];
}

__attribute__((xray_never_instrument)) static void show_altstack(const char *what, int r,
                                                                 const stack_t *o)
{
    printf("%s: %d %s flags %d size %zu sp %s\n", what, r, r ? strerror(errno) : "-", o->ss_flags,
           o->ss_size, o->ss_sp ? "set" : "null");
}

/* The altstack mode's calls (see the header). */
__attribute__((xray_never_instrument)) static int altstack_calls(void)
{
    static char mine[65536], tiny[100];
    stack_t o = {0}, s = {mine, 0, sizeof mine}, small = {tiny, 0, sizeof tiny};
    stack_t off = {NULL, SS_DISABLE, 0}, bad = {NULL, 12345, 0};
    int r = sigaltstack(NULL, &o);
    show_altstack("start", r, &o);
    r = sigaltstack(&small, &o);
    show_altstack("too small", r, &o);
    r = sigaltstack(&bad, &o);
    show_altstack("bad flags", r, &o);
    r = sigaltstack(&s, &o);
    show_altstack("set", r, &o);
    r = sigaltstack(NULL, &o);
    show_altstack("query", r, &o);
    r = sigaltstack(&off, &o);
    show_altstack("disable", r, &o);
    r = sigaltstack(NULL, &o);
    show_altstack("query", r, &o);
    r = sigaltstack(&off, &o);
    show_altstack("disable again", r, &o);
    return 0;
}

static pthread_barrier_t ready;

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    (void)arg;
    fibp(15);
    pthread_barrier_wait(&ready);
    for (;;)
        pause();
    return NULL;
}

__attribute__((xray_never_instrument)) static void die_by(int sig)
{
    if (sig == SIGALRM) {
        alarm(1);
        for (;;)
            pause();
    }
    if (sig == SIGPIPE) {
        int p[2];
        if (pipe(p) != 0)
            return;
        close(p[0]);
        ssize_t w = write(p[1], "x", 1);
        (void)w;
        return;
    }
    kill(getpid(), sig);
    for (;;)
        pause();
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "segv";
    if (strcmp(how, "report-pipe") == 0) {
        struct sigaction sa;
        sigaction(SIGPIPE, NULL, &sa);
        printf("child: SIGPIPE %s\n", sa.sa_handler == SIG_IGN ? "ignored" : "not ignored");
        return 0;
    }
    int threads = strstr(how, "-threads") != NULL ? 4 : 1;
    fibp = fib;
    if (threads > 1) {
        pthread_barrier_init(&ready, NULL, (unsigned)threads);
        for (int i = 1; i < threads; i++) {
            pthread_t t;
            pthread_create(&t, NULL, worker, NULL);
        }
    }
    if (fibp(15) != fibonacci(15))
        return 1;
    if (threads > 1)
        pthread_barrier_wait(&ready);
    printf("count fib %ld\nthreads %d\n", fib_calls(15) * threads, threads);
    for (int i = 0; i < threads; i++)
        printf("threadwork %ld\n", fib_calls(15));
    fflush(stdout);
    static const struct {
        const char *name;
        int sig;
    } deaths[] = {{"term", SIGTERM}, {"int", SIGINT},           {"hup", SIGHUP},
                  {"alrm", SIGALRM}, {"usr1", SIGUSR1},         {"quit", SIGQUIT},
                  {"pipe", SIGPIPE}, {"term-threads", SIGTERM}, {"pipe-threads", SIGPIPE}};
    for (size_t i = 0; i < sizeof deaths / sizeof deaths[0]; i++)
        if (strcmp(how, deaths[i].name) == 0)
            die_by(deaths[i].sig);
    if (strcmp(how, "pipe-ignored-spawn") == 0) {
        signal(SIGPIPE, SIG_IGN);
        char *child[] = {argv[0], "report-pipe", NULL};
        extern char **environ;
        pid_t pid;
        int st;
        if (posix_spawn(&pid, argv[0], NULL, NULL, child, environ) != 0 ||
            waitpid(pid, &st, 0) != pid)
            return 1;
        int p[2];
        if (pipe(p) != 0)
            return 1;
        close(p[0]);
        return write(p[1], "x", 1) < 0 && errno == EPIPE ? 3 : 4;
    }
    if (strcmp(how, "int-ignored") == 0) {
        signal(SIGINT, SIG_IGN);
        kill(getpid(), SIGINT);
        return 3;
    }
    if (strcmp(how, "altstack") == 0)
        return altstack_calls();
    if (strcmp(how, "overflow") == 0) {
        stack_t ss;
        if (sigaltstack(NULL, &ss) != 0)
            return 1;
        printf("altstack %s size %zu\n", (ss.ss_flags & SS_DISABLE) ? "disabled" : "enabled",
               ss.ss_size);
        fflush(stdout);
        return (int)descend(0);
    }
    if (strcmp(how, "segv") == 0) {
        *(volatile int *)(uintptr_t)zero = 1;
    } else if (strcmp(how, "bus") == 0) {
        char path[] = "/tmp/sledtrace-crash-XXXXXX";
        int fd = mkstemp(path);
        unlink(path);
        char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0); /* empty file */
        return p[0];
    } else if (strcmp(how, "fpe") == 0) {
        int a = 1, d = zero; /* a real idiv: C's 1 / 0 is undefined and clang folds it away */
        __asm__ volatile("cltd\n\tidivl %1" : "+a"(a) : "r"(d) : "edx");
        return a;
    } else if (strcmp(how, "ill") == 0) {
        __builtin_trap();
    } else if (strcmp(how, "abort") == 0) {
        abort();
    } else if (strcmp(how, "assert") == 0) {
        assert(zero == 1);
    } else if (strcmp(how, "raise") == 0) {
        raise(SIGSEGV);
    } else if (strcmp(how, "handler") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_segv;
        sigaction(SIGSEGV, &sa, NULL);
        *(volatile int *)(uintptr_t)zero = 1;
    } else if (strcmp(how, "signal") == 0) {
        signal(SIGSEGV, on_segv);
        kill(getpid(), SIGSEGV);
    }
    return 2;
}
