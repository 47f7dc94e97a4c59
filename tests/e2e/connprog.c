/* A thread-per-connection server and its clients in one process (issue 24).
 *
 * Server: a listening TCP socket on 127.0.0.1, port 0 (the kernel picks one, getsockname tells
 * which). An acceptor thread runs serve_listener(), which accept()s and calls on_accept() once
 * per connection; on_accept() starts a detached handler thread for it, which runs serve_conn():
 * per request of MSG bytes, parse(), handle() and reply(); at the end of the stream it returns,
 * and on a stream that ends inside a request (or fails) it calls conn_error() first.
 *
 * Clients: CLIENTS threads open CONNS connections between them (connection i by client
 * i % CLIENTS, one at a time each), and send reqs(i) = 1 + i % 7 requests on connection i,
 * each answered before the next is sent. Then connection i ends as ending(i) says: most close
 * cleanly; i % 10 == 3 sends PARTIAL bytes of one more request and closes (the handler reads
 * the end of the stream mid-request), i % 10 == 7 does the same and then resets the connection
 * (SO_LINGER 0: the handler's recv fails with ECONNRESET). Both make the handler call
 * conn_error() and exit on that path.
 *
 * Once every handler has finished, main shuts the listening socket down (accept fails, the
 * acceptor returns), joins the acceptor and prints the counts (progs.h); handler threads are
 * detached and may still be exiting then. Only the server side is instrumented: main and the
 * clients are never, so the traced threads are the acceptor and the CONNS handlers.
 *
 * With an argument, the server is stopped while HELD connections are still open: after the
 * CONNS connections are done, main opens HELD more, sends one request on each and waits for
 * the replies, so that HELD handler threads are alive, blocked in recv() inside serve_conn(),
 * and the acceptor is blocked in accept() inside serve_listener(). It prints the counts (the
 * enters; and `open <function> <n>`: n frames of that function never return), then:
 *     term      main blocks SIGTERM and sends it to its process, so one of the server's threads
 *               takes it; the default action ends the process (wait status: SIGTERM).
 *     termexit  the program's SIGTERM handler writes to a pipe (the self-pipe pattern), main
 *               reads it, prints "stopping" and calls exit(0) with the handlers still alive.
 *     termbusy  as termexit, but the HELD requests are ones whose handle() never returns: it
 *               calls work() in a loop, so those threads are recording while the process exits.
 *               How many calls of work() they make is not known: `busy work <n>` says that
 *               work()'s count is not printed and that up to n of its calls may be open.
 * Every request answered before the signal has left its three calls, complete: the handler
 * counts a reply only after reply() has returned, and main waits for that count.
 *
 * Any unexpected error exits 1 with a message on stdout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "progs.h"

#define NOTRACE __attribute__((xray_never_instrument, noinline))

enum { CONNS = 500, CLIENTS = 8, MSG = 32, PARTIAL = 10, HELD = 8, BUSY = 999 };

NOTRACE static long reqs(long i)
{
    return 1 + i % 7;
}

/* 0: clean close after the last answer; 1: a partial request, then close; 2: a partial
 * request, then a reset. */
NOTRACE static int ending(long i)
{
    return i % 10 == 3 ? 1 : i % 10 == 7 ? 2 : 0;
}

/* The server's counters, under mu; cv is signalled whenever one changes. accepted: on_accept()
 * calls returned; active: handler threads started and not done; replied: reply() calls returned;
 * busy: handlers in a handle() that never returns. Each is counted after the call it counts has
 * returned (or, busy, has begun for good), so that main, once it has seen a count, knows those
 * calls' records are made. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long accepted, active, replied, failures, busy;

NOTRACE static void fail(const char *what)
{
    printf("error: %s: %s\n", what, strerror(errno));
    fflush(stdout);
    _exit(1);
}

NOTRACE static void bump(long *counter, long by)
{
    pthread_mutex_lock(&mu);
    *counter += by;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* Reads one message of MSG bytes: MSG, 0 at a clean end of stream before its first byte, the
 * bytes read when the stream ends inside it, -1 on an error. */
