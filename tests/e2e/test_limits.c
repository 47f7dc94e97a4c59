/* Memory and task limits (issue 23, items 2 and 3): a program living under RLIMIT_NPROC, a
 * memory cgroup or RLIMIT_MEMLOCK with mlockall behaves exactly as untraced (limitsprog.c), and
 * its traces have exact counts, or say with a cause what they lack.
 *
 * RLIMIT_NPROC and RLIMIT_MEMLOCK do not bind root: those programs run as a user of their own
 * (setresuid in the child, before exec; each test its own uid, so that tests running at the same
 * time do not count each other's tasks), which needs root. The cgroup test makes a child of the
 * test's own memory cgroup (v2 memory.max, or v1 memory.limit_in_bytes on a hybrid host) and
 * says loudly why when it cannot. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

#define BIN(name) E2E_DIR "/" name

/* What the child takes on before exec (e2e_spec.pre_exec). */
struct limits_ctx {
    uid_t uid;         /* 0: stays root */
    rlim_t nproc;      /* 0: unchanged */
    rlim_t memlock;    /* 0: unchanged */
    const char *procs; /* a cgroup.procs file to move into, or NULL */
};

static void enter_limits(void *p)
{
    const struct limits_ctx *c = p;
    if (c->procs) {
        int fd = open(c->procs, O_WRONLY);
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
        if (fd < 0 || write(fd, pid, (size_t)n) != n)
            _exit(121);
        close(fd);
    }
    if (c->nproc) {
        struct rlimit rl = {c->nproc, c->nproc};
        if (setrlimit(RLIMIT_NPROC, &rl) != 0)
            _exit(122);
    }
    if (c->memlock) {
        struct rlimit rl = {c->memlock, c->memlock};
        if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
            _exit(123);
    }
    if (c->uid) {
        if (setgroups(0, NULL) != 0 || setresgid(c->uid, c->uid, c->uid) != 0 ||
            setresuid(c->uid, c->uid, c->uid) != 0)
            _exit(124);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a change of credentials cleared it */
    }
}

/* A work directory whose out/ belongs to uid (the runtime writes there as that user). */
static void workdir_for(char *work, size_t wlen, char *out, size_t olen, uid_t uid)
{
    e2e_workdir(work, wlen);
    snprintf(out, olen, "%s/out", work);
    cr_assert_eq(chmod(work, 0711), 0);
    cr_assert_eq(mkdir(out, 0700), 0);
    cr_assert_eq(chown(out, uid, uid), 0, "chown: %s", strerror(errno));
}

/* Runs bin in mode under c, traced into out (NULL: untraced), with up to two more variables. */
static void run_env(const char *work, const char *bin, const char *mode, struct limits_ctx *c,
                    const char *out, const char *env1, const char *env2, struct e2e_run *r)
{
    struct e2e_spec s = {.prog = bin,
                         .argv1 = mode,
                         .preload = out != NULL,
                         .outdir = out,
                         .env = {"SLEDTRACE_CACHE=off", env1, env2},
                         .pre_exec = enter_limits,
                         .ctx = c};
    e2e_run(work, &s, r);
    cr_assert(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0, "%s %s%s: status %#x\n%s\n%s",
              bin, mode, out ? " (traced)" : "", r->status, r->out, r->err);
}

static void run(const char *work, const char *bin, const char *mode, struct limits_ctx *c,
                const char *out, struct e2e_run *r)
{
    run_env(work, bin, mode, c, out, NULL, NULL, r);
}

static long value_of(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s ", key);
    const char *p = strstr(text, pat);
    if (!p && strncmp(text, pat + 1, strlen(pat + 1)) == 0)
        p = text - 1;
    cr_assert_not_null(p, "no '%s' line in:\n%s", key, text);
    return strtol(p + strlen(pat), NULL, 10);
}

/* `sledtrace dump --verify` accepts the trace. */
static void verify(const char *work, const char *trace)
{
    struct e2e_run v;
    e2e_run_sh(work, &v, "'%s' dump --verify '%s'", E2E_SLEDTRACE, trace);
    cr_assert(WIFEXITED(v.status) && WEXITSTATUS(v.status) == 0 && strstr(v.out, "OK: "),
              "dump --verify %s: %#x\n%s%s", trace, v.status, v.out, v.err);
    e2e_run_free(&v);
}

