/* tests/profile (issue 22): a program of many short functions, the case where a tracer's own
 * cost moves self time between functions. driver() calls four leaves that differ in length by
 * three orders of magnitude: tiny() (~1 ns, 8M calls per round), small() (~10 ns, 2M calls),
 * medium() (~150 ns, 125k calls) and big() (~3.5 us, 8k calls), and does two steps of work of
 * its own per round of its loop, so that a sampling profile of the untraced build puts about 3,
 * 25, 21, 30 and 21% of the time in tiny, small, medium, big and driver (issue 22's program:
 * 4.7, 25.8, 19.9, 28.2 and 21.3). ARGV[1] is the number of rounds (default 1, about 0.1 s). Each leaf runs a chain of dependent multiplications that an empty
 * asm statement hides from the optimiser, so no call can be folded, merged or hoisted; the
 * result is printed. Built twice by tests/profile/meson.build: with XRay sleds and without. */
#include <stdio.h>
#include <stdlib.h>

/* the leaves' lengths in steps (~1.5 ns each) */
#define SMALL_STEPS 10
#define MEDIUM_STEPS 140
#define BIG_STEPS 3100

#define STEP(x) ((x)*2654435761u + 12345u)

/* one multiply-add, opaque to the compiler */
#define OPAQUE_STEP(x)                                                                             \
    do {                                                                                           \
        (x) = STEP(x);                                                                             \
        __asm__ volatile("" : "+r"(x));                                                            \
    } while (0)

__attribute__((noinline)) unsigned tiny(unsigned x)
{
    __asm__ volatile("" : "+r"(x));
    return x + 1;
}

__attribute__((noinline)) unsigned small(unsigned x)
{
    for (int i = 0; i < SMALL_STEPS; i++)
        OPAQUE_STEP(x);
    return x;
}

__attribute__((noinline)) unsigned medium(unsigned x)
{
    for (int i = 0; i < MEDIUM_STEPS; i++)
        OPAQUE_STEP(x);
    return x;
}

__attribute__((noinline)) unsigned big(unsigned x)
{
    for (int i = 0; i < BIG_STEPS; i++)
        OPAQUE_STEP(x);
    return x;
}

__attribute__((noinline)) unsigned driver(long rounds)
{
    unsigned acc = 1;
    for (long r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < 8u << 20; i++) {
            acc += tiny(i);
            OPAQUE_STEP(acc);
            OPAQUE_STEP(acc);
            if ((i & 3) == 0)
                acc ^= small(acc);
            if ((i & 63) == 0)
                acc ^= medium(acc);
            if ((i & 1023) == 0)
                acc ^= big(acc);
        }
    }
    return acc;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 1;
    printf("mixleaf %u\n", driver(rounds));
    return 0;
}
