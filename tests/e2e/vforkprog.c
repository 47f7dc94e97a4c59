/* vfork: the parent records fib(15), then vforks. The child shares the parent's memory (and
 * the vforking thread's TLS) until it execs or calls _exit, so the runtime must leave the
 * parent's tracing state alone there (its exec and _exit wrappers run in the child;
 * str_buffers_finish ignores a pid that is not the traced one). Then the parent records fib(10).
 * argv[1]:
 *   exit         the child calls _exit(0)
 *   calls-exit   the child calls fib(12), then _exit(0): those calls are the child's, recorded in
 *                the parent's trace as a thread of their own (the child's pid and tid)
 *   calls-exec   the child calls fib(12), then execs /bin/true
 *   clone-vfork  clone(CLONE_VM | CLONE_VFORK) instead of vfork (no CLONE_SETTLS: the child runs
 *                on this thread's TLS while it waits): the child calls fib(12) and returns,
 *                recorded as with calls-exit
 *   clone-shared clone(CLONE_VM) without CLONE_SETTLS: the child calls fib(10) on this thread's
 *                TLS while this thread calls fib(12), then this thread waits and calls fib(5).
 *                Nothing of either is traced from the clone on: the trace holds fib(15), and
 *                the program prints "unrecorded N", the events the runtime must report lost
 *   exec         the child execs /bin/true (not instrumented: with LD_PRELOAD kept, the runtime
 *                says once on stderr that it runs untraced, and writes nothing)
 *   exec-traced  the child execs this program again ("/proc/self/exe child"): that image is
 *                traced on its own (sledtrace.<prog>.<childpid>.fdr) and prints its counts
 *                prefixed with "child: "
 * The parent prints its own counts (main is never instrumented) and "vforked PID". */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

__attribute__((xray_never_instrument)) static int clone_child(void *arg)
{
    long n = (long)arg;
    return fibp(n) == fibonacci(n) ? 0 : 3;
}

/* clone-vfork and clone-shared. */
__attribute__((xray_never_instrument)) static int with_clone(int shared)
{
    long a = fibp(15);
    fflush(stdout);
    size_t size = 256 * 1024;
    char *stack = malloc(size);
    if (!stack)
        return 2;
    int flags = CLONE_VM | SIGCHLD | (shared ? 0 : CLONE_VFORK);
    pid_t pid = clone(clone_child, stack + size, flags, (void *)(shared ? 10L : 12L));
    if (pid < 0)
        return 2;
    long b = shared ? fibp(12) : 0;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("child failed (%#x)\n", st);
        return 1;
    }
    long c = fibp(shared ? 5 : 10);
    free(stack);
    if (a != fibonacci(15) || (shared && b != fibonacci(12)) || c != fibonacci(shared ? 5 : 10))
        return 1;
    if (shared) {
        printf("count fib %ld\nthreads 1\nthreadwork %ld\n", fib_calls(15), fib_calls(15));
        printf("unrecorded %ld\n", 2 * (fib_calls(10) + fib_calls(12) + fib_calls(5)));
    } else {
        long mine = fib_calls(15) + fib_calls(10);
        printf("count fib %ld\nthreads 2\nthreadwork %ld\nthreadwork %ld\n", mine + fib_calls(12),
               mine, fib_calls(12));
    }
    printf("vforked %d\n", (int)pid);
    return 0;
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
    if (strncmp(how, "clone-", 6) == 0)
        return with_clone(strcmp(how, "clone-shared") == 0);
    long a = fibp(15);
    int child_calls = strncmp(how, "calls-", 6) == 0;
    fflush(stdout);
    pid_t pid = vfork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        if (child_calls && fibp(12) != fibonacci(12))
            _exit(3);
        if (strcmp(how, "exec") == 0 || strcmp(how, "calls-exec") == 0)
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
    long mine = fib_calls(15) + fib_calls(10), childs = child_calls ? fib_calls(12) : 0;
    printf("count fib %ld\nthreads %d\nthreadwork %ld\n", mine + childs, child_calls ? 2 : 1, mine);
    if (child_calls)
        printf("threadwork %ld\n", childs);
    printf("vforked %d\n", (int)pid);
    return 0;
}