/* A trace of one thread that made `calls` calls of fib, exact. */
static void check_single(const char *trace, long calls, const char *what)
{
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    struct e2e_expect e = {.nfuncs = 1, .threads = 1, .nwork = 1};
    snprintf(e.f[0].name, sizeof e.f[0].name, "fib");
    e.f[0].count = calls;
    e.work[0] = calls;
    e2e_check_trace(&tr, &e, what);
}

/* Forks until the limit says no: traced, the same number of children, each with a trace of
 * its exact calls, and nothing said (the runtime does without flush threads: it loses nothing,
 * so it has nothing to say at the default level). */
static void forks_limited(const char *bin, struct limits_ctx *lc, const char *mode)
{
    char work[PATH_MAX], out[PATH_MAX];
    workdir_for(work, sizeof work, out, sizeof out, lc->uid);
    struct limits_ctx c = *lc;
    struct e2e_run u, t;
    run(work, bin, mode, &c, NULL, &u);
    long k0 = value_of(u.out, "forked");
    cr_assert(k0 > 2 && strstr(u.out, "fork-error EAGAIN\n"),
              "untraced, the limit should stop the forks:\n%s", u.out);
    run(work, bin, mode, &c, out, &t);
    cr_assert_eq(value_of(t.out, "forked"), k0, "traced %ld forks, untraced %ld\n%s\n%s",
                 value_of(t.out, "forked"), k0, t.out, t.err);
    cr_assert(strstr(t.out, "fork-error EAGAIN\nbad 0\n"), "%s", t.out);
    cr_assert_str_empty(t.err);
    char trace[PATH_MAX];
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "parent");
    verify(work, trace);
    long child_calls = value_of(t.out, "child-fib");
    int children = 0;
    for (const char *p = strstr(t.out, "child "); p; p = strstr(p + 1, "\nchild ")) {
        int pid = atoi(p + (p[0] == '\n' ? 7 : 6));
        char what[32];
        snprintf(what, sizeof what, "child %d", pid);
        e2e_trace_path(trace, sizeof trace, out, bin, pid, "fdr");
        check_single(trace, child_calls, what);
        verify(work, trace);
        children++;
    }
    cr_assert_eq(children, k0);
    cr_assert_eq(e2e_dir_entries(out), 2 * (k0 + 1), "files in %s", out);
    e2e_run_free(&u);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

static void forks_under_nproc(const char *bin, uid_t uid, const char *mode, rlim_t nproc)
{
    if (geteuid() != 0)
        cr_skip_test("RLIMIT_NPROC does not bind root, and another user needs root to become");
    struct limits_ctx c = {.uid = uid, .nproc = nproc};
    forks_limited(bin, &c, mode);
}

/* Before: 5 of the 11 forks the untraced program makes under RLIMIT_NPROC 12 (each traced
 * process's flush thread took a slot). */
Test(limits, forks_under_rlimit_nproc_pie)
{
    forks_under_nproc(BIN("limitsprog-pie-nort"), 61001, "forks:24", 12);
}

Test(limits, forks_under_rlimit_nproc_nopie_xray_runtime)
{
    forks_under_nproc(BIN("limitsprog-nopie-rt"), 61002, "forks:24", 12);
}

/* The program lowers its own RLIMIT_NPROC after the runtime started its flush thread: the fork
 * that fails for want of the flush thread's slot is made again without it (before: 5 of 11). */
Test(limits, forks_after_lowering_rlimit_nproc)
{
    forks_under_nproc(BIN("limitsprog-pie-nort"), 61003, "late-forks:24:12", 0);
}

/* Threads under RLIMIT_NPROC: as many as untraced, all recorded exactly, and the program's own
 * EAGAIN is not blamed on the tracer (before: one thread fewer, and a warning about memory).
 * Two chunks of 4 KiB per thread: the threads write their chunks themselves, all at once. */
