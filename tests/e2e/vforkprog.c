/* vfork: the parent records fib(15), then vforks. The child shares the parent's memory until it
 * execs or calls _exit, so the runtime must leave the parent's tracing state alone there (its
 * exec and _exit wrappers run in the child; str_buffers_finish ignores a pid that is not the
 * traced one). The child never records an event. Then the parent records fib(10). argv[1]:
 *   exit         the child calls _exit(0)
 *   exec         the child execs /bin/true (not instrumented: with LD_PRELOAD kept, the runtime
 *                says once on stderr that it runs untraced, and writes nothing)
 *   exec-traced  the child execs this program again ("/proc/self/exe child"): that image is
 *                traced on its own (sledtrace.<prog>.<childpid>.fdr) and prints its counts
 *                prefixed with "child: "
 * The parent prints its own counts (main is never instrumented) and "vforked PID". */
#include <stdio.h>
#include <string.h>
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

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "exit";
    fibp = fib;
    if (strcmp(how, "child") == 0) {
        long c = fibp(12);
        printf("child: count fib %ld\nchild: threads 1\nchild: threadwork %ld\n", fib_calls(12),
               fib_calls(12));
        return c == fibonacci(12) ? 0 : 1;
    }
    long a = fibp(15);
    fflush(stdout);
    pid_t pid = vfork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        if (strcmp(how, "exec") == 0)
            execl("/bin/true", "true", (char *)NULL);
        else if (strcmp(how, "exec-traced") == 0)
            execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        else
            _exit(0);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("child failed (%#x)\n", st);
        return 1;
    }
    long b = fibp(10);
    if (a != fibonacci(15) || b != fibonacci(10))
        return 1;
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", fib_calls(15) + fib_calls(10),
           fib_calls(15) + fib_calls(10));
    printf("vforked %d\n", (int)pid);
    return 0;
}
