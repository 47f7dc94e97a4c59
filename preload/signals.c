/* Signals that end the process: the trace is completed before the program dies of one.
 *
 * At start-up the runtime installs its own handler (a proxy) for the five fault signals SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL and SIGABRT, and for every signal whose default action ends the process
 * (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGALRM, SIGQUIT, SIGUSR1/2, ... and SIGRTMIN..SIGRTMAX;
 * `ending` below), so that Ctrl-C, kill, `prog | head` and timers leave a complete trace. The
 * program never sees this: sigaction and signal are interposed for those signals and keep the
 * program's own disposition in `app`, which they report and update exactly as the kernel would;
 * other signals pass straight through. Before an exec the program's dispositions are put back
 * for real. An ending signal the program ignores is ignored for real, not through the proxy, so
 * that exec paths the runtime does not see (posix_spawn, system) inherit SIG_IGN too.
 *
 * The kernel must treat the proxy exactly as it would treat the program's handler: the proxy is
 * installed with the program's SA_NODEFER, SA_ONSTACK and SA_RESTART and its sa_mask (install),
 * again whenever the program changes its disposition. So the kernel blocks what the program
 * asked for, lets a fault nest inside a SA_NODEFER handler, picks the stack the program chose, and
 * a siglongjmp out of the handler leaves the mask the program expects. SA_RESETHAND is not passed
 * on (the proxy must stay installed): the proxy sets the handler in `app` back to SIG_DFL
 * (keeping its flags and mask, as the kernel does) and reinstalls itself with the default flags. While the program has no handler (default or ignored), the proxy runs
 * with SA_ONSTACK, so that a stack overflow still completes the trace on the program's alternate
 * stack if it has one.
 *
 * Under the flight policy the dump signal (SLEDTRACE_DUMP_SIGNAL) is hooked the same way; see
 * on_dump.
 *
 * When one of these signals arrives:
 *  - the program has a handler: it is called as the kernel would have called it (the kernel has
 *    applied its flags and mask, SA_RESETHAND is honoured, the one- or three-argument form), and
 *    nothing else happens, but a checkpoint of the trace when the handler returns from a SIGABRT
 *    the process raised itself: abort() then kills it without a second chance (see on_fatal).
 *    A program that recovers (a JIT's guard page) pays nothing; one that then dies by exit,
 *    _exit or the default action gets its trace completed on that path.
 *  - the disposition is the default, or ignored for a fault the kernel raised (which the kernel
 *    would not ignore either): the trace is completed (str_crash_flush, async-signal-safe), the
 *    real disposition is set to SIG_DFL, and the signal takes its course: a fault re-executes the
 *    faulting instruction on return and dies of it with the same si_code and core behaviour; any
 *    other (sent by kill, raise or abort, or by the kernel: SIGPIPE, SIGALRM, SIGSYS...) is
 *    raised again and is delivered when the handler returns. Either way the program dies as it
 *    would have without sledtrace: same signal, same core flag in its wait status.
 *  - ignored, and sent rather than raised by a fault: nothing happens, as without sledtrace.
 *
 * errno is preserved around everything. The `app` table is written by sigaction/signal calls and
 * read by the handler; a program that changes a disposition while the same signal is being
 * delivered on another thread has a race without sledtrace too.
 */
#include "str.h"
#include "stp.h"

#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define STR_EXPORT __attribute__((visibility("default")))

static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
enum { NFATAL = sizeof fatal / sizeof fatal[0] };
/* Signals whose default action ends the process (besides the five above, and besides the
 * real-time signals SIGRTMIN..SIGRTMAX, which are added at run time). */
static const int ending[] = {SIGHUP,    SIGINT,  SIGQUIT, SIGTRAP,   SIGUSR1, SIGUSR2,
                             SIGPIPE,   SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ,
                             SIGVTALRM, SIGPROF, SIGIO,   SIGPWR,    SIGSYS};
enum { NENDING = sizeof ending / sizeof ending[0] };

