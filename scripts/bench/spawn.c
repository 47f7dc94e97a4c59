/* Per-process cost: posix_spawn + waitpid of argv[2], argv[1] times, in an environment that
 * holds only LD_PRELOAD=$SPAWN_PRELOAD and, when SPAWN_OUTPUT is set, SLEDTRACE_OUTPUT. Prints "ns=<ns per process>". The
 * spawner itself is never preloaded: the bench passes the preload to the children only, through
 * SPAWN_PRELOAD. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long n = atol(argv[1]);
    const char *pre = getenv("SPAWN_PRELOAD"), *dir = getenv("SPAWN_OUTPUT");
    char preload[4096 + 16], output[4096 + 32];
    char *env[] = {preload, dir ? output : NULL, NULL};
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", pre ? pre : "");
    snprintf(output, sizeof output, "SLEDTRACE_OUTPUT=%s", dir ? dir : "");
    char *args[] = {argv[2], NULL};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        pid_t pid;
        int st;
        if (posix_spawn(&pid, argv[2], NULL, NULL, args, env) != 0 || waitpid(pid, &st, 0) != pid ||
            !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
    printf("ns=%lld\n", ns / n);
    return 0;
}
