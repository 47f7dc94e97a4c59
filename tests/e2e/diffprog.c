/* sledtrace diff (issue 15.1): two builds of one program. steady() does the same work in both;
 * slowed() does three times as much in the NEW_BUILD; added() exists only there. The work is a
 * counted loop (not a timed one), so the ratio holds whatever the machine does. Prints its
 * counts (progs.h). */
#include <stdio.h>

#include "progs.h"

enum { ROUNDS = 100, WORK = 20000 };
#ifdef NEW_BUILD
enum { FACTOR = 3 };
#else
enum { FACTOR = 1 };
#endif

long (*volatile steadyp)(long);
long (*volatile slowedp)(long);

__attribute__((xray_never_instrument)) static long spin(long n)
{
    volatile long acc = 0;
    for (long i = 0; i < n; i++)
        acc += i;
    return acc;
}

KEEP long steady(long n)
{
    return spin(n);
}

KEEP long slowed(long n)
{
    return spin(n * FACTOR);
}

#ifdef NEW_BUILD
long (*volatile addedp)(long);
KEEP long added(long n)
{
    return spin(n);
}
#endif

__attribute__((xray_never_instrument)) int main(void)
{
    steadyp = steady;
    slowedp = slowed;
    long sum = 0;
    for (int r = 0; r < ROUNDS; r++) {
        sum += steadyp(WORK);
        sum += slowedp(WORK);
#ifdef NEW_BUILD
        addedp = added;
        sum += addedp(WORK / 4);
#endif
    }
    printf("count steady %d\ncount slowed %d\n", ROUNDS, ROUNDS);
#ifdef NEW_BUILD
    printf("count added %d\n", ROUNDS);
#endif
    printf("threads 1\nsum %ld\n", sum);
    return 0;
}