NOTRACE static ssize_t recv_msg(int fd, char *buf)
{
    size_t got = 0;
    while (got < MSG) {
        ssize_t r = recv(fd, buf + got, MSG - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return (ssize_t)got;
        got += (size_t)r;
    }
    return MSG;
}

NOTRACE static int send_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* A message: text, space-padded to MSG bytes. */
NOTRACE static void format_msg(char *buf, const char *tag, long a, long b)
{
    char tmp[MSG + 1];
    int n = snprintf(tmp, sizeof tmp, "%s %ld %ld", tag, a, b);
    memset(buf, ' ', MSG);
    memcpy(buf, tmp, (size_t)n < MSG ? (size_t)n : MSG);
}

/* ---- the server (instrumented) ---- */

KEEP int parse(const char *msg, long *conn, long *k)
{
    char text[MSG + 1];
    memcpy(text, msg, MSG);
    text[MSG] = '\0';
    return sscanf(text, "REQ %ld %ld", conn, k) == 2 ? 0 : -1;
}

KEEP long work(long x)
{
    BARRIER();
    return x + 1;
}

/* Request BUSY never ends (termbusy). */
KEEP long handle(long conn, long k)
{
    BARRIER();
    if (k == BUSY) {
        bump(&busy, 1);
        for (long i = 0;; i++)
            conn += work(i);
    }
    return conn * 1000 + k * k + 1;
}

KEEP int reply(int fd, long conn, long value)
{
    char msg[MSG];
    format_msg(msg, "ANS", conn, value);
    return send_all(fd, msg, MSG);
}

KEEP void conn_error(int fd, int err)
{
    (void)fd;
    BARRIER();
    if (err != 0 && err != ECONNRESET)
        bump(&failures, 1);
}

KEEP void serve_conn(int fd)
{
    char req[MSG];
    for (;;) {
        ssize_t n = recv_msg(fd, req);
        if (n == 0)
            return;
        if (n != MSG) {
            conn_error(fd, n < 0 ? errno : 0);
            return;
        }
        long conn, k;
        if (parse(req, &conn, &k) != 0) {
            conn_error(fd, EPROTO);
            return;
        }
        if (reply(fd, conn, handle(conn, k)) != 0) {
            conn_error(fd, errno);
            return;
        }
        bump(&replied, 1);
    }
}

NOTRACE static void *conn_thread(void *arg)
{
    int fd = (int)(long)arg;
    serve_conn(fd);
    close(fd);
    bump(&active, -1);
    return NULL;
}

KEEP void on_accept(int fd)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    bump(&active, 1);
    pthread_t t;
    if (pthread_create(&t, &attr, conn_thread, (void *)(long)fd) != 0)
        fail("pthread_create");
    pthread_attr_destroy(&attr);
}

KEEP void serve_listener(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0)
            return; /* shut down */
        on_accept(fd);
        bump(&accepted, 1); /* on_accept has returned: main may count on its exit */
    }
}

NOTRACE static void *acceptor(void *arg)
{
    serve_listener((int)(long)arg);
    return NULL;
}

/* ---- the clients (never instrumented) ---- */

static struct sockaddr_in server;

NOTRACE static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fail("socket");
    if (connect(fd, (const struct sockaddr *)&server, sizeof server) != 0)
        fail("connect");
    return fd;
}

/* Request k on connection i, and its answer. */
NOTRACE static void request(int fd, long i, long k)
{
    char msg[MSG], want[MSG], got[MSG];
    format_msg(msg, "REQ", i, k);
    if (send_all(fd, msg, MSG) != 0)
        fail("send");
    if (recv_msg(fd, got) != MSG)
        fail("recv of an answer");
    format_msg(want, "ANS", i, i * 1000 + k * k + 1);
    if (memcmp(got, want, MSG) != 0) {
        printf("error: connection %ld request %ld: wrong answer %.32s\n", i, k, got);
        fflush(stdout);
        _exit(1);
    }
}

NOTRACE static void *client(void *arg)
{
    for (long i = (long)arg; i < CONNS; i += CLIENTS) {
        int fd = dial();
        for (long k = 0; k < reqs(i); k++)
            request(fd, i, k);
        if (ending(i)) {
            char msg[MSG];
            format_msg(msg, "REQ", i, reqs(i));
            if (send_all(fd, msg, PARTIAL) != 0)
                fail("send of a partial request");
        }
        if (ending(i) == 2) {
            struct linger lg = {1, 0};
            if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) != 0)
                fail("SO_LINGER");
        }
        close(fd);
    }
    return NULL;
}

/* Waits until the server has accepted `acc` connections, `act` are still open, `rep` requests
 * have been answered and `bsy` handlers are busy for good. */
