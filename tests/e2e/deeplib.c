/* libdeep.so, dlopen'd with RTLD_DEEPBIND by deepbindprog.c (issue 23.9): its references to _exit,
 * _Exit and execv bind to libc's, not the tracer's, unless the runtime points them back. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

void dep_work(void);
void dep_exit(int status);

KEEP void deep_work(void)
{
    BARRIER();
}

/* n calls of deep_work and m of dep_work (1 call of its own). */
KEEP void deep_run(long n, long m)
{
    for (long i = 0; i < n; i++)
        deep_work();
    for (long i = 0; i < m; i++)
        dep_work();
}

/* Never instrumented: the process ends here, by `how`. */
__attribute__((xray_never_instrument)) void deep_end(const char *how)
{
    if (strcmp(how, "_Exit") == 0)
        _Exit(3);
    if (strcmp(how, "dep") == 0)
        dep_exit(3); /* libdeepdep.so's _exit */
    if (strcmp(how, "exec") == 0) {
        char *argv[] = {"/bin/sh", "-c", "exit 3", NULL};
        execv("/bin/sh", argv);
        _exit(126);
    }
    _exit(3);
}
