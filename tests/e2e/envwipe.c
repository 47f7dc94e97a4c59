/* A server that sets its process title: it copies `environ` away, then writes over the original
 * environment block (as redis, nginx and postgres do), and chdirs to "/". Then it forks a child
 * that records fib(10) (the child traces itself, into the same output directory), and dlopens
 * libslb.so (argv[1]) and calls b_entry(11).
 * Run with SLEDTRACE_FILTER=fib,libslb.so:b_* and a relative SLEDTRACE_OUTPUT: every setting
 * the runtime uses must have been copied, and the output directory resolved, at start-up.
 * The parent prints its own counts and "forked PID"; main is never instrumented. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

extern char **environ;

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

/* Filtered out: never patched, never counted. */
KEEP long unlisted(long n)
{
    BARRIER();
    return n + 1;
}

__attribute__((xray_never_instrument)) static void set_title(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **copy = calloc(n + 1, sizeof *copy);
    if (!copy)
        exit(5);
    char *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < n; i++) {
        copy[i] = strdup(environ[i]);
        if (!lo || environ[i] < lo)
            lo = environ[i];
        if (!hi || environ[i] + strlen(environ[i]) + 1 > hi)
            hi = environ[i] + strlen(environ[i]) + 1;
    }
    if (lo)
        memset(lo, 0, (size_t)(hi - lo));
    environ = copy;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    fibp = fib;
    long (*volatile unl)(long) = unlisted;
    set_title();
    if (chdir("/") != 0)
        return 6;
    fibp(15);
    unl(1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        fibp(10);
        _exit(0);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 3;
    void *h = dlopen(argv[1], RTLD_NOW);
    long (*b_entry)(long) = h ? (long (*)(long))dlsym(h, "b_entry") : NULL;
    if (!b_entry)
        return 4;
    if (b_entry(11) != fibonacci(11))
        return 1;
    printf("forked %d\n", (int)pid);
    printf("count fib %ld\ncount b_entry 1\ncount b_fib %ld\n", fib_calls(15), fib_calls(11));
    printf("threads 1\nthreadwork %ld\n", fib_calls(15) + 1 + fib_calls(11));
    return 0;
}
