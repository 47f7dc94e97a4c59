/* posix_spawn: the parent records fib(15), spawns argv[1] (an instrumented e2e program, the fib
 * program, with argument "12") with its own environment (LD_PRELOAD included), reads the child's
 * stdout through a pipe, waits for it, then records fib(10). glibc's posix_spawn execs through
 * its internal entry point, never through the runtime's exec wrappers; the child traces itself.
 * The parent prints its own counts (main is never instrumented), "spawned PID", and the child's
 * stdout with every line prefixed by "child: ". */
#include <spawn.h>
#include <stdio.h>
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

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    fibp = fib;
    long a = fibp(15);
    int p[2];
    if (pipe(p) != 0)
        return 2;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    char *cargv[] = {argv[1], "12", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, argv[1], &fa, NULL, cargv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        printf("posix_spawn: %s\n", strerror(rc));
        return 2;
    }
    static char buf[1 << 16];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof buf - 1 && (got = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)got;
    buf[n] = '\0';
    close(p[0]);
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
    printf("spawned %d\n", (int)pid);
    for (char *line = buf, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) {
            printf("child: %s\n", line);
            break;
        }
        printf("child: %.*s\n", (int)(nl - line), line);
    }
    return 0;
}
