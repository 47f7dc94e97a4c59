/* LOG_ARGS_ENTER sleds: logged() is marked xray_always_instrument + xray_log_args(1), so its entry
 * sled records its first argument. Called with 100..104; prints the expectations. */
#include <stdio.h>

__attribute__((xray_always_instrument, xray_log_args(1), noinline)) long logged(long x)
{
    return x * 3;
}

__attribute__((xray_never_instrument)) int main(void)
{
    long s = 0;
    for (long i = 0; i < 5; i++)
        s += logged(100 + i);
    printf("count logged 5\nthreads 1\nthreadwork 5\nsum %ld\n", s);
    return s == 3 * (100 + 101 + 102 + 103 + 104) ? 0 : 1;
}
