/* Messages and configuration.
 *
 * Every message goes to stderr in one write(2), prefixed "sledtrace: ", filtered by
 * SLEDTRACE_LOG. errno is preserved. Configuration is read once at start-up from the
 * environment and copied (nothing points into the environment block afterwards); a bad value is
 * reported once and replaced by its default.
 *
 * Quiet descendants: LD_PRELOAD reaches every process a traced program starts (sh, cat,
 * compilers), and most of them have nothing to trace. At the default level such a process must
 * leave its stderr exactly as untraced, so warnings are held from start-up until the process is
 * known to trace something (str_log_release(1): printed then, in order) or known to trace
 * nothing (str_log_release(0): dropped; SLEDTRACE_LOG=info shows them as they happen). Errors are
 * never held. Held text is bounded; what does not fit is counted and said on release.
 *
 * Only the stderr the process started with: descriptor 2 is identified (device and inode) when
 * the configuration is read at start-up (or at the first message, if one comes earlier), and a
 * message is written only while descriptor 2 still names that file. A daemon that closed its
 * stderr and whose next open() became descriptor 2 (a data file, a socket) never gets the
 * runtime's text in it; a process started without a descriptor 2 gets none at all. One fstat per
 * message (async-signal-safe: the fatal-signal path logs too).
 */
#include "str.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct str_config str_cfg = {
    .output = ".",
    .log_level = STR_WARN,
    .flush_ms = 100,
    .chunk_size = 64 * 1024,
    .nchunks = 16,
    .disable = 0,
    .policy = STR_LOSSLESS,
    .dump_signal = SIGUSR2,
    .file_mode = 0600,
};

/* The stderr the process started with (see the top): captured once. */
static struct {
    int state; /* 0: not yet looked at, 1: dev and ino hold it, -1: there was none */
    dev_t dev;
    ino_t ino;
} err_id;

static void stderr_capture(void)
{
    struct stat st;
    if (err_id.state)
        return;
    if (fstat(STDERR_FILENO, &st) == 0) {
        err_id.dev = st.st_dev;
        err_id.ino = st.st_ino;
        err_id.state = 1;
    } else {
        err_id.state = -1;
    }
}

/* Descriptor 2 still names the stderr the process started with. */
static int stderr_ours(void)
{
    stderr_capture();
    struct stat st;
    return err_id.state == 1 && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == err_id.dev &&
           st.st_ino == err_id.ino;
}

static void put_stderr(const void *buf, size_t len)
{
    if (!stderr_ours())
        return;
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

static char held[2048];
static size_t held_len;
static unsigned held_over;
static int releasing; /* 0: holding warnings, 1: released (printing) */

void str_log_release(int print)
{
    int saved = errno;
    if (!releasing && print && held_len)
        put_stderr(held, held_len);
    releasing = 1;
    held_len = 0;
    if (print && held_over)
        str_log(STR_WARN, "%u more start-up warnings not shown", held_over);
    held_over = 0;
    errno = saved;
}

void str_log(int level, const char *fmt, ...)
{
    if (level > str_cfg.log_level)
        return;
    int saved = errno;
    static const char *const names[] = {"error", "warning", "info", "debug"};
    char msg[1024], buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t mlen = m < 0 ? 0 : (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;
    int n = snprintf(buf, sizeof buf, "sledtrace: %s: ", names[level]);
    size_t len = (size_t)n;
    /* Messages carry names the runtime did not choose (paths, symbols): control bytes (C0, DEL,
     * UTF-8-encoded C1) are written as \xNN, so that none reaches the terminal. */
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < mlen && len + 8 < sizeof buf - 1; i++) {
        unsigned char c = (unsigned char)msg[i];
        int c1 = c == 0xc2 && i + 1 < mlen && (unsigned char)msg[i + 1] >= 0x80 &&
                 (unsigned char)msg[i + 1] <= 0x9f;
        if (c < 0x20 || c == 0x7f || c1) {
            for (int k = 0; k <= c1; k++) {
                unsigned char b = (unsigned char)msg[i + (size_t)k];
                buf[len++] = '\\';
                buf[len++] = 'x';
                buf[len++] = hex[b >> 4];
                buf[len++] = hex[b & 15];
            }
            i += (size_t)c1;
        } else {
            buf[len++] = (char)c;
        }
    }
    buf[len++] = '\n';
    if (!releasing && level == STR_WARN && str_cfg.log_level < STR_INFO) {
        if (held_len + len <= sizeof held) {
            memcpy(held + held_len, buf, len);
            held_len += len;
        } else {
            held_over++;
        }
        errno = saved;
        return;
    }
    put_stderr(buf, len);
    errno = saved;
}

/* Parses an unsigned decimal in [lo, hi]; on a bad value warns and keeps *out. */
static void get_uint(const char *name, unsigned long lo, unsigned long hi, unsigned long *out)
{
    const char *v = getenv(name);
    if (!v)
        return;
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) {
        str_log(STR_WARN, "%s=%s is not a whole number in %lu..%lu; using %lu", name, v, lo, hi,
                *out);
        return;
    }
    *out = x;
}

