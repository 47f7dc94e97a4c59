/* fork: the child runs instrumented code and exits through exit() (destructors run); its
 * events must not reach the parent's trace, and the parent's trace must stay complete. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

int main(void)
{
    fibp = fib;
    long a = fibp(15);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        long c = fibp(16);
        return c == fibonacci(16) ? 0 : 1; /* exit() from main: destructors run */
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("child failed (%#x)\n", st);
        return 1;
    }
    long b = fibp(10);
    if (a != fibonacci(15) || b != fibonacci(10))
        return 1;
    printf("count fib %ld\ncount main 1\nthreads 1\nthreadwork %ld\n",
           fib_calls(15) + fib_calls(10), fib_calls(15) + fib_calls(10) + 1);
    return 0;
}
