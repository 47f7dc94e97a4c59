/* Many short processes (issue 24): `spawnmany DIR` runs spawnkid (from its own directory) KIDS
 * times, as `spawnkid K` for K = 0 .. KIDS - 1, with the environment it was given (so a
 * preloaded runtime and SLEDTRACE_OUTPUT reach every child), in four runs of PER children:
 *     K in [0, 50)     fork + execve, one at a time
 *     K in [50, 100)   fork + execve, PAR at a time
 *     K in [100, 150)  posix_spawn, one at a time
 *     K in [150, 200)  posix_spawn, PAR at a time
 * Child K's stdout goes to DIR/kid.K.out; DIR/pids gets a line "PID K" per child. The parent
 * prints each child's exit as "kid K exit N" (or "kid K signal N"), in order of K.
 *
 * Built twice: without -fxray-instrument (nothing of the parent is traced), and with it and
 * -DTRACED_PARENT, where launch() is instrumented and called once per child, and the parent
 * also prints its counts (progs.h). launch() forks or spawns: a fork child runs no instrumented
 * code between the fork and its execve (its copy of launch()'s frame never returns). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

#define NOTRACE __attribute__((xray_never_instrument, noinline))

enum { KIDS = 200, PER = 50, PAR = 4 };

extern char **environ;

static char kid_path[PATH_MAX], out_dir[PATH_MAX];
static pid_t pids[KIDS];
static int statuses[KIDS];

NOTRACE static void fail(const char *what)
{
    printf("error: %s: %s\n", what, strerror(errno));
    fflush(stdout);
    _exit(1);
}

KEEP pid_t launch(long k)
{
    char arg[32], out[PATH_MAX + 32];
    snprintf(arg, sizeof arg, "%ld", k);
    snprintf(out, sizeof out, "%s/kid.%ld.out", out_dir, k);
    char *argv[] = {kid_path, arg, NULL};
    pid_t pid;
    if (k / PER < 2) {
        pid = fork();
        if (pid < 0)
            fail("fork");
        if (pid == 0) {
            int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0 || dup2(fd, 1) != 1)
                _exit(126);
            execve(kid_path, argv, environ);
            _exit(127);
        }
    } else {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int rc = posix_spawn(&pid, kid_path, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) {
            errno = rc;
            fail("posix_spawn");
        }
    }
    return pid;
}

/* Waits for any child and files its status; the number of children still running. */
NOTRACE static int reap(int running)
{
    int st;
    pid_t w;
    while ((w = waitpid(-1, &st, 0)) < 0 && errno == EINTR)
        ;
    if (w < 0)
        fail("waitpid");
    for (long k = 0; k < KIDS; k++)
        if (pids[k] == w) {
            statuses[k] = st;
            return running - 1;
        }
    printf("error: waitpid gave %d, not a child\n", (int)w);
    fflush(stdout);
    _exit(1);
}

NOTRACE int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    snprintf(out_dir, sizeof out_dir, "%s", argv[1]);
    ssize_t n = readlink("/proc/self/exe", kid_path, sizeof kid_path - 16);
    if (n <= 0)
        fail("readlink /proc/self/exe");
    kid_path[n] = '\0';
    char *slash = strrchr(kid_path, '/');
    if (!slash)
        return 2;
    strcpy(slash + 1, "spawnkid");

    for (long run = 0; run < KIDS / PER; run++) {
        int par = run % 2 ? PAR : 1, running = 0;
        for (long k = run * PER; k < (run + 1) * PER; k++) {
            if (running == par)
                running = reap(running);
            pids[k] = launch(k);
            running++;
        }
        while (running)
            running = reap(running);
    }

    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/pids", out_dir);
    FILE *f = fopen(path, "w");
    if (!f)
        fail(path);
    for (long k = 0; k < KIDS; k++)
        fprintf(f, "%d %ld\n", (int)pids[k], k);
    fclose(f);
    for (long k = 0; k < KIDS; k++) {
        if (WIFEXITED(statuses[k]))
            printf("kid %ld exit %d\n", k, WEXITSTATUS(statuses[k]));
        else
            printf("kid %ld signal %d\n", k, WIFSIGNALED(statuses[k]) ? WTERMSIG(statuses[k]) : -1);
    }
#ifdef TRACED_PARENT
    printf("count launch %d\nthreads 1\nthreadwork %d\n", KIDS, KIDS);
#endif
    return 0;
}