/* What the runtime does with a signal: nothing (0), complete the trace before a fault or an
 * abort kills (FATAL), complete it before a signal that ends the process by default kills
 * (ENDING: only while the program has not ignored it), or act on it (CONTROL: dump, toggle). */
enum { ROLE_FATAL = 1, ROLE_ENDING = 2, ROLE_CONTROL = 3 };
static struct sigaction app[NSIG];
static unsigned char role[NSIG];

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction;

static int real(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!real_sigaction)
        *(void **)&real_sigaction = dlsym(RTLD_NEXT, "sigaction");
    return real_sigaction(sig, act, old);
}

static void (*proxy[NSIG])(int, siginfo_t *, void *);

/* What glibc's sigaction adds on the way into the kernel, and the kernel then reports back to
 * any later sigaction(sig, NULL, &old): SA_RESTORER and glibc's own restorer. Read from the first
 * disposition the runtime installs; the program's dispositions are stored with them, so that it
 * reads back exactly what it would without sledtrace. */
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif
static int restorer_known;
static void (*restorer)(void);

static void as_kernel_reports(struct sigaction *a)
{
    if (restorer_known) {
        a->sa_flags |= SA_RESTORER;
        a->sa_restorer = restorer;
    }
}

static int has_handler(const struct sigaction *a)
{
    return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* Installs the proxy of a hooked signal with the kernel-side flags and mask of the program's
 * disposition (see the top of this file). Async-signal-safe (sigaction is). */
static int install(int sig)
{
    /* An ignored signal stays ignored for real: so it is across exec (posix_spawn, system and
     * raw execve too, which never pass through exits.c), and costs nothing when sent. */
    if (role[sig] == ROLE_ENDING && app[sig].sa_handler == SIG_IGN)
        return real(sig, &app[sig], NULL);
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = proxy[sig];
    if (has_handler(&app[sig])) {
        ours.sa_flags = SA_SIGINFO | (app[sig].sa_flags & (SA_NODEFER | SA_ONSTACK | SA_RESTART));
        ours.sa_mask = app[sig].sa_mask;
    } else {
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        sigemptyset(&ours.sa_mask);
    }
    if (real(sig, &ours, NULL) != 0)
        return -1;
    if (!restorer_known) {
        struct sigaction k;
        if (real(sig, NULL, &k) == 0 && (k.sa_flags & SA_RESTORER)) {
            restorer = k.sa_restorer;
            restorer_known = 1;
        }
    }
    return 0;
}

/* Runs the program's own handler for sig, in the one- or three-argument form; the kernel has
 * already applied its flags and mask (install). SA_RESETHAND is honoured here. Returns 0 if the
 * program has none (its disposition is SIG_DFL or SIG_IGN). errno is the interrupted code's
 * around it. */
static int call_program_handler(int sig, siginfo_t *si, void *uc, int saved)
{
    struct sigaction a = app[sig];
    if (!has_handler(&a))
        return 0;
    if (a.sa_flags & SA_RESETHAND) {
        app[sig].sa_handler = SIG_DFL; /* the kernel keeps the flags and the mask */
        install(sig);
    }
    errno = saved;
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, si, uc);
    else
        a.sa_handler(sig);
    return 1;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    if (sig == SIGSEGV && si && si->si_code == SEGV_ACCERR &&
        stp_fault_in_rewrite((uintptr_t)si->si_addr)) {
        /* A page of code the runtime is (or was just) rewriting, not executable meanwhile
         * (patcher/patch.c): the instruction runs again. */
        errno = saved;
        return;
    }
    if (call_program_handler(sig, si, uc, saved)) {
        /* abort(): when the program's SIGABRT handler returns, glibc sets SIGABRT to SIG_DFL
         * itself (not through sigaction: nothing here sees it) and raises it again, and the
         * process dies without coming back here. A program that raised SIGABRT at itself may
         * also just carry on. So write everything so far and keep tracing: either way the
         * trace is whole. */
        if (sig == SIGABRT && si && si->si_code == SI_TKILL && si->si_pid == getpid()) {
            saved = errno;
            str_checkpoint();
            errno = saved;
        }
        return;
    }
    /* Only the five fault signals come back by themselves when the faulting instruction runs
     * again; any other (SIGALRM and SIGPIPE come from the kernel with si_code > 0 too, SIGTRAP
     * and SIGSYS leave the instruction behind them) is raised again. */
    int raised_by_fault = role[sig] == ROLE_FATAL && si && si->si_code > 0;
    if (app[sig].sa_handler == SIG_IGN && !raised_by_fault) {
        errno = saved;
        return;
    }
    str_set_end(STR_END_SIGNAL, sig);
    str_crash_flush();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real(sig, &dfl, NULL);
    if (!raised_by_fault)
        raise(sig); /* pending until this handler returns, then the default action */
    errno = saved;
}

