/* What the process lives under: the memory and task limits the runtime must stay inside.
 *
 * Why. Every thread that records maps SLEDTRACE_BUFFERS x SLEDTRACE_BUFFER_KB (1 MiB by
 * default), populated at once, and every traced process has one more task, its flush thread.
 * A program that fits its memory cgroup with 3000 threads untraced (26 MB) would be OOM-killed
 * traced (3 GB of buffers), and one that forks up to its RLIMIT_NPROC would see its forks fail.
 * The host program comes first: the runtime takes only a share of the memory that is left,
 * and does without its flush thread when tasks are scarce.
 *
 * Memory budget. Read once at start-up (str_limits_read; a fork child reads again, at its first
 * event): the room the memory cgroup leaves (cgroup v2: memory.max - memory.current; v1:
 * memory.limit_in_bytes - memory.usage_in_bytes; the smallest over the process's cgroup and
 * its ancestors, since any of them may be the one that OOM-kills), and MemAvailable from
 * /proc/meminfo (sysinfo's free and buffer memory where /proc is not readable). The runtime's
 * thread buffers may take a quarter of the smaller of the two: the rest is the program's, and
 * its page cache, and the trace file's. thread_pool.c asks str_mem_take before it maps a thread's
 * pool: a pool that does not fit is halved, down to 2 chunks; a thread for which 2 chunks do
 * not fit records nothing, and its events are counted (hot.c, str_nomem_dropped). The same
 * happens when the mapping itself fails (an address-space limit, or RLIMIT_MEMLOCK under
 * mlockall(MCL_FUTURE), see memlock.c). At exit one warning says what the limit cost: how
 * many threads got fewer chunks, how many none, and how many events were not recorded
 * (str_mem_report). The budget is fixed: what the program itself allocates later is not
 * followed (reading memory.current at every thread's set-up would need a descriptor kept open
 * or an open() on the slow path, which a sandbox may forbid).
 *
 * Tasks. Each task (thread or process) counts against RLIMIT_NPROC (per real user, unless the
 * process has CAP_SYS_RESOURCE or CAP_SYS_ADMIN or is root) and against pids.max of the pids
 * cgroup and its ancestors. str_tasks_tight says whether the room is scarce: fewer than
 * TASKS_ROOM tasks (RLIMIT_NPROC itself, since the user's other tasks cannot be counted
 * without reading all of /proc; pids.max - pids.current for the cgroups). Then the process
 * runs without a flush thread (flusher.c, "solo"). Not merely "finite": Debian's default
 * RLIMIT_NPROC is finite (kernel.threads-max / 2, 96365 on the 24 GiB development VM), and
 * systemd gives every service a pids.max in the thousands; a limit that far away is never
 * reached by the one task the runtime adds, and the flush thread is worth keeping there. A
 * program that does reach its limit anyway gets its flush thread stopped when its fork or
 * pthread_create fails (tasks.c, str_reclaim).
 *
 * Where the files are. /proc/self/cgroup gives the process's cgroup per hierarchy ("0::/path"
 * for v2, "N:memory,...:/path" for v1); /proc/self/mountinfo where each hierarchy is mounted
 * (read once per process image: the mounts do not change under a fork child). A cgroup path
 * outside the mount's root (another cgroup namespace) is not followed. Nothing here is on the
 * hot path; nothing is read at a thread's set-up.
 *
 * Threads: str_limits_read runs while the process is single-threaded as far as the runtime is
 * concerned (start-up, a fork child's first event); the budget counter is an atomic updated
 * with relaxed CAS (a plain counter: nothing else is published through it).
 */
#include "str.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

enum { TASKS_ROOM = 4096 };

/* ---- small file reading (no stdio: a fork child reads these on its first event) ---- */

/* Reads up to len - 1 bytes of path, NUL-terminated; the length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < len) {
        ssize_t r = read(fd, buf + n, len - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* A cgroup file holding one number, or "max": 1 and *v (UINT64_MAX for "max"), else 0. */
