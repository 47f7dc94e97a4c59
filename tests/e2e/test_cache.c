/* The proof cache (patcher/cache.c): a second run takes every proof from the first one's file;
 * a damaged file, a changed function, a directory open to others or a symbolic link are never
 * trusted; SLEDTRACE_CACHE=off leaves nothing behind. cacheprog has three functions (main,
 * twice, never_called); the runtime's info line says how many were proven and how many of
 * those the cache gave. */
#include "e2e.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIN(name) E2E_DIR "/" name

/* Runs the program at prog with the cache cache_env ("SLEDTRACE_CACHE=...") and filter (an
 * environment entry, or NULL); checks it printed 6 and exited 0 and that the info line says
 * `proven` of 3 functions were proven, `cached` of those by the cache, `patched` sleds. */
static void run_filtered(const char *work, const char *prog, const char *cache_env,
                         const char *filter, int proven, int cached, int patched, const char *also)
{
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = prog,
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_LOG=info", cache_env, filter}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x\n%s", t.status, t.err);
    cr_assert_str_eq(t.out, "6\n");
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, ": 3 functions (%d proven, %d by the cache), 6 sleds, %d patched\n",
             proven, cached, patched);
    cr_assert_not_null(strstr(t.err, want), "no '%s' in:\n%s", want, t.err);
    if (also)
        cr_assert_not_null(strstr(t.err, also), "no '%s' in:\n%s", also, t.err);
    cr_assert_eq(e2e_count_lines(t.err, "sledtrace: warning: "), 0, "stderr:\n%s", t.err);
    e2e_run_free(&t);
    e2e_rmtree(out);
}

/* The same without a filter: every function proven, `cached` by the cache. */
static void run_cached(const char *work, const char *prog, const char *cache_env, int cached,
                       const char *also)
{
    run_filtered(work, prog, cache_env, NULL, 3, cached, 6, also);
}

/* The one file in dir (its path into path); fails unless there is exactly one. */
static void only_file(const char *dir, char *path, size_t len)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: no directory", dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.') {
            snprintf(path, len, "%s/%s", dir, de->d_name);
            n++;
        }
    closedir(d);
    cr_assert_eq(n, 1, "%d files in %s", n, dir);
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    size_t n;
    char *b = e2e_slurp(from, &n);
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b, n), (ssize_t)n);
    close(fd);
    free(b);
}