/* Flight policy: the dump signal asks the flush thread for a dump, then goes to the program's
 * handler if it has one. Its default action (for most signals, ending the process) is not taken:
 * under the flight policy that signal belongs to sledtrace. */
static void on_dump(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    str_request_dump();
    if (!call_program_handler(sig, si, uc, saved))
        errno = saved;
}

/* SLEDTRACE_TOGGLE_SIGNAL: asks the flush thread to switch every sled, then goes to the
 * program's handler if it has one (the signal's default action is not taken). */
static void on_toggle(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    str_request_toggle();
    if (!call_program_handler(sig, si, uc, saved))
        errno = saved;
}

static void hook(int sig, int r, void (*fn)(int, siginfo_t *, void *), const char *why)
{
    if (role[sig])
        return; /* taken already (the dump or toggle signal) */
    proxy[sig] = fn;
    if (real(sig, NULL, &app[sig]) == 0) {
        role[sig] = (unsigned char)r;
        if (install(sig) == 0)
            return;
        role[sig] = 0;
    }
    str_log(STR_WARN, "cannot watch signal %d (%s); %s", sig, strerror(errno), why);
}

void str_signals_install(void)
{
    if (str_cfg.policy == STR_FLIGHT)
        hook(str_cfg.dump_signal, ROLE_CONTROL, on_dump, "the flight recorder dumps only at exit");
    if (str_cfg.toggle_signal)
        hook(str_cfg.toggle_signal, ROLE_CONTROL, on_toggle,
             "tracing cannot be switched by signal");
    for (int i = 0; i < NFATAL; i++)
        hook(fatal[i], ROLE_FATAL, on_fatal, "a crash on it loses the trace's tail");
    for (int i = 0; i < NENDING; i++)
        hook(ending[i], ROLE_ENDING, on_fatal, "a kill by it loses the trace's tail");
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        hook(sig, ROLE_ENDING, on_fatal, "a kill by it loses the trace's tail");
}

void str_signals_before_exec(void)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (role[sig])
            real(sig, &app[sig], NULL);
}

STR_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (sig <= 0 || sig >= NSIG || !role[sig])
        return real(sig, act, old);
    struct sigaction prev = app[sig];
    if (act) {
        app[sig] = *act;
        as_kernel_reports(&app[sig]);
        install(sig);
    }
    if (old)
        *old = prev;
    return 0;
}

typedef __sighandler_t (*signal_fn)(int, __sighandler_t);

STR_EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
    if (sig <= 0 || sig >= NSIG || !role[sig]) {
        static signal_fn real_signal;
        if (!real_signal)
            *(void **)&real_signal = dlsym(RTLD_NEXT, "signal");
        return real_signal(sig, handler);
    }
    /* What glibc's signal() asks for: BSD semantics, the signal itself blocked in its handler. */
    __sighandler_t prev = app[sig].sa_handler;
    memset(&app[sig], 0, sizeof app[sig]);
    app[sig].sa_handler = handler;
    sigemptyset(&app[sig].sa_mask);
    sigaddset(&app[sig].sa_mask, sig);
    app[sig].sa_flags = SA_RESTART;
    as_kernel_reports(&app[sig]);
    install(sig);
    return prev;
}

