/* A small instrumented program for scripts/bench/threads.sh's per-process row (issue 24.3): 10
 * calls of work(), then exit 0. */
__attribute__((noinline)) long work(long x)
{
    __asm__ volatile("" ::: "memory");
    return x * 3;
}

__attribute__((xray_never_instrument)) int main(void)
{
    long s = 0;
    for (int i = 0; i < 10; i++)
        s += work(i);
    return s == 135 ? 0 : 1;
}
