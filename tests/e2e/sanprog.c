/* Built with each sanitizer (issue 23.5 and 9): -fsanitize=address, undefined (with
 * -fno-sanitize-recover=all), thread, memory, and with -fxray-instrument (and once with thread
 * without it). Records f() F_CALLS times on the main thread and g() G_CALLS times on each of two
 * threads (joined), prints the counts (flushed), then by argv[1]:
 *   ok      returns 0
 *   error   the error its sanitizer reports and ends the process with: a heap-buffer-overflow
 *           (ASan, exit 1), a signed overflow (UBSan, exit 1), a data race (TSan, exit 66 at
 *           exit), a branch on uninitialised memory (MSan, exit 1)
 * main and the threads' start functions are never instrumented. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progs.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif

enum { F_CALLS = 300, G_CALLS = 200 };

int racy; /* external: its stores are kept */
int *volatile heap;
volatile int sink; /* written by the main thread only */

KEEP int f(int x)
{
    BARRIER();
    return x + 1;
}

KEEP int g(int x)
{
    BARRIER();
    return x ^ 1;
}

__attribute__((xray_never_instrument)) static void *thread_main(void *arg)
{
    long s = 0;
    for (int i = 0; i < G_CALLS; i++)
        s += g(i);
    if (arg)
        racy = 1; /* unsynchronised with main's write */
    return (void *)s;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    int error = argc > 1 && strcmp(argv[1], "error") == 0;
    int s = 0;
    for (int i = 0; i < F_CALLS; i++)
        s += f(i);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, thread_main, NULL) != 0)
            return 2;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        s += (int)(long)r;
    }
    printf("count f %d\ncount g %d\nthreads 3\nthreadwork %d\nthreadwork %d\nthreadwork %d\n",
           F_CALLS, 2 * G_CALLS, F_CALLS, G_CALLS, G_CALLS);
    fflush(stdout);
    sink = s;
    if (!error)
        return 0;
#if __has_feature(address_sanitizer)
    heap = malloc(10 * sizeof *heap);
    sink = heap[10];
    free(heap);
#elif __has_feature(thread_sanitizer)
    pthread_t r;
    if (pthread_create(&r, NULL, thread_main, (void *)1) != 0)
        return 2;
    racy = 2;
    pthread_join(r, NULL);
#elif __has_feature(memory_sanitizer)
    heap = malloc(sizeof *heap);
    if (*heap)
        sink = 1;
    free(heap);
#else
    volatile int big = INT_MAX;
    sink = big + argc; /* UBSan: signed overflow */
#endif
    return 0;
}