Test(limits, threads_under_rlimit_nproc)
{
    if (geteuid() != 0)
        cr_skip_test("RLIMIT_NPROC does not bind root, and another user needs root to become");
    const char *bin = BIN("limitsprog-pie-nort");
    char work[PATH_MAX], out[PATH_MAX];
    workdir_for(work, sizeof work, out, sizeof out, 61004);
    struct limits_ctx c = {.uid = 61004, .nproc = 12};
    struct e2e_run u, t;
    run(work, bin, "threads:24", &c, NULL, &u);
    long k0 = value_of(u.out, "made");
    cr_assert(k0 > 2 && strstr(u.out, "create-error EAGAIN\n"), "%s", u.out);
    run_env(work, bin, "threads:24", &c, out, "SLEDTRACE_BUFFER_KB=4", "SLEDTRACE_BUFFERS=2", &t);
    cr_assert_eq(value_of(t.out, "made"), k0, "traced %ld threads, untraced %ld\n%s",
                 value_of(t.out, "made"), k0, t.err);
    cr_assert_str_empty(t.err);
    char trace[PATH_MAX];
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "threads");
    verify(work, trace);
    e2e_run_free(&u);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* mlockall(MCL_CURRENT | MCL_FUTURE) under an 8 MiB RLIMIT_MEMLOCK, then the program's own
 * 4 MiB mapping and a thread: all as untraced, exact counts, nothing said (before: the mmap
 * failed with EAGAIN, the runtime's locked buffers having taken 2.6 MiB of the limit). Builds
 * without compiler-rt's XRay runtime only: that one locks 7 MiB of its own, and root may not
 * raise the hard limit (no CAP_SYS_RESOURCE in a container). */
static void mlock_under_memlock(const char *bin, uid_t uid)
{
    if (geteuid() != 0)
        cr_skip_test("RLIMIT_MEMLOCK does not bind root (CAP_IPC_LOCK), and another user needs "
                     "root to become");
    char work[PATH_MAX], out[PATH_MAX];
    workdir_for(work, sizeof work, out, sizeof out, uid);
    struct limits_ctx c = {.uid = uid, .memlock = 8u << 20};
    struct e2e_run u, t;
    run(work, bin, "mlock", &c, NULL, &u);
    cr_assert(strstr(u.out, "mlockall OK\nmmap OK\nthread OK\n"), "untraced:\n%s", u.out);
    run(work, bin, "mlock", &c, out, &t);
    cr_assert(strstr(t.out, "mlockall OK\nmmap OK\nthread OK\n"), "traced:\n%s\n%s", t.out, t.err);
    cr_assert_str_empty(t.err);
    char trace[PATH_MAX];
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "mlock");
    verify(work, trace);
    e2e_run_free(&u);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(limits, mlockall_under_rlimit_memlock_pie)
{
    mlock_under_memlock(BIN("limitsprog-pie-nort"), 61005);
}

Test(limits, mlockall_under_rlimit_memlock_nopie)
{
    mlock_under_memlock(BIN("limitsprog-nopie-nort"), 61006);
}

/* ---- a memory cgroup ---- */

/* The mount point of the hierarchy with fstype (and, for v1, the controller) in mountinfo. */
static int mount_of(const char *fstype, const char *ctrl, char *mp, size_t len)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char root[PATH_MAX], point[PATH_MAX], type[64], super[1024];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", type, super) != 2)
            continue;
        if (strcmp(type, fstype) != 0 || strcmp(root, "/") != 0)
            continue;
        if (ctrl) {
            char words[1026];
            snprintf(words, sizeof words, ",%s,", super);
            char want[64];
            snprintf(want, sizeof want, ",%s,", ctrl);
            if (!strstr(words, want))
                continue;
        }
        snprintf(mp, len, "%s", point);
        found = 1;
    }
    fclose(f);
    return found;
}

