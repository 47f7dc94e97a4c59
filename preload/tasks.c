/* The program's new tasks come before the runtime's flush thread: fork.
 *
 * Why. The flush thread is a task: it counts against RLIMIT_NPROC and the pids cgroup like any
 * of the program's threads and processes. Where those limits are tight from the start, the
 * runtime does without it (limits.c, str_tasks_tight; flusher.c "solo": the thread that fills a
 * chunk writes it). A program can still reach a limit the runtime did not foresee (it lowers
 * its own RLIMIT_NPROC after start-up, or other processes fill its cgroup): its fork or
 * pthread_create then fails with EAGAIN where, without the flush thread, it might have worked.
 *
 * How. fork is interposed (pthread_create is, in threads.c): when the real call fails with
 * EAGAIN or ENOMEM, str_reclaim (buffers.c) stops the flush thread for good, waits until the
 * kernel has released its task (the process goes solo, nothing is lost), and the call is made
 * once more. A fork child of a solo process is solo too; any other fork child reads the limits
 * again at its first event (forks.c, str_fork_activate). Not interposed: _Fork, vfork, clone,
 * posix_spawn and system (their failure is the program's to see, as before); they are made
 * from a process whose flush thread is already gone in the cases above.
 */
#include "str.h"

#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#define STR_EXPORT __attribute__((visibility("default")))

typedef pid_t (*fork_fn)(void);
static fork_fn real_fork;

/* Resolved at start-up (census.c): fork may be called from a signal handler, where dlsym must
 * not run. */
void str_tasks_early(void)
{
    *(void **)&real_fork = dlsym(RTLD_NEXT, "fork");
}

STR_EXPORT pid_t fork(void)
{
    if (!real_fork)
        str_tasks_early();
    pid_t r = real_fork();
    if (r < 0 && (errno == EAGAIN || errno == ENOMEM)) {
        int err = errno;
        if (str_reclaim())
            return real_fork();
        errno = err;
    }
    return r;
}
