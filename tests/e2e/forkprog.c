/* fork: the child runs instrumented code and leaves through _exit (no destructors: the runtime's
 * _exit must complete its trace). The child writes its own trace holding only what it did after
 * the fork; the parent's trace holds only the parent's calls. The parent prints the child's pid
 * ("forked PID") and the child's exact count ("child fib N"). */
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
        _exit(c == fibonacci(16) ? 0 : 1);
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
    printf("forked %d\nchild fib %ld\n", (int)pid, fib_calls(16));
    return 0;
}
