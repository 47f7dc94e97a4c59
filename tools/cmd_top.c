/* sledtrace top: follow a trace while the runtime is still writing it (issue 16.3).
 *
 * Every interval the whole trace is read again (the stack rule of account, callstack.h: a call
 * counts once it has closed, in the snapshot where its exit first appears) into per-function
 * self time and calls; the difference from the previous snapshot is the last interval. The
 * runtime appends whole blocks (its flush thread, every SLEDTRACE_FLUSH_MS), so a snapshot is
 * the trace as far as it has reached the file; a torn last block is skipped quietly (the
 * reader's warnings would scribble over the screen: stderr is parked on /dev/null while a
 * snapshot is read, and the last error is shown on the screen instead).
 *
 * Ends when the traced process (the trace's Pid record) no longer exists, after one last
 * snapshot, or on 'q' (the terminal is put in non-canonical mode, restored on every way out,
 * SIGINT and SIGTERM included), or after one snapshot with --once (plain text, no escape codes).
 * Cost: each refresh reads the whole trace; memory is per function. */
#include "callstack.h"
#include "output.h"
#include "window.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace top [TRACE] [--interval MS] [--rows N] [--once] [--raw-times]\n"
          "                     [--tid N] [--filter P] [--exclude P] [--max-depth N]\n"
          "                     [--min-duration TIME]\n"
          "\n"
          "Follow a trace the runtime is still writing (it reaches the file every\n"
          "SLEDTRACE_FLUSH_MS, default 100 ms) and show, refreshed, the functions with the\n"
          "most self time in the last interval, their self time and calls overall, calls per\n"
          "second and events the runtime dropped. Calls count once they have returned. Quits\n"
          "when the traced process has ended, or on 'q'.\n"
          "\n"
          "  --interval MS  refresh period (default 1000)\n"
          "  --rows N       functions shown (default: what fits the terminal, else 20)\n"
          "  --once         one snapshot of the whole trace as plain text, then exit\n"
          "  --tid N        only thread N\n"
          "  --filter P, --exclude P, --max-depth N, --min-duration TIME\n"
          "                 only the calls these show, as for account (sledtrace account\n"
          "                 --help), each with its own self time; top takes no time\n"
          "                 window (it follows the trace as it grows)\n",
          out);
}

struct fstat {
    uint32_t id;
    uint64_t self, calls;           /* overall, self in ticks */
    uint64_t prev_self, prev_calls; /* at the previous snapshot */
    char *name;
};

struct snap {
    struct u64map ids;
    struct fstat *f;
    size_t n, cap;
    uint64_t calls, lost, freq;
    int32_t pid;
    /* --tid, and the call filters (window.h): only the calls they show count, each with its
     * own self time */
    bool one;
    int32_t tid;
    const struct tool_window *w; /* NULL: none */
    const struct stf_syms *syms; /* during a snapshot */
};

static void snap_free(struct snap *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->f[i].name);
    free(s->f);
    u64map_free(&s->ids);
}

static int on_close(void *ctx, const struct cs_close *c)
{
    struct snap *s = ctx;
    if (s->w && tool_window_close(s->w, s->syms, c, s->freq) != TW_SHOW)
        return 0;
    bool added;
    long k = u64map_get(&s->ids, c->f->id, &added);
    if (k < 0)
        return -1;
    if (added) {
        if ((size_t)k >= s->cap) {
            struct fstat *g = tool_grow(s->f, &s->cap, sizeof *s->f, 64);
            if (!g)
                return -1;
            s->f = g;
        }
        s->f[k] = (struct fstat){.id = c->f->id};
        s->n++;
    }
    s->f[k].self += c->self;
    s->f[k].calls++;
    return 0;
}