/* The test's own cgroup path in hierarchy `id:ctrl` of /proc/self/cgroup. */
static int own_cgroup(const char *ctrl, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        line[strcspn(line, "\n")] = '\0';
        c2[1 + strcspn(c2 + 1, "\n")] = '\0';
        char words[1024];
        snprintf(words, sizeof words, ",%s,", c1 + 1);
        char want[64];
        snprintf(want, sizeof want, ",%s,", ctrl);
        if ((ctrl[0] == '\0' && c1[1] == '\0' && strcmp(line, "0") == 0) ||
            (ctrl[0] && strstr(words, want))) {
            snprintf(path, len, "%s", strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

static int put(const char *dir, const char *file, const char *value)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    int fd = open(p, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, value, strlen(value));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(value) ? 0 : -1;
}

/* Makes a child cgroup of the test's own in the hierarchy of controller ctrl (cgroup v2, else
 * v1) and writes value into its limit file (v2file, or v1file under v1); its directory in dir
 * (its cgroup.procs in procs), or a reason in why and 0. */
static int make_cgroup(const char *ctrl, const char *v2file, const char *v1file, const char *value,
                       char *dir, char *procs, char *why, size_t wlen)
{
    char mp[PATH_MAX], own[PATH_MAX];
    if (mount_of("cgroup2", NULL, mp, sizeof mp) && own_cgroup("", own, sizeof own)) {
        char parent[PATH_MAX * 2];
        snprintf(parent, sizeof parent, "%s%s", mp, own);
        snprintf(dir, PATH_MAX, "%s/sledtrace-e2e-%d", parent, (int)getpid());
        if (mkdir(dir, 0755) == 0) {
            char f[PATH_MAX + 32], plus[32];
            snprintf(f, sizeof f, "%s/%s", dir, v2file);
            snprintf(plus, sizeof plus, "+%s", ctrl);
            if (access(f, F_OK) != 0)
                put(parent, "cgroup.subtree_control", plus);
            if (put(dir, v2file, value) == 0) {
                if (strcmp(ctrl, "memory") == 0)
                    put(dir, "memory.swap.max", "0");
                snprintf(procs, PATH_MAX + 16, "%s/cgroup.procs", dir);
                return 1;
            }
            snprintf(why, wlen,
                     "cgroup v2: cannot set %s in %s (%s; is the %s controller enabled in "
                     "%s/cgroup.subtree_control?)",
                     v2file, dir, strerror(errno), ctrl, parent);
            rmdir(dir);
        } else {
            snprintf(why, wlen, "cgroup v2: cannot create %s: %s", dir, strerror(errno));
        }
    } else {
        snprintf(why, wlen, "no cgroup v2 mount");
    }
    if (mount_of("cgroup", ctrl, mp, sizeof mp) && own_cgroup(ctrl, own, sizeof own)) {
        snprintf(dir, PATH_MAX, "%s%s/sledtrace-e2e-%d", mp, own, (int)getpid());
        if (mkdir(dir, 0755) != 0) {
            size_t l = strlen(why);
            snprintf(why + l, wlen - l, "; cgroup v1: cannot create %s: %s", dir, strerror(errno));
            return 0;
        }
        if (put(dir, v1file, value) == 0) {
            snprintf(procs, PATH_MAX + 16, "%s/cgroup.procs", dir);
            return 1;
        }
        size_t l = strlen(why);
        snprintf(why + l, wlen - l, "; cgroup v1: cannot set %s/%s: %s", dir, v1file,
                 strerror(errno));
        rmdir(dir);
        return 0;
    }
    size_t l = strlen(why);
    snprintf(why + l, wlen - l, "; no cgroup v1 %s controller either", ctrl);
    return 0;
}

/* Once its last process is gone the cgroup can be removed (a moment after the wait). */
static void remove_cgroup(const char *dir)
{
    for (int i = 0; i < 100 && rmdir(dir) != 0 && errno == EBUSY; i++)
        usleep(10000);
}

/* 200 threads in a 64 MiB memory cgroup, each with its first event before the last thread
 * starts: untraced the program needs about 10 MiB, traced it asked for 206 MiB of buffers and
 * was OOM-killed (SIGKILL, no message). Now: exit 0, one warning naming the memory limit and
 * counting what was not recorded, and every thread that has buffers recorded exactly. */
static char cgroup_made[PATH_MAX];

/* Runs after the test body, whether its assertions held or not. */
static void cgroup_cleanup(void)
{
    if (cgroup_made[0])
        remove_cgroup(cgroup_made);
}

Test(limits, threads_in_a_small_memory_cgroup, .timeout = 60, .fini = cgroup_cleanup)
{
    enum { N = 200 };
    char *dir = cgroup_made, procs[PATH_MAX + 16], why[3 * PATH_MAX] = "";
    if (!make_cgroup("memory", "memory.max", "memory.limit_in_bytes", "67108864", dir, procs, why,
                     sizeof why)) {
        dir[0] = '\0';
        fprintf(stderr, "SKIPPED limits::threads_in_a_small_memory_cgroup: %s\n", why);
        cr_skip_test("no memory cgroup of our own: %s", why);
    }
    const char *bin = BIN("limitsprog-pie-nort");
    char work[PATH_MAX], out[PATH_MAX];
    workdir_for(work, sizeof work, out, sizeof out, 0);
    struct limits_ctx c = {.procs = procs};
    struct e2e_run u, t;
    char mode[32];
    snprintf(mode, sizeof mode, "memthreads:%d", N);
    run(work, bin, mode, &c, NULL, &u);
    cr_assert_eq(value_of(u.out, "made"), N, "%s", u.out);
    struct e2e_spec s = {.prog = bin,
                         .argv1 = mode,
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_CACHE=off"},
                         .pre_exec = enter_limits,
                         .ctx = &c};
    e2e_run(work, &s, &t);
    remove_cgroup(dir);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "traced: status %#x\n%s\n%s",
              t.status, t.out, t.err);
    cr_assert_eq(value_of(t.out, "made"), N, "%s", t.out);
    long per = value_of(t.out, "per-thread fib");
    /* one line, the memory limit with its cgroup file named, and what it cost */
    cr_assert_eq(e2e_nlines(t.err), 1, "%s", t.err);
    cr_assert(strncmp(t.err, "sledtrace: warning: memory limit: ", 34) == 0 &&
                  (strstr(t.err, "memory.max (") || strstr(t.err, "memory.limit_in_bytes (")),
              "%s", t.err);
    const char *p = strstr(t.err, "; of the threads, ");
    unsigned long fewer = 0, none = 0;
    unsigned chunks = 0;
    unsigned long long lost = 0;
    cr_assert(p && sscanf(p,
                          "; of the threads, %lu got fewer than SLEDTRACE_BUFFERS (%u) chunks "
                          "and %lu none: %llu events not recorded",
                          &fewer, &chunks, &none, &lost) == 4,
              "%s", t.err);
    char trace[PATH_MAX];
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    cr_assert_str_empty(tr.error, "%s", tr.error);
    cr_assert_eq(tr.unbalanced, 0);
    long recorded = tr.ntids;
    cr_assert(recorded >= 1 && recorded < N, "%ld threads recorded", recorded);
    for (int i = 0; i < tr.ntids; i++)
        cr_assert_eq(tr.tid_enters[i], per, "thread %d: %ld calls, it made %ld", tr.tid[i],
                     tr.tid_enters[i], per);
    cr_assert_eq(tr.nfuncs, 1);
    cr_assert_eq(tr.f[0].enter, recorded * per);
    cr_assert_eq((long)none, N - recorded, "%s", t.err);
    cr_assert_eq(lost, (unsigned long long)(N - recorded) * 2 * per, "%s", t.err);
    cr_assert_gt(fewer + (unsigned long)recorded, 0);
    verify(work, trace);
    e2e_run_free(&u);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* Forks in a pids cgroup with pids.max 12, as root (the cgroup binds root too): as many as
 * untraced, each child's calls exact, nothing said (before: 5 of the 11). */
Test(limits, forks_in_a_pids_cgroup, .fini = cgroup_cleanup)
{
    char *dir = cgroup_made, procs[PATH_MAX + 16], why[3 * PATH_MAX] = "";
    if (!make_cgroup("pids", "pids.max", "pids.max", "12", dir, procs, why, sizeof why)) {
        dir[0] = '\0';
        fprintf(stderr, "SKIPPED limits::forks_in_a_pids_cgroup: %s\n", why);
        cr_skip_test("no pids cgroup of our own: %s", why);
    }
    struct limits_ctx c = {.procs = procs};
    forks_limited(BIN("limitsprog-pie-nort"), &c, "forks:24");
}

/* The flush thread cannot be started (RLIMIT_NPROC 1: the process itself is the one task; the
 * toggle signal asks for a flush thread even under a tight limit): the process is traced
 * without one, every call recorded, nothing said at the default level (before: "cannot start
 * the flush thread; running untraced", no trace). */
Test(limits, flush_thread_that_cannot_start)
{
    if (geteuid() != 0)
        cr_skip_test("RLIMIT_NPROC does not bind root, and another user needs root to become");
    const char *bin = BIN("fib-pie-nort");
    char work[PATH_MAX], out[PATH_MAX];
    workdir_for(work, sizeof work, out, sizeof out, 61007);
    struct limits_ctx c = {.uid = 61007, .nproc = 1};
    struct e2e_run t;
    run_env(work, bin, "12", &c, out, "SLEDTRACE_TOGGLE_SIGNAL=USR1", NULL, &t);
    cr_assert_str_empty(t.err);
    char trace[PATH_MAX];
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "no flush thread");
    verify(work, trace);
    e2e_run_free(&t);
    e2e_rmtree(work);
}
