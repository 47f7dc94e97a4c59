/* A small program for the patcher's map-reading tests: several functions, a tail call, a
 * function that is only reached through a pointer. Built by meson with clang and
 * -fxray-instrument -fxray-instruction-threshold=1 (see meson.build); the test compares what
 * stp_object_open reads from it with `llvm-xray extract --symbolize`. */
#include <stdio.h>

#define KEEP __attribute__((noinline)) __attribute__((used))
#define BARRIER() __asm__ volatile("" ::: "memory")

KEEP int leaf(int x)
{
    BARRIER();
    return x * 3 + 1;
}

/* Tail-calls leaf: gets an entry sled and a tail sled. */
KEEP int tailer(int x)
{
    BARRIER();
    return leaf(x + 1);
}

/* Two returns: two exit sleds. */
KEEP int twoexits(int x)
{
    BARRIER();
    if (x & 1) {
        BARRIER();
        return leaf(x) * 2;
    }
    BARRIER();
    return tailer(x) + 5;
}

static int (*volatile indirect)(int) = twoexits;

int main(int argc, char **argv)
{
    (void)argv;
    printf("%d\n", indirect(argc) + tailer(argc));
    return 0;
}
