/* Programs that are ordinary but hard on a tracer (issue 9): the host must behave exactly as
 * untraced. One mode per argv[1]; each prints its exact counts (progs.h) and what it observed.
 * main and the helpers marked xray_never_instrument are never traced.
 *
 *   fork-busy     three threads call fib(8) in a throttled loop while main forks FORKS
 *                 children, one after another; each child calls fib(12) and leaves with
 *                 _exit(0). A child that does not end within 3 s is killed, counted as hung
 *                 ("hung N"), and ends the loop. The parent's counts are exact (each thread
 *                 counts its own loop). Every loop is capped, so a broken runtime cannot fill
 *                 the disk with a lossless trace while the program waits for a hung child.
 *   threads-exit  (run it under SLEDTRACE_POLICY=flight) ROUNDS rounds of 4 threads that call
 *                 fib(12) and are joined, then main returns: the final flush must not touch the
 *                 exited threads' thread-local storage.
 *   cancel        CANCEL_ROUNDS rounds: a thread makes CANCEL_LOOPS calls of fib(8) (no
 *                 cancellation point of its own), then calls pthread_testcancel(); main cancels
 *                 it (deferred) while it runs. Untraced, the cancellation always acts at
 *                 pthread_testcancel, after every call: "early 0". Run with tiny buffers, so
 *                 the thread often waits inside the tracer for the flush thread.
 *   sigprof       a sampling profiler: a timer sends SIGPROF every 50 us (CLOCK_MONOTONIC,
 *                 not ITIMER_PROF, whose ticks are too coarse here), and its handler calls
 *                 backtrace() wherever it lands (the tracer included) while main makes
 *                 PROF_LOOPS calls of fib(10); prints the samples taken on stderr.
 *   cancel-async  ASYNC_ROUNDS threads, each cancelled asynchronously while it calls fib(10)
 *                 in a loop: the process carries on and its trace stays readable (the cut
 *                 threads' counts are not exact: no counts are printed for them).
 *   longjmp-out   a timer's signal every 20 us runs a handler that calls noise() and leaves
 *                 with siglongjmp to main's loop, which calls noise() too, until JUMPS jumps;
 *                 some land while the thread is inside the tracer. Then main calls after()
 *                 AFTER times: every one of those must be in the trace (noise's count is cut
 *                 by the jumps and is not checked).
 *   fork-raw      three busy threads as in fork-busy; main makes RAW_CHILDREN children with
 *                 _Fork() (no atfork handlers run) and as many with syscall(SYS_clone,
 *                 SIGCHLD) (glibc knows nothing of them). Each child makes fib(14) calls (more
 *                 than two 4 KiB chunks hold: run with SLEDTRACE_BUFFER_KB=4 and
 *                 SLEDTRACE_BUFFERS=2) and leaves: _exit(0) after _Fork, exit_group after the
 *                 raw clone. A child that does not end within 3 s is killed and counted as
 *                 hung; the loop stops there.
 *   dup2-over     finds the trace's descriptor number (/proc/self/fd; untraced, the number the
 *                 runtime would pick), dup2s a file of its own onto it, makes 20 fib(15) calls
 *                 and waits two flush periods, then reads its file back through that number
 *                 and execs sh, which says whether the number is still open: the file's bytes
 *                 and the descriptor must be the program's, traced or not.
 *   open-numbers  opens /dev/null until it fails and prints the numbers it got (run it under
 *                 `ulimit -n 64`): the program's numbering must be as untraced.
 *   seccomp-open  installs (for every thread: TSYNC) a seccomp filter that kills the process
 *                 on open and openat, then three threads make SANDBOX_LOOPS calls of fib(8)
 *                 spread over about 4 flush periods. The program opens nothing afterwards.
 *   seccomp-list  the same work under a whitelist (TSYNC, anything else kills the process):
 *                 read write close fstat newfstatat lseek pwrite64 mmap munmap mprotect madvise
 *                 brk futex clone clone3 set_robust_list rseq rt_sigprocmask rt_sigreturn
 *                 clock_gettime clock_nanosleep nanosleep sched_yield getpid gettid exit
 *                 exit_group, and for glibc and stdio ioctl rt_sigaction sigaltstack prlimit64
 *                 getrandom mremap tgkill: what a sandboxed
 *                 multi-threaded program allows; the README says
 *                 which of them the runtime needs.
 *   seccomp-strict  a thread enters SECCOMP_MODE_STRICT (only read, write, exit and sigreturn
 *                 allowed) and makes STRICT_LOOPS calls of fib(8), more than its 4 KiB chunks
 *                 hold (run with SLEDTRACE_BUFFER_KB=4), then leaves with the exit system call.
 *                 The process must not be killed; the calls made before the thread turned
 *                 strict and main's are counted exactly (the strict thread's cannot be: the
 *                 kernel denies it the clock).
 *   small-altstack  a handler on an alternate stack just large enough for the kernel's frame
 *                 plus up to 1 KiB (AT_MINSIGSTKSZ + 1024 rounded down to whole pages, never below the
 *                 minimum; 64 KiB of guard pages right under it)
 *                 calls fib(8) at every tick of a 50 us timer
 *                 while main makes SMALL_LOOPS calls of fib(8) (run with 4 KiB chunks, so that
 *                 handlers often take the slow path); then prints the handler's calls.
 *   thread-churn  CHURN rounds of pthread_create + join of a thread that calls fib(5), with
 *                 8 MiB thread stacks (run under `ulimit -v`): prints how many creations
 *                 failed; untraced, none does.
 *   hotpatch      one thread rewrites a byte of its own code (mprotect RWX, write, mprotect
 *                 RX) HOT_ROUNDS times; another switches tracing off and on (sledtrace.h,
 *                 through dlsym) as often; a third calls traced code in the same pages all the
 *                 while. Then prints how many mappings are writable and executable ("wx 0").
 *   map-fixed     maps 64 KiB MAP_FIXED right below its executable (where a page of the
 *                 runtime's used to sit when ASLR is off, as under gdb or `setarch -R`), fills
 *                 it with int3, then makes FIXED_LOOPS calls of fib(8).
 *   setuid-exit   makes 20 fib(12) calls, then gives up root (setresuid to 65534) and returns:
 *                 the sidecar (mode 0600, root's) cannot be reopened for its end lines. Needs
 *                 root.
 *   preinit-timer a timer armed from .preinit_array (before any constructor, the runtime's
 *                 included) sends SIGALRM every 20 us, and its handler calls fib(3): the runtime
 *                 patches while handlers run instrumented code. Then main makes 200 calls of
 *                 fib(8), stops the timer and prints the ticks on stderr. It must not hang.
 *   stderr-data   a daemon's descriptors (issue 23.4): closes its stderr and opens $HOSTILE_DATA,
 *                 which so becomes descriptor 2, writes a line of its own data to it, makes 20
 *                 fib(15) calls and returns: the runtime's messages (run with SLEDTRACE_LOG=info,
 *                 so that the exit says something) must not land in the data file.
 *   fifo-sidecar  replaces its own sidecar ($SLEDTRACE_OUTPUT/sledtrace.PROG.PID.syms) with a
 *                 FIFO, as another user could in a shared directory, then dlopens $HOSTILE_LIB
 *                 (libslb.so) and calls b_entry(10): dlopen must not hang on the FIFO.
 *   key-dtor      a thread makes one fib(5) call and sets a pthread key whose destructor makes
 *                 KEY_CALLS calls of fib(1): they run after the runtime retired the thread, so
 *                 they cannot be recorded, and must be reported (2 x KEY_CALLS events).
 *   chroot-exit   chroots into an empty directory (argv: run as root), starts a thread that
 *                 makes fib(12) calls for about 300 ms, and calls pthread_exit in main: the
 *                 process must end by itself, with status 0, once that thread has.
 */
