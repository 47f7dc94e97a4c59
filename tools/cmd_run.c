/* sledtrace run and sledtrace live: start a program with the tracing runtime preloaded.
 *
 * Options set the runtime's environment (SLEDTRACE_OUTPUT, an absolute directory so that a chdir
 * in the program does not matter, and each setting below), and every value is checked here,
 * before the program starts, with the runtime's own rules: a typo is a usage error (exit 2), not
 * a warning in the program's stderr. A random SLEDTRACE_RUN_ID, written by the runtime into each
 * sidecar, tells this run's traces (the program's, the images it exec'd, its fork children's and
 * any descendant's that kept the environment) from others in the same directory. The command
 * forks + execvp's, waits while ignoring SIGINT/SIGQUIT (the terminal delivers them to the
 * program) and passing SIGTERM and SIGHUP on to the program (a `kill` of the run, as a harness
 * or a service manager sends, ends the program as it would end the run, rather than leave it
 * running without its tracer's parent), then lists on stderr the traces the run wrote (the program's first), optionally a
 * short report (--report: the top functions by self time, per trace), and exits with the
 * program's status, or 128 + signal number if a signal killed it (not re-raised). exec
 * failures exit 127 (126: permission), like shells. A run that wrote no trace says why.
 *
 * live: the same run into a temporary directory (or -o DIR, kept), then the call tree of every
 * trace on stdout (replay), like uftrace's live command.
 *
 * The runtime is --preload LIB, else found relative to this executable: ../preload/ (build
 * tree), then where meson installs it (SLEDTRACE_RUNTIME_REL, the path from the configured bindir
 * to libdir/sledtrace, so that a DESTDIR or unpacked tree works), ../lib/sledtrace/, ../lib/, and
 * last the configured absolute path (SLEDTRACE_RUNTIME_ABS). */
#include "common.h"
#include "callstack.h" /* cmd_replay */
#include "output.h"

#include "stp.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The program, while the run waits for it: SIGTERM and SIGHUP are passed on to it. Relaxed: the
 * handler runs in this thread, after the store (pid_t is lock-free). */
static _Atomic pid_t run_child;

static void forward(int sig)
{
    int saved = errno;
    pid_t pid = atomic_load_explicit(&run_child, memory_order_relaxed);
    if (pid > 0)
        kill(pid, sig);
    errno = saved;
}