/* A signal by name (USR2, SIGUSR2...) or number; 0 if unknown or one sledtrace cannot take: KILL
 * and STOP cannot be caught, and the fatal signals have their own handling (signals.c). */
static int parse_signal(const char *v)
{
    static const struct {
        const char *name;
        int sig;
    } names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2},    {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
                 {"URG", SIGURG},   {"WINCH", SIGWINCH},  {"PWR", SIGPWR}, {"SYS", SIGSYS},
                 {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}};
    const char *n = strncmp(v, "SIG", 3) == 0 ? v + 3 : v;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(n, names[i].name) == 0)
            return names[i].sig;
    char *end;
    long num = strtol(v, &end, 10);
    if (!*v || *end || num < 1 || num > SIGRTMAX || num == SIGKILL || num == SIGSTOP ||
        num == SIGSEGV || num == SIGBUS || num == SIGFPE || num == SIGILL || num == SIGABRT)
        return 0;
    return (int)num;
}

/* Settings are copied: the program may write over its environment block later (servers that
 * set their process title do), and a fork child or a dlopen still needs them. */
static const char *keep(const char *name, const char *v)
{
    char *copy = strdup(v);
    if (!copy)
        str_log(STR_WARN, "out of memory copying %s; ignored", name);
    return copy;
}

/* SLEDTRACE_EXCLUDE_FILE: the file's text, read whole here, at start-up, so that a program
 * that chdirs or installs a seccomp filter later still has it at a dlopen (filter.c parses it
 * when the first function is tested). Opened without blocking, and only a regular file is read:
 * a FIFO with no writer must not hang the program. A file that cannot be read is said once (a
 * warning, held like any other, so quiet in processes that trace nothing; at info level in a
 * descendant of `sledtrace run`'s program, as for patterns that match nothing), and the process
 * is traced as if the variable were not given: the file only makes tracing cheaper, a trace
 * with every function is still right, and a run that is not traced at all may not be
 * repeatable; `sledtrace run --exclude-file` refuses a file it cannot read before the program
 * starts. NULL when unread. */
enum { MAX_EXCLUDE_FILE = 16 << 20 };

static const char *read_exclude_file(const char *path)
{
    const char *why = NULL;
    char *text = NULL;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_size > MAX_EXCLUDE_FILE)
        why = "larger than 16 MiB";
    else if (!(text = malloc((size_t)st.st_size + 1)))
        why = "out of memory";
    size_t len = 0;
    while (!why && len < (size_t)st.st_size) {
        ssize_t n = read(fd, text + len, (size_t)st.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            why = strerror(errno);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    if (why) {
        free(text);
        str_log(str_cfg.descendant ? STR_INFO : STR_WARN,
                "SLEDTRACE_EXCLUDE_FILE=%s: cannot read it (%s); tracing as if it were not given",
                path, why);
        return NULL;
    }
    text[len] = '\0'; /* a NUL byte inside ends it too */
    return text;
}

/* The output directory, made absolute once: a program that chdirs later still traces (and its
 * fork children still trace) where the user asked. Kept relative if the working directory
 * cannot be named (deleted, or too long). */
static const char *resolve_output(const char *dir)
{
    static char buf[PATH_MAX];
    char cwd[PATH_MAX];
    if (dir[0] == '/' || !getcwd(cwd, sizeof cwd)) {
        snprintf(buf, sizeof buf, "%s", dir);
        return buf;
    }
    if (strcmp(dir, ".") == 0)
        snprintf(buf, sizeof buf, "%s", cwd);
    else if ((size_t)snprintf(buf, sizeof buf, "%s/%s", strcmp(cwd, "/") ? cwd : "", dir) >=
             sizeof buf)
        snprintf(buf, sizeof buf, "%s", dir);
    return buf;
}

/* The proof cache's directory (patcher/cache.c): SLEDTRACE_CACHE (an absolute path, or off),
 * else $XDG_CACHE_HOME/sledtrace (when absolute, as the XDG rules ask), else
 * $HOME/.cache/sledtrace, else (a process started with no HOME: a daemon, `env -i`, a test
 * harness's child) sledtrace-cache-<euid> in $TMPDIR (when absolute) or /tmp: without it every
 * such process proved its sleds again, 2.2 ms for a one-function program. The cache refuses a
 * directory that is not the user's own and private (patcher/cache.c), so another user who
 * creates that name first only leaves the process without a cache. */
static const char *resolve_cache(void)
{
    static char buf[PATH_MAX];
    const char *v = getenv("SLEDTRACE_CACHE");
    if (v && *v) {
        if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)
            return NULL;
        if (v[0] != '/' || strlen(v) >= sizeof buf) {
            str_log(STR_WARN, "SLEDTRACE_CACHE=%s is not an absolute path or off; no proof cache",
                    v);
            return NULL;
        }
        snprintf(buf, sizeof buf, "%s", v);
        return buf;
    }
    v = getenv("XDG_CACHE_HOME");
    int n;
    if (v && v[0] == '/')
        n = snprintf(buf, sizeof buf, "%s/sledtrace", v);
    else if ((v = getenv("HOME")) != NULL && v[0] == '/')
        n = snprintf(buf, sizeof buf, "%s/.cache/sledtrace", strcmp(v, "/") ? v : "");
    else if ((v = getenv("TMPDIR")) != NULL && v[0] == '/')
        n = snprintf(buf, sizeof buf, "%s/sledtrace-cache-%u", strcmp(v, "/") ? v : "",
                     (unsigned)geteuid());
    else
        n = snprintf(buf, sizeof buf, "/tmp/sledtrace-cache-%u", (unsigned)geteuid());
    return n > 0 && (size_t)n < sizeof buf ? buf : NULL;
}