static int read_u64(const char *dir, const char *name, uint64_t *v)
{
    char path[PATH_MAX + 64], buf[64];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        read_small(path, buf, sizeof buf) <= 0)
        return 0;
    if (strncmp(buf, "max", 3) == 0) {
        *v = UINT64_MAX;
        return 1;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno || end == buf)
        return 0;
    *v = x;
    return 1;
}

/* ---- where the hierarchies are mounted ---- */

static struct {
    int read;
    char v2[PATH_MAX];      /* cgroup2 mount point, "" if none */
    char v2_root[PATH_MAX]; /* the mount's root inside the hierarchy */
    char mem[PATH_MAX], mem_root[PATH_MAX];
    char pids[PATH_MAX], pids_root[PATH_MAX];
} mnt;

/* mountinfo escapes blanks and backslashes as \ooo. */
static void unescape(char *s)
{
    char *d = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *d++ = *s;
        }
    }
    *d = '\0';
}

/* Whether the comma-separated list holds word. */
static int has_word(const char *list, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = list; p && *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == wl && strncmp(p, word, wl) == 0)
            return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

static void copy(char *dst, const char *src)
{
    snprintf(dst, PATH_MAX, "%s", src);
}

static void read_mounts(void)
{
    if (mnt.read)
        return;
    mnt.read = 1;
    static char buf[64 * 1024];
    if (read_small("/proc/self/mountinfo", buf, sizeof buf) <= 0)
        return;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        /* id parent maj:min root mountpoint options [optional...] - fstype source superoptions */
        char *f[5] = {0};
        char *save = NULL, *tok = strtok_r(line, " ", &save);
        for (int i = 0; i < 5 && tok; i++, tok = strtok_r(NULL, " ", &save))
            f[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " ", &save);
        char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
        char *super = source ? strtok_r(NULL, " ", &save) : NULL;
        if (!f[4] || !fstype)
            continue;
        unescape(f[3]);
        unescape(f[4]);
        if (strcmp(fstype, "cgroup2") == 0 && !mnt.v2[0]) {
            copy(mnt.v2, f[4]);
            copy(mnt.v2_root, f[3]);
        } else if (strcmp(fstype, "cgroup") == 0 && super) {
            if (has_word(super, "memory") && !mnt.mem[0]) {
                copy(mnt.mem, f[4]);
                copy(mnt.mem_root, f[3]);
            }
            if (has_word(super, "pids") && !mnt.pids[0]) {
                copy(mnt.pids, f[4]);
                copy(mnt.pids_root, f[3]);
            }
        }
    }
}

/* The directory of cgroup path `cg` under mount point `mp` whose root is `root`; 0 if the path
 * lies outside what is mounted. */
static int cgroup_dir(char *out, const char *mp, const char *root, const char *cg)
{
    size_t rl = strlen(root);
    if (strcmp(root, "/") == 0)
        rl = 0;
    else if (strncmp(cg, root, rl) != 0 || (cg[rl] != '/' && cg[rl] != '\0'))
        return 0;
    const char *rest = strcmp(cg + rl, "/") == 0 ? "" : cg + rl; /* the root: the mount */
    return snprintf(out, PATH_MAX, "%s%s", mp, rest) < PATH_MAX;
}

/* The process's cgroup directories: v2, v1 memory, v1 pids ("" where there is none). */
struct cgroups {
    char v2[PATH_MAX], mem[PATH_MAX], pids[PATH_MAX];
};

static void find_cgroups(struct cgroups *cg)
{
    cg->v2[0] = cg->mem[0] = cg->pids[0] = '\0';
    read_mounts();
    static char buf[8192];
    if (read_small("/proc/self/cgroup", buf, sizeof buf) <= 0)
        return;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (strcmp(line, "0") == 0 && !*ctrls && mnt.v2[0] &&
            !cgroup_dir(cg->v2, mnt.v2, mnt.v2_root, path))
            cg->v2[0] = '\0';
        if (has_word(ctrls, "memory") && mnt.mem[0] &&
            !cgroup_dir(cg->mem, mnt.mem, mnt.mem_root, path))
            cg->mem[0] = '\0';
        if (has_word(ctrls, "pids") && mnt.pids[0] &&
            !cgroup_dir(cg->pids, mnt.pids, mnt.pids_root, path))
            cg->pids[0] = '\0';
    }
}