static void help(FILE *out, bool live)
{
    fprintf(
        out,
        "usage: sledtrace %s [OPTIONS] -- PROG [ARGS...]\n"
        "\n"
        "%s"
        "\n"
        "  -o, --output DIR      directory for sledtrace.PROG.PID.fdr/.syms (default: %s)\n"
        "  --filter PATTERNS     trace only these functions (SLEDTRACE_FILTER): comma-separated\n"
        "                        [LIB:]GLOB on function names, C++ names demangled or not\n"
        "  --exclude PATTERNS    leave these functions out (SLEDTRACE_EXCLUDE)\n"
        "  --exclude-file FILE   leave out the functions FILE names: one pattern a line, '#'\n"
        "                        comments (SLEDTRACE_EXCLUDE_FILE, given as an absolute path;\n"
        "                        account --suggest-exclude -o FILE writes one)\n"
        "  --policy POLICY       lossless (default: wait for the writer), discard (drop and\n"
        "                        mark the gap), flight (keep the latest buffers only)\n"
        "  --clock CLOCK         auto (default), tsc, monotonic (SLEDTRACE_CLOCK)\n"
        "  --buffer-kb N         buffer size, 4..16384 KiB (SLEDTRACE_BUFFER_KB, default 64)\n"
        "  --buffers N           buffers per thread, 2..4096 (SLEDTRACE_BUFFERS, default 16)\n"
        "  --flush-ms N          flush period, 1..60000 ms (SLEDTRACE_FLUSH_MS, default 100)\n"
        "  --max-size SIZE       stop writing the trace past SIZE bytes (K, M, G, T; 0: no cap;\n"
        "                        default: none, but the run's traces stop when the disk's\n"
        "                        free space falls to half of what it is at the start)\n"
        "                        (SLEDTRACE_MAX_SIZE)\n"
        "  --log LEVEL           runtime messages: error, warn (default), info, debug\n"
        "  --min-duration TIME   calls shorter than TIME (10us, 2.5ms) leave no records but\n"
        "                        are counted: account's count and total include them\n"
        "                        (SLEDTRACE_MIN_DURATION)\n"
        "  --args PATTERNS       record the arguments and return values of the functions\n"
        "                        PATTERNS names: PATTERN[@argN,argN/s,args,retval],...\n"
        "                        (SLEDTRACE_ARGS)\n"
        "  --waits LIST          the blocking calls recorded as '[wait] NAME' pseudo-calls:\n"
        "                        all (default), none, or names: pthread_*,read\n"
        "                        (SLEDTRACE_WAITS)\n"
        "%s"
        "  --preload LIB         runtime library to preload (default: found next to sledtrace)\n",
        live ? "live" : "run",
        live ? "Run PROG (built with clang -fxray-instrument) with the sledtrace runtime\n"
               "preloaded, then print the call tree of every trace it wrote (sledtrace replay)\n"
               "on stdout. Exits with PROG's status (128+N if killed by signal N).\n"
             : "Run PROG (built with clang -fxray-instrument) with the sledtrace runtime\n"
               "preloaded, then list the traces the run wrote (the program's, its children's\n"
               "and of the images they exec'd) on stderr. Exits with PROG's status (128+N if\n"
               "killed by signal N).\n",
        live ? "a temporary directory, removed afterwards" : ".",
        live ? ""
             : "  --report[=N]          then print each trace's top N functions by self time\n"
               "                        on stderr (default 10)\n");
}

/* mkdir -p: every missing component of `path`, mode 0755 minus the umask (the runtime refuses
 * a directory others can write to). */
static int make_dirs(const char *path)
{
    char *buf = strdup(path);
    if (!buf)
        return -1;
    int rc = 0;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            rc = -1;
        *p = c;
        if (c == '\0' || rc != 0)
            break;
    }
    free(buf);
    return rc;
}

/* Directories set by tools/meson.build: the installed runtime's, relative to the configured
 * bindir (empty when bindir or libdir is absolute), and the same as an absolute path. */
#ifndef SLEDTRACE_RUNTIME_REL
#define SLEDTRACE_RUNTIME_REL ""
#endif
#ifndef SLEDTRACE_RUNTIME_ABS
#define SLEDTRACE_RUNTIME_ABS ""
#endif

/* dir/libsledtrace.so, resolved, if it is readable; else NULL. */
static char *runtime_in(const char *dir)
{
    char cand[PATH_MAX + 32];
    if (!*dir || (size_t)snprintf(cand, sizeof cand, "%s/libsledtrace.so", dir) >= sizeof cand ||
        access(cand, R_OK) != 0)
        return NULL;
    return realpath(cand, NULL);
}

/* The runtime next to this executable, else at its configured absolute path; NULL if none. */
static char *find_runtime(void)
{
    static const char *const rel[] = {
        "../preload",
        SLEDTRACE_RUNTIME_REL,
        "../lib/sledtrace",
        "../lib",
    };
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = NULL;
    if (n > 0) {
        exe[n] = '\0';
        slash = strrchr(exe, '/');
    }
    for (size_t i = 0; slash && i < sizeof rel / sizeof rel[0]; i++) {
        char dir[PATH_MAX + 64];
        if (!*rel[i] || (size_t)snprintf(dir, sizeof dir, "%.*s/%s", (int)(slash - exe), exe,
                                         rel[i]) >= sizeof dir)
            continue;
        char *lib = runtime_in(dir);
        if (lib)
            return lib;
    }
    return runtime_in(SLEDTRACE_RUNTIME_ABS);
}

