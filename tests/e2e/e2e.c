#include "e2e.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stf.h"

extern char **environ;

void e2e_workdir(char *buf, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, len, "%s/sledtrace-e2e.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

void e2e_rmtree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", path, de->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                e2e_rmtree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

char *e2e_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Inherited variables left out: ours, and any the test sets itself (HOME=...). */
static int dropped_var(const char *kv, const struct e2e_spec *spec)
{
    if (strncmp(kv, "LD_PRELOAD=", 11) == 0 || strncmp(kv, "SLEDTRACE_", 10) == 0 ||
        strncmp(kv, "XRAY_", 5) == 0)
        return 1;
    const char *eq = strchr(kv, '=');
    size_t n = eq ? (size_t)(eq - kv) + 1 : strlen(kv);
    for (int i = 0; i < E2E_MAX_ENV && spec->env[i]; i++)
        if (strncmp(spec->env[i], kv, n) == 0)
            return 1;
    return 0;
}

void e2e_run(const char *work, const struct e2e_spec *spec, struct e2e_run *r)
{
    memset(r, 0, sizeof *r);
    char outpath[PATH_MAX], errpath[PATH_MAX], outdir[PATH_MAX];
    static unsigned seq;
    seq++;
    snprintf(outpath, sizeof outpath, "%s/stdout.%u", work, seq);
    snprintf(errpath, sizeof errpath, "%s/stderr.%u", work, seq);
    snprintf(outdir, sizeof outdir, "%s", spec->outdir ? spec->outdir : "");
    if (!spec->outdir)
        snprintf(outdir, sizeof outdir, "%s/out", work);

    /* Environment, built before fork. */
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + E2E_MAX_ENV + 4, sizeof *env);
    cr_assert_not_null(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!dropped_var(environ[i], spec))
            env[k++] = environ[i];
    static char preload[PATH_MAX + 16], output[PATH_MAX + 32], cache[PATH_MAX + 32];
    if (spec->preload) {
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", E2E_PRELOAD);
        snprintf(output, sizeof output, "SLEDTRACE_OUTPUT=%s", outdir);
        env[k++] = preload;
        env[k++] = output;
    }
    /* The proof cache: the test's own (runs in one work directory share it), never the
     * user's, unless the test names one. */
    int own_cache = 0;
    for (int i = 0; i < E2E_MAX_ENV && spec->env[i]; i++)
        own_cache |= strncmp(spec->env[i], "SLEDTRACE_CACHE=", 16) == 0;
    if (!own_cache) {
        snprintf(cache, sizeof cache, "SLEDTRACE_CACHE=%s/cache", work);
        env[k++] = cache;
    }
    for (int i = 0; i < E2E_MAX_ENV && spec->env[i]; i++)
        env[k++] = (char *)spec->env[i];
    env[k] = NULL;

    char *argv[3] = {(char *)spec->prog, (char *)spec->argv1, NULL};
    pid_t parent = getpid();
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* Die with the test process; a new process group so a timeout kills everything. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        setpgid(0, 0);
        int o = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0)
            _exit(125);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        close(in);
        close(o);
        close(e);
        if (spec->pre_exec)
            spec->pre_exec(spec->ctx);
        execve(spec->prog, argv, env);
        _exit(127);
    }
    free(env);
    r->pid = pid;
    int timeout_ms = (spec->timeout_s ? spec->timeout_s : 30) * 1000;
    int status = 0, waited = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        cr_assert_eq(w, 0, "waitpid: %s", strerror(errno));
        if (waited >= timeout_ms) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("%s %s timed out after %d s", spec->prog, spec->argv1 ? spec->argv1 : "",
                           timeout_ms / 1000);
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
        waited += 2;
    }
    r->status = status;
    r->out = e2e_slurp(outpath, &r->out_len);
    r->err = e2e_slurp(errpath, &r->err_len);
    cr_assert_not_null(r->out);
    cr_assert_not_null(r->err);
    cr_assert_neq(status, 127 << 8, "cannot exec %s", spec->prog);
}