#define _GNU_SOURCE /* setresuid, setresgid */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <execinfo.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    if (n < 2)
        return n;
    return fibp(n - 1) + fibp(n - 2);
}

static atomic_int stop;

/* ---- fork-busy -------------------------------------------------------------------------------- */

enum { BUSY_THREADS = 3, FORKS = 40, BUSY_MAX = 10000 };

/* At most BUSY_MAX fib(8) (67 calls, about 1 KiB of trace each): about 11 MiB per thread. */
__attribute__((xray_never_instrument)) static void *busy(void *arg)
{
    long *loops = arg;
    while (!atomic_load(&stop) && *loops < BUSY_MAX) {
        fibp(8);
        if (++*loops % 16 == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

/* The busy threads of fork-busy and fork-raw: started, then stopped, joined and counted. */
__attribute__((xray_never_instrument)) static void busy_start(pthread_t *t, long *loops)
{
    for (int i = 0; i < BUSY_THREADS; i++)
        pthread_create(&t[i], NULL, busy, &loops[i]);
}

__attribute__((xray_never_instrument)) static void busy_finish(pthread_t *t, long *loops, int hung,
                                                               int failed)
{
    atomic_store(&stop, 1);
    long total = 0;
    for (int i = 0; i < BUSY_THREADS; i++) {
        pthread_join(t[i], NULL);
        total += loops[i];
    }
    printf("hung %d\nfailed %d\n", hung, failed);
    printf("count fib %ld\nthreads %d\n", total * fib_calls(8), BUSY_THREADS);
    for (int i = 0; i < BUSY_THREADS; i++)
        printf("threadwork %ld\n", loops[i] * fib_calls(8));
}

/* Waits for pid at most `ms`; kills it after that. Returns 1 if it had to be killed. */
__attribute__((xray_never_instrument)) static int wait_or_kill(pid_t pid, int ms, int *status)
{
    for (int waited = 0; waited < ms; waited++) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, status, 0);
    return 1;
}

__attribute__((xray_never_instrument)) static int fork_busy(void)
{
    pthread_t t[BUSY_THREADS];
    long loops[BUSY_THREADS] = {0};
    busy_start(t, loops);
    int hung = 0, failed = 0;
    for (int i = 0; i < FORKS; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            long r = fibp(12);
            _exit(r == fibonacci(12) ? 0 : 1);
        }
        int st = 0;
        if (pid < 0 || wait_or_kill(pid, 3000, &st)) {
            hung++;
            break;
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    busy_finish(t, loops, hung, failed);
    return 0;
}

/* ---- threads-exit ------------------------------------------------------------------------------ */

enum { EXIT_ROUNDS = 8, EXIT_THREADS = 4 };

__attribute__((xray_never_instrument)) static void *one_fib(void *arg)
{
    (void)arg;
    fibp(12);
    return NULL;
}

__attribute__((xray_never_instrument)) static int threads_exit(void)
{
    for (int r = 0; r < EXIT_ROUNDS; r++) {
        pthread_t t[EXIT_THREADS];
        for (int i = 0; i < EXIT_THREADS; i++)
            pthread_create(&t[i], NULL, one_fib, NULL);
        for (int i = 0; i < EXIT_THREADS; i++)
            pthread_join(t[i], NULL);
    }
    printf("count fib %ld\nthreads %d\n", EXIT_ROUNDS * EXIT_THREADS * fib_calls(12),
           EXIT_ROUNDS * EXIT_THREADS);
    for (int i = 0; i < EXIT_ROUNDS * EXIT_THREADS; i++)
        printf("threadwork %ld\n", fib_calls(12));
    return 0;
}

/* ---- cancel ------------------------------------------------------------------------------------ */

enum { CANCEL_ROUNDS = 10, CANCEL_LOOPS = 3000 };

static atomic_int reached_end, cancel_sent;

__attribute__((xray_never_instrument)) static void *cancel_me(void *arg)
{
    atomic_int *started = arg;
    atomic_store(started, 1);
    for (int i = 0; i < CANCEL_LOOPS; i++)
        fibp(8);
    atomic_store(&reached_end, 1);
    while (!atomic_load(&cancel_sent)) /* a fast run ends its loop before the cancellation */
        ;
    pthread_testcancel();
    return NULL;
}

__attribute__((xray_never_instrument)) static int cancel_deferred(void)
{
    int early = 0, not_cancelled = 0;
    for (int r = 0; r < CANCEL_ROUNDS; r++) {
        atomic_int started = 0;
        atomic_store(&reached_end, 0);
        atomic_store(&cancel_sent, 0);
        pthread_t t;
        pthread_create(&t, NULL, cancel_me, &started);
        while (!atomic_load(&started))
            ;
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
        pthread_cancel(t);
        atomic_store(&cancel_sent, 1);
        void *res;
        pthread_join(t, &res);
        early += !atomic_load(&reached_end);
        not_cancelled += res != PTHREAD_CANCELED;
    }
    printf("early %d\nnot cancelled %d\n", early, not_cancelled);
    printf("count fib %ld\nthreads %d\n", (long)CANCEL_ROUNDS * CANCEL_LOOPS * fib_calls(8),
           CANCEL_ROUNDS);
    for (int i = 0; i < CANCEL_ROUNDS; i++)
        printf("threadwork %ld\n", CANCEL_LOOPS * fib_calls(8));
    return 0;
}

/* ---- sigprof ----------------------------------------------------------------------------------- */

enum { PROF_LOOPS = 4000 };

static atomic_long samples;

__attribute__((xray_never_instrument)) static void on_prof(int sig)
{
    (void)sig;
    int saved = errno;
    void *frames[64];
    backtrace(frames, 64);
    atomic_fetch_add(&samples, 1);
    errno = saved;
}

__attribute__((xray_never_instrument)) static int sigprof(void)
{
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder outside the handler */
    signal(SIGPROF, on_prof);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGPROF};
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0)
        return 3;
    struct itimerspec it = {{0, 50000}, {0, 50000}};
    timer_settime(timer, 0, &it, NULL);
    for (int i = 0; i < PROF_LOOPS; i++)
        fibp(10);
    timer_delete(timer);
    fprintf(stderr, "samples %ld\n", atomic_load(&samples));
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", PROF_LOOPS * fib_calls(10),
           PROF_LOOPS * fib_calls(10));
    return 0;
}

