/* sledtrace run: start a program with the tracing runtime preloaded.
 *
 * Sets LD_PRELOAD (the runtime first, then any existing entries), SLEDTRACE_OUTPUT (absolute
 * output directory, so a chdir in the program does not matter) and, when given,
 * SLEDTRACE_LOG / SLEDTRACE_FLUSH_MS / SLEDTRACE_MAX_SIZE; fork + execvp; waits while ignoring SIGINT/SIGQUIT (the
 * terminal delivers them to the program); then reports on stderr where the trace went
 * (DIR/sledtrace.*.<pid>.fdr, and .<pid>.<n>.fdr for images it exec'd) and exits with the program's
 * status, or 128 + signal number if a signal killed it (not re-raised). exec failures exit 127
 * (126: permission), like shells.
 *
 * The runtime is --preload LIB, else found relative to this executable: ../preload/ (build
 * tree), ../lib/sledtrace/, ../lib/ (installed). */
#include "common.h"

#include "stp.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace run [OPTIONS] -- PROG [ARGS...]\n"
          "\n"
          "Run PROG (built with clang -fxray-instrument) with the sledtrace runtime preloaded,\n"
          "then print where the trace was written. Exits with PROG's status (128+N if killed\n"
          "by signal N).\n"
          "\n"
          "  -o, --output DIR  directory for sledtrace.PROG.PID.fdr/.syms (default: .)\n"
          "  --log LEVEL       runtime log level (SLEDTRACE_LOG)\n"
          "  --flush-ms N      runtime flush interval in ms (SLEDTRACE_FLUSH_MS)\n"
          "  --max-size SIZE   stop writing the trace past SIZE bytes (K, M, G, T; 0: no cap;\n"
          "                    default: half the free space) (SLEDTRACE_MAX_SIZE)\n"
          "  --preload LIB     runtime library to preload (default: found next to sledtrace)\n",
          out);
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

static char *find_runtime(void)
{
    static const char *const rel[] = {
        "/../preload/libsledtrace.so",
        "/../lib/sledtrace/libsledtrace.so",
        "/../lib/libsledtrace.so",
    };
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s%s", exe, rel[i]);
        if (access(cand, R_OK) == 0)
            return realpath(cand, NULL);
    }
    return NULL;
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

static void report_traces(const char *dir, pid_t pid, const char *prog)
{
    int found = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (is_trace_of(e->d_name, pid)) {
                /* an exec'd image's name is in it: the program chose that */
                char shown[4 * sizeof e->d_name + 1];
                tool_printable_to(shown, e->d_name);
                fprintf(stderr, "sledtrace: trace written to %s/%s\n", dir, shown);
                found++;
            }
        }
        closedir(d);
    }
    if (!found)
        explain_no_trace(dir, pid, prog);
}

int cmd_run(int argc, char **argv)
{
    const char *out = ".", *log = NULL, *flush = NULL, *preload = NULL, *max_size = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            help(stdout);
            return EXIT_OK;
        }
        if (o[0] != '-')
            break; /* PROG without "--" */
        const char **dst = NULL;
        const char *v = NULL;
        if (strcmp(o, "-o") == 0 || strcmp(o, "--output") == 0)
            dst = &out;
        else if (strcmp(o, "--log") == 0)
            dst = &log;
        else if (strcmp(o, "--flush-ms") == 0)
            dst = &flush;
        else if (strcmp(o, "--preload") == 0)
            dst = &preload;
        else if (strcmp(o, "--max-size") == 0)
            dst = &max_size;
        else if (strncmp(o, "--max-size=", 11) == 0)
            dst = &max_size, v = o + 11;
        else if (strncmp(o, "--output=", 9) == 0)
            dst = &out, v = o + 9;
        else if (strncmp(o, "--log=", 6) == 0)
            dst = &log, v = o + 6;
        else if (strncmp(o, "--flush-ms=", 11) == 0)
            dst = &flush, v = o + 11;
        else if (strncmp(o, "--preload=", 10) == 0)
            dst = &preload, v = o + 10;
        else {
            tool_err("run: unknown option '%s'", o);
            return EXIT_USAGE;
        }
        if (!v) {
            if (i + 1 >= argc) {
                tool_err("run: %s needs a value", o);
                return EXIT_USAGE;
            }
            v = argv[++i];
        }
        *dst = v;
    }
    if (i >= argc) {
        tool_err("run: no program given (usage: sledtrace run [OPTIONS] -- PROG [ARGS...])");
        return EXIT_USAGE;
    }
    char **prog = argv + i;
    uint64_t ms;
    if (flush && !tool_parse_u64(flush, &ms)) {
        tool_err("run: --flush-ms needs a non-negative integer, not '%s'", flush);
        return EXIT_USAGE;
    }
    if (!*out) {
        tool_err("run: empty output directory");
        return EXIT_USAGE;
    }

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
            tool_err("cannot find libsledtrace.so next to this executable "
                     "(looked in ../preload, ../lib/sledtrace, ../lib); use --preload LIB");
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

    struct sigaction ign = {.sa_handler = SIG_IGN}, oldint, oldquit;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &oldint);
    sigaction(SIGQUIT, &ign, &oldquit);

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
        if (setenv("LD_PRELOAD", ldp, 1) != 0 || setenv("SLEDTRACE_OUTPUT", dir, 1) != 0 ||
            (log && setenv("SLEDTRACE_LOG", log, 1) != 0) ||
            (flush && setenv("SLEDTRACE_FLUSH_MS", flush, 1) != 0) ||
            (max_size && setenv("SLEDTRACE_MAX_SIZE", max_size, 1) != 0)) {
            tool_err("setenv: %s", strerror(errno));
            _exit(127);
        }
        execvp(prog[0], prog);
        int e = errno;
        tool_err("%s: %s", prog[0], strerror(e));
        _exit(e == EACCES || e == ENOEXEC ? 126 : 127);
    }

    int st = 0;
    pid_t w;
    while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
    }
    sigaction(SIGINT, &oldint, NULL);
    sigaction(SIGQUIT, &oldquit, NULL);
    int code;
    if (w < 0) {
        tool_err("waitpid: %s", strerror(errno));
        code = EXIT_BAD_TRACE;
    } else if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        report_traces(dir, pid, prog[0]);
        tool_err("%s: killed by signal %d (%s)", prog[0], sig, strsignal(sig));
        code = 128 + sig;
    } else {
        report_traces(dir, pid, prog[0]);
        code = WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_BAD_TRACE;
    }
    free(ldp);
    free(lib);
    free(dir);
    return code;
}