/* ---- leaving a handler with longjmp ----------------------------------------------------------
 *
 * A signal handler that interrupted the tracer (the thread's `nest` is not 0 while it runs) may
 * leave with longjmp or siglongjmp instead of returning: the interrupted level's frame is then
 * gone, and `nest` would stay set for good, sending every later event of the thread to the side
 * ring, where it is lost. So the longjmp family is interposed: a jump to a frame older (higher
 * on the stack) than the outermost tracer level's (its stack pointer, noted on entry by hot.c)
 * leaves the tracer, and `nest` goes back to 0 (str.h: the outermost level's stack pointer is
 * kept in `nest` itself). That is safe at any instruction the jump can
 * have cut: outside the slow path (which runs with signals blocked, buffers.c) every step of
 * the hot path leaves the cursor consistent, a record becoming part of the chunk only when its
 * position is published. Side-ring entries already queued are drained by the next event.
 * A handler on an alternate stack placed above the thread's stack, jumping back to it, is not
 * recognised (the comparison needs the target below the alternate stack): documented.
 *
 * glibc keeps the saved stack pointer mangled with the thread's pointer guard (PTR_MANGLE:
 * xor with %fs:0x30, rotate left 17 bits); it is unmangled here to compare. */
enum { JB_RSP = 6 };

static uintptr_t unmangle(uintptr_t v)
{
    uintptr_t guard;
    __asm__("mov %%fs:0x30, %0" : "=r"(guard));
    v = (v >> 17) | (v << (64 - 17));
    return v ^ guard;
}

static void leave_tracer_for(const struct __jmp_buf_tag *env)
{
    struct str_cursor *c = &str_cursor, *a = &str_tls.fork_cursor;
    uint64_t nest = c->nest, fork_nest = a->nest;
    if (nest == 0 && fork_nest == 0)
        return;
    uintptr_t sp = unmangle((uintptr_t)env->__jmpbuf[JB_RSP]);
    if (nest != 0 && sp > (uintptr_t)(nest >> 8)) {
        atomic_signal_fence(memory_order_seq_cst);
        c->nest = nest & STR_NEST_STRICT; /* a strict thread stays strict */
    }
    /* A held fork child's second cursor has levels of its own (hot.c), left the same way. */
    if (fork_nest != 0 && sp > (uintptr_t)(fork_nest >> 8)) {
        atomic_signal_fence(memory_order_seq_cst);
        a->nest = 0;
    }
}

typedef void (*longjmp_fn)(struct __jmp_buf_tag *, int);
static longjmp_fn real_longjmp, real_siglongjmp, real__longjmp, real_longjmp_chk;

static longjmp_fn next_of(const char *name)
{
    longjmp_fn f;
    *(void **)&f = dlsym(RTLD_NEXT, name);
    return f;
}

void str_signals_early(void)
{
    real_longjmp = next_of("longjmp");
    real_siglongjmp = next_of("siglongjmp");
    real__longjmp = next_of("_longjmp");
    real_longjmp_chk = next_of("__longjmp_chk");
}

#define LONGJMP_WRAPPER(name, real, lookup)                                                        \
    STR_EXPORT __attribute__((noreturn)) void name(struct __jmp_buf_tag env[1], int val)           \
    {                                                                                              \
        leave_tracer_for(env);                                                                     \
        if (!real)                                                                                 \
            real = next_of(lookup);                                                                \
        real(env, val);                                                                            \
        __builtin_unreachable();                                                                   \
    }

LONGJMP_WRAPPER(longjmp, real_longjmp, "longjmp")
LONGJMP_WRAPPER(siglongjmp, real_siglongjmp, "siglongjmp")
LONGJMP_WRAPPER(_longjmp, real__longjmp, "_longjmp")
LONGJMP_WRAPPER(__longjmp_chk, real_longjmp_chk, "__longjmp_chk")
