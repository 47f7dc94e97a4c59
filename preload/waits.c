/* Waiting shown as waiting (issue 28.1): the common blocking calls of libc, interposed.
 *
 * A thread blocked in pthread_cond_wait is not running its caller's code, yet without this the
 * caller's self time holds every such wait (xz -T2's main thread: a third of the profile "in"
 * stream_encode_mt). The runtime exports the calls below; each one calls libc's definition (the
 * next one after the runtime's, dlsym(RTLD_NEXT)) between an entry and an
 * exit of the pseudo-function "[wait] NAME" (format/stf.h: STF_FID_WAIT_FIRST + enum stf_wait),
 * recorded like any function's events (hot.c) in the caller's frame. A program that never makes
 * these calls pays nothing; one that does pays two events per call (and two rdtscp).
 * libc's definitions are resolved by the flush thread when it starts (str_waits_resolve: 55
 * dlsym, 20-70 us, which every process would pay at start-up), or by a wrapper called before.
 * LIMIT: that early call runs dlsym, which is not async-signal-safe: a signal handler whose
 * write comes before the flush thread's start and interrupts its thread inside dlopen could see
 * the loader's lists half updated.
 *
 * Recorded or not (str_wait_begin): a call is recorded only when SLEDTRACE_WAITS selects it,
 * tracing is on (the process traces, and the sleds are switched on: sledtrace_unpatch and the
 * toggle signal switch waits off with them), the thread is outside the tracer (nest 0: not the
 * slow path, whose pauses and locks are the tracer's, nor a handler nested in it), alive, and
 * already recording (it has buffers: it has run instrumented code; a thread that never does,
 * such as a library's own worker or an uninstrumented main joining its threads, is not given
 * buffers for its waits alone: they would be in no frame of the program's), and
 * the caller is not the runtime itself (its return address is outside the runtime's code: the
 * flush thread's writes, the registry lock, the final flush, pthread_join of the flush thread
 * all come through these same symbols, since the runtime's calls to them bind to its own
 * exports). Tail calls to these functions from the runtime would carry the caller's return
 * address: the library is built without tail calls, and tests/no_tailcalls.sh checks it.
 *
 * Only blocking counts, where that is cheap to know: a mutex or rwlock is tried first
 * (pthread_mutex_trylock) and recorded only when it is held elsewhere; a semaphore likewise
 * (sem_trywait); poll, ppoll, select, pselect and epoll with a zero timeout never block and are
 * not recorded. Reads, writes, sends, receives and connects are recorded whatever the
 * descriptor: their time is spent in the kernel, blocked or copying, never in the caller's code.
 * Calls libc makes internally (stdio's writes, sleep's nanosleep, system's waitpid) do not come
 * here: the outer call is recorded once. Programs built with _FORTIFY_SOURCE call __read_chk,
 * __recv_chk, __recvfrom_chk, __poll_chk and __ppoll_chk: interposed too, under the same names.
 *
 * The host's behaviour is unchanged: each call is libc's, with its arguments, result, errno
 * (hot.c never writes errno; its slow path restores it), cancellation (the libc call is the
 * cancellation point, as without the runtime; the exit is recorded by a cancellation cleanup,
 * so a thread cancelled in a wait closes it as it unwinds: STR_WAITING in str.h) and EINTR
 * (a handler that interrupts the wait runs inside the pseudo-call, then the call returns as it
 * would). pthread_cond_wait and pthread_cond_timedwait are resolved at their current version
 * (GLIBC_2.3.2): dlsym would give the 2.2.5 compatibility ones.
 *
 * Moved: the entry and the exit read the CPU (rdtscp); where it is not the one the trace last
 * gave for the thread (the cursor's cpu), a NewCPUId record goes just before the record (hot.c
 * str_event_cpu). So a reader knows the CPU at both ends of every wait: a wait that ended on
 * another CPU than it began on was descheduled, and the tools mark it ([migrated]). Threads: every function runs in the calling thread; the state
 * below is written once at start-up (before any event: str_waits_early) or by the sled switch
 * (str_waits_switch), read with relaxed loads (a hint: a switch takes effect at the next call).
 */