Test(cache, reused_then_never_trusted_when_wrong)
{
    char work[PATH_MAX], prog[PATH_MAX], dir[PATH_MAX], env[PATH_MAX + 32], file[PATH_MAX];
    e2e_workdir(work, sizeof work);
    snprintf(prog, sizeof prog, "%s/cacheprog", work);
    copy_file(BIN("cacheprog"), prog, 0755);
    snprintf(dir, sizeof dir, "%s/c", work);
    snprintf(env, sizeof env, "SLEDTRACE_CACHE=%s", dir);

    run_cached(work, prog, env, 0, NULL);
    struct stat st;
    cr_assert_eq(stat(dir, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "cache directory mode %o", st.st_mode & 0777);
    only_file(dir, file, sizeof file);
    cr_assert_eq(stat(file, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "cache file mode %o", st.st_mode & 0777);
    size_t len;
    char *first = e2e_slurp(file, &len);
    run_cached(work, prog, env, 3, NULL);

    /* A damaged file (its checksum's last byte) is ignored, and written again: the same
     * bytes, since the proofs are the same. */
    int fd = open(file, O_RDWR);
    cr_assert_geq(fd, 0);
    char c;
    cr_assert_eq(pread(fd, &c, 1, (off_t)len - 1), 1);
    c ^= 0x55;
    cr_assert_eq(pwrite(fd, &c, 1, (off_t)len - 1), 1);
    close(fd);
    run_cached(work, prog, env, 0, NULL);
    size_t len2;
    char *again = e2e_slurp(file, &len2);
    cr_assert(len2 == len && memcmp(first, again, len) == 0, "rewritten file differs");
    free(again);

    /* never_called's code changes (its immediate), the build id and size do not: that one
     * function is proven again, the others come from the cache. */
    size_t plen;
    char *p = e2e_slurp(prog, &plen);
    static const char imm[] = {(char)0xc7, (char)0xa5, 0x39, 0x30};
    size_t at = 0, found = 0;
    for (size_t i = 0; i + 4 <= plen; i++)
        if (memcmp(p + i, imm, 4) == 0) {
            at = i;
            found++;
        }
    free(p);
    cr_assert_eq(found, 1, "the immediate is in the program %zu times", found);
    fd = open(prog, O_RDWR);
    cr_assert_geq(fd, 0);
    c = (char)0xc8;
    cr_assert_eq(pwrite(fd, &c, 1, (off_t)at), 1);
    close(fd);
    /* With twice() left out by a filter: never_called is proven again, main comes from the
     * cache, and the file written keeps what it knew of twice, which the next run uses. */
    run_filtered(work, prog, env, "SLEDTRACE_FILTER=never_called,main", 2, 1, 4, NULL);
    run_cached(work, prog, env, 3, NULL);

    /* A directory open to others is not used (nor written: the file keeps its bytes). */
    free(first);
    first = e2e_slurp(file, &len);
    cr_assert_eq(chmod(dir, 0755), 0);
    run_cached(work, prog, env, 0, "not a private directory of this user");
    again = e2e_slurp(file, &len2);
    cr_assert(len2 == len && memcmp(first, again, len) == 0, "the file was written");
    free(again);
    cr_assert_eq(chmod(dir, 0700), 0);

    /* Nor a symbolic link to a private directory. */
    char link[PATH_MAX], lenv[PATH_MAX + 32];
    snprintf(link, sizeof link, "%s/link", work);
    cr_assert_eq(symlink(dir, link), 0);
    snprintf(lenv, sizeof lenv, "SLEDTRACE_CACHE=%s", link);
    run_cached(work, prog, lenv, 0, "not a private directory of this user");

    /* Nor another user's file: the runtime runs as root here, so the file is given away. */
    if (geteuid() == 0) {
        cr_assert_eq(chown(file, 65534, 65534), 0);
        run_cached(work, prog, env, 0, NULL);
        cr_assert_eq(stat(file, &st), 0);
        cr_assert_eq(st.st_uid, 0, "the file was not written again as this user's");
    }
    free(first);
    e2e_rmtree(work);
}

Test(cache, off_leaves_nothing)
{
    char work[PATH_MAX], home[PATH_MAX], henv[PATH_MAX + 8];
    e2e_workdir(work, sizeof work);
    snprintf(home, sizeof home, "%s/home", work);
    cr_assert_eq(mkdir(home, 0700), 0);
    snprintf(henv, sizeof henv, "HOME=%s", home);
    char out[PATH_MAX];
    snprintf(out, sizeof out, "%s/out", work);
    /* HOME names the default ($HOME/.cache/sledtrace, XDG_CACHE_HOME unset): off wins. */
    for (int off = 1; off >= 0; off--) {
        struct e2e_spec s = {
            .prog = BIN("cacheprog"),
            .preload = 1,
            .outdir = out,
            .env = {henv, "XDG_CACHE_HOME=", off ? "SLEDTRACE_CACHE=off" : "SLEDTRACE_CACHE="}};
        struct e2e_run t;
        e2e_run(work, &s, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s", t.err);
        e2e_run_free(&t);
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/.cache/sledtrace", home);
        struct stat st;
        if (off) {
            cr_assert_neq(stat(dir, &st), 0, "SLEDTRACE_CACHE=off made %s", dir);
        } else {
            char file[PATH_MAX];
            only_file(dir, file, sizeof file);
            cr_assert_eq(stat(dir, &st), 0);
            cr_assert_eq(st.st_mode & 0777, 0700);
            snprintf(dir, sizeof dir, "%s/.cache", home);
            cr_assert_eq(stat(dir, &st), 0);
            cr_assert_eq(st.st_mode & 0777, 0700, "~/.cache made with mode %o", st.st_mode & 0777);
        }
        e2e_rmtree(out);
    }
    e2e_rmtree(work);
}

/* A library's proofs come from the cache too, without Capstone: its scan runs inside
 * dl_iterate_phdr, where Capstone cannot be loaded, and needs it only for a proof the cache
 * lacks. shlibprog links libsla.so and dlopens libslb.so (2 functions each). */
Test(cache, shared_libraries_too)
{
    char work[PATH_MAX], out[PATH_MAX], env[PATH_MAX + 32];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(env, sizeof env, "SLEDTRACE_CACHE=%s/c", work);
    for (int run = 0; run < 2; run++) {
        struct e2e_spec s = {.prog = BIN("shlibprog"),
                             .argv1 = BIN("libslb.so"),
                             .preload = 1,
                             .outdir = out,
                             .env = {"SLEDTRACE_LOG=info", env, "LD_DEBUG=files"}};
        struct e2e_run t;
        e2e_run(work, &s, &t);
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "%s", t.err);
        for (int lib = 0; lib < 2; lib++) {
            char want[128];
            snprintf(want, sizeof want,
                     "libsl%c.so: 2 functions (2 proven, %d by the cache), 4 sleds, 4 patched\n",
                     lib ? 'b' : 'a', run ? 2 : 0);
            cr_assert_not_null(strstr(t.err, want), "no '%s' in:\n%s", want, t.err);
        }
        /* The dynamic linker's own account (LD_DEBUG=files): Capstone loaded the first time
         * only. */
        cr_assert_eq(strstr(t.err, "file=libcapstone") != NULL, !run, "%s", t.err);
        e2e_run_free(&t);
        e2e_rmtree(out);
    }
    e2e_rmtree(work);
}

/* Issue 24.3: a process started without HOME (a daemon, `env -i`) still has a cache:
 * sledtrace-cache-<euid> in $TMPDIR. Before: none, so every such process proved its sleds
 * again (2.2 ms of a one-function program's start-up). The second run takes all 3 proofs from
 * the first one's file; the directory is private. */
Test(cache, without_home_in_tmpdir)
{
    char work[PATH_MAX], dir[PATH_MAX + 64];
    e2e_workdir(work, sizeof work);
    for (int run = 0; run < 2; run++) {
        struct e2e_run t;
        e2e_run_sh(
            work, &t,
            "env -i TMPDIR='%s' SLEDTRACE_LOG=info LD_PRELOAD='%s' SLEDTRACE_OUTPUT='%s/out' "
            "'%s'",
            work, E2E_PRELOAD, work, BIN("cacheprog"));
        cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x\n%s", t.status,
                  t.err);
        char want[128];
        snprintf(want, sizeof want,
                 ": 3 functions (3 proven, %d by the cache), 6 sleds, 6 patched\n", run ? 3 : 0);
        cr_assert_not_null(strstr(t.err, want), "run %d: no '%s' in:\n%s", run, want, t.err);
        e2e_run_free(&t);
    }
    snprintf(dir, sizeof dir, "%s/sledtrace-cache-%u", work, (unsigned)geteuid());
    struct stat st;
    cr_assert_eq(lstat(dir, &st), 0, "%s missing", dir);
    cr_assert(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700, "%s: mode %o", dir,
              (unsigned)st.st_mode);
    e2e_rmtree(work);
}