void e2e_run_free(struct e2e_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

int e2e_count_lines(const char *text, const char *prefix)
{
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, prefix, pl) == 0)
            n++;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static int find_expect(struct e2e_expect *e, const char *name)
{
    for (int i = 0; i < e->nfuncs; i++)
        if (strcmp(e->f[i].name, name) == 0)
            return i;
    cr_assert_lt(e->nfuncs, E2E_MAX_FUNCS);
    int i = e->nfuncs++;
    snprintf(e->f[i].name, sizeof e->f[i].name, "%s", name);
    e->f[i].count = -1;
    e->f[i].tail = 0;
    return i;
}

void e2e_parse_expect(const char *out, struct e2e_expect *e)
{
    memset(e, 0, sizeof *e);
    e->threads = -1;
    for (const char *p = out; p && *p;) {
        char name[64];
        long v;
        int iv;
        if (sscanf(p, "count %63s %ld", name, &v) == 2)
            e->f[find_expect(e, name)].count = v;
        else if (sscanf(p, "tail %63s %ld", name, &v) == 2)
            e->f[find_expect(e, name)].tail = v;
        else if (sscanf(p, "threads %d", &iv) == 1)
            e->threads = iv;
        else if (sscanf(p, "threadwork %ld", &v) == 1) {
            cr_assert_lt(e->nwork, E2E_MAX_TIDS);
            e->work[e->nwork++] = v;
        }
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    cr_assert_gt(e->nfuncs, 0, "the program printed no counts:\n%s", out);
    for (int i = 0; i < e->nfuncs; i++)
        cr_assert_geq(e->f[i].count, 0, "no count line for %s", e->f[i].name);
    cr_assert_gt(e->threads, 0, "the program printed no thread count");
    cr_assert_eq(e->nwork, e->threads, "threadwork lines do not match the thread count");
}

/* Per-thread call stacks for the balance check. */
struct stack {
    uint32_t *ids;
    size_t n, cap;
};

static int trace_func(struct e2e_trace *t, const struct stf_syms *syms, uint32_t id)
{
    char buf[32];
    const char *name = stf_syms_name(syms, id, buf, sizeof buf);
    for (int i = 0; i < t->nfuncs; i++)
        if (strcmp(t->f[i].name, name) == 0)
            return i;
    cr_assert_lt(t->nfuncs, E2E_MAX_FUNCS);
    int i = t->nfuncs++;
    snprintf(t->f[i].name, sizeof t->f[i].name, "%s", name);
    return i;
}

static void violation(struct e2e_trace *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void violation(struct e2e_trace *t, const char *fmt, ...)
{
    if (t->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->error, sizeof t->error, fmt, ap);
    va_end(ap);
}

void e2e_read_trace(const char *trace, struct e2e_trace *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", trace);
    char *sp = stf_syms_path_for(trace);
    cr_assert_not_null(sp);
    struct stf_syms *syms = NULL;
    char err[512] = "";
    int rc = stf_syms_load(&syms, sp, err, sizeof err);
    cr_assert_eq(rc, STF_OK, "cannot load %s: %s (%s)", sp, stf_strerror(rc), err);
    free(sp);

    struct stf_reader *r = NULL;
    rc = stf_reader_open(&r, trace, STF_READ_STRICT);
    cr_assert_eq(rc, STF_OK, "cannot open %s: %s: %s", trace, stf_strerror(rc),
                 r ? stf_reader_error(r, NULL) : "");
    struct stack st[E2E_MAX_TIDS] = {{0}};
    struct stf_item it;
    while ((rc = stf_reader_next(r, &it)) == STF_OK) {
        if (it.kind != STF_K_FUNCTION)
            continue;
        /* Waits (stf.h, "[wait] NAME") are counted with the tracer's records and left out of
         * the rest: the program's own calls are what is checked here (test_waits.c checks the
         * waits); a process killed in a wait leaves it open, a thread that only waits made no
         * call of the program's. */
        if (stf_wait_name(it.func_id)) {
            t->tracer_records++;
            t->open_waits += it.action == STF_ENTER ? 1 : -1;
            continue;
        }
        /* The tracer's own pseudo-calls (stf.h) are counted apart: they are not the program's,
         * and must nest properly like any call. */
        int tracer = stf_tracer_name(it.func_id) != NULL;
        if (tracer)
            t->tracer_records++;
        else
            t->records++;
        int ti = 0;
        while (ti < t->ntids && t->tid[ti] != it.tid)
            ti++;
        if (ti == t->ntids) {
            cr_assert_lt(t->ntids, E2E_MAX_TIDS);
            t->tid[t->ntids++] = it.tid;
        }
        struct stack *s = &st[ti];
        int fi = tracer ? -1 : trace_func(t, syms, it.func_id);
        const char *fname = tracer ? stf_tracer_name(it.func_id) : t->f[fi].name;
        switch (it.action) {
        case STF_ENTER:
        case STF_ENTER_ARGS:
            if (!tracer) {
                t->f[fi].enter++;
                t->tid_enters[ti]++;
            }
            if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 256;
                s->ids = realloc(s->ids, s->cap * sizeof *s->ids);
                cr_assert_not_null(s->ids);
            }
            s->ids[s->n++] = it.func_id;
            break;
        case STF_EXIT:
        case STF_TAIL_EXIT:
            if (tracer)
                ;
            else if (it.action == STF_EXIT)
                t->f[fi].exit++;
            else
                t->f[fi].tail++;
            if (s->n == 0)
                violation(t, "tid %d: %s of %s at offset %llu with an empty stack", it.tid,
                          stf_action_name(it.action), fname, (unsigned long long)it.offset);
            else if (s->ids[s->n - 1] != it.func_id)
                violation(t, "tid %d: %s of %s at offset %llu, but the innermost call is #%u",
                          it.tid, stf_action_name(it.action), fname, (unsigned long long)it.offset,
                          s->ids[s->n - 1]);
            if (s->n)
                s->n--;
            break;
        default:
            violation(t, "unknown action %u at offset %llu", it.action,
                      (unsigned long long)it.offset);
        }
    }
    if (rc != STF_END) {
        uint64_t off = 0;
        const char *msg = stf_reader_error(r, &off);
        snprintf(t->error, sizeof t->error, "strict reader: %s at offset %llu: %s",
                 stf_strerror(rc), (unsigned long long)off, msg);
    }
    struct stf_reader_stats stats;
    stf_reader_stats(r, &stats);
    t->blocks = (long)stats.blocks;
    for (int i = 0; i < t->ntids; i++) {
        if (st[i].n)
            t->unbalanced++;
        free(st[i].ids);
    }
    stf_reader_close(r);
    stf_syms_free(syms);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* `sledtrace account --format csv` of a trace (raw names, as the sidecar has them). */
static char *account_csv(const char *trace)
{
    char cmd[PATH_MAX * 2];
    /* The summary (stderr) after the rows: through one pipe, stdout's buffer would be written
     * in pieces once the rows pass 4 KiB, and the summary land inside a row. */
    snprintf(cmd, sizeof cmd,
             "f=$(mktemp) && SLEDTRACE_NO_DEMANGLE=1 '%s' account --format csv '%s' 2>\"$f\"; "
             "rc=$?; cat \"$f\"; rm -f \"$f\"; exit $rc",
             E2E_SLEDTRACE, trace);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (cap - n < 2) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
    }
    buf[n] = '\0';
    int st = pclose(p);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sledtrace account %s failed:\n%s", trace,
              buf);
    return buf;
}

