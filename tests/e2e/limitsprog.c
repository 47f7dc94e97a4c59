/* Programs that live under memory and task limits (issue 23, items 2 and 3): traced, they must
 * behave exactly as untraced. One mode per argv[1] ("mode" or "mode:N" or "mode:N:L"); main
 * and the helpers are never traced, fib is. Every mode prints its exact counts (progs.h) where
 * the whole process is recorded, and what it observed.
 *
 *   forks:N       the parent makes PARENT_REPS calls of fib(12), then forks up to N children,
 *                 one after another, each alive until the parent has made the last one: a child
 *                 makes CHILD_REPS calls of fib(10), says so through a pipe (the parent waits
 *                 for that before the next fork) and waits for the parent's pipe to close, then
 *                 returns from main (exit). The first fork that fails ends the loop. Prints
 *                 "forked K", "fork-error NAME" (or "none") and "child PID" for each child.
 *   late-forks:N:L  the same, but the parent first lowers its own RLIMIT_NPROC to L (the
 *                 runtime started under no such limit).
 *   threads:N     main makes PARENT_REPS calls of fib(12), then creates up to N threads, each
 *                 alive until main has made the last one; each makes CHILD_REPS calls of fib(10).
 *                 The first pthread_create that fails ends the loop. Prints "made K" and
 *                 "create-error NAME".
 *   mlock         main makes PARENT_REPS calls of fib(12), then mlockall(MCL_CURRENT |
 *                 MCL_FUTURE), maps and touches 4 MiB of its own, makes PARENT_REPS more calls,
 *                 and runs a thread (64 KiB stack) that makes CHILD_REPS calls of fib(10). Prints
 *                 "mlockall OK|NAME", "mmap OK|NAME", "thread OK|NAME", and "vmlck KB", its
 *                 locked memory at the end (/proc/self/status). Run it under an 8 MiB
 *                 RLIMIT_MEMLOCK, as a user without CAP_IPC_LOCK.
 *   memthreads:N  N threads (64 KiB stacks) each make MEM_REPS calls of fib(12) and wait until
 *                 all N have, then end; main makes no traced call. Prints "made K" and
 *                 "per-thread fib C" (C calls per thread). Run in a small memory cgroup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

#define NEVER __attribute__((xray_never_instrument))

enum { PARENT_REPS = 20, CHILD_REPS = 30, MEM_REPS = 10, MAX_N = 256 };

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

NEVER static const char *err_name(int e)
{
    switch (e) {
    case EAGAIN:
        return "EAGAIN";
    case ENOMEM:
        return "ENOMEM";
    case EPERM:
        return "EPERM";
    default:
        return "other";
    }
}

NEVER static void work(long n, int reps)
{
    for (int i = 0; i < reps; i++)
        if (fibp(n) != fibonacci(n))
            abort();
}

NEVER static void print_parent(long calls)
{
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", calls, calls);
}

/* ---- forks, late-forks ---- */

