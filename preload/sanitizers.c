/* Programs built with a sanitizer (clang -fsanitize=...; issue 23, items 5 and 9).
 *
 * A sanitizer's run-time is linked into the executable (clang's default) and exports its
 * interface functions and its interceptors of libc: the runtime's own calls of memcmp, strlen,
 * pthread_join, write... reach those interceptors first (the executable comes first in the
 * global scope). What that means, per sanitizer:
 *
 *  - AddressSanitizer, UBSan: the interceptors check addresses and nothing else of the runtime's
 *    memory; tracing works. An error report ends the process through the sanitizer's own exit
 *    system call (Die(): internal _exit with its exitcode), past exit handlers and the runtime's
 *    _exit: the last flush period, the calls just before the error, was lost. The runtime
 *    installs a death callback (__sanitizer_set_death_callback, found with dlsym, so the runtime
 *    needs no sanitizer to link) which completes the trace the way a fatal signal does
 *    (str_crash_flush: no lock waited for, no thread joined: Die may run in a signal handler or
 *    while another thread holds a lock). The sidecar then has no exit line: the sanitizer's
 *    exitcode (a flag of its own) is not known to the runtime. There is one such callback per
 *    process: a program that sets its own later replaces the runtime's (its calls are then
 *    flushed up to the last period, as before). With abort_on_error=1 the process ends by
 *    SIGABRT after the callback: the trace is already complete and the signal path does nothing
 *    more.
 *  - ThreadSanitizer: it knows nothing of the runtime's flush thread (created past its
 *    pthread_create interceptor), so its pthread_join interceptor fails a CHECK at exit (exit 66,
 *    stdio never flushed); and the runtime's lock-free hand-over of chunks between threads is
 *    uninstrumented code it cannot follow, so it reports races in the runtime. Not supported.
 *  - MemorySanitizer: memory the runtime writes (uninstrumented code) stays poisoned in its
 *    shadow, and the first interceptor the runtime calls with it (memcmp in the sled proof)
 *    reports a use of uninitialised memory and ends the process at start-up. Not supported.
 *
 * For the last two the runtime steps aside at start-up, before it proves, creates or starts
 * anything: one message (a warning when the program has something to trace), no files, and
 * every interposed function passes straight through, so the program's stdout, stderr (but for
 * that line) and exit status are as untraced. Detected by the sanitizers' own init functions
 * (__tsan_init, __msan_init), which the executable exports (and a -shared-libsan build's
 * libclang_rt too).
 */
#include "str.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

/* dlsym that leaves no error behind for the program's dlerror() when the symbol is absent (the
 * common case here). */
static void *lookup(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p)
        (void)dlerror();
    return p;
}

const char *str_sanitizer_unsupported(void)
{
    if (lookup("__tsan_init"))
        return "ThreadSanitizer";
    if (lookup("__msan_init"))
        return "MemorySanitizer";
    return NULL;
}

const char *str_sanitizer_why(const char *name)
{
    if (strcmp(name, "ThreadSanitizer") == 0)
        return "built with ThreadSanitizer, which cannot follow the tracer's own threads (it "
               "would report races in the tracer and stop the program at exit); not tracing, "
               "the program runs as untraced";
    return "built with MemorySanitizer, which takes the tracer's own writes for uninitialised "
           "memory (it would stop the program at start-up); not tracing, the program runs as "
           "untraced";
}

/* Called by the sanitizer's Die() after its report, before its exit system call. */
static void on_sanitizer_death(void)
{
    int saved = errno;
    str_crash_flush();
    errno = saved;
}

void str_sanitizer_death_hook(void)
{
    void (*set)(void (*)(void));
    *(void **)&set = lookup("__sanitizer_set_death_callback");
    if (set) {
        set(on_sanitizer_death);
        str_log(STR_DEBUG, "a sanitizer's error report that ends the process completes the trace");
    }
}
