/* A C++ plugin with work left for the end (issue 23.8), built with -fxray-instrument:
 *  - a static object whose destructor calls plug_work() DTOR_CALLS times (a C++ static: run by
 *    exit's handler list, or, when the plugin was constructed before main started, by the
 *    plugin's __cxa_finalize from inside the dynamic loader's _dl_fini);
 *  - an ELF destructor (__attribute__((destructor)), run by _dl_fini after the runtime's own)
 *    that calls plug_fini() FINI_CALLS times, then exit(plug_exit_status) if the host asked for
 *    it (plug_exit_at_fini): exit called again from a destructor.
 * The destructors themselves are never instrumented, so no frame is left open. exitshost.c
 * prints the counts. */
#include <stdlib.h>

#include "progs.h"

enum { DTOR_CALLS = 1000, FINI_CALLS = 500 };

extern "C" KEEP void plug_work(void)
{
    BARRIER();
}

extern "C" KEEP void plug_fini(void)
{
    BARRIER();
}

static int plug_exit_status = -1;

/* Called once by the host: 1 call. */
extern "C" KEEP void plug_exit_at_fini(int status)
{
    plug_exit_status = status;
}

/* Called once by the host: 1 call of its own and n of plug_work. */
extern "C" KEEP long plug_call(long n)
{
    for (long i = 0; i < n; i++)
        plug_work();
    return n;
}

namespace {
struct Holder {
    long *calls;
    __attribute__((xray_never_instrument)) Holder() : calls(new long(0)) {}
    __attribute__((xray_never_instrument)) ~Holder()
    {
        for (int i = 0; i < DTOR_CALLS; i++)
            plug_work();
        delete calls;
    }
};
Holder holder;
} // namespace

__attribute__((destructor, xray_never_instrument)) static void plug_elf_fini(void)
{
    for (int i = 0; i < FINI_CALLS; i++)
        plug_fini();
    if (plug_exit_status >= 0)
        exit(plug_exit_status);
}