/* ---- cancel-async ------------------------------------------------------------------------------- */

enum { ASYNC_ROUNDS = 20 };

__attribute__((xray_never_instrument)) static void *async_victim(void *arg)
{
    atomic_int *started = arg;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
    for (;;) {
        fibp(10);
        atomic_store(started, 1); /* after a whole traced call: the thread is in the trace */
    }
    return NULL;
}

__attribute__((xray_never_instrument)) static int cancel_async(void)
{
    int not_cancelled = 0;
    for (int r = 0; r < ASYNC_ROUNDS; r++) {
        atomic_int started = 0;
        pthread_t t;
        pthread_create(&t, NULL, async_victim, &started);
        while (!atomic_load(&started))
            ;
        struct timespec ts = {0, 300000};
        nanosleep(&ts, NULL);
        pthread_cancel(t);
        void *res;
        pthread_join(t, &res);
        not_cancelled += res != PTHREAD_CANCELED;
    }
    long a = fibp(12); /* the process carries on, traced */
    printf("not cancelled %d\nresult %ld\n", not_cancelled, a);
    return 0;
}

/* ---- longjmp-out -------------------------------------------------------------------------------- */

enum { JUMPS = 2000, AFTER = 200000 };

static sigjmp_buf jump_env;
static volatile int jumps;
long (*volatile noisep)(long);
long (*volatile afterp)(long);