/* Whether name[0..len) ends in ".PID". */
static int ends_with_pid(const char *name, size_t len, pid_t pid)
{
    char want[32];
    size_t wl = (size_t)snprintf(want, sizeof want, ".%ld", (long)pid);
    return len >= wl && strncmp(name + len - wl, want, wl) == 0;
}

/* True for "sledtrace.PROG.PID.fdr" and "sledtrace.PROG.PID.N.fdr" (traces of the images the
 * process exec'd: they keep its pid). */
static int is_trace_of(const char *name, pid_t pid)
{
    size_t len = strlen(name);
    if (strncmp(name, "sledtrace.", 10) != 0 || len < 14 || strcmp(name + len - 4, ".fdr") != 0)
        return 0;
    len -= 4;
    if (ends_with_pid(name, len, pid))
        return 1;
    size_t k = len;
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
        k--;
    return k < len && k > 0 && name[k - 1] == '.' && ends_with_pid(name, k - 1, pid);
}

/* The file execvp would run for name: name itself when it holds a '/', else the first
 * executable regular file of that name in $PATH. 0, or -1 when there is none. */
static int resolve_prog(const char *name, char *buf, size_t len)
{
    if (strchr(name, '/'))
        return snprintf(buf, len, "%s", name) < (int)len ? 0 : -1;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        int n = snprintf(buf, len, "%.*s%s%s", (int)dl, p, dl ? "/" : "", name);
        struct stat st;
        if (n > 0 && (size_t)n < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            return 0;
        if (!colon)
            return -1;
        p = colon + 1;
    }
}

/* What kind of file the program is, as far as preloading goes. */
enum prog_kind { PROG_UNKNOWN, PROG_SCRIPT, PROG_NOT_ELF, PROG_STATIC, PROG_DYNAMIC };

static enum prog_kind prog_kind(const char *path)
{
    FILE *f = fopen(path, "rbe");
    if (!f)
        return PROG_UNKNOWN;
    Elf64_Ehdr eh;
    size_t got = fread(&eh, 1, sizeof eh, f);
    enum prog_kind kind = PROG_NOT_ELF;
    if (got >= 2 && memcmp(&eh, "#!", 2) == 0) {
        kind = PROG_SCRIPT;
    } else if (got == sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
               eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
        /* No PT_INTERP: no dynamic loader runs, so nothing reads LD_PRELOAD (static, static-pie). */
        kind = PROG_STATIC;
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (fseeko(f, (off_t)(eh.e_phoff + i * sizeof ph), SEEK_SET) != 0 ||
                fread(&ph, sizeof ph, 1, f) != 1) {
                kind = PROG_UNKNOWN;
                break;
            }
            if (ph.p_type == PT_INTERP) {
                kind = PROG_DYNAMIC;
                break;
            }
        }
    }
    fclose(f);
    return kind;
}

/* No trace: one sentence on why, from what the program's file says. */
static void explain_no_trace(const char *dir, pid_t pid, const char *prog)
{
    char path[PATH_MAX], shown[4 * PATH_MAX + 1];
    if (resolve_prog(prog, path, sizeof path) != 0)
        snprintf(path, sizeof path, "%s", prog);
    tool_printable_to(shown, strlen(path) < PATH_MAX ? path : prog);
    switch (prog_kind(path)) {
    case PROG_STATIC:
        tool_err("no trace: %s is statically linked, so no dynamic loader runs to load the "
                 "runtime (LD_PRELOAD); link it dynamically to trace it",
                 shown);
        return;
    case PROG_SCRIPT:
        tool_err("no trace: %s is a script; only its interpreter runs under the runtime, and it "
                 "has no XRay sleds",
                 shown);
        return;
    case PROG_NOT_ELF:
        tool_err("no trace: %s is not a 64-bit ELF executable", shown);
        return;
    case PROG_DYNAMIC:
        if (stp_file_has_map(path) == 0) {
            tool_err("no trace: %s has no XRay sleds (no xray_instr_map section) and no "
                     "instrumented library it loaded recorded a call; build it with clang "
                     "-fxray-instrument -fxray-instruction-threshold=1",
                     shown);
            return;
        }
        tool_err("no trace: %s has XRay sleds but recorded no call (its runtime's messages above "
                 "say why, if any: SLEDTRACE_FILTER or SLEDTRACE_EXCLUDE may leave out every "
                 "function, or the program never called one)",
                 shown);
        return;
    case PROG_UNKNOWN:
        break;
    }
    fprintf(stderr, "sledtrace: no trace found in %s for pid %ld\n", dir, (long)pid);
}

