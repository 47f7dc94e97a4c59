/* XRay custom-event and typed-event sleds (__xray_customevent, __xray_typedevent): sledtrace
 * patches them to record the payloads as FDR custom/typed event records. Built twice: without
 * compiler-rt (this file then defines the two symbols the sleds call, never called once patched)
 * and with it (-DWITH_XRAY_RUNTIME: the sleds call compiler-rt's, which sledtrace redirects). */
#include <stdio.h>

#include "progs.h"

enum { N = 50 };

#ifndef WITH_XRAY_RUNTIME
__attribute__((xray_never_instrument)) void __xray_CustomEvent(void) {}
__attribute__((xray_never_instrument)) void __xray_TypedEvent(void) {}
#endif

void (*volatile emitp)(long);

KEEP void emit(long i)
{
    char msg[16];
    int len = snprintf(msg, sizeof msg, "event %ld", i);
    __xray_customevent(msg, (unsigned long)len);
    __xray_typedevent(7, msg, (unsigned long)len);
    BARRIER();
}

int main(void)
{
    emitp = emit;
    for (long i = 0; i < N; i++)
        emitp(i);
    printf("count emit %d\ncount main 1\nthreads 1\nthreadwork %d\n", N, N + 1);
    return 0;
}