/* Read the trace once more into s (overall figures reset first; prev_ kept). Errors go to err. */
static int snapshot(struct snap *s, const char *path, bool quiet, char *err, size_t errlen)
{
    int saved = -1;
    if (quiet) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) {
            saved = tool_redirect(STDERR_FILENO, null);
            close(null);
        }
    }
    for (size_t i = 0; i < s->n; i++)
        s->f[i].self = s->f[i].calls = 0;
    s->calls = s->lost = 0;
    struct tool_trace t;
    int status = tool_trace_open(&t, path, NULL, "reading", false);
    if (status == EXIT_OK) {
        s->freq = t.freq;
        s->syms = t.syms;
        t.one = s->one;
        t.tid = s->tid;
        struct callstack cs = {.signed_dur = tool_trace_corrected(&t)};
        static const struct cs_ops ops = {.close = on_close};
        struct stf_item it;
        int rc;
        while ((rc = tool_trace_next(&t, &it)) == STF_OK) {
            if (it.pid > 0 && !s->pid)
                s->pid = it.pid;
            if (cs_feed(&cs, &it, &ops, s) != 0) {
                rc = STF_OK;
                status = EXIT_BAD_TRACE;
                snprintf(err, errlen, "out of memory");
                break;
            }
        }
        if (tool_trace_end(&t, rc) != EXIT_OK && status == EXIT_OK) {
            status = EXIT_BAD_TRACE;
            if (quiet) /* else tool_trace_end said why */
                snprintf(err, errlen, "%s: unreadable (see 'sledtrace dump --verify')", path);
        }
        s->calls = cs.calls;
        s->lost = cs.gap_events;
        for (size_t i = 0; i < s->n; i++)
            if (!s->f[i].name) {
                char buf[32];
                s->f[i].name = strdup(stf_syms_name(t.syms, s->f[i].id, buf, sizeof buf));
                if (!s->f[i].name) {
                    status = EXIT_BAD_TRACE;
                    snprintf(err, errlen, "out of memory");
                    break;
                }
            }
        cs_free(&cs);
        s->syms = NULL;
        tool_trace_close(&t);
    } else if (quiet) {
        snprintf(err, errlen, "%s: cannot be read", path); /* else tool_trace_open said why */
    }
    tool_unredirect(STDERR_FILENO, saved);
    return status;
}

/* a - b, or 0 when a snapshot read less than the one before (a read that failed halfway) */
static uint64_t since(uint64_t a, uint64_t b)
{
    return cs_ticks(a - b); /* corrected sums are signed (callstack.h): a drop is 0 */
}