/* The count column of function `name` in account's CSV (names are quoted when they hold a
 * comma or a quote), summed over its rows (one per object that has a function of that name),
 * 0 when it has none. */
static long account_count(const char *csv, const char *name)
{
    long sum = 0;
    for (const char *l = csv; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        char field[256];
        size_t f = 0;
        const char *c = l;
        if (*c == '"') {
            for (c++; *c && f < sizeof field - 1; c++) {
                if (*c == '"' && c[1] == '"')
                    field[f++] = *++c;
                else if (*c == '"')
                    break;
                else
                    field[f++] = *c;
            }
            c += *c == '"';
        } else {
            while (*c && *c != ',' && *c != '\n' && f < sizeof field - 1)
                field[f++] = *c++;
        }
        field[f] = '\0';
        long id, count;
        if (*c == ',' && strcmp(field, name) == 0 && sscanf(c + 1, "%ld,%ld,", &id, &count) == 2)
            sum += count;
    }
    return sum;
}

void e2e_check_trace(const struct e2e_trace *t, const struct e2e_expect *e, const char *what)
{
    cr_assert_str_empty(t->error, "%s: %s", what, t->error);
    cr_assert_eq(t->unbalanced, 0, "%s: %d thread(s) end with calls that never returned", what,
                 t->unbalanced);
    /* Every traced function is one the program accounts for... */
    for (int i = 0; i < t->nfuncs; i++) {
        int found = 0;
        for (int j = 0; j < e->nfuncs; j++)
            found |= strcmp(t->f[i].name, e->f[j].name) == 0;
        cr_expect(found, "%s: the trace has %ld enters of %s, which the program does not count",
                  what, t->f[i].enter, t->f[i].name);
    }
    /* ...and every count is exact. */
    for (int j = 0; j < e->nfuncs; j++) {
        long enter = 0, exit = 0, tail = 0;
        for (int i = 0; i < t->nfuncs; i++)
            if (strcmp(t->f[i].name, e->f[j].name) == 0) {
                enter = t->f[i].enter;
                exit = t->f[i].exit;
                tail = t->f[i].tail;
            }
        cr_expect_eq(enter, e->f[j].count, "%s: %s entered %ld times, expected %ld", what,
                     e->f[j].name, enter, e->f[j].count);
        cr_expect_eq(exit + tail, e->f[j].count, "%s: %s left %ld + %ld (tail) times, expected %ld",
                     what, e->f[j].name, exit, tail, e->f[j].count);
        if (e->f[j].tail)
            cr_expect_eq(tail, e->f[j].tail, "%s: %s has %ld tail exits, expected %ld", what,
                         e->f[j].name, tail, e->f[j].tail);
    }
    cr_assert_eq(t->ntids, e->threads, "%s: %d distinct threads in the trace, expected %d", what,
                 t->ntids, e->threads);
    long got[E2E_MAX_TIDS], want[E2E_MAX_TIDS];
    memcpy(got, t->tid_enters, sizeof got);
    memcpy(want, e->work, sizeof want);
    qsort(got, (size_t)t->ntids, sizeof *got, cmp_long);
    qsort(want, (size_t)e->nwork, sizeof *want, cmp_long);
    for (int i = 0; i < e->nwork; i++)
        cr_expect_eq(got[i], want[i], "%s: per-thread enters differ (sorted #%d: %ld vs %ld)", what,
                     i, got[i], want[i]);
    /* The tool agrees: exact counts, and a balanced trace needs no repair. */
    char *csv = account_csv(t->path);
    for (int j = 0; j < e->nfuncs; j++)
        cr_expect_eq(account_count(csv, e->f[j].name), e->f[j].count,
                     "%s: sledtrace account counts %ld calls of %s, the program made %ld", what,
                     account_count(csv, e->f[j].name), e->f[j].name, e->f[j].count);
    /* (a process that died blocked in libc leaves that [wait] open, and only that) */
    char balanced[96];
    snprintf(balanced, sizeof balanced,
             "stack repairs: 0, unmatched exits: 0, unfinished frames: %ld", t->open_waits);
    cr_expect(strstr(csv, balanced), "%s: account summary:\n%s", what, csv);
    free(csv);
}