/* The smallest `max - current` over dir and its ancestors up to the mount point mp (whose
 * root cgroup has no limit files); where in *at (the directory). UINT64_MAX: no limit. */
static uint64_t room_upwards(const char *dir, const char *mp, const char *max_name,
                             const char *cur_name, char *at)
{
    uint64_t best = UINT64_MAX;
    char d[PATH_MAX];
    copy(d, dir);
    size_t ml = strlen(mp);
    while (strlen(d) > ml) {
        uint64_t max, cur;
        /* v1 says "no limit" with a huge number (PAGE_COUNTER_MAX pages) */
        if (read_u64(d, max_name, &max) && max < (1ull << 62) && read_u64(d, cur_name, &cur)) {
            uint64_t room = max > cur ? max - cur : 0;
            if (room < best) {
                best = room;
                copy(at, d);
            }
        }
        char *slash = strrchr(d, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    return best;
}

/* ---- the memory budget ---- */

static size_t budget = SIZE_MAX; /* bytes the thread buffers may take; SIZE_MAX: no limit */
static _Atomic size_t used;
static char budget_why[PATH_MAX + 128]; /* what set it, for the exit warning */

static uint64_t mem_available(void)
{
    static char buf[4096];
    if (read_small("/proc/meminfo", buf, sizeof buf) > 0) {
        const char *p = strstr(buf, "MemAvailable:");
        unsigned long long kb;
        if (p && sscanf(p, "MemAvailable: %llu kB", &kb) == 1)
            return (uint64_t)kb * 1024;
    }
    struct sysinfo si;
    if (sysinfo(&si) == 0)
        return ((uint64_t)si.freeram + si.bufferram) * si.mem_unit;
    return UINT64_MAX;
}

static void read_memory(const struct cgroups *cg)
{
    char at[PATH_MAX] = "";
    uint64_t room = UINT64_MAX;
    const char *what = "";
    if (cg->v2[0]) {
        room = room_upwards(cg->v2, mnt.v2, "memory.max", "memory.current", at);
        what = "memory.max";
    }
    if (room == UINT64_MAX && cg->mem[0]) {
        room = room_upwards(cg->mem, mnt.mem, "memory.limit_in_bytes", "memory.usage_in_bytes", at);
        what = "memory.limit_in_bytes";
    }
    uint64_t avail = mem_available();
    uint64_t base = room < avail ? room : avail;
    if (base == UINT64_MAX) {
        budget = SIZE_MAX;
        snprintf(budget_why, sizeof budget_why, "no limit known");
        return;
    }
    budget = (size_t)(base / 4);
    if (room <= avail)
        snprintf(budget_why, sizeof budget_why,
                 "a quarter of the %llu MiB the cgroup's %s (%s) left at start-up",
                 (unsigned long long)(base >> 20), what, at);
    else
        snprintf(budget_why, sizeof budget_why,
                 "a quarter of the %llu MiB of MemAvailable at start-up",
                 (unsigned long long)(base >> 20));
}

int str_mem_take(size_t bytes)
{
    size_t u = atomic_load_explicit(&used, memory_order_relaxed);
    do {
        if (budget != SIZE_MAX && (u > budget || bytes > budget - u))
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&used, &u, u + bytes, memory_order_relaxed,
                                                    memory_order_relaxed));
    return 1;
}

void str_mem_give(size_t bytes)
{
    atomic_fetch_sub_explicit(&used, bytes, memory_order_relaxed);
}

/* Shortages, for the exit warning: threads that got fewer chunks than asked, threads that got
 * none, and the first cause (0: the budget, else the mapping's errno). */
static _Atomic unsigned long n_fewer, n_none;
static _Atomic int short_err = -1;

void str_mem_short(unsigned got, int err)
{
    atomic_fetch_add_explicit(got ? &n_fewer : &n_none, 1, memory_order_relaxed);
    int expect = -1;
    atomic_compare_exchange_strong_explicit(&short_err, &expect, err, memory_order_relaxed,
                                            memory_order_relaxed);
}

void str_mem_report(void)
{
    unsigned long fewer = atomic_load_explicit(&n_fewer, memory_order_relaxed);
    unsigned long none = atomic_load_explicit(&n_none, memory_order_relaxed);
    uint64_t lost = atomic_load_explicit(&str_nomem_dropped, memory_order_relaxed);
    if (!fewer && !none && !lost)
        return;
    int err = atomic_load_explicit(&short_err, memory_order_relaxed);
    char cause[sizeof budget_why + 64];
    if (err == STR_SHORT_INDEX)
        snprintf(cause, sizeof cause, "more than %u threads had buffers at once",
                 (unsigned)STR_MAX_THREADS);
    else if (err <= 0)
        snprintf(cause, sizeof cause, "the tracer's buffers are held to %zu MiB, %s", budget >> 20,
                 budget_why);
    else if (err == EAGAIN && atomic_load_explicit(&str_mlock_future, memory_order_relaxed))
        snprintf(cause, sizeof cause,
                 "mapping a thread's buffers failed: RLIMIT_MEMLOCK under mlockall(MCL_FUTURE)");
    else
        snprintf(cause, sizeof cause, "mapping a thread's buffers failed: %s", strerror(err));
    str_log(STR_WARN,
            "%s limit: %s; of the threads, %lu got fewer than SLEDTRACE_BUFFERS (%u) chunks "
            "and %lu none: %llu events not recorded",
            err == STR_SHORT_INDEX ? "thread" : "memory", cause, fewer, str_cfg.nchunks, none,
            (unsigned long long)lost);
}

void str_mem_reset(size_t in_use)
{
    atomic_store_explicit(&used, in_use, memory_order_relaxed);
    atomic_store_explicit(&n_fewer, 0, memory_order_relaxed);
    atomic_store_explicit(&n_none, 0, memory_order_relaxed);
    atomic_store_explicit(&short_err, -1, memory_order_relaxed);
    atomic_store_explicit(&str_nomem_dropped, 0, memory_order_relaxed);
}

/* ---- tasks ---- */

/* Written by str_limits_read, read by any thread (threads.c): relaxed, a flag alone. */
static _Atomic int tasks_tight;
static char tasks_why[PATH_MAX + 128];

/* RLIMIT_NPROC is not enforced for root, nor for a process with CAP_SYS_RESOURCE or
 * CAP_SYS_ADMIN. */
static int nproc_exempt(void)
{
    if (getuid() == 0)
        return 1;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &h, d) != 0)
        return 0;
    return (d[CAP_SYS_RESOURCE / 32].effective >> (CAP_SYS_RESOURCE % 32) & 1) ||
           (d[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32) & 1);
}

