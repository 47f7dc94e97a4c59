/* Waiting calls (issue 28.1, test_waits.c): each instrumented function below makes one kind of
 * blocking libc call a known number of times, blocking where the name says so, and the program
 * prints how many of each it made ("waits NAME N": the [wait] pseudo-calls the trace must hold
 * in that function's frame) and what it checked of the calls' results and errno ("ok NAME").
 * Calls that must not be recorded (an uncontended lock, a free semaphore, a poll or waitpid that
 * cannot block) are made too, inside functions whose frames must hold no wait.
 *
 * Argument "cancel": a thread cancelled in pthread_cond_wait. "migrate": a nap during which the
 * thread's affinity moves it to another CPU (needs two). Exit status 0 when every check held. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int failed;
static void check(int ok, const char *what)
{
    if (ok)
        printf("ok %s\n", what);
    else {
        printf("FAILED %s (errno %d)\n", what, errno);
        failed = 1;
    }
}

static inline __attribute__((always_inline)) void nap_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* ---- condition variable ---- */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready;

static void *signaller(void *a)
{
    (void)a;
    nap_ms(20);
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    return NULL;
}

NOINLINE static int cond_waiter(void)
{
    int n = 0;
    pthread_mutex_lock(&m); /* uncontended unless the signaller holds it: counted below */
    while (!ready) {
        pthread_cond_wait(&c, &m);
        n++;
    }
    pthread_mutex_unlock(&m);
    return n;
}

/* ---- a contended mutex, and an uncontended one ---- */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static sem_t holding;

static void *holder(void *a)
{
    (void)a;
    pthread_mutex_lock(&held);
    sem_post(&holding);
    nap_ms(20);
    pthread_mutex_unlock(&held);
    return NULL;
}

NOINLINE static void lock_contended(void)
{
    pthread_mutex_lock(&held);
    pthread_mutex_unlock(&held);
}

NOINLINE static void lock_free(void)
{
    static pthread_mutex_t mine = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&mine);
        pthread_mutex_unlock(&mine);
    }
}

/* ---- semaphores ---- */
static sem_t later;

static void *poster(void *a)
{
    (void)a;
    nap_ms(20);
    sem_post(&later);
    return NULL;
}

NOINLINE static void sem_blocked(void)
{
    sem_wait(&later);
}

NOINLINE static void sem_free_one(void)
{
    sem_t s;
    sem_init(&s, 0, 3);
    sem_wait(&s);
    sem_wait(&s);
    sem_destroy(&s);
}

/* ---- descriptors ---- */
static int pfd[2];

static void *writer(void *a)
{
    (void)a;
    nap_ms(20);
    if (write(pfd[1], "x", 1) != 1)
        failed = 1;
    return NULL;
}

NOINLINE static void pipe_waits(void)
{
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    check(poll(&p, 1, 2000) == 1, "poll");
    char ch;
    check(read(pfd[0], &ch, 1) == 1 && ch == 'x', "read");
}

NOINLINE static void no_block(void)
{
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    check(poll(&p, 1, 0) == 0, "poll-0");
    check(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD, "waitpid-nohang");
}

NOINLINE static void bad_read(void)
{
    char ch;
    errno = 0;
    check(read(-1, &ch, 1) == -1 && errno == EBADF, "read-ebadf");
}

/* ---- sleeping, children, futex ---- */
NOINLINE static void sleeps(void)
{
    nap_ms(2);
    usleep(2000);
}

NOINLINE static void child_wait(void)
{
    pid_t p = fork();
    if (p == 0) {
        nap_ms(10);
        _exit(7);
    }
    int st = 0;
    check(waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7, "waitpid");
}

NOINLINE static void futex_wait(void)
{
    int word = 1; /* the value is not 0: the wait returns at once, EAGAIN */
    errno = 0;
    long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    check(r == -1 && errno == EAGAIN, "futex");
}

NOINLINE static void joins(pthread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* ---- cancellation in a wait ---- */
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cc = PTHREAD_COND_INITIALIZER;
static sem_t cancel_ready;

static void unlock(void *p)
{
    pthread_mutex_unlock(p);
}

NOINLINE static void wait_forever(void)
{
    pthread_mutex_lock(&cm);
    pthread_cleanup_push(unlock, &cm);
    sem_post(&cancel_ready);
    for (;;)
        pthread_cond_wait(&cc, &cm);
    pthread_cleanup_pop(1);
}

static void *cancellee(void *a)
{
    (void)a;
    wait_forever();
    return NULL;
}

/* ---- a nap during which the thread is moved to another CPU ---- */
static pthread_t napper_t;
static sem_t napping;
static pid_t napper_tid;

NOINLINE static void moved_nap(void)
{
    napper_tid = (pid_t)syscall(SYS_gettid);
    sem_post(&napping);
    nap_ms(50);
}

/* Until the napper sleeps (its state in /proc: S), which after its sem_post is its nap. */
static void until_napping(void)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)napper_tid);
    for (int i = 0; i < 2000; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && p[2] == 'S')
            return;
        usleep(100);
    }
}

static void *napper(void *a)
{
    (void)a;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0)
        return NULL;
    moved_nap();
    unsigned cpu = 0, node;
    if (syscall(SYS_getcpu, &cpu, &node, NULL) == 0)
        printf("napper on cpu %u\n", cpu);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "cancel") == 0) {
        pthread_t t;
        sem_init(&cancel_ready, 0, 0);
        pthread_create(&t, NULL, cancellee, NULL);
        sem_wait(&cancel_ready);
        nap_ms(10);
        pthread_cancel(t);
        void *ret = NULL;
        pthread_join(t, &ret);
        check(ret == PTHREAD_CANCELED, "cancelled");
        return failed;
    }
    if (argc > 1 && strcmp(argv[1], "migrate") == 0) {
        sem_init(&napping, 0, 0);
        pthread_create(&napper_t, NULL, napper, NULL);
        sem_wait(&napping);
        until_napping();
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(1, &s);
        check(pthread_setaffinity_np(napper_t, sizeof s, &s) == 0, "moved");
        pthread_join(napper_t, NULL);
        return failed;
    }

    pthread_t t[4];
    sem_init(&holding, 0, 0);
    sem_init(&later, 0, 0);
    if (pipe(pfd) != 0)
        return 2;

    pthread_create(&t[0], NULL, signaller, NULL);
    int n = cond_waiter();
    printf("waits cond_waiter pthread_cond_wait %d\n", n);

    pthread_create(&t[1], NULL, holder, NULL);
    sem_wait(&holding); /* main's own, outside any instrumented function but main */
    lock_contended();
    printf("waits lock_contended pthread_mutex_lock 1\n");
    lock_free();
    printf("waits lock_free none\n");

    pthread_create(&t[2], NULL, poster, NULL);
    sem_blocked();
    printf("waits sem_blocked sem_wait 1\n");
    sem_free_one();
    printf("waits sem_free_one none\n");

    pthread_create(&t[3], NULL, writer, NULL);
    pipe_waits();
    printf("waits pipe_waits poll 1\nwaits pipe_waits read 1\n");
    no_block();
    printf("waits no_block none\n");
    bad_read();
    printf("waits bad_read read 1\n");

    sleeps();
    printf("waits sleeps nanosleep 1\nwaits sleeps usleep 1\n");
    child_wait();
    printf("waits child_wait waitpid 1\n");
    futex_wait();
    printf("waits futex_wait futex 1\n");
    joins(t, 4);
    printf("waits joins pthread_join 4\n");
    fflush(stdout);
    return failed;
}