static const struct snap *g_sort;
static int by_interval(const void *pa, const void *pb)
{
    const struct fstat *a = &g_sort->f[*(const size_t *)pa], *b = &g_sort->f[*(const size_t *)pb];
    uint64_t x = since(a->self, a->prev_self), y = since(b->self, b->prev_self);
    if (x != y)
        return x < y ? 1 : -1;
    if (cs_ticks(a->self) != cs_ticks(b->self))
        return cs_ticks(a->self) < cs_ticks(b->self) ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* Set by SIGINT/SIGTERM, read by the loop: one thread, so relaxed (no data is published). */
static atomic_int stop_signal;
static void on_stop(int sig)
{
    atomic_store_explicit(&stop_signal, sig, memory_order_relaxed);
}

static int stopped(void)
{
    return atomic_load_explicit(&stop_signal, memory_order_relaxed);
}

static struct termios saved_tio;
static bool tio_saved;

static void restore_terminal(void)
{
    if (tio_saved)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
    tio_saved = false;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One screen (or, with once, the plain table of the whole trace). */
static void draw(const struct snap *s, const char *path, bool once, bool ended, double dt,
                 uint64_t prev_calls, uint64_t prev_lost, size_t rows, const char *err)
{
    size_t *ord = malloc((s->n ? s->n : 1) * sizeof *ord);
    if (!ord)
        return;
    for (size_t i = 0; i < s->n; i++)
        ord[i] = i;
    g_sort = s;
    qsort(ord, s->n, sizeof *ord, by_interval);
    if (!once)
        fputs("\033[H\033[2J", stdout);
    char cps[32] = "-";
    if (!once && dt > 0)
        snprintf(cps, sizeof cps, "%.0f", (double)since(s->calls, prev_calls) / dt);
    printf("sledtrace top: %s, pid %" PRId32 "%s\n", path, s->pid,
           once    ? ""
           : ended ? " (ended)"
                   : " (running)");
    if (once)
        printf("calls: %" PRIu64 "  functions: %zu  dropped events: %" PRIu64 "\n\n", s->calls,
               s->n, s->lost);
    else
        printf("calls: %" PRIu64 " (%s/s)  functions: %zu  dropped events: %" PRIu64 " (+%" PRIu64
               ")  q: quit\n\n",
               s->calls, cps, s->n, s->lost, since(s->lost, prev_lost));
    if (err && *err)
        printf("! %s\n", err);
    if (once)
        printf("%12s %12s  %s\n", "self", "calls", "function");
    else
        printf("%12s %12s %12s %12s  %s\n", "self (last)", "self (all)", "calls (last)",
               "calls (all)", "function");
    for (size_t k = 0; k < s->n && k < rows; k++) {
        const struct fstat *f = &s->f[ord[k]];
        char a[32], b[32];
        tool_fmt_ns(a, sizeof a, tool_ticks_to_ns(since(f->self, f->prev_self), s->freq));
        tool_fmt_ns(b, sizeof b, tool_ticks_to_ns(cs_ticks(f->self), s->freq));
        if (once)
            printf("%12s %12" PRIu64 "  %s\n", b, f->calls, f->name);
        else
            printf("%12s %12s %12" PRIu64 " %12" PRIu64 "  %s\n", a, b,
                   since(f->calls, f->prev_calls), f->calls, f->name);
    }
    fflush(stdout);
    free(ord);
}

int cmd_top(int argc, char **argv)
{
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    const char *path = NULL;
    uint64_t interval = 1000, rows = 0;
    bool once = false, one = false;
    int32_t tid = 0;
    struct tool_window win = {0};
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if (strcmp(argv[i], "--raw-times") == 0) {
            tool_raw_times = true;
        } else if (strcmp(argv[i], "--once") == 0) {
            once = true;
        } else if ((m = tool_option(argc, argv, &i, "top", "--interval", &v)) != 0) {
            if (m < 0 || !tool_parse_u64(v, &interval) || interval < 10 || interval > 3600000) {
                if (m > 0)
                    tool_err("top: --interval needs milliseconds (10 to 3600000), not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_option(argc, argv, &i, "top", "--rows", &v)) != 0) {
            if (m < 0 || !tool_parse_u64(v, &rows) || rows == 0) {
                if (m > 0)
                    tool_err("top: --rows needs a positive number, not '%s'", v);
                return EXIT_USAGE;
            }
        } else if ((m = tool_tid_option(argc, argv, &i, "top", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            one = true;
        } else if (strncmp(argv[i], "--from", 6) != 0 && strncmp(argv[i], "--to", 4) != 0 &&
                   (m = tool_window_option(argc, argv, &i, "top", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            tool_err("top: unknown option '%s' (see 'sledtrace top --help')", argv[i]);
            return EXIT_USAGE;
        } else if (path) {
            tool_err("top: one TRACE only");
            return EXIT_USAGE;
        } else {
            path = argv[i];
        }
    }
    if (!tool_default_trace(&path, "top"))
        return EXIT_USAGE;
    if (!rows) {
        struct winsize ws;
        rows = !once && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 8
                   ? (uint64_t)ws.ws_row - 6
                   : 20;
    }
    struct snap s = {.one = one, .tid = tid, .w = tool_window_filtered(&win) ? &win : NULL};
    char err[256] = "";
    /* the first snapshot must succeed: a trace that cannot be read is an error, said plainly */
    int st = snapshot(&s, path, false, err, sizeof err);
    if (st != EXIT_OK || once) {
        if (st == EXIT_OK)
            draw(&s, path, true, true, 0, 0, 0, (size_t)rows, NULL);
        else if (*err)
            tool_err("top: %s", err);
        snap_free(&s);
        return st;
    }
    struct sigaction sa = {.sa_handler = on_stop}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    bool tty = isatty(STDIN_FILENO);
    if (tty && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
        struct termios raw = saved_tio;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        tio_saved = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    uint64_t prev_calls = s.calls, prev_lost = s.lost;
    double last = now_s(), dt = 0;
    bool ended = false;
    for (;;) {
        draw(&s, path, false, ended, dt, prev_calls, prev_lost, (size_t)rows, err);
        if (ended || stopped())
            break;
        /* wait an interval, or for 'q' */
        bool quit = false;
        double until = last + (double)interval / 1000;
        for (double t = now_s(); t < until && !quit && !stopped(); t = now_s()) {
            struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
            int r = poll(&p, tty ? 1 : 0, (int)((until - t) * 1000) + 1);
            if (r > 0 && (p.revents & POLLIN)) {
                char c;
                ssize_t got = read(STDIN_FILENO, &c, 1);
                quit = got == 1 && (c == 'q' || c == 'Q');
                if (got == 0)
                    tty = false; /* end of input: stop polling it */
            } else if (r > 0) {
                tty = false;
            }
        }
        if (quit || stopped())
            break;
        /* the process's state first: a snapshot taken after it ended holds its last events */
        ended = s.pid > 0 && kill(s.pid, 0) != 0 && errno == ESRCH;
        for (size_t i = 0; i < s.n; i++) {
            s.f[i].prev_self = s.f[i].self;
            s.f[i].prev_calls = s.f[i].calls;
        }
        prev_calls = s.calls;
        prev_lost = s.lost;
        err[0] = '\0';
        if (ended)
            usleep(200 * 1000); /* its exit path flushes the last buffers */
        snapshot(&s, path, true, err, sizeof err);
        double t = now_s();
        dt = t - last;
        last = t;
    }
    restore_terminal();
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    snap_free(&s);
    return stopped() ? 128 + stopped() : EXIT_OK;
}