KEEP long noise(long x)
{
    BARRIER();
    return x + 1;
}

KEEP long after(long x)
{
    BARRIER();
    return x + 2;
}

__attribute__((xray_never_instrument)) static void on_tick(int sig)
{
    (void)sig;
    noisep(1);
    jumps++;
    siglongjmp(jump_env, 1);
}

__attribute__((xray_never_instrument)) static int longjmp_out(void)
{
    noisep = noise;
    afterp = after;
    signal(SIGALRM, on_tick);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0)
        return 3;
    struct itimerspec it = {{0, 20000}, {0, 20000}};
    noisep(0); /* the thread's buffer exists before the first tick (a tick between a thread's
                  very first entry and its set-up loses that handler's events) */
    if (sigsetjmp(jump_env, 1) == 0) /* armed once the jump target exists */
        timer_settime(timer, 0, &it, NULL);
    while (jumps < JUMPS)
        noisep(2);
    timer_delete(timer);
    for (long i = 0; i < AFTER; i++)
        afterp(i);
    printf("jumped %s\n", jumps >= JUMPS ? "enough" : "too little");
    return 0;
}

/* ---- fork-raw ------------------------------------------------------------------------------------ */

enum { RAW_CHILDREN = 10 };

pid_t _Fork(void);

__attribute__((xray_never_instrument)) static int fork_raw(void)
{
    pthread_t t[BUSY_THREADS];
    long loops[BUSY_THREADS] = {0};
    busy_start(t, loops);
    int hung = 0, failed = 0;
    for (int i = 0; i < 2 * RAW_CHILDREN && !hung; i++) {
        fflush(stdout);
        int raw = i % 2;
        pid_t pid = raw ? (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) : _Fork();
        if (pid == 0) {
            long r = fibp(14);
            if (raw)
                syscall(SYS_exit_group, r == fibonacci(14) ? 0 : 1);
            _exit(r == fibonacci(14) ? 0 : 1);
        }
        int st = 0;
        if (pid < 0 || wait_or_kill(pid, 3000, &st))
            hung++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    busy_finish(t, loops, hung, failed);
    return 0;
}

/* ---- dup2-over, open-numbers ------------------------------------------------------------------- */

/* The trace's descriptor, or where the runtime would put it: the top of the range. */
__attribute__((xray_never_instrument)) static int trace_fd_number(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int found = -1;
    while (d && (de = readdir(d)) != NULL) {
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strstr(target, "/sledtrace.") && strstr(target, ".fdr"))
            found = atoi(de->d_name);
    }
    if (d)
        closedir(d);
    if (found < 0) {
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        found = rl.rlim_cur > 1024 ? 1023 : (int)rl.rlim_cur - 1;
    }
    return found;
}