/* The traces this run wrote: sidecars in dir carrying its run id, the program's first (then by
 * name). Paths are malloc'd into *out; returns how many (-1: out of memory). */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_traces(const char *dir, const char *run_id, pid_t pid, char ***out)
{
    *out = NULL;
    size_t n = 0, cap = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    char want[96];
    snprintf(want, sizeof want, "run\t%s\n", run_id);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "sledtrace.", 10) != 0 || len < 15 ||
            strcmp(e->d_name + len - 5, ".syms") != 0)
            continue;
        char syms[PATH_MAX + 300], head[256] = "";
        snprintf(syms, sizeof syms, "%s/%s", dir, e->d_name);
        FILE *f = fopen(syms, "re");
        if (!f)
            continue;
        size_t got = fread(head, 1, sizeof head - 1, f);
        fclose(f);
        head[got] = '\0';
        if (!strstr(head, want))
            continue;
        if (n == cap) {
            char **nv = tool_grow(*out, &cap, sizeof *nv, 16);
            if (!nv)
                goto nomem;
            *out = nv;
        }
        memcpy(syms + strlen(syms) - 5, ".fdr", 5);
        if (access(syms, F_OK) != 0)
            continue; /* a sidecar whose trace was removed (nothing recorded) */
        if (!((*out)[n] = strdup(syms)))
            goto nomem;
        n++;
    }
    closedir(d);
    qsort(*out, n, sizeof **out, cmp_str);
    /* The program's own trace first. */
    for (size_t i = 0; i < n; i++)
        if (is_trace_of(strrchr((*out)[i], '/') + 1, pid)) {
            char *t = (*out)[i];
            memmove(*out + 1, *out, i * sizeof **out);
            (*out)[0] = t;
            break;
        }
    return (int)n;
nomem:
    closedir(d);
    for (size_t i = 0; i < n; i++)
        free((*out)[i]);
    free(*out);
    *out = NULL;
    return -1;
}

static void free_traces(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* A subcommand's output on stderr (run's report): stdout goes to stderr meanwhile. */
static int on_stderr(int (*cmd)(int, char **), int argc, char **argv)
{
    int saved = tool_redirect(STDOUT_FILENO, STDERR_FILENO);
    if (saved < 0)
        return EXIT_BAD_TRACE;
    int rc = cmd(argc, argv);
    tool_unredirect(STDOUT_FILENO, saved);
    return rc;
}

/* --NAME VALUE or --NAME=VALUE at argv[*i] (k bytes of name): 1 and *v, 0 not it, -1 missing. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **v)
{
    size_t k = strlen(name);
    const char *o = argv[*i];
    if (strncmp(o, name, k) != 0)
        return 0;
    if (o[k] == '=') {
        *v = o + k + 1;
        return 1;
    }
    if (o[k] != '\0')
        return 0;
    if (*i + 1 >= argc || strcmp(argv[*i + 1], "--") == 0)
        return -1;
    *v = argv[++*i];
    return 1;
}

/* One runtime setting given as an option: its environment variable and how it is checked. */
struct setting {
    const char *opt, *var;
    const char *choices[5]; /* NULL-terminated: one of these, or */
    uint64_t lo, hi;        /* an integer in [lo, hi] when hi != 0, or */
    int size;               /* a size: digits and an optional K, M, G, T */
    const char *value;
    int duration; /* a duration (tool_parse_duration), at most a minute */
};

