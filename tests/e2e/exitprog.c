/* Exits that skip atexit handlers and destructors. The program records fib(15), registers an
 * atexit handler that would record fib(12) and print "atexit ran" (neither may happen), prints
 * its counts (flushed: stdio is not flushed on these paths), then, by argv[1]:
 *   quick_exit          quick_exit(5); the runtime's at_quick_exit handler completes the trace
 *   quick_exit_handler  the program's own at_quick_exit handler (registered after the runtime's,
 *                       so it runs first) records on_quick_exit and fib(10); then quick_exit(5)
 *   _Exit               _Exit(6) (interposed by the runtime)
 * main is never instrumented, so no frame is left open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

KEEP void on_quick_exit(void)
{
    if (fibp(10) != fibonacci(10))
        (void)!write(1, "wrong\n", 6);
}

__attribute__((xray_never_instrument)) static void on_exit_handler(void)
{
    fibp(12);
    (void)!write(1, "atexit ran\n", 11);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "quick_exit";
    fibp = fib;
    if (atexit(on_exit_handler) != 0)
        return 2;
    if (fibp(15) != fibonacci(15))
        return 1;
    long calls = fib_calls(15);
    if (strcmp(how, "quick_exit_handler") == 0) {
        if (at_quick_exit(on_quick_exit) != 0)
            return 2;
        calls += fib_calls(10);
        printf("count on_quick_exit 1\n");
    }
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", calls,
           calls + (strcmp(how, "quick_exit_handler") == 0));
    fflush(stdout);
    if (strcmp(how, "_Exit") == 0)
        _Exit(6);
    quick_exit(5);
}
