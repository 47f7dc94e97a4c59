/* The short process of spawnmany.c: `spawnkid K` makes 10 instrumented calls, step() 10 - K % 4
 * times and leaf() K % 4 times, prints its result and its counts (progs.h), and exits with
 * status K % 3, so that a parent can tell each child's trace, output and status apart. */
#include <stdio.h>
#include <stdlib.h>

#include "progs.h"

long (*volatile stepp)(long);
long (*volatile leafp)(long);

KEEP long step(long x)
{
    BARRIER();
    return x * 3 + 1;
}

KEEP long leaf(long x)
{
    BARRIER();
    return x ^ 0x55;
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    if (argc != 2)
        return 100;
    long k = atol(argv[1]), s = 0;
    stepp = step;
    leafp = leaf;
    for (long i = 0; i < 10 - k % 4; i++)
        s += stepp(i + k);
    for (long i = 0; i < k % 4; i++)
        s += leafp(i + k);
    printf("spawnkid %ld sum %ld\n", k, s);
    printf("count step %ld\ncount leaf %ld\nthreads 1\nthreadwork 10\n", 10 - k % 4, k % 4);
    return (int)(k % 3);
}
