/* sledtrace.h: control of a running trace, for programs that want it.
 *
 * Link with -lsledtrace (or look the functions up with dlsym(RTLD_DEFAULT, ...) when the library
 * is only preloaded). Every call is safe while other threads run instrumented code: a sled is
 * switched with one atomic store of its first two bytes. A call that is in flight while its
 * function is switched off (or on) records its entry without its exit (or the other way round);
 * `sledtrace account` reports those as unfinished frames and unmatched exits.
 * Not async-signal-safe: to switch from a signal, use SLEDTRACE_TOGGLE_SIGNAL. */
#ifndef SLEDTRACE_H
#define SLEDTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Switch every patched sled of every traced object on or off. 0, or -1 if tracing is not active
 * here or a page could not be made writable. */
int sledtrace_patch(void);
int sledtrace_unpatch(void);

/* The same for the functions whose symbol name is `name`, in every traced object. The number of
 * functions switched (0: none has that name), or -1. */
int sledtrace_patch_function(const char *name);
int sledtrace_unpatch_function(const char *name);

/* Write everything the program's threads have recorded so far to the trace file before
 * returning (under the flight policy: the latest buffers, as the dump signal writes them), e.g.
 * before a risky step or at a phase boundary: a crash or SIGKILL after it loses nothing recorded
 * before it. Safe from any thread; not from a signal handler (it waits for the writer). 0, or -1
 * with errno set (ENODEV: this process is not tracing; an I/O error of the trace file). */
int sledtrace_flush(void);

#ifdef __cplusplus
}
#endif
#endif