__attribute__((xray_never_instrument)) static int dup2_over(void)
{
    int n = trace_fd_number();
    char path[] = "/tmp/sledtrace-hostile-XXXXXX";
    int own = mkstemp(path);
    static const char data[] = "program data 0123456789\n";
    if (own < 0 || write(own, data, sizeof data - 1) != (ssize_t)(sizeof data - 1))
        return 3;
    unlink(path);
    if (dup2(own, n) != n)
        return 4;
    close(own);
    for (int i = 0; i < 20; i++)
        fibp(15);
    struct timespec ts = {0, 250000000}; /* two flush periods: the runtime writes meanwhile */
    nanosleep(&ts, NULL);
    char buf[64] = "";
    ssize_t got = pread(n, buf, sizeof buf - 1, 0);
    printf("own file: %zd bytes: %s", got, got > 0 ? buf : "\n");
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", 20 * fib_calls(15), 20 * fib_calls(15));
    fflush(stdout);
    char cmd[128];
    snprintf(cmd, sizeof cmd,
             "test -e /proc/self/fd/%d && echo 'after exec: open' || echo 'after exec: closed'", n);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    return 5;
}

__attribute__((xray_never_instrument)) static int setuid_exit(void)
{
    for (int i = 0; i < 20; i++)
        fibp(12);
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
        return 3;
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", 20 * fib_calls(12), 20 * fib_calls(12));
    return 0;
}

/* ---- preinit-timer ----------------------------------------------------------------------------- */

static timer_t preinit_timer;
static atomic_long preinit_ticks;
static int preinit_armed;

__attribute__((xray_never_instrument)) static void on_preinit_alarm(int sig)
{
    (void)sig;
    int saved = errno;
    fibp(3);
    atomic_fetch_add(&preinit_ticks, 1);
    errno = saved;
}

__attribute__((xray_never_instrument)) static void preinit(int argc, char **argv, char **envp)
{
    (void)envp;
    if (argc < 2 || strcmp(argv[1], "preinit-timer") != 0)
        return;
    fibp = fib;
    signal(SIGALRM, on_preinit_alarm);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    if (timer_create(CLOCK_MONOTONIC, &ev, &preinit_timer) != 0)
        return;
    struct itimerspec it = {{0, 20000}, {0, 20000}};
    preinit_armed = timer_settime(preinit_timer, 0, &it, NULL) == 0;
}

__attribute__((section(".preinit_array"),
               used)) static void (*const preinit_entry)(int, char **, char **) = preinit;

__attribute__((xray_never_instrument)) static int preinit_timer_mode(void)
{
    if (!preinit_armed)
        return 3;
    for (int i = 0; i < 200; i++)
        fibp(8);
    timer_delete(preinit_timer);
    fprintf(stderr, "ticks %ld\n", atomic_load(&preinit_ticks));
    return 0;
}

__attribute__((xray_never_instrument)) static int stderr_data(void)
{
    const char *path = getenv("HOSTILE_DATA");
    if (!path)
        return 3;
    close(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd != 2)
        return 4;
    static const char data[] = "program data\n";
    if (write(fd, data, sizeof data - 1) != (ssize_t)(sizeof data - 1))
        return 5;
    for (int i = 0; i < 20; i++)
        fibp(15);
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", 20 * fib_calls(15), 20 * fib_calls(15));
    return 0;
}

__attribute__((xray_never_instrument)) static int open_numbers(void)
{
    fibp(5); /* the runtime is active */
    int count = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0)
            break;
        printf("%d\n", fd);
        count++;
    }
    printf("opened %d\n", count);
    return 0;
}

/* ---- seccomp-open, seccomp-strict, chroot-exit ------------------------------------------------- */