#include "str.h"
#include "stf.h"
#include "stp.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fnmatch.h>
#include <link.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STR_EXPORT __attribute__((visibility("default")))

/* The extra definitions the wrappers need, after the waits' own (whose names libc defines
 * them under are their pseudo-functions' names without "[wait] ", stf.h). */
enum extra {
    X_MUTEX_TRYLOCK,
    X_RWLOCK_TRYRDLOCK,
    X_RWLOCK_TRYWRLOCK,
    X_SEM_TRYWAIT,
    X_READ_CHK,
    X_RECV_CHK,
    X_RECVFROM_CHK,
    X_POLL_CHK,
    X_PPOLL_CHK,
    X_N
};
static const char *const extra_name[X_N] = {
    "pthread_mutex_trylock",
    "pthread_rwlock_tryrdlock",
    "pthread_rwlock_trywrlock",
    "sem_trywait",
    "__read_chk",
    "__recv_chk",
    "__recvfrom_chk",
    "__poll_chk",
    "__ppoll_chk",
};

typedef void (*any_fn)(void);
/* libc's definitions (see the top); relaxed: two threads resolving one at once store the
 * same. */
static _Atomic(any_fn) real[STF_WAIT_N + X_N]; /* the waits', then the extras (enum extra) */
static uint64_t selected; /* bit k: enum stf_wait k is recorded (SLEDTRACE_WAITS) */
static _Atomic int switched_on = 1;
static uintptr_t own_lo, own_len; /* the runtime's code */

static any_fn resolve(const char *name)
{
    void *p;
    if (strcmp(name, "pthread_cond_wait") == 0 || strcmp(name, "pthread_cond_timedwait") == 0)
        p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
    else
        p = dlsym(RTLD_NEXT, name);
    any_fn f;
    memcpy(&f, &p, sizeof f);
    return f;
}

/* libc's definition k (a wait's, or STF_WAIT_N + an extra's), resolved at its first call. The
 * futex is syscall(), which threads.c calls itself. */
static any_fn get(unsigned k)
{
    any_fn f = atomic_load_explicit(&real[k], memory_order_relaxed);
    if (__builtin_expect(f == NULL, 0)) {
        f = resolve(k < STF_WAIT_N ? stf_wait_name(STF_FID_WAIT_FIRST + k) + 7
                                   : extra_name[k - STF_WAIT_N]);
        atomic_store_explicit(&real[k], f, memory_order_relaxed);
    }
    return f;
}

/* The runtime's executable segment(s), from its own program headers. */
static void own_range(void)
{
    Dl_info info;
    if (!dladdr(&own_len, &info) || !info.dli_fbase)
        return;
    const ElfW(Ehdr) *eh = info.dli_fbase;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uintptr_t base = (uintptr_t)eh, lo = UINTPTR_MAX, hi = 0;
    /* The first PT_LOAD maps the ELF header: its vaddr is the offset of base. */
    uintptr_t bias = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) {
            bias = base - (ph[i].p_vaddr & ~(uintptr_t)(ph[i].p_align ? ph[i].p_align - 1 : 0));
            break;
        }
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
            continue;
        uintptr_t a = bias + ph[i].p_vaddr, b = a + ph[i].p_memsz;
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    if (hi > lo) {
        own_lo = lo;
        own_len = hi - lo;
    }
}

/* SLEDTRACE_WAITS: unset, "all" or "1": every wait; "none" or "0": none; else a comma-separated
 * list of names (as in "[wait] NAME", globs allowed: "pthread_*,read"). */
static void select_waits(void)
{
    const char *v = str_cfg.waits;
    if (!v || strcmp(v, "all") == 0 || strcmp(v, "1") == 0) {
        selected = ~(uint64_t)0;
        return;
    }
    selected = 0;
    if (strcmp(v, "none") == 0 || strcmp(v, "0") == 0)
        return;
    unsigned matched = 0;
    for (const char *p = v; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char pat[64];
        if (len > 0 && len < sizeof pat) {
            memcpy(pat, p, len);
            pat[len] = 0;
            unsigned before = matched;
            for (unsigned k = 0; k < STF_WAIT_N; k++)
                if (fnmatch(pat, stf_wait_name(STF_FID_WAIT_FIRST + k) + 7, 0) == 0) {
                    selected |= (uint64_t)1 << k;
                    matched++;
                }
            if (matched == before)
                str_log(STR_WARN, "SLEDTRACE_WAITS: '%s' names no waiting call sledtrace records",
                        pat);
        }
        p += len + (e != NULL);
    }
}