static bool valid_size(const char *v)
{
    if (!*v || *v < '0' || *v > '9')
        return false;
    while (*v >= '0' && *v <= '9')
        v++;
    if (*v && strchr("KkMmGgTt", *v))
        v++;
    return *v == '\0';
}

static bool check_setting(const struct setting *st, const char *cmd)
{
    const char *v = st->value;
    if (st->choices[0]) {
        char list[96] = "";
        for (int k = 0; st->choices[k]; k++) {
            if (strcmp(v, st->choices[k]) == 0)
                return true;
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                     st->choices[k]);
        }
        tool_err("%s: %s must be one of %s, not '%s'", cmd, st->opt, list, v);
        return false;
    }
    uint64_t n;
    if (st->hi && (!tool_parse_u64(v, &n) || n < st->lo || n > st->hi)) {
        tool_err("%s: %s must be an integer from %llu to %llu, not '%s'", cmd, st->opt,
                 (unsigned long long)st->lo, (unsigned long long)st->hi, v);
        return false;
    }
    if (st->size && !valid_size(v)) {
        tool_err("%s: %s must be a size (bytes, or with K, M, G, T; 0: no cap), not '%s'", cmd,
                 st->opt, v);
        return false;
    }
    uint64_t ns;
    if (st->duration && (!tool_parse_duration(v, &ns) || ns > 60000000000ull)) {
        tool_err("%s: %s must be a duration up to 60s (10us, 2.5ms; a bare number is ns), not "
                 "'%s'",
                 cmd, st->opt, v);
        return false;
    }
    if (!st->hi && !st->size && !st->duration && !*v) {
        tool_err("%s: %s needs a non-empty value", cmd, st->opt);
        return false;
    }
    return true;
}

