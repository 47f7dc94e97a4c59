/* errno must survive instrumentation, including the slow path taken at every chunk boundary
 * (the test runs this with SLEDTRACE_BUFFER_KB=4: 512 events per chunk, ~80 boundaries). Exits
 * with 7 when errno never changed (3 when it did), so the exit status is checked too. */
#include <errno.h>
#include <stdio.h>

#include "progs.h"

enum { N = 20000, MAGIC = 4242 };

long (*volatile stepp)(long);

KEEP long inner(long x)
{
    BARRIER();
    return x * 5 + 3;
}

KEEP long step(long x)
{
    return inner(x) + 1;
}

int main(void)
{
    stepp = step;
    long sum = 0, want = 0;
    errno = MAGIC;
    for (long i = 0; i < N; i++) {
        sum += stepp(i);
        want += i * 5 + 4;
        if (errno != MAGIC) {
            printf("errno changed to %d after call %ld\n", errno, i);
            return 3;
        }
    }
    if (sum != want) {
        printf("sum %ld, expected %ld\n", sum, want);
        return 1;
    }
    printf("count step %d\ncount inner %d\ncount main 1\n", N, N);
    printf("threads 1\nthreadwork %d\n", 2 * N + 1);
    return 7;
}
