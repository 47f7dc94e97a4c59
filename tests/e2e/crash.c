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
 *   signal             the same handler installed with signal(), and SIGSEGV sent with kill */
#include <assert.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "segv";
    fibp = fib;
    if (fibp(15) != fibonacci(15))
        return 1;
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", fib_calls(15), fib_calls(15));
    fflush(stdout);
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