NOTRACE static void wait_server(long acc, long act, long rep, long bsy)
{
    pthread_mutex_lock(&mu);
    while (accepted != acc || active != act || replied != rep || busy != bsy)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static int term_pipe[2];

NOTRACE static void on_term(int sig)
{
    (void)sig;
    int saved = errno;
    char c = 't';
    if (write(term_pipe[1], &c, 1) != 1)
        _exit(3);
    errno = saved;
}

/* The counts, with `held` connections still open, answered (busy 0) or busy for good (busy 1:
 * their threads' enters are not known, and their lines say -1). */
NOTRACE static void print_counts(long held, int busy_held)
{
    long requests = 0, errors = 0;
    for (long i = 0; i < CONNS; i++) {
        requests += reqs(i);
        errors += ending(i) != 0;
    }
    printf("count serve_listener 1\n");
    printf("count on_accept %ld\n", CONNS + held);
    printf("count serve_conn %ld\n", CONNS + held);
    printf("count parse %ld\n", requests + held);
    printf("count handle %ld\n", requests + held);
    printf("count reply %ld\n", requests + (busy_held ? 0 : held));
    printf("count conn_error %ld\n", errors);
    if (held) {
        printf("open serve_listener 1\n");
        printf("open serve_conn %ld\n", held);
    }
    if (busy_held) {
        printf("open handle %ld\n", held);
        printf("busy work %ld\n", held);
    }
    printf("threads %ld\n", 1 + CONNS + held);
    printf("threadwork %ld\n", 1 + CONNS + held); /* the acceptor */
    for (long i = 0; i < CONNS; i++)
        printf("threadwork %ld\n", 1 + 3 * reqs(i) + (ending(i) != 0));
    for (long h = 0; h < held; h++)
        printf("threadwork %d\n", busy_held ? -1 : 4);
    fflush(stdout);
}

NOTRACE int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int term = strcmp(mode, "term") == 0, termexit = strcmp(mode, "termexit") == 0,
        termbusy = strcmp(mode, "termbusy") == 0;
    if (!term && !termexit && !termbusy && *mode) {
        printf("usage: connprog [term|termexit|termbusy]\n");
        return 2;
    }
    if (termexit || termbusy) {
        if (pipe(term_pipe) != 0)
            fail("pipe");
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGTERM, &sa, NULL) != 0)
            fail("sigaction");
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0)
        fail("socket");
    server.sin_family = AF_INET;
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    server.sin_port = 0;
    socklen_t len = sizeof server;
    if (bind(lfd, (const struct sockaddr *)&server, sizeof server) != 0 || listen(lfd, 128) != 0 ||
        getsockname(lfd, (struct sockaddr *)&server, &len) != 0)
        fail("listen");

    pthread_t acc, cl[CLIENTS];
    if (pthread_create(&acc, NULL, acceptor, (void *)(long)lfd) != 0)
        fail("pthread_create");
    for (long c = 0; c < CLIENTS; c++)
        if (pthread_create(&cl[c], NULL, client, (void *)c) != 0)
            fail("pthread_create");
    for (long c = 0; c < CLIENTS; c++)
        pthread_join(cl[c], NULL);
    long requests = 0;
    for (long i = 0; i < CONNS; i++)
        requests += reqs(i);
    wait_server(CONNS, 0, requests, 0);
    if (failures) {
        printf("error: %ld handlers failed otherwise than by a reset\n", failures);
        return 1;
    }

    if (!*mode) {
        shutdown(lfd, SHUT_RDWR);
        pthread_join(acc, NULL);
        close(lfd);
        print_counts(0, 0);
        return 0;
    }

    int held[HELD];
    for (long h = 0; h < HELD; h++) {
        held[h] = dial();
        if (termbusy) {
            char msg[MSG];
            format_msg(msg, "REQ", CONNS + h, BUSY);
            if (send_all(held[h], msg, MSG) != 0)
                fail("send");
        } else {
            request(held[h], CONNS + h, 0);
        }
    }
    wait_server(CONNS + HELD, HELD, requests + (termbusy ? 0 : HELD), termbusy ? HELD : 0);
    print_counts(HELD, termbusy);
    if (term) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        kill(getpid(), SIGTERM);
        for (;;)
            pause();
    }
    kill(getpid(), SIGTERM);
    char c;
    while (read(term_pipe[0], &c, 1) != 1)
        if (errno != EINTR)
            fail("read");
    printf("stopping\n");
    exit(0);
}