NEVER static int forks(int n, long late_limit)
{
    work(12, PARENT_REPS);
    if (late_limit > 0) {
        struct rlimit rl = {(rlim_t)late_limit, (rlim_t)late_limit};
        if (setrlimit(RLIMIT_NPROC, &rl) != 0)
            return 3;
    }
    int ready[2], hold[2];
    if (pipe(ready) != 0 || pipe(hold) != 0)
        return 3;
    fflush(stdout);
    pid_t kids[MAX_N];
    int k = 0, err = 0;
    while (k < n && k < MAX_N) {
        pid_t p = fork();
        if (p < 0) {
            err = errno;
            break;
        }
        if (p == 0) {
            close(hold[1]);
            close(ready[0]);
            work(10, CHILD_REPS);
            char c = 'r';
            if (write(ready[1], &c, 1) != 1)
                _exit(4);
            while (read(hold[0], &c, 1) > 0)
                ;
            exit(0); /* destructors: the runtime completes the child's trace */
        }
        kids[k++] = p;
        char c;
        if (read(ready[0], &c, 1) != 1)
            return 5;
    }
    close(hold[1]);
    int bad = 0;
    for (int i = 0; i < k; i++) {
        int st;
        if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    print_parent(PARENT_REPS * fib_calls(12));
    printf("forked %d\nfork-error %s\nbad %d\n", k, err ? err_name(err) : "none", bad);
    for (int i = 0; i < k; i++)
        printf("child %d\n", (int)kids[i]);
    printf("child-fib %ld\n", CHILD_REPS * fib_calls(10));
    return 0;
}

/* ---- threads ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int arrived, released;

NEVER static void *thread_main(void *arg)
{
    long n = (long)arg;
    work(n, n == 12 ? MEM_REPS : CHILD_REPS);
    pthread_mutex_lock(&mu);
    arrived++;
    pthread_cond_broadcast(&cv);
    while (!released)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Starts up to n threads running thread_main(arg), each waited for (its work done) before the
 * next, all released together once the loop ends; returns how many ran, *err the failure. */
NEVER static int run_threads(int n, long arg, size_t stack, int wait_each, int *err)
{
    pthread_t t[MAX_N];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (stack)
        pthread_attr_setstacksize(&attr, stack);
    int k = 0;
    *err = 0;
    while (k < n && k < MAX_N) {
        int rc = pthread_create(&t[k], &attr, thread_main, (void *)arg);
        if (rc != 0) {
            *err = rc;
            break;
        }
        k++;
        pthread_mutex_lock(&mu);
        while (wait_each && arrived < k)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    while (arrived < k)
        pthread_cond_wait(&cv, &mu);
    released = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < k; i++)
        pthread_join(t[i], NULL);
    pthread_attr_destroy(&attr);
    return k;
}

NEVER static int threads(int n)
{
    work(12, PARENT_REPS);
    int err;
    int k = run_threads(n, 10, 0, 1, &err);
    long each = CHILD_REPS * fib_calls(10), mine = PARENT_REPS * fib_calls(12);
    printf("count fib %ld\nthreads %d\nthreadwork %ld\n", mine + k * each, k + 1, mine);
    for (int i = 0; i < k; i++)
        printf("threadwork %ld\n", each);
    printf("made %d\ncreate-error %s\n", k, err ? err_name(err) : "none");
    return 0;
}

/* ---- mlock ---- */

NEVER static int mlock_mode(void)
{
    work(12, PARENT_REPS);
    int rc = mlockall(MCL_CURRENT | MCL_FUTURE);
    printf("mlockall %s\n", rc == 0 ? "OK" : err_name(errno));
    size_t len = 4u << 20;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap %s\n", m != MAP_FAILED ? "OK" : err_name(errno));
    if (m != MAP_FAILED)
        memset(m, 1, len);
    work(12, PARENT_REPS);
    int err;
    int k = run_threads(1, 10, 64 * 1024, 1, &err);
    printf("thread %s\n", k == 1 ? "OK" : err_name(err));
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmLck:", 6) == 0)
            printf("vmlck %ld\n", strtol(line + 6, NULL, 10));
    if (f)
        fclose(f);
    long each = CHILD_REPS * fib_calls(10), mine = 2 * PARENT_REPS * fib_calls(12);
    printf("count fib %ld\nthreads %d\nthreadwork %ld\n", mine + k * each, k + 1, mine);
    if (k)
        printf("threadwork %ld\n", each);
    return 0;
}

/* ---- memthreads ---- */

NEVER static int memthreads(int n)
{
    int err;
    int k = run_threads(n, 12, 64 * 1024, 0, &err);
    printf("made %d\ncreate-error %s\nper-thread fib %ld\n", k, err ? err_name(err) : "none",
           MEM_REPS * fib_calls(12));
    return 0;
}

NEVER int main(int argc, char **argv)
{
    fibp = fib;
    if (argc < 2)
        return 2;
    char mode[32] = "";
    long a = 0, b = 0;
    sscanf(argv[1], "%31[^:]:%ld:%ld", mode, &a, &b);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    if (strcmp(mode, "forks") == 0)
        return forks((int)a, 0);
    if (strcmp(mode, "late-forks") == 0)
        return forks((int)a, b);
    if (strcmp(mode, "threads") == 0)
        return threads((int)a);
    if (strcmp(mode, "mlock") == 0)
        return mlock_mode();
    if (strcmp(mode, "memthreads") == 0)
        return memthreads((int)a);
    fprintf(stderr, "limitsprog: unknown mode '%s'\n", argv[1]);
    return 2;
}
