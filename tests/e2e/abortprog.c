/* abort() with the program's own SIGABRT handler. The program records fib(15), installs the
 * handler, prints its counts (flushed), then calls abort(). By argv[1]:
 *   reraise            signal(SIGABRT, on_abort); on_abort (instrumented) sets SIG_DFL with
 *                      signal() and raise(SIGABRT)s: the second delivery, pending until the
 *                      handler returns, takes the default action
 *   reraise_sigaction  the same with sigaction() for both
 *   abort_in_handler   the handler (not instrumented: it never returns) sets SIG_DFL and calls
 *                      abort() again, which unblocks SIGABRT inside the handler
 *   return             on_abort just returns; glibc's abort() then resets the disposition itself
 *                      (through its internal __sigaction, which LD_PRELOAD cannot interpose) and
 *                      raises SIGABRT again
 *   raise_survive      no abort(): on_abort_return is installed, the program raise(SIGABRT)s
 *                      at itself, survives its handler, records fib(10) and returns 0
 * Every other case dies of SIGABRT, with or without sledtrace. main is never instrumented. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progs.h"

long (*volatile fibp)(long);
static volatile int use_sigaction;

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

KEEP void on_abort(int sig)
{
    if (use_sigaction) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(sig, &sa, NULL);
    } else {
        signal(sig, SIG_DFL);
    }
    raise(sig);
}

KEEP void on_abort_return(int sig)
{
    (void)sig;
}

__attribute__((xray_never_instrument)) static void on_abort_again(int sig)
{
    signal(sig, SIG_DFL);
    abort();
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "reraise";
    fibp = fib;
    if (fibp(15) != fibonacci(15))
        return 1;
    const char *handler_name = "on_abort";
    if (strcmp(how, "reraise") == 0) {
        signal(SIGABRT, on_abort);
    } else if (strcmp(how, "reraise_sigaction") == 0) {
        use_sigaction = 1;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_abort;
        sigaction(SIGABRT, &sa, NULL);
    } else if (strcmp(how, "abort_in_handler") == 0) {
        signal(SIGABRT, on_abort_again);
        handler_name = NULL;
    } else if (strcmp(how, "return") == 0) {
        signal(SIGABRT, on_abort_return);
        handler_name = "on_abort_return";
    } else if (strcmp(how, "raise_survive") == 0) {
        signal(SIGABRT, on_abort_return);
        raise(SIGABRT);
        if (fibp(10) != fibonacci(10))
            return 1;
        printf("count fib %ld\ncount on_abort_return 1\nthreads 1\nthreadwork %ld\n",
               fib_calls(15) + fib_calls(10), fib_calls(15) + fib_calls(10) + 1);
        return 0;
    } else {
        return 2;
    }
    printf("count fib %ld\nthreads 1\n", fib_calls(15));
    if (handler_name)
        printf("count %s 1\nthreadwork %ld\n", handler_name, fib_calls(15) + 1);
    else
        printf("threadwork %ld\n", fib_calls(15));
    fflush(stdout);
    abort();
}