void str_waits_early(void)
{
    own_range();
    select_waits();
}

void str_waits_resolve(void)
{
    for (unsigned k = 0; k < STF_WAIT_N + X_N; k++)
        if (k != STF_WAIT_FUTEX)
            (void)get(k);
}

void str_waits_switch(int on)
{
    atomic_store_explicit(&switched_on, on, memory_order_relaxed);
}

/* Whether a call of wait `which` returning to ret_addr is to be recorded (see the top). */
static inline int wanted(unsigned which, const void *ret_addr)
{
    return ((selected >> which) & 1) && (uintptr_t)ret_addr - own_lo >= own_len &&
           str_cursor.nest == 0 && str_tls.th && !str_tls.dead && str_tracing() &&
           atomic_load_explicit(&switched_on, memory_order_relaxed);
}

int str_wait_begin(struct str_wait *w, unsigned which, const void *ret_addr)
{
    w->id = 0;
    if (!wanted(which, ret_addr))
        return 0;
    unsigned aux;
    __builtin_ia32_rdtscp(&aux);
    w->id = STF_FID_WAIT_FIRST + which;
    if ((aux & 0xfff) != str_cursor.cpu)
        str_event_cpu(w->id, STF_ENTER, (uint16_t)(aux & 0xfff));
    else
        stp_event(w->id, STF_ENTER);
    return 1;
}

void str_wait_cleanup(void *w)
{
    str_wait_end(w);
}

void str_wait_end(struct str_wait *w)
{
    if (!w->id)
        return;
    unsigned aux;
    __builtin_ia32_rdtscp(&aux);
    if ((aux & 0xfff) != str_cursor.cpu)
        str_event_cpu(w->id, STF_EXIT, (uint16_t)(aux & 0xfff));
    else if (atomic_load_explicit(&str_min_ticks, memory_order_relaxed))
        stp_event_min(w->id, STF_EXIT);
    else
        stp_event(w->id, STF_EXIT);
    w->id = 0;
}

/* libc's definition of wait k (of extra k), typed as the function `name` this file defines. */
#define REAL(k, name) ((__typeof__(name) *)get(k))
#define REAL_X(k, name) ((__typeof__(name) *)get(STF_WAIT_N + (k)))

/* No definition in libc (older than the program expects): fails as a missing system call would,
 * errno ENOSYS (-1), or ENOSYS returned (the pthread_ functions). */
#define NEED(f)                                                                                    \
    do {                                                                                           \
        if (__builtin_expect(!(f), 0)) {                                                           \
            errno = ENOSYS;                                                                        \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
#define NEED_RC(f)                                                                                 \
    do {                                                                                           \
        if (__builtin_expect(!(f), 0))                                                             \
            return ENOSYS;                                                                         \
    } while (0)

/* ---- threads ---- */

STR_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    __typeof__(pthread_cond_wait) *f = REAL(STF_WAIT_COND_WAIT, pthread_cond_wait);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_COND_WAIT, f(c, m));
}

STR_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                      const struct timespec *t)
{
    __typeof__(pthread_cond_timedwait) *f = REAL(STF_WAIT_COND_TIMEDWAIT, pthread_cond_timedwait);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_COND_TIMEDWAIT, f(c, m, t));
}

STR_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                      const struct timespec *t)
{
    __typeof__(pthread_cond_clockwait) *f = REAL(STF_WAIT_COND_CLOCKWAIT, pthread_cond_clockwait);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_COND_CLOCKWAIT, f(c, m, clk, t));
}