void e2e_check_printed(const char *trace, const char *printed, const char *what)
{
    struct e2e_expect e;
    e2e_parse_expect(printed, &e);
    struct e2e_trace *tr = malloc(sizeof *tr);
    cr_assert_not_null(tr);
    e2e_read_trace(trace, tr);
    e2e_check_trace(tr, &e, what);
    free(tr);
}

void e2e_trace_path(char *buf, size_t len, const char *dir, const char *prog, pid_t pid,
                    const char *ext)
{
    const char *base = strrchr(prog, '/');
    base = base ? base + 1 : prog;
    snprintf(buf, len, "%s/sledtrace.%s.%d.%s", dir, base, (int)pid, ext);
}

int e2e_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

void e2e_run_sh(const char *work, struct e2e_run *r, const char *fmt, ...)
{
    char script[PATH_MAX];
    snprintf(script, sizeof script, "%s/cmd.sh", work);
    FILE *f = fopen(script, "w");
    cr_assert_not_null(f);
    fprintf(f, "exec ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fprintf(f, "\n");
    fclose(f);
    struct e2e_spec s = {.prog = "/bin/sh", .argv1 = script, .timeout_s = 60};
    e2e_run(work, &s, r);
}

int e2e_nlines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

void e2e_no_core(void *ctx)
{
    (void)ctx;
    struct rlimit rl = {0, 0};
    setrlimit(RLIMIT_CORE, &rl);
}