enum { SANDBOX_LOOPS = 4000, STRICT_LOOPS = 3000 };

__attribute__((xray_never_instrument)) static void *paced_work(void *arg)
{
    long *loops = arg;
    for (long i = 0; i < SANDBOX_LOOPS; i++) {
        fibp(8);
        (*loops)++;
        if (i % 40 == 0) {
            struct timespec ts = {0, 4000000}; /* 100 pauses: about 4 flush periods */
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

#define ALLOW(nr)                                                                                  \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

__attribute__((xray_never_instrument)) static int seccomp_open(int whitelist)
{
    fibp(2); /* traced before the filter: start-up is done */
    struct sock_filter deny_open[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_filter allow_list[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read),
        ALLOW(SYS_write),
        ALLOW(SYS_close),
        ALLOW(SYS_fstat),
        ALLOW(SYS_newfstatat),
        ALLOW(SYS_lseek),
        ALLOW(SYS_pwrite64),
        ALLOW(SYS_mmap),
        ALLOW(SYS_munmap),
        ALLOW(SYS_mprotect),
        ALLOW(SYS_madvise),
        ALLOW(SYS_brk),
        ALLOW(SYS_futex),
        ALLOW(SYS_clone),
        ALLOW(SYS_clone3),
        ALLOW(SYS_set_robust_list),
        ALLOW(SYS_rseq),
        ALLOW(SYS_rt_sigprocmask),
        ALLOW(SYS_rt_sigreturn),
        ALLOW(SYS_clock_gettime),
        ALLOW(SYS_clock_nanosleep),
        ALLOW(SYS_nanosleep),
        ALLOW(SYS_sched_yield),
        ALLOW(SYS_getpid),
        ALLOW(SYS_gettid),
        ALLOW(SYS_exit),
        ALLOW(SYS_exit_group),
        ALLOW(SYS_ioctl),
        ALLOW(SYS_rt_sigaction),
        ALLOW(SYS_sigaltstack),
        ALLOW(SYS_prlimit64),
        ALLOW(SYS_getrandom),
        ALLOW(SYS_mremap),
        ALLOW(SYS_tgkill),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog =
        whitelist ? (struct sock_fprog){sizeof allow_list / sizeof allow_list[0], allow_list}
                  : (struct sock_fprog){sizeof deny_open / sizeof deny_open[0], deny_open};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
        return 3;
    pthread_t t[3];
    long loops[3] = {0};
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, paced_work, &loops[i]);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("count fib %ld\nthreads 4\nthreadwork %ld\n",
           fib_calls(2) + 3 * SANDBOX_LOOPS * fib_calls(8), fib_calls(2));
    for (int i = 0; i < 3; i++)
        printf("threadwork %ld\n", loops[i] * fib_calls(8));
    return 0;
}

static atomic_int strict_on;

__attribute__((xray_never_instrument)) static void *strict_worker(void *arg)
{
    (void)arg;
    fibp(2); /* the thread's buffer exists before it turns strict */
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0)
        return NULL;
    atomic_store(&strict_on, 1);
    for (int i = 0; i < STRICT_LOOPS; i++)
        fibp(8);
    syscall(SYS_exit, 0);
    return NULL;
}

__attribute__((xray_never_instrument)) static int seccomp_strict(void)
{
    pthread_t t;
    pthread_create(&t, NULL, strict_worker, NULL);
    pthread_join(t, NULL);
    long r = fibp(10);
    printf("strict %d\nresult %ld\n", atomic_load(&strict_on), r);
    /* recorded: main's fib(10) and the worker's fib(2) before it turned strict */
    printf("count fib %ld\nthreads 2\nthreadwork %ld\nthreadwork %ld\n",
           fib_calls(10) + fib_calls(2), fib_calls(10), fib_calls(2));
    return 0;
}

enum { SMALL_LOOPS = 3000 };

static atomic_long small_ticks;

__attribute__((xray_never_instrument)) static void on_small_tick(int sig)
{
    (void)sig;
    fibp(8);
    atomic_fetch_add(&small_ticks, 1);
}

__attribute__((xray_never_instrument)) static int small_altstack(void)
{
    size_t size = getauxval(AT_MINSIGSTKSZ);
    if (size < MINSIGSTKSZ)
        size = MINSIGSTKSZ;
    /* whole pages (so that the guard lies right under the stack), at least the minimum */
    size_t pages = (size + 1024) & ~(size_t)4095;
    if (pages < size)
        pages += 4096;
    enum { GUARD = 64 * 1024 }; /* an XSAVE area can be 11 KiB: jumping over a guard page */
    char *m = mmap(NULL, pages + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, GUARD, PROT_NONE) != 0) /* an overflow faults */
        return 3;
    stack_t ss = {.ss_sp = m + GUARD, .ss_size = pages};
    if (sigaltstack(&ss, NULL) != 0)
        return 3;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_small_tick;
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0)
        return 4;
    struct itimerspec it = {{0, 50000}, {0, 50000}};
    timer_settime(timer, 0, &it, NULL);
    for (int i = 0; i < SMALL_LOOPS; i++)
        fibp(8);
    timer_delete(timer);
    long ticks = atomic_load(&small_ticks);
    fprintf(stderr, "ticks %ld\n", ticks);
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", (SMALL_LOOPS + ticks) * fib_calls(8),
           (SMALL_LOOPS + ticks) * fib_calls(8));
    return 0;
}

