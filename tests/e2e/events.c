/* A program with XRay custom-event and typed-event sleds (__xray_customevent,
 * __xray_typedevent), which sledtrace recognises but does not patch: the runtime reports them as
 * left untouched (and lists them at SLEDTRACE_LOG=debug), and the function sleds around them
 * must still be traced exactly. Built only without compiler-rt's runtime, so it defines the two
 * symbols clang's event sleds refer to (never called: the event sleds stay unpatched). */
#include <stdio.h>

#include "progs.h"

enum { N = 50 };

__attribute__((xray_never_instrument)) void __xray_CustomEvent(void) {}
__attribute__((xray_never_instrument)) void __xray_TypedEvent(void) {}

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
