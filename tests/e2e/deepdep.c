/* libdeepdep.so: a dependency of libdeep.so that no one else loads, so the RTLD_DEEPBIND dlopen
 * of libdeep.so loads it too, with the same deep scope (deepbindprog.c). */
#include <unistd.h>

#include "progs.h"

KEEP void dep_work(void)
{
    BARRIER();
}

/* Never instrumented: no frame is left open by the exit. */
__attribute__((xray_never_instrument)) void dep_exit(int status)
{
    _exit(status);
}
