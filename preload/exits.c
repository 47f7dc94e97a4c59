/* Exit paths that bypass destructors: _exit, _Exit and the exec family.
 *
 * The library interposes these symbols (preload/DESIGN.md lists everything it exports): each
 * completes the trace, as the destructor would at exit, and then does exactly what the program
 * asked for. quick_exit is covered by an at_quick_exit handler (runtime.c); it is interposed only
 * to note the exit status for the sidecar.
 *
 * exec: everything recorded so far is written before the new image replaces the process. If the
 * exec fails, the program carries on untraced (one info message): the trace file has been
 * finalised and is not reopened. A new image that keeps LD_PRELOAD starts its own trace.
 *
 * vfork: a vfork child shares its parent's memory until it execs or calls _exit, so it must not
 * touch the tracing state; str_buffers_finish recognises it (its pid differs from the traced
 * process's) and does nothing. posix_spawn execs through glibc's internal entry point and never
 * reaches these wrappers.
 *
 * errno: the wrappers preserve the caller's errno up to the real call, and the real call's errno
 * after it.
 */
#include "str.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STR_EXPORT __attribute__((visibility("default")))

static void finish_before(const char *what)
{
    int saved = errno;
    if (strncmp(what, "exec", 4) == 0 || strcmp(what, "fexecve") == 0)
        str_set_end(STR_END_EXEC, 0);
    str_buffers_finish();
    if (strncmp(what, "exec", 4) == 0 || strcmp(what, "fexecve") == 0)
        str_signals_before_exec();
    str_log(STR_DEBUG, "trace completed before %s", what);
    errno = saved;
}

static _Noreturn void exit_now(int status)
{
    for (;;) {
        syscall(SYS_exit_group, status);
        syscall(SYS_exit, status);
    }
}

STR_EXPORT void _exit(int status)
{
    str_set_end(STR_END_STATUS, status & 0xff);
    finish_before("_exit");
    exit_now(status);
}

STR_EXPORT void _Exit(int status)
{
    str_set_end(STR_END_STATUS, status & 0xff);
    finish_before("_Exit");
    exit_now(status);
}

/* quick_exit runs no on_exit handler: the status is noted here (for the sidecar). */
STR_EXPORT _Noreturn void quick_exit(int status)
{
    static void (*real)(int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "quick_exit");
    str_set_end(STR_END_STATUS, status & 0xff);
    real(status);
    exit_now(status); /* not reached */
}

/* The next definition of `name` (libc's), looked up once per call site. */
#define REAL(type, name)                                                                           \
    static type real_##name;                                                                       \
    if (!real_##name)                                                                              \
        *(void **)&real_##name = dlsym(RTLD_NEXT, #name);

static int failed_exec(const char *name)
{
    int saved = errno;
    str_log(STR_INFO, "%s failed (%s); the trace was already completed, tracing stops", name,
            strerror(saved));
    errno = saved;
    return -1;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

STR_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    REAL(execve_fn, execve);
    finish_before("execve");
    real_execve(path, argv, envp);
    return failed_exec("execve");
}

STR_EXPORT int execv(const char *path, char *const argv[])
{
    REAL(execv_fn, execv);
    finish_before("execv");
    real_execv(path, argv);
    return failed_exec("execv");
}

STR_EXPORT int execvp(const char *file, char *const argv[])
{
    REAL(execv_fn, execvp);
    finish_before("execvp");
    real_execvp(file, argv);
    return failed_exec("execvp");
}

STR_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    REAL(execve_fn, execvpe);
    finish_before("execvpe");
    real_execvpe(file, argv, envp);
    return failed_exec("execvpe");
}

STR_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    REAL(fexecve_fn, fexecve);
    finish_before("fexecve");
    real_fexecve(fd, argv, envp);
    return failed_exec("fexecve");
}

/* execl, execlp, execle: collect the variable arguments into an argv on the stack (and, for
 * execle, the environment after the terminating NULL), then go through the vector forms. */
static size_t count_args(va_list ap)
{
    size_t n = 1;
    while (va_arg(ap, char *))
        n++;
    return n;
}

/* glibc declares `arg` non-null: argv[0] is always there. */
#define COLLECT(argv, arg0)                                                                        \
    va_list ap;                                                                                    \
    va_start(ap, arg0);                                                                            \
    size_t n_ = count_args(ap);                                                                    \
    va_end(ap);                                                                                    \
    char *argv[n_ + 1];                                                                            \
    argv[0] = (char *)(arg0);                                                                      \
    va_start(ap, arg0);                                                                            \
    for (size_t i_ = 1; i_ <= n_; i_++)                                                            \
        argv[i_] = va_arg(ap, char *);

STR_EXPORT int execl(const char *path, const char *arg, ...)
{
    COLLECT(argv, arg);
    va_end(ap);
    return execv(path, argv);
}

STR_EXPORT int execlp(const char *file, const char *arg, ...)
{
    COLLECT(argv, arg);
    va_end(ap);
    return execvp(file, argv);
}

STR_EXPORT int execle(const char *path, const char *arg, ...)
{
    COLLECT(argv, arg);
    char **envp = va_arg(ap, char **);
    va_end(ap);
    return execve(path, argv, envp);
}