static int run_or_live(int argc, char **argv, bool live)
{
    const char *cmd = live ? "live" : "run";
    struct setting set[] = {
        {"--filter", "SLEDTRACE_FILTER", {NULL}, 0, 0, 0, NULL, 0},
        {"--exclude", "SLEDTRACE_EXCLUDE", {NULL}, 0, 0, 0, NULL, 0},
        {"--policy", "SLEDTRACE_POLICY", {"lossless", "discard", "flight", NULL}, 0, 0, 0, NULL, 0},
        {"--clock", "SLEDTRACE_CLOCK", {"auto", "tsc", "monotonic", NULL}, 0, 0, 0, NULL, 0},
        {"--buffer-kb", "SLEDTRACE_BUFFER_KB", {NULL}, 4, 16384, 0, NULL, 0},
        {"--buffers", "SLEDTRACE_BUFFERS", {NULL}, 2, 4096, 0, NULL, 0},
        {"--flush-ms", "SLEDTRACE_FLUSH_MS", {NULL}, 1, 60000, 0, NULL, 0},
        {"--max-size", "SLEDTRACE_MAX_SIZE", {NULL}, 0, 0, 1, NULL, 0},
        {"--log", "SLEDTRACE_LOG", {"error", "warn", "info", "debug", NULL}, 0, 0, 0, NULL, 0},
        {"--min-duration", "SLEDTRACE_MIN_DURATION", {NULL}, 0, 0, 0, NULL, 1},
        {"--args", "SLEDTRACE_ARGS", {NULL}, 0, 0, 0, NULL, 0},
        {"--waits", "SLEDTRACE_WAITS", {NULL}, 0, 0, 0, NULL, 0},
    };
    enum { NSET = sizeof set / sizeof set[0] };
    const char *out = NULL, *preload = NULL, *exclude_file = NULL;
    uint64_t report = 0;
    int i = 1;
    for (; i < argc; i++) {
        const char *o = argv[i], *v = NULL;
        if (strcmp(o, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            help(stdout, live);
            return EXIT_OK;
        }
        if (o[0] != '-')
            break; /* PROG without "--" */
        int m = 0;
        size_t k = 0;
        for (; k < NSET && !m; k++)
            if ((m = opt_value(argc, argv, &i, set[k].opt, &v)) > 0)
                set[k].value = v;
        if (!m && (m = opt_value(argc, argv, &i, "--output", &v)) > 0)
            out = v;
        if (!m && (m = opt_value(argc, argv, &i, "-o", &v)) > 0)
            out = v;
        if (!m && (m = opt_value(argc, argv, &i, "--preload", &v)) > 0)
            preload = v;
        if (!m && (m = opt_value(argc, argv, &i, "--exclude-file", &v)) > 0)
            exclude_file = v;
        if (!m && !live && strcmp(o, "--report") == 0)
            m = 1, report = 10;
        if (!m && !live && strncmp(o, "--report=", 9) == 0) {
            m = 1;
            if (!tool_parse_u64(o + 9, &report) || report == 0 || report > 100000) {
                tool_err("%s: --report=N needs a positive integer, not '%s'", cmd, o + 9);
                return EXIT_USAGE;
            }
        }
        if (m < 0) {
            tool_err("%s: %s needs a value", cmd, o);
            return EXIT_USAGE;
        }
        if (!m) {
            tool_err("%s: unknown option '%s' (see 'sledtrace %s --help')", cmd, o, cmd);
            return EXIT_USAGE;
        }
    }
    if (i >= argc) {
        tool_err("%s: no program given (usage: sledtrace %s [OPTIONS] -- PROG [ARGS...])", cmd,
                 cmd);
        return EXIT_USAGE;
    }
    for (size_t k = 0; k < NSET; k++)
        if (set[k].value && !check_setting(&set[k], cmd))
            return EXIT_USAGE;
    /* The exclude file by its absolute path, so that a program or descendant that changes
     * directory still reads it; one the runtime could not read is refused now. */
    static char excl[PATH_MAX];
    if (exclude_file) {
        struct stat xs;
        const char *why = NULL;
        if (!realpath(exclude_file, excl) || stat(excl, &xs) != 0 || access(excl, R_OK) != 0)
            why = strerror(errno);
        else if (!S_ISREG(xs.st_mode))
            why = "not a regular file";
        if (why) {
            tool_err("%s: --exclude-file %s: %s", cmd, exclude_file, why);
            return EXIT_USAGE;
        }
    }
    char **prog = argv + i;
    if (out && !*out) {
        tool_err("%s: empty output directory", cmd);
        return EXIT_USAGE;
    }

    /* live without -o: a temporary directory of our own. */
    char tmp[PATH_MAX] = "";
    if (!out && live) {
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/sledtrace-live-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp)) {
            tool_err("%s: cannot create a temporary directory: %s", cmd, strerror(errno));
            return EXIT_USAGE;
        }
        out = tmp;
    }
    if (!out)
        out = ".";
    /* Like the runtime, create the output directory if it is missing. */
    if (make_dirs(out) != 0) {
        tool_err("%s: cannot create directory: %s", out, strerror(errno));
        return EXIT_USAGE;
    }
    char *dir = realpath(out, NULL);
    struct stat sb;
    if (!dir || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        tool_err("%s: %s", out, dir ? strerror(ENOTDIR) : strerror(errno));
        free(dir);
        return EXIT_USAGE;
    }
    char *lib = NULL;
    if (preload) {
        lib = realpath(preload, NULL);
        if (!lib || access(lib, R_OK) != 0) {
            tool_err("%s: %s", preload, strerror(errno));
            free(lib);
            free(dir);
            return EXIT_USAGE;
        }
    } else {
        lib = find_runtime();
        if (!lib) {
            tool_err("cannot find libsledtrace.so (looked next to this executable in "
                     "../preload, %s%s../lib/sledtrace and ../lib, then in %s); use --preload "
                     "LIB",
                     SLEDTRACE_RUNTIME_REL, sizeof SLEDTRACE_RUNTIME_REL > 1 ? ", " : "",
                     sizeof SLEDTRACE_RUNTIME_ABS > 1 ? SLEDTRACE_RUNTIME_ABS : "no other place");
            free(dir);
            return EXIT_USAGE;
        }
    }

    const char *old = getenv("LD_PRELOAD");
    size_t pl = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *ldp = malloc(pl);
    if (!ldp) {
        tool_err("out of memory");
        free(lib);
        free(dir);
        return EXIT_BAD_TRACE;
    }
    if (old && *old)
        snprintf(ldp, pl, "%s:%s", lib, old);
    else
        snprintf(ldp, pl, "%s", lib);
    char run_id[40];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long long r = ((unsigned long long)now.tv_nsec << 20) ^
                           (unsigned long long)now.tv_sec ^ ((unsigned long long)getpid() << 40);
    int ufd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (ufd >= 0) {
        unsigned long long u;
        if (read(ufd, &u, sizeof u) == (ssize_t)sizeof u)
            r ^= u;
        close(ufd);
    }
    snprintf(run_id, sizeof run_id, "%016llx", r);

    struct sigaction ign = {.sa_handler = SIG_IGN}, oldint, oldquit, oldterm, oldhup;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &oldint);
    sigaction(SIGQUIT, &ign, &oldquit);

    /* the child writes exec's errno here when PROG cannot be started (close-on-exec: a started
     * PROG closes it), so that no "no trace found" follows the real error (issue 28.8) */
    int xfd[2] = {-1, -1};
    if (pipe2(xfd, O_CLOEXEC) != 0)
        xfd[0] = xfd[1] = -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        tool_err("fork: %s", strerror(errno));
        free(ldp);
        free(lib);
        free(dir);
        return EXIT_BAD_TRACE;
    }
    if (pid == 0) {
        sigaction(SIGINT, &oldint, NULL);
        sigaction(SIGQUIT, &oldquit, NULL);
        char self[24];
        snprintf(self, sizeof self, "%ld", (long)getpid()); /* the program: execvp keeps it */
        bool ok = setenv("LD_PRELOAD", ldp, 1) == 0 && setenv("SLEDTRACE_OUTPUT", dir, 1) == 0 &&
                  setenv("SLEDTRACE_RUN_ID", run_id, 1) == 0 &&
                  setenv("SLEDTRACE_RUN_PID", self, 1) == 0;
        for (size_t k = 0; k < NSET && ok; k++)
            if (set[k].value)
                ok = setenv(set[k].var, set[k].value, 1) == 0;
        if (ok && exclude_file)
            ok = setenv("SLEDTRACE_EXCLUDE_FILE", excl, 1) == 0;
        /* one disk budget for the whole run (issue 27.6): its processes stop writing when the
         * disk's free space falls to half of what it is now (the runtime's trace_file.c) */
        struct statvfs vfs;
        char floor[32];
        if (ok && !getenv("SLEDTRACE_MAX_SIZE") && statvfs(dir, &vfs) == 0) {
            snprintf(floor, sizeof floor, "%llu",
                     (unsigned long long)vfs.f_bavail * vfs.f_frsize / 2);
            ok = setenv("SLEDTRACE_DISK_FLOOR", floor, 1) == 0;
        }
        if (!ok) {
            tool_err("setenv: %s", strerror(errno));
            _exit(127);
        }
        execvp(prog[0], prog);
        int e = errno;
        if (xfd[1] >= 0 && write(xfd[1], &e, sizeof e) < 0) {
            /* the parent then says what it would for any program that left no trace */
        }
        tool_err("%s: %s", prog[0], strerror(e));
        _exit(e == EACCES || e == ENOEXEC ? 126 : 127);
    }

    bool exec_failed = false;
    if (xfd[1] >= 0) {
        close(xfd[1]);
        int e;
        ssize_t r;
        while ((r = read(xfd[0], &e, sizeof e)) < 0 && errno == EINTR) {
        }
        exec_failed = r == (ssize_t)sizeof e;
        close(xfd[0]);
    }
    atomic_store_explicit(&run_child, pid, memory_order_relaxed);
    struct sigaction fwd = {.sa_handler = forward};
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGTERM, &fwd, &oldterm);
    sigaction(SIGHUP, &fwd, &oldhup);
    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    sigaction(SIGTERM, &oldterm, NULL);
    sigaction(SIGHUP, &oldhup, NULL);
    sigaction(SIGINT, &oldint, NULL);
    sigaction(SIGQUIT, &oldquit, NULL);
    int code;
    if (w < 0) {
        tool_err("waitpid: %s", strerror(errno));
        code = EXIT_BAD_TRACE;
    } else {
        code = WIFSIGNALED(st) ? 128 + WTERMSIG(st)
               : WIFEXITED(st) ? WEXITSTATUS(st)
                               : EXIT_BAD_TRACE;
        char **traces;
        int n = run_traces(dir, run_id, pid, &traces);
        if (n < 0) {
            tool_err("out of memory");
            n = 0;
        }
        for (int k = 0; k < n && !live; k++) {
            char shown[4 * PATH_MAX + 1]; /* an exec'd image's name is in it: the program chose */
            tool_printable_to(shown, strlen(traces[k]) < PATH_MAX ? traces[k] : "?");
            fprintf(stderr, "sledtrace: trace written to %s\n", shown);
        }
        if (n == 0 && !exec_failed) /* else the child said why */
            explain_no_trace(dir, pid, prog[0]);
        if (WIFSIGNALED(st))
            tool_err("%s: killed by signal %d (%s)", prog[0], WTERMSIG(st),
                     strsignal(WTERMSIG(st)));
        char topn[24];
        snprintf(topn, sizeof topn, "%llu", (unsigned long long)report);
        for (int k = 0; k < n && report; k++) {
            char *av[] = {"account", traces[k], "--sort", "self", "--top", topn, NULL};
            char shown[4 * PATH_MAX + 1];
            tool_printable_to(shown, strlen(traces[k]) < PATH_MAX ? traces[k] : "?");
            fprintf(stderr, "\nsledtrace: %s: top %s functions by self time\n", shown, topn);
            on_stderr(cmd_account, 6, av);
        }
        for (int k = 0; k < n && live; k++) {
            char *av[] = {"replay", traces[k], NULL};
            if (n > 1) {
                char shown[4 * PATH_MAX + 1];
                tool_printable_to(shown, strlen(traces[k]) < PATH_MAX ? traces[k] : "?");
                printf("%s# %s\n", k ? "\n" : "",
                       strrchr(shown, '/') ? strrchr(shown, '/') + 1 : shown);
            }
            fflush(stdout);
            cmd_replay(2, av);
            fflush(stdout);
        }
        if (tmp[0]) {
            for (int k = 0; k < n; k++) {
                char *sp = stf_syms_path_for(traces[k]);
                unlink(traces[k]);
                if (sp)
                    unlink(sp);
                free(sp);
            }
            if (rmdir(tmp) != 0)
                tool_err("%s: left in place: %s", tmp, strerror(errno));
        }
        free_traces(traces, n);
    }
    free(ldp);
    free(lib);
    free(dir);
    return code;
}

int cmd_run(int argc, char **argv)
{
    return run_or_live(argc, argv, false);
}

int cmd_live(int argc, char **argv)
{
    return run_or_live(argc, argv, true);
}
