/* sledtrace order (issue 15.3): 400 functions of about 1 KiB each, f100..f499, laid out in that
 * order by default. The run first calls a hot set - every tenth function, f490 down to f100 -
 * 50 times over (2,000 calls), then every function once in ascending order (400 calls). So the
 * first-call order is f490, f480, ..., f100, then the other 360 ascending; in the default
 * layout the hot set is spread over about 40 pages, ordered it fits in about 11. */
#include <stdio.h>

volatile long sink;

#define FN(n)                                                                                      \
    __attribute__((noinline, used)) void f##n(void)                                                \
    {                                                                                              \
        __asm__ volatile(".skip 1000, 0x90");                                                      \
        sink++;                                                                                    \
    }
#define D(a)                                                                                       \
    FN(a##0) FN(a##1) FN(a##2) FN(a##3) FN(a##4) FN(a##5) FN(a##6) FN(a##7) FN(a##8) FN(a##9)
#define H(a) D(a##0) D(a##1) D(a##2) D(a##3) D(a##4) D(a##5) D(a##6) D(a##7) D(a##8) D(a##9)
H(1)
H(2)
H(3)
H(4)

#define P(n) f##n,
#define PD(a) P(a##0) P(a##1) P(a##2) P(a##3) P(a##4) P(a##5) P(a##6) P(a##7) P(a##8) P(a##9)
#define PH(a)                                                                                      \
    PD(a##0) PD(a##1) PD(a##2) PD(a##3) PD(a##4) PD(a##5) PD(a##6) PD(a##7) PD(a##8) PD(a##9)
static void (*const volatile fns[400])(void) = {PH(1) PH(2) PH(3) PH(4)};

__attribute__((xray_never_instrument)) int main(void)
{
    for (int round = 0; round < 50; round++)
        for (int k = 39; k >= 0; k--)
            fns[10 * k]();
    for (int i = 0; i < 400; i++)
        fns[i]();
    printf("calls %ld\n", sink);
    return 0;
}