enum { CHURN = 400 };

__attribute__((xray_never_instrument)) static void *churn_one(void *arg)
{
    (void)arg;
    fibp(5);
    return NULL;
}

__attribute__((xray_never_instrument)) static int thread_churn(void)
{
    int failed = 0;
    for (int i = 0; i < CHURN; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, churn_one, NULL) != 0) {
            failed++;
            continue;
        }
        pthread_join(t, NULL);
    }
    printf("failed %d\n", failed);
    printf("count fib %ld\nthreads %d\n", (CHURN - failed) * fib_calls(5), CHURN - failed);
    for (int i = 0; i < CHURN - failed; i++)
        printf("threadwork %ld\n", fib_calls(5));
    return 0;
}

enum { HOT_ROUNDS = 3000 };

static atomic_int hot_done;

/* Never traced; its first byte is rewritten (with its own value) by hot_patcher. */
__attribute__((xray_never_instrument, noinline)) int hot_target(int x)
{
    return x * 3 + 1;
}

__attribute__((xray_never_instrument)) static void *hot_patcher(void *arg)
{
    (void)arg;
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *code = (uint8_t *)(uintptr_t)hot_target;
    void *start = (void *)((uintptr_t)code & ~(uintptr_t)(page - 1));
    for (int i = 0; i < HOT_ROUNDS; i++) {
        if (mprotect(start, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
            return (void *)1;
        __atomic_store_n(code, __atomic_load_n(code, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
        if (mprotect(start, (size_t)page, PROT_READ | PROT_EXEC) != 0)
            return (void *)1;
    }
    return NULL;
}

__attribute__((xray_never_instrument)) static void *hot_toggler(void *arg)
{
    (void)arg;
    int (*patch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_patch");
    int (*unpatch)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "sledtrace_unpatch");
    for (int i = 0; patch && unpatch && i < HOT_ROUNDS; i++) {
        unpatch();
        patch();
    }
    return NULL;
}

__attribute__((xray_never_instrument)) static void *hot_caller(void *arg)
{
    (void)arg;
    while (!atomic_load(&hot_done))
        fibp(5);
    return NULL;
}

__attribute__((xray_never_instrument)) static int hotpatch(void)
{
    pthread_t p, t, c;
    pthread_create(&c, NULL, hot_caller, NULL);
    pthread_create(&p, NULL, hot_patcher, NULL);
    pthread_create(&t, NULL, hot_toggler, NULL);
    void *rp, *rt;
    pthread_join(p, &rp);
    pthread_join(t, &rt);
    atomic_store(&hot_done, 1);
    pthread_join(c, NULL);
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int wx = 0;
    while (f && fgets(line, sizeof line, f))
        wx += strncmp(strchr(line, ' ') + 1, "rwx", 3) == 0;
    if (f)
        fclose(f);
    printf("patcher %s\nwx %d\nresult %d\n", rp ? "failed" : "ok", wx, hot_target(2));
    return 0;
}

enum { FIXED_LOOPS = 100 };

extern char __executable_start[];

__attribute__((xray_never_instrument)) static int map_fixed(void)
{
    fibp(2); /* traced: the runtime is set up */
    size_t len = 64 * 1024;
    char *at = __executable_start - len;
    char *m = mmap(at, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != at)
        return 3;
    memset(m, 0xcc, len);
    for (int i = 0; i < FIXED_LOOPS; i++)
        fibp(8);
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", fib_calls(2) + FIXED_LOOPS * fib_calls(8),
           fib_calls(2) + FIXED_LOOPS * fib_calls(8));
    return 0;
}

__attribute__((xray_never_instrument)) static int fifo_sidecar(void)
{
    fibp(2);
    const char *dir = getenv("SLEDTRACE_OUTPUT"), *lib = getenv("HOSTILE_LIB");
    char path[4096];
    if (dir) {
        snprintf(path, sizeof path, "%s/sledtrace.hostile-pie-nort.%d.syms", dir, (int)getpid());
        if (unlink(path) != 0 || mkfifo(path, 0600) != 0)
            return 3;
    }
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    long (*entry)(long) = h ? (long (*)(long))dlsym(h, "b_entry") : NULL;
    if (!entry)
        return 4;
    printf("result %ld\n", entry(10));
    return 0;
}

enum { KEY_CALLS = 800 };

static pthread_key_t late_key;

__attribute__((xray_never_instrument)) static void late_calls(void *v)
{
    (void)v;
    for (int i = 0; i < KEY_CALLS; i++)
        fibp(1);
}

__attribute__((xray_never_instrument)) static void *keyed(void *arg)
{
    (void)arg;
    fibp(5);
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}

__attribute__((xray_never_instrument)) static int key_dtor(void)
{
    pthread_key_create(&late_key, late_calls);
    pthread_t t;
    pthread_create(&t, NULL, keyed, NULL);
    pthread_join(t, NULL);
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", fib_calls(5), fib_calls(5));
    return 0;
}

__attribute__((xray_never_instrument)) static void *slow_fibs(void *arg)
{
    (void)arg;
    for (int i = 0; i < 30; i++) {
        fibp(12);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

__attribute__((xray_never_instrument)) static int chroot_exit(void)
{
    char dir[] = "/tmp/sledtrace-chroot-XXXXXX";
    /* pthread_exit unwinds with libgcc_s, which an empty root cannot provide: load it first */
    if (!dlopen("libgcc_s.so.1", RTLD_NOW) || !mkdtemp(dir) || chroot(dir) != 0 || chdir("/") != 0)
        return 3;
    printf("count fib %ld\nthreads 1\nthreadwork %ld\n", 30 * fib_calls(12), 30 * fib_calls(12));
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, slow_fibs, NULL);
    pthread_exit(NULL);
}

__attribute__((xray_never_instrument)) int main(int argc, char **argv)
{
    fibp = fib;
    const char *how = argc > 1 ? argv[1] : "";
    if (strcmp(how, "fork-busy") == 0)
        return fork_busy();
    if (strcmp(how, "threads-exit") == 0)
        return threads_exit();
    if (strcmp(how, "cancel") == 0)
        return cancel_deferred();
    if (strcmp(how, "sigprof") == 0)
        return sigprof();
    if (strcmp(how, "cancel-async") == 0)
        return cancel_async();
    if (strcmp(how, "longjmp-out") == 0)
        return longjmp_out();
    if (strcmp(how, "fork-raw") == 0)
        return fork_raw();
    if (strcmp(how, "dup2-over") == 0)
        return dup2_over();
    if (strcmp(how, "setuid-exit") == 0)
        return setuid_exit();
    if (strcmp(how, "preinit-timer") == 0)
        return preinit_timer_mode();
    if (strcmp(how, "stderr-data") == 0)
        return stderr_data();
    if (strcmp(how, "open-numbers") == 0)
        return open_numbers();
    if (strcmp(how, "seccomp-open") == 0)
        return seccomp_open(0);
    if (strcmp(how, "seccomp-list") == 0)
        return seccomp_open(1);
    if (strcmp(how, "seccomp-strict") == 0)
        return seccomp_strict();
    if (strcmp(how, "chroot-exit") == 0)
        return chroot_exit();
    if (strcmp(how, "small-altstack") == 0)
        return small_altstack();
    if (strcmp(how, "thread-churn") == 0)
        return thread_churn();
    if (strcmp(how, "hotpatch") == 0)
        return hotpatch();
    if (strcmp(how, "map-fixed") == 0)
        return map_fixed();
    if (strcmp(how, "fifo-sidecar") == 0)
        return fifo_sidecar();
    if (strcmp(how, "key-dtor") == 0)
        return key_dtor();
    fprintf(stderr, "hostile: unknown mode '%s'\n", how);
    return 2;
}