/* Locks and semaphores are tried first: only one held elsewhere is a wait. `try` is the try's
 * result, EBUSY when it is held; any other is the call's own (0, EOWNERDEAD, EAGAIN, EINVAL...;
 * EDEADLK is the lock's own after EBUSY). */
#define TRIED_FIRST(which, call, try)                                                              \
    do {                                                                                           \
        if (!wanted((which), __builtin_return_address(0)))                                         \
            return (call);                                                                         \
        int rc_ = (try);                                                                           \
        if (rc_ != EBUSY)                                                                          \
            return rc_;                                                                            \
        STR_WAITING((which), (call));                                                              \
    } while (0)

static int try_mutex(pthread_mutex_t *m)
{
    __typeof__(pthread_mutex_trylock) *t = REAL_X(X_MUTEX_TRYLOCK, pthread_mutex_trylock);
    return t ? t(m) : EBUSY;
}

static int try_rdlock(pthread_rwlock_t *l)
{
    __typeof__(pthread_rwlock_tryrdlock) *t = REAL_X(X_RWLOCK_TRYRDLOCK, pthread_rwlock_tryrdlock);
    return t ? t(l) : EBUSY;
}

static int try_wrlock(pthread_rwlock_t *l)
{
    __typeof__(pthread_rwlock_trywrlock) *t = REAL_X(X_RWLOCK_TRYWRLOCK, pthread_rwlock_trywrlock);
    return t ? t(l) : EBUSY;
}

/* sem_trywait: 0 when it took one, else EBUSY (errno as it was: sem_trywait sets EAGAIN). */
static int try_sem(sem_t *s)
{
    __typeof__(sem_trywait) *t = REAL_X(X_SEM_TRYWAIT, sem_trywait);
    int saved = errno;
    if (t && t(s) == 0)
        return 0;
    errno = saved;
    return EBUSY;
}

STR_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    __typeof__(pthread_mutex_lock) *f = REAL(STF_WAIT_MUTEX_LOCK, pthread_mutex_lock);
    NEED_RC(f);
    TRIED_FIRST(STF_WAIT_MUTEX_LOCK, f(m), try_mutex(m));
}

STR_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *ts)
{
    __typeof__(pthread_mutex_timedlock) *f =
        REAL(STF_WAIT_MUTEX_TIMEDLOCK, pthread_mutex_timedlock);
    NEED_RC(f);
    TRIED_FIRST(STF_WAIT_MUTEX_TIMEDLOCK, f(m, ts), try_mutex(m));
}

STR_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    __typeof__(pthread_rwlock_rdlock) *f = REAL(STF_WAIT_RWLOCK_RDLOCK, pthread_rwlock_rdlock);
    NEED_RC(f);
    TRIED_FIRST(STF_WAIT_RWLOCK_RDLOCK, f(l), try_rdlock(l));
}

STR_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    __typeof__(pthread_rwlock_wrlock) *f = REAL(STF_WAIT_RWLOCK_WRLOCK, pthread_rwlock_wrlock);
    NEED_RC(f);
    TRIED_FIRST(STF_WAIT_RWLOCK_WRLOCK, f(l), try_wrlock(l));
}

STR_EXPORT int sem_wait(sem_t *s)
{
    __typeof__(sem_wait) *f = REAL(STF_WAIT_SEM_WAIT, sem_wait);
    NEED(f);
    TRIED_FIRST(STF_WAIT_SEM_WAIT, f(s), try_sem(s));
}

STR_EXPORT int sem_timedwait(sem_t *s, const struct timespec *ts)
{
    __typeof__(sem_timedwait) *f = REAL(STF_WAIT_SEM_TIMEDWAIT, sem_timedwait);
    NEED(f);
    TRIED_FIRST(STF_WAIT_SEM_TIMEDWAIT, f(s, ts), try_sem(s));
}

STR_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *ts)
{
    __typeof__(sem_clockwait) *f = REAL(STF_WAIT_SEM_CLOCKWAIT, sem_clockwait);
    NEED(f);
    TRIED_FIRST(STF_WAIT_SEM_CLOCKWAIT, f(s, clk, ts), try_sem(s));
}

