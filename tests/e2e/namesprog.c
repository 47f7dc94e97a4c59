/* What the sidecar records of the process (issue 13.5): its command line, how it ended, and its
 * threads' names. main names itself "boss" (pthread_setname_np on itself); worker 0 names
 * itself "w0-prctl" with prctl(PR_SET_NAME); main names worker 1 "w1-setname" before letting it
 * run; worker 2 is never named (it keeps the program's name). Each thread calls fib(5). main
 * returns 3 ("exit" from main's return), or with argv[1] "crash" dies of SIGSEGV after the
 * workers have ended. Prints its counts (progs.h) and each worker's tid ("tid N TID"). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);
static pthread_barrier_t named;
static volatile int zero;

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

__attribute__((xray_never_instrument)) static void *worker(void *arg)
{
    long i = (long)arg;
    if (i == 0)
        prctl(PR_SET_NAME, "w0-prctl", 0, 0, 0);
    pthread_barrier_wait(&named);
    fibp(5);
    return (void *)(long)syscall(SYS_gettid);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    fibp = fib;
    pthread_setname_np(pthread_self(), "boss");
    pthread_barrier_init(&named, NULL, 4);
    pthread_t t[3];
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    pthread_setname_np(t[1], "w1-setname");
    pthread_barrier_wait(&named);
    fibp(5);
    long tids[3];
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(t[i], &r);
        tids[i] = (long)r;
    }
    printf("count fib %ld\nthreads 4\n", 4 * fib_calls(5));
    for (int i = 0; i < 4; i++)
        printf("threadwork %ld\n", fib_calls(5));
    for (int i = 0; i < 3; i++)
        printf("tid %d %ld\n", i, tids[i]);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "crash") == 0)
        *(volatile int *)(long)zero = 1;
    return 3;
}
