/* Several distinct functions, tail calls (chain -> tailer -> leaf, each a `jmp`), mutual
 * recursion through volatile pointers (is_even/is_odd, tail calls too), and a function with two
 * returns. Single-threaded, ~38k events. */
#include <stdio.h>

#include "progs.h"

enum { N = 2000, MOD = 10 };

int (*volatile evenp)(int);
int (*volatile oddp)(int);
int (*volatile chainp)(int);
int (*volatile twop)(int);

KEEP int leaf(int x)
{
    BARRIER();
    return x * 3 + 1;
}

/* Leaves only through its tail call to leaf. */
KEEP int tailer(int x)
{
    BARRIER();
    return leaf(x + 1);
}

/* Leaves only through its tail call to tailer. */
KEEP int chain(int x)
{
    BARRIER();
    return tailer(x ^ 0x55);
}

KEEP int is_even(int n)
{
    if (n == 0)
        return 1;
    return oddp(n - 1);
}

KEEP int is_odd(int n)
{
    if (n == 0)
        return 0;
    return evenp(n - 1);
}

KEEP int twoexits(int x)
{
    BARRIER();
    if (x & 1) {
        BARRIER();
        return x * 7;
    }
    BARRIER();
    return x / 3 + 11;
}

int main(void)
{
    evenp = is_even;
    oddp = is_odd;
    chainp = chain;
    twop = twoexits;
    long sum = 0, want = 0, even = 0, odd = 0;
    for (int i = 0; i < N; i++) {
        sum += chainp(i);
        want += ((i ^ 0x55) + 1) * 3 + 1;
        int k = i % MOD;
        int e = evenp(k);
        if (e != (k % 2 == 0)) {
            printf("is_even(%d) = %d\n", k, e);
            return 1;
        }
        even += (k + 2) / 2; /* is_even(k) -> is_odd(k-1) -> ... -> 0: k+1 calls, even first */
        odd += (k + 1) / 2;
        sum += twop(i);
        want += (i & 1) ? i * 7 : i / 3 + 11;
    }
    if (sum != want) {
        printf("sum %ld, expected %ld\n", sum, want);
        return 1;
    }
    printf("sum %ld\n", sum);
    printf("count main 1\n");
    printf("count chain %d\ncount tailer %d\ncount leaf %d\n", N, N, N);
    printf("tail chain %d\ntail tailer %d\n", N, N);
    printf("count is_even %ld\ncount is_odd %ld\n", even, odd);
    printf("count twoexits %d\n", N);
    printf("threads 1\n");
    printf("threadwork %ld\n", 1 + 3L * N + even + odd + N);
    return 0;
}