STR_EXPORT int pthread_join(pthread_t t, void **ret)
{
    __typeof__(pthread_join) *f = REAL(STF_WAIT_JOIN, pthread_join);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_JOIN, f(t, ret));
}

STR_EXPORT int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *ts)
{
    __typeof__(pthread_timedjoin_np) *f = REAL(STF_WAIT_TIMEDJOIN, pthread_timedjoin_np);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_TIMEDJOIN, f(t, ret, ts));
}

STR_EXPORT int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clk,
                                    const struct timespec *ts)
{
    __typeof__(pthread_clockjoin_np) *f = REAL(STF_WAIT_CLOCKJOIN, pthread_clockjoin_np);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_CLOCKJOIN, f(t, ret, clk, ts));
}

STR_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    __typeof__(pthread_barrier_wait) *f = REAL(STF_WAIT_BARRIER, pthread_barrier_wait);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_BARRIER, f(b));
}

/* syscall(SYS_futex, ...) is threads.c's (it interposes syscall for seccomp): it asks this. */
int str_wait_futex_op(long op)
{
    switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
    case FUTEX_LOCK_PI:
    case FUTEX_WAIT_REQUEUE_PI:
#ifdef FUTEX_LOCK_PI2
    case FUTEX_LOCK_PI2:
#endif
        return 1;
    default:
        return 0;
    }
}

/* ---- descriptors ---- */

STR_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    __typeof__(poll) *f = REAL(STF_WAIT_POLL, poll);
    NEED(f);
    if (timeout == 0)
        return f(fds, n, timeout);
    STR_WAITING(STF_WAIT_POLL, f(fds, n, timeout));
}

STR_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
    int (*f)(struct pollfd *, nfds_t, int, size_t) = (__typeof__(f))get(STF_WAIT_N + X_POLL_CHK);
    NEED(f);
    if (timeout == 0)
        return f(fds, n, timeout, len);
    STR_WAITING(STF_WAIT_POLL, f(fds, n, timeout, len));
}

static int zero_time(const struct timespec *t)
{
    return t && t->tv_sec == 0 && t->tv_nsec == 0;
}

STR_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *m)
{
    __typeof__(ppoll) *f = REAL(STF_WAIT_PPOLL, ppoll);
    NEED(f);
    if (zero_time(t))
        return f(fds, n, t, m);
    STR_WAITING(STF_WAIT_PPOLL, f(fds, n, t, m));
}

STR_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t,
                           const sigset_t *m, size_t len)
{
    int (*f)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t) =
        (__typeof__(f))get(STF_WAIT_N + X_PPOLL_CHK);
    NEED(f);
    if (zero_time(t))
        return f(fds, n, t, m, len);
    STR_WAITING(STF_WAIT_PPOLL, f(fds, n, t, m, len));
}

STR_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
    __typeof__(select) *f = REAL(STF_WAIT_SELECT, select);
    NEED(f);
    if (t && t->tv_sec == 0 && t->tv_usec == 0)
        return f(n, r, w, e, t);
    STR_WAITING(STF_WAIT_SELECT, f(n, r, w, e, t));
}

STR_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
                       const sigset_t *m)
{
    __typeof__(pselect) *f = REAL(STF_WAIT_PSELECT, pselect);
    NEED(f);
    if (zero_time(t))
        return f(n, r, w, e, t, m);
    STR_WAITING(STF_WAIT_PSELECT, f(n, r, w, e, t, m));
}

STR_EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
    __typeof__(epoll_wait) *f = REAL(STF_WAIT_EPOLL_WAIT, epoll_wait);
    NEED(f);
    if (timeout == 0)
        return f(ep, ev, max, timeout);
    STR_WAITING(STF_WAIT_EPOLL_WAIT, f(ep, ev, max, timeout));
}

STR_EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *m)
{
    __typeof__(epoll_pwait) *f = REAL(STF_WAIT_EPOLL_PWAIT, epoll_pwait);
    NEED(f);
    if (timeout == 0)
        return f(ep, ev, max, timeout, m);
    STR_WAITING(STF_WAIT_EPOLL_PWAIT, f(ep, ev, max, timeout, m));
}