static void read_tasks(const struct cgroups *cg)
{
    int tight = 0;
    tasks_why[0] = '\0';
    struct rlimit rl;
    if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < TASKS_ROOM && !nproc_exempt()) {
        snprintf(tasks_why, sizeof tasks_why, "RLIMIT_NPROC is %llu",
                 (unsigned long long)rl.rlim_cur);
        atomic_store_explicit(&tasks_tight, 1, memory_order_relaxed);
        return;
    }
    char at[PATH_MAX] = "";
    uint64_t room = UINT64_MAX;
    if (cg->v2[0])
        room = room_upwards(cg->v2, mnt.v2, "pids.max", "pids.current", at);
    if (room == UINT64_MAX && cg->pids[0])
        room = room_upwards(cg->pids, mnt.pids, "pids.max", "pids.current", at);
    if (room < TASKS_ROOM) {
        tight = 1;
        snprintf(tasks_why, sizeof tasks_why, "the pids cgroup %s leaves room for %llu tasks", at,
                 (unsigned long long)room);
    }
    atomic_store_explicit(&tasks_tight, tight, memory_order_relaxed);
}

int str_tasks_tight(const char **why)
{
    *why = tasks_why;
    return atomic_load_explicit(&tasks_tight, memory_order_relaxed);
}

void str_limits_read(void)
{
    int saved = errno;
    static struct cgroups cg; /* single-threaded here (see the top) */
    find_cgroups(&cg);
    read_memory(&cg);
    read_tasks(&cg);
    errno = saved;
}