void str_config_load(void)
{
    int saved = errno;
    stderr_capture(); /* before the program can move descriptor 2 */
    const char *v = getenv("SLEDTRACE_LOG");
    if (v) {
        static const char *const levels[] = {"error", "warn", "info", "debug"};
        int found = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(v, levels[i]) == 0)
                found = i;
        if (found < 0)
            str_log(STR_WARN, "SLEDTRACE_LOG=%s is not one of error|warn|info|debug; using warn",
                    v);
        else
            str_cfg.log_level = found;
    }
    v = getenv("SLEDTRACE_DISABLE");
    if (v) {
        if (strcmp(v, "1") == 0)
            str_cfg.disable = 1;
        else if (strcmp(v, "0") != 0 && *v)
            str_log(STR_WARN, "SLEDTRACE_DISABLE=%s is not 0 or 1; using 0", v);
    }
    v = getenv("SLEDTRACE_POLICY");
    if (v) {
        if (strcmp(v, "discard") == 0)
            str_cfg.policy = STR_DISCARD;
        else if (strcmp(v, "flight") == 0)
            str_cfg.policy = STR_FLIGHT;
        else if (strcmp(v, "lossless") != 0)
            str_log(STR_WARN,
                    "SLEDTRACE_POLICY=%s is not one of lossless|discard|flight; using lossless", v);
    }
    v = getenv("SLEDTRACE_DUMP_SIGNAL");
    if (v) {
        int sig = parse_signal(v);
        if (sig)
            str_cfg.dump_signal = sig;
        else
            str_log(STR_WARN,
                    "SLEDTRACE_DUMP_SIGNAL=%s is not a signal name or number sledtrace can use "
                    "(not KILL, STOP, SEGV, BUS, FPE, ILL or ABRT); using USR2",
                    v);
    }
    v = getenv("SLEDTRACE_TOGGLE_SIGNAL");
    if (v && *v) {
        int sig = parse_signal(v);
        if (sig)
            str_cfg.toggle_signal = sig;
        else
            str_log(STR_WARN,
                    "SLEDTRACE_TOGGLE_SIGNAL=%s is not a signal name or number sledtrace can use "
                    "(not KILL, STOP, SEGV, BUS, FPE, ILL or ABRT); no toggle signal",
                    v);
    }
    v = getenv("SLEDTRACE_CLOCK");
    if (v) {
        if (strcmp(v, "tsc") == 0)
            str_cfg.clock = STR_CLOCK_TSC;
        else if (strcmp(v, "monotonic") == 0)
            str_cfg.clock = STR_CLOCK_MONOTONIC;
        else if (strcmp(v, "auto") != 0)
            str_log(STR_WARN, "SLEDTRACE_CLOCK=%s is not one of auto|tsc|monotonic; using auto", v);
    }
    v = getenv("SLEDTRACE_FILTER");
    if (v && *v)
        str_cfg.filter = keep("SLEDTRACE_FILTER", v);
    v = getenv("SLEDTRACE_EXCLUDE");
    if (v && *v)
        str_cfg.exclude = keep("SLEDTRACE_EXCLUDE", v);
    v = getenv("SLEDTRACE_ARGS");
    if (v && *v)
        str_cfg.args = keep("SLEDTRACE_ARGS", v);
    v = getenv("SLEDTRACE_WAITS");
    if (v)
        str_cfg.waits = keep("SLEDTRACE_WAITS", v);
    v = getenv("SLEDTRACE_RUN_PID");
    if (v && *v && strtol(v, NULL, 10) != (long)getpid())
        str_cfg.descendant = 1;
    v = getenv("SLEDTRACE_EXCLUDE_FILE"); /* after SLEDTRACE_RUN_PID: a descendant is quiet */
    if (v && *v)
        str_cfg.exclude_text = read_exclude_file(v);
    v = getenv("SLEDTRACE_RUN_ID");
    if (v && *v && strlen(v) <= 64 && strspn(v, "0123456789abcdef") == strlen(v))
        str_cfg.run_id = keep("SLEDTRACE_RUN_ID", v);
    v = getenv("SLEDTRACE_OUTPUT");
    if (v && !*v)
        str_log(STR_WARN, "SLEDTRACE_OUTPUT is empty; using the current directory");
    str_cfg.output = resolve_output(v && *v ? v : ".");
    str_cfg.cache_dir = resolve_cache();
    v = getenv("SLEDTRACE_FILE_MODE");
    if (v && *v) {
        char *end;
        errno = 0;
        unsigned long m = strtoul(v, &end, 8);
        if (errno || *end || m > 0666)
            str_log(STR_WARN, "SLEDTRACE_FILE_MODE=%s is not an octal mode up to 0666; using 0600",
                    v);
        else
            str_cfg.file_mode = (unsigned)m;
    }
    v = getenv("SLEDTRACE_MAX_SIZE");
    if (v && *v) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        unsigned shift = 0;
        if (*end == 'K' || *end == 'k')
            shift = 10;
        else if (*end == 'M' || *end == 'm')
            shift = 20;
        else if (*end == 'G' || *end == 'g')
            shift = 30;
        else if (*end == 'T' || *end == 't')
            shift = 40;
        if (shift)
            end++;
        if (errno || end == v || *end || v[0] == '-' || (n && (n << shift) >> shift != n))
            str_log(STR_WARN,
                    "SLEDTRACE_MAX_SIZE=%s is not a size (bytes, or with K, M, G, T; 0 for no "
                    "cap); using half the free space",
                    v);
        else {
            str_cfg.max_size = (uint64_t)n << shift;
            str_cfg.max_size_set = 1;
        }
    }
    v = getenv("SLEDTRACE_MIN_DURATION");
    if (v && *v) {
        /* a number (fraction allowed) and a unit: ns, us, ms or s; a bare number is ns */
        char *end;
        errno = 0;
        double d = strtod(v, &end);
        double scale = strcmp(end, "") == 0 || strcmp(end, "ns") == 0 ? 1
                       : strcmp(end, "us") == 0                       ? 1e3
                       : strcmp(end, "ms") == 0                       ? 1e6
                       : strcmp(end, "s") == 0                        ? 1e9
                                                                      : -1;
        if (errno || end == v || scale < 0 || !(d >= 0) || d * scale > 60e9 || *v == '-')
            str_log(STR_WARN,
                    "SLEDTRACE_MIN_DURATION=%s is not a duration (10us, 1.5ms; at most 60s); "
                    "every call is recorded",
                    v);
        else
            str_cfg.min_duration_ns = (uint64_t)(d * scale);
    }
    unsigned long x = str_cfg.flush_ms;
    get_uint("SLEDTRACE_FLUSH_MS", 1, 60000, &x);
    str_cfg.flush_ms = (unsigned)x;
    x = str_cfg.chunk_size / 1024;
    get_uint("SLEDTRACE_BUFFER_KB", 4, 16384, &x);
    str_cfg.chunk_size = x * 1024;
    x = str_cfg.nchunks;
    get_uint("SLEDTRACE_BUFFERS", 2, 4096, &x);
    str_cfg.nchunks = (unsigned)x;
    errno = saved;
}

/* Moves fd to the highest free descriptor number below the soft RLIMIT_NOFILE (at most 1023,
 * where select() still works and the kernel's table stays small), close-on-exec; returns the new
 * number, or fd itself if none of the top 64 is free. The kernel gives a program the lowest free
 * number, so a descriptor up there never shifts the program's own numbering; the program can
 * still open one file fewer when it uses every number up to its limit. */
int str_fd_high(int fd)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return fd;
    long top = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1024 ? 1023 : (long)rl.rlim_cur - 1;
    for (long n = top; n > fd && n > top - 64; n--) {
        if (fcntl((int)n, F_GETFD) != -1 || errno != EBADF)
            continue; /* in use */
        if (dup3(fd, (int)n, O_CLOEXEC) == n) {
            close(fd);
            return (int)n;
        }
    }
    return fd;
}