STR_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    __typeof__(read) *f = REAL(STF_WAIT_READ, read);
    NEED(f);
    STR_WAITING(STF_WAIT_READ, f(fd, buf, n));
}

STR_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t len)
{
    ssize_t (*f)(int, void *, size_t, size_t) = (__typeof__(f))get(STF_WAIT_N + X_READ_CHK);
    NEED(f);
    STR_WAITING(STF_WAIT_READ, f(fd, buf, n, len));
}

STR_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    __typeof__(write) *f = REAL(STF_WAIT_WRITE, write);
    NEED(f);
    STR_WAITING(STF_WAIT_WRITE, f(fd, buf, n));
}

STR_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
    __typeof__(readv) *f = REAL(STF_WAIT_READV, readv);
    NEED(f);
    STR_WAITING(STF_WAIT_READV, f(fd, iov, n));
}

STR_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
    __typeof__(writev) *f = REAL(STF_WAIT_WRITEV, writev);
    NEED(f);
    STR_WAITING(STF_WAIT_WRITEV, f(fd, iov, n));
}

STR_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    __typeof__(recv) *f = REAL(STF_WAIT_RECV, recv);
    NEED(f);
    STR_WAITING(STF_WAIT_RECV, f(fd, buf, n, flags));
}

STR_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t len, int flags)
{
    ssize_t (*f)(int, void *, size_t, size_t, int) = (__typeof__(f))get(STF_WAIT_N + X_RECV_CHK);
    NEED(f);
    STR_WAITING(STF_WAIT_RECV, f(fd, buf, n, len, flags));
}

STR_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, __SOCKADDR_ARG a,
                            socklen_t *alen)
{
    __typeof__(recvfrom) *f = REAL(STF_WAIT_RECVFROM, recvfrom);
    NEED(f);
    STR_WAITING(STF_WAIT_RECVFROM, f(fd, buf, n, flags, a, alen));
}

STR_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t len, int flags,
                                  struct sockaddr *a, socklen_t *alen)
{
    ssize_t (*f)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *) =
        (__typeof__(f))get(STF_WAIT_N + X_RECVFROM_CHK);
    NEED(f);
    STR_WAITING(STF_WAIT_RECVFROM, f(fd, buf, n, len, flags, a, alen));
}

STR_EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
    __typeof__(recvmsg) *f = REAL(STF_WAIT_RECVMSG, recvmsg);
    NEED(f);
    STR_WAITING(STF_WAIT_RECVMSG, f(fd, m, flags));
}

STR_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    __typeof__(send) *f = REAL(STF_WAIT_SEND, send);
    NEED(f);
    STR_WAITING(STF_WAIT_SEND, f(fd, buf, n, flags));
}

STR_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG a,
                          socklen_t alen)
{
    __typeof__(sendto) *f = REAL(STF_WAIT_SENDTO, sendto);
    NEED(f);
    STR_WAITING(STF_WAIT_SENDTO, f(fd, buf, n, flags, a, alen));
}

STR_EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    __typeof__(sendmsg) *f = REAL(STF_WAIT_SENDMSG, sendmsg);
    NEED(f);
    STR_WAITING(STF_WAIT_SENDMSG, f(fd, m, flags));
}

STR_EXPORT int accept(int fd, __SOCKADDR_ARG a, socklen_t *alen)
{
    __typeof__(accept) *f = REAL(STF_WAIT_ACCEPT, accept);
    NEED(f);
    STR_WAITING(STF_WAIT_ACCEPT, f(fd, a, alen));
}

STR_EXPORT int accept4(int fd, __SOCKADDR_ARG a, socklen_t *alen, int flags)
{
    __typeof__(accept4) *f = REAL(STF_WAIT_ACCEPT4, accept4);
    NEED(f);
    STR_WAITING(STF_WAIT_ACCEPT4, f(fd, a, alen, flags));
}

STR_EXPORT int connect(int fd, __CONST_SOCKADDR_ARG a, socklen_t alen)
{
    __typeof__(connect) *f = REAL(STF_WAIT_CONNECT, connect);
    NEED(f);
    STR_WAITING(STF_WAIT_CONNECT, f(fd, a, alen));
}

/* ---- time ---- */

STR_EXPORT int nanosleep(const struct timespec *t, struct timespec *rem)
{
    __typeof__(nanosleep) *f = REAL(STF_WAIT_NANOSLEEP, nanosleep);
    NEED(f);
    STR_WAITING(STF_WAIT_NANOSLEEP, f(t, rem));
}

STR_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *t,
                               struct timespec *rem)
{
    __typeof__(clock_nanosleep) *f = REAL(STF_WAIT_CLOCK_NANOSLEEP, clock_nanosleep);
    if (!f)
        return ENOSYS; /* it returns its error */
    STR_WAITING(STF_WAIT_CLOCK_NANOSLEEP, f(clk, flags, t, rem));
}

STR_EXPORT unsigned int sleep(unsigned int s)
{
    __typeof__(sleep) *f = REAL(STF_WAIT_SLEEP, sleep);
    if (!f)
        return s;
    STR_WAITING(STF_WAIT_SLEEP, f(s));
}

STR_EXPORT int usleep(useconds_t us)
{
    __typeof__(usleep) *f = REAL(STF_WAIT_USLEEP, usleep);
    NEED(f);
    STR_WAITING(STF_WAIT_USLEEP, f(us));
}

/* ---- children and signals ---- */

STR_EXPORT pid_t wait(int *status)
{
    __typeof__(wait) *f = REAL(STF_WAIT_WAIT, wait);
    NEED(f);
    STR_WAITING(STF_WAIT_WAIT, f(status));
}

STR_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
    __typeof__(waitpid) *f = REAL(STF_WAIT_WAITPID, waitpid);
    NEED(f);
    if (options & WNOHANG)
        return f(pid, status, options);
    STR_WAITING(STF_WAIT_WAITPID, f(pid, status, options));
}

STR_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
    __typeof__(wait4) *f = REAL(STF_WAIT_WAIT4, wait4);
    NEED(f);
    if (options & WNOHANG)
        return f(pid, status, options, ru);
    STR_WAITING(STF_WAIT_WAIT4, f(pid, status, options, ru));
}

STR_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
    __typeof__(waitid) *f = REAL(STF_WAIT_WAITID, waitid);
    NEED(f);
    if (options & WNOHANG)
        return f(type, id, info, options);
    STR_WAITING(STF_WAIT_WAITID, f(type, id, info, options));
}

STR_EXPORT int pause(void)
{
    __typeof__(pause) *f = REAL(STF_WAIT_PAUSE, pause);
    NEED(f);
    STR_WAITING(STF_WAIT_PAUSE, f());
}

STR_EXPORT int sigsuspend(const sigset_t *m)
{
    __typeof__(sigsuspend) *f = REAL(STF_WAIT_SIGSUSPEND, sigsuspend);
    NEED(f);
    STR_WAITING(STF_WAIT_SIGSUSPEND, f(m));
}

STR_EXPORT int sigwait(const sigset_t *m, int *sig)
{
    __typeof__(sigwait) *f = REAL(STF_WAIT_SIGWAIT, sigwait);
    NEED_RC(f);
    STR_WAITING(STF_WAIT_SIGWAIT, f(m, sig));
}

STR_EXPORT int sigwaitinfo(const sigset_t *m, siginfo_t *info)
{
    __typeof__(sigwaitinfo) *f = REAL(STF_WAIT_SIGWAITINFO, sigwaitinfo);
    NEED(f);
    STR_WAITING(STF_WAIT_SIGWAITINFO, f(m, info));
}

STR_EXPORT int sigtimedwait(const sigset_t *m, siginfo_t *info, const struct timespec *t)
{
    __typeof__(sigtimedwait) *f = REAL(STF_WAIT_SIGTIMEDWAIT, sigtimedwait);
    NEED(f);
    if (zero_time(t))
        return f(m, info, t);
    STR_WAITING(STF_WAIT_SIGTIMEDWAIT, f(m, info, t));
}
