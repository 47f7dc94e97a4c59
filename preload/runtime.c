/* libsledtrace.so start-up and exit.
 *
 * Start-up (a constructor, before main, while the program is normally single-threaded):
 * configuration; the main executable's instrumentation map is read from /proc/self/exe and every
 * sled is proven (what the proof cache, SLEDTRACE_CACHE, does not already know, on every CPU the
 * process may use: patcher/DESIGN.md); the trace file `$SLEDTRACE_OUTPUT/sledtrace.<prog>.<pid>.fdr` and its symbol
 * sidecar `.syms` are created (O_EXCL|O_NOFOLLOW, SLEDTRACE_FILE_MODE (0600) minus the umask, moved to a high
 * descriptor number so the program's own descriptors are unaffected); the flush thread starts;
 * then the proven sleds are patched, the executable's and those of every instrumented shared
 * object. Any failure logs one message and leaves the program to run untraced.
 *
 * An executable without sleds is still traced when an instrumented shared object is loaded: at
 * start-up if one is linked in (object 0 then names the executable but has no functions), or
 * later, when dlopen brings the first one (a plugin in an uninstrumented host). Until then
 * nothing is created; a program that never loads one gets one warning at start-up and no
 * files.
 *
 * Exit: an on_exit handler registered by the constructor (it runs after the program's atexit
 * handlers and after the destructors of every object, libraries loaded after the runtime
 * included: "exit" below) writes everything left and rewrites the header with the run's
 * calibrated TSC frequency. A fork child stops tracing (its buffers are copies it must not flush
 * into the parent's file).
 *
 * Sanitizers (sanitizers.c): under ThreadSanitizer or MemorySanitizer the runtime steps aside
 * with one message; under AddressSanitizer and UBSan it traces, and completes the trace from the
 * sanitizer's death callback when an error report ends the process.
 *
 * RTLD_DEEPBIND: a library opened with it binds the functions the runtime interposes to libc's;
 * dlopen points them back at the runtime's (deepbind.c).
 *
 * errno is saved and restored around everything here.
 */
#include "sledtrace.h"
#include "str.h"
#include "stf.h"
#include "stp.h"

#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct stp_object *main_obj;

static int find_main(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uintptr_t *)data = info->dlpi_addr;
    return 1; /* the first object is the main program */
}

/* mkdir -p, 0755 minus the umask; *st: the directory's. An existing directory (the usual case)
 * costs one stat. */
static int make_dir(const char *path, struct stat *st)
{
    if (stat(path, st) == 0 && S_ISDIR(st->st_mode))
        return 0;
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) /* never writable by others (safe_dir) */
            return -1;
        buf[i] = c;
    }
    return stat(path, st) == 0 && S_ISDIR(st->st_mode) ? 0 : -1;
}

/* Whether the output directory is safe for traces: other users must not be able to remove,
 * replace or read them. Refused: a directory owned by another user (root aside: it can do
 * anything anyway), or writable by group or others without the sticky bit (in a sticky one,
 * like /tmp, only an entry's owner may remove or rename it). st: the directory's (make_dir).
 * Sets errno-like text in *why. */
static int safe_dir(const struct stat *st, const char **why)
{
    if (st->st_uid != geteuid() && st->st_uid != 0) {
        *why = "owned by another user";
        return 0;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
        *why = "writable by others without the sticky bit";
        return 0;
    }
    return 1;
}

/* Creates a file exclusively, never through a symlink, and moves it to the top of the program's
 * descriptor range (str_fd_high). */
static int create_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, str_cfg.file_mode);
    return fd < 0 ? -1 : str_fd_high(fd);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Traced objects: [0] is the executable, then instrumented shared objects in the order they
 * were found (at start-up, then by dlopen). Ids: the sleds of objects 0 to 14 carry
 * `(object << 24) + function`, as with clang's -fxray-shared; from the 15th on, objects get
 * ranges of their own, packed in the last 16M ids (28-bit ids: 0xf000000 up), which the sidecar
 * gives ('r' lines, format/stf.h): so a plugin-heavy program is not limited to 15 libraries.
 * The sidecar maps ids back to names.
 *
 * Identity. A loaded object is its load address, its name, its file (device and inode) and its
 * code: a library dlclose'd and dlopen'd again, even at the same address, is a new image that
 * must be proven and patched again. Another thread's dlclose and dlopen can both happen between
 * two scans, so the address alone cannot tell: the scan checks that the object's first patched
 * sled still holds the bytes written there (stp_object_intact; a fresh copy holds the
 * compiler's). The check, and every write into an object after its patching (switch_all), is
 * made inside dl_iterate_phdr, whose lock keeps a listed object mapped. A reloaded file gets its
 * old number back (same ids, same names: the sidecar entry stays right), so a plugin reloaded
 * in a loop uses no new number; another file never reuses a number, so a trace's ids stay
 * unambiguous after a dlclose. The array grows; objs_lock serialises the scans and the
 * switches (start-up runs alone). */
enum { OBJECT_SHIFT = 24, PACKED_OBJECTS = 15, RANGE_FIRST = 15u << 24, ID_END = 1u << 28 };
struct traced {
    struct stp_object *obj;
    const char *name; /* path as the sidecar shows it */
    int live;         /* still loaded */
    dev_t dev;        /* its file */
    ino_t ino;
    uint32_t id_base; /* its sleds carry id_base + function id */
    unsigned seen;    /* the last scan that found it loaded (scan_objects) */
};
static struct traced *objs;
static unsigned nobjs, objs_cap, scan_gen;
static uint32_t range_next = RANGE_FIRST; /* the next free id of the ranges */
static pthread_mutex_t objs_lock = PTHREAD_MUTEX_INITIALIZER;
static char syms_now[PATH_MAX]; /* this process's sidecar, for objects that come later */
static struct stat syms_st;     /* and its identity */
/* Start-up finished, objects patched: dlopen/dlclose rescan. Set once, under objs_lock when it
 * happens in dlopen (a lazy start); its release store pairs with the acquire loads in dlopen,
 * dlclose and switch_all, which then see the objects and buffers set up before it. */
static _Atomic int tracing;
/* No instrumented object at start-up: the first dlopen'd one starts tracing. Cleared (under
 * objs_lock) when that attempt is over, after `tracing` is set if it worked: a dlopen in another
 * thread meanwhile waits for the lock and scans, rather than leave its library unpatched (seen:
 * 8 threads that loaded plugins while a start was under way, none traced). The release store
 * that clears it pairs with dlopen's acquire load, made before it loads `tracing`: a dlopen that
 * finds it cleared finds `tracing` as the attempt left it. */
static _Atomic int lazy;
static int patched_now = 1; /* sleds switched on (sledtrace_patch/unpatch, toggle signal) */
/* A sanitizer the runtime cannot run beside (sanitizers.c): set at start-up, never traced. */
static const char *stepped_aside;

/* A sidecar field ends its line: a name or path holding a newline would forge the next line
 * (say, a name for another id). Such a text is written empty (an unnamed id shows as #<id>); the
 * tools escape every other control byte when they show it. */
static const char *one_line(const char *s)
{
    return s && !strchr(s, '\n') ? s : "";
}

/* The sidecar's text goes out through a buffer of its own, not stdio: fdopen (with its fcntl)
 * and the 256 KiB buffer that malloc mapped and unmapped for it cost a small program more than
 * its few lines (in-process probes: writing the sidecar took 32-37 us of start-up on the
 * development VM). The buffer is sized by what is to be written (4 KiB up to 256 KiB: 100,000
 * functions' lines took 750 writes of 4 KiB); a write error is kept (errno too) and ends the
 * writing. */
struct syms_out {
    int fd, err;
    char *buf;
    size_t len, cap;
};

static void out_flush(struct syms_out *o)
{
    const char *p = o->buf;
    while (o->len && !o->err) {
        ssize_t n = write(o->fd, p, o->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            o->err = n < 0 ? errno : EIO;
            break;
        }
        p += n;
        o->len -= (size_t)n;
    }
    o->len = 0;
}

static void out_put(struct syms_out *o, const char *s, size_t n)
{
    while (n && !o->err) {
        if (o->len == o->cap)
            out_flush(o);
        size_t k = o->cap - o->len < n ? o->cap - o->len : n;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

static void out_str(struct syms_out *o, const char *s)
{
    out_put(o, s, strlen(s));
}

/* v in decimal (base 10) or lower-case hexadecimal (base 16), at least `width` digits. */
static void out_num(struct syms_out *o, uint64_t v, unsigned base, int width)
{
    char d[24];
    int k = 0;
    do
        d[k++] = "0123456789abcdef"[v % base];
    while ((v /= base) != 0);
    while (k < width)
        d[k++] = '0';
    char r[24];
    for (int i = 0; i < k; i++)
        r[i] = d[k - 1 - i];
    out_put(o, r, (size_t)k);
}

/* Starts writing to fd with a buffer for about `want` bytes: 0, or -1 (no memory). */
static int out_open(struct syms_out *o, int fd, size_t want)
{
    size_t cap = want < 4096 ? 4096 : want > 256 * 1024 ? 256 * 1024 : want;
    *o = (struct syms_out){.fd = fd, .buf = malloc(cap), .cap = cap};
    return o->buf ? 0 : -1;
}

/* Writes what is left and closes fd: 0, or -1 with errno set (the first error). */
static int out_close(struct syms_out *o)
{
    out_flush(o);
    free(o->buf);
    int rc = close(o->fd) == 0 || errno == EINTR ? 0 : errno;
    int err = o->err ? o->err : rc;
    if (err)
        errno = err;
    return err ? -1 : 0;
}

/* Bytes the lines of object objid take, about (for the buffer's size). */
static size_t syms_object_size(unsigned objid)
{
    const struct traced *o = &objs[objid];
    return 256 + strlen(o->name) + (o->obj ? 64 * stp_object_nfuncs(o->obj) : 0);
}

/* An object's lines: 'o' (bias, path), 'b' (its file's build id, when it has one: the tools
 * check a binary given to --syms against it) and its functions. */
static void syms_object(struct syms_out *f, unsigned objid)
{
    const struct traced *o = &objs[objid];
    out_str(f, "o\t");
    out_num(f, objid, 10, 1);
    out_str(f, "\t0x");
    out_num(f, o->obj ? stp_object_bias(o->obj) : 0, 16, 1);
    out_put(f, "\t", 1);
    out_str(f, one_line(o->name));
    out_put(f, "\n", 1);
    if (objid >= PACKED_OBJECTS) {
        out_str(f, "r\t");
        out_num(f, objid, 10, 1);
        out_put(f, "\t", 1);
        out_num(f, o->id_base, 10, 1);
        out_put(f, "\n", 1);
    }
    const uint8_t *id;
    size_t idlen = o->obj ? stp_object_build_id(o->obj, &id) : 0;
    if (idlen) {
        out_str(f, "b\t");
        out_num(f, objid, 10, 1);
        out_put(f, "\t", 1);
        for (size_t i = 0; i < idlen; i++)
            out_num(f, id[i], 16, 2);
        out_put(f, "\n", 1);
    }
    size_t n = o->obj ? stp_object_nfuncs(o->obj) : 0; /* an executable without sleds: none */
    /* "f\tOBJ\tID\t0xADDR\tNAME\n", formatted by hand: with 100,000 functions, fprintf took
     * most of the time it takes to write the sidecar. */
    char line[256];
    int head = snprintf(line, sizeof line, "f\t%u\t", objid);
    for (size_t i = 0; i < n; i++) {
        uint32_t id;
        uintptr_t addr;
        const char *name;
        stp_object_func(o->obj, i, &id, &addr, &name);
        char *p = line + head, digits[24];
        int k = 0;
        do
            digits[k++] = (char)('0' + id % 10);
        while ((id /= 10) != 0);
        while (k)
            *p++ = digits[--k];
        *p++ = '\t';
        *p++ = '0';
        *p++ = 'x';
        static const char hex[] = "0123456789abcdef";
        do
            digits[k++] = hex[addr & 15];
        while ((addr >>= 4) != 0);
        while (k)
            *p++ = digits[--k];
        *p++ = '\t';
        size_t len = name ? strlen(name) : 0;
        if (len && memchr(name, '\n', len))
            len = 0; /* one_line's rule */
        if (len < (size_t)(line + sizeof line - p) - 1) {
            memcpy(p, name, len);
            p += len;
            *p++ = '\n';
            out_put(f, line, (size_t)(p - line));
        } else {
            out_put(f, line, (size_t)(p - line));
            out_put(f, name, len);
            out_put(f, "\n", 1);
        }
    }
}

/* The program's command line, each argument quoted for a POSIX shell where it needs it, and any
 * control byte written as \xNN (a sidecar line ends at a newline). Made at start-up, before the
 * program can write over its arguments (as servers that set their process title do). */
static char *cmdline;

static void save_cmdline(int argc, char **argv)
{
    size_t cap = 1;
    for (int i = 0; i < argc && argv && argv[i]; i++)
        cap += 4 * strlen(argv[i]) + 3 + 1;
    char *s = malloc(cap), *p = s;
    if (!s)
        return;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < argc && argv && argv[i]; i++) {
        const char *a = argv[i];
        int plain = *a != '\0';
        for (const char *c = a; *c && plain; c++)
            plain =
                strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@%",
                       *c) != NULL;
        if (i)
            *p++ = ' ';
        if (!plain)
            *p++ = '\'';
        for (const char *c = a; *c; c++) {
            unsigned char b = (unsigned char)*c;
            if (b < 0x20 || b == 0x7f) {
                *p++ = '\\';
                *p++ = 'x';
                *p++ = hex[b >> 4];
                *p++ = hex[b & 15];
            } else if (b == '\'') {
                memcpy(p, "'\\''", 4);
                p += 4;
            } else {
                *p++ = (char)b;
            }
        }
        if (!plain)
            *p++ = '\'';
    }
    *p = '\0';
    cmdline = s;
}

/* Writes the symbol sidecar (format/stf.h documents it) for every object. Returns 0 or -1. */
static int write_syms(const char *path)
{
    int fd = create_file(path);
    if (fd < 0 || fstat(fd, &syms_st) != 0) {
        if (fd >= 0)
            close(fd);
        syms_now[0] = '\0'; /* never appended to: its identity is unknown */
        return -1;
    }
    size_t want = 64 + (cmdline ? strlen(cmdline) : 0);
    for (unsigned i = 0; i < nobjs; i++)
        want += syms_object_size(i);
    struct syms_out f;
    if (out_open(&f, fd, want) != 0) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    out_str(&f, "sledtrace-syms\t1\n");
    if (str_cfg.run_id) { /* `sledtrace run` finds the traces of its run by it */
        out_str(&f, "run\t");
        out_str(&f, str_cfg.run_id);
        out_put(&f, "\n", 1);
    }
    if (cmdline) {
        out_str(&f, "cmd\t");
        out_str(&f, cmdline);
        out_put(&f, "\n", 1);
    }
    for (unsigned i = 0; i < nobjs; i++)
        syms_object(&f, i);
    if (out_close(&f) == 0)
        return 0;
    /* Not left empty or cut (issue 27.6: a full disk left 0-byte sidecars the tools refused):
     * the file this call created goes (only that one: a name it could not create is someone
     * else's), and is never appended to. */
    int err = errno;
    unlink(path);
    syms_now[0] = '\0';
    errno = err;
    return -1;
}

static void syms_finish(const char *text, size_t len)
{
    /* Under a seccomp filter (threads.c) opening a file may kill the process: left out. */
    if (!syms_now[0] || !len || atomic_load_explicit(&str_seccomp_filter, memory_order_relaxed))
        return;
    int fd = open(syms_now, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        /* said (issue 23.15): after setresuid or chroot, the sidecar may be out of reach */
        str_log(STR_WARN,
                "%s: cannot be reopened (%s): the process's exit and its threads' names are "
                "not in it",
                syms_now, strerror(errno));
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_dev != syms_st.st_dev || st.st_ino != syms_st.st_ino ||
        !S_ISREG(st.st_mode)) {
        str_log(STR_WARN,
                "%s: no longer the file the runtime created: the process's exit and its "
                "threads' names are not written to it",
                syms_now);
    } else {
        while (len > 0) {
            ssize_t n = write(fd, text, len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            text += n;
            len -= (size_t)n;
        }
    }
    close(fd);
}

/* Adds an object found after the sidecar was written. The sidecar is reopened by its name, but
 * never blocking (a FIFO put in its place by someone else must not hang dlopen) and only if it
 * is still the file created at start-up (device and inode): anything else is left alone. */
static void append_syms(unsigned objid)
{
    if (!syms_now[0])
        return;
    int fd = open(syms_now, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != syms_st.st_dev ||
                    st.st_ino != syms_st.st_ino || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        errno = EEXIST;
    }
    struct syms_out f;
    if (fd >= 0 && out_open(&f, fd, syms_object_size(objid)) != 0) {
        close(fd);
        fd = -1;
        errno = ENOMEM;
    }
    if (fd < 0) {
        str_log(STR_WARN, "cannot add %s to %s (%s); its functions will show as ids",
                objs[objid].name, syms_now,
                errno == EEXIST ? "the file was replaced" : strerror(errno));
        return;
    }
    syms_object(&f, objid);
    out_close(&f);
}

/* SLEDTRACE_FILTER / SLEDTRACE_EXCLUDE(_FILE): functions left out are never patched, so they cost
 * nothing; functions without a symbol name match only "*". */
static size_t apply_filters(struct stp_object *obj, const char *lib)
{
    if (!str_filter_active())
        return 0;
    size_t n = stp_object_nfuncs(obj), left = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t id;
        uintptr_t addr;
        const char *name;
        stp_object_func(obj, i, &id, &addr, &name);
        if (!str_filter_keep(lib, name)) {
            stp_object_leave_out(obj, i);
            left++;
        }
    }
    return left;
}

static void log_filtered(const struct stp_object *obj, const char *lib, size_t left)
{
    if (str_filter_active())
        str_log(STR_INFO,
                "%s: %zu of %zu functions left out by SLEDTRACE_FILTER/EXCLUDE/EXCLUDE_FILE", lib,
                left, stp_object_nfuncs(obj));
}

/* ---- proofs: the per-user cache, and threads to prove on ---- */

/* Starts a proof worker with every signal blocked: no handler of the program runs on it. */
static int spawn_worker(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = str_thread_create(t, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* The cache directory once it is known to be usable (created, the user's own), else NULL. */
static const char *cache_dir(void)
{
    static int state; /* 0: not tried, 1: usable, -1: not */
    if (state == 0) {
        int rc = str_cfg.cache_dir ? stp_cache_prepare(str_cfg.cache_dir) : -ENOENT;
        state = rc == 0 ? 1 : -1;
        if (rc != 0 && str_cfg.cache_dir)
            str_log(STR_INFO, "proof cache %s: %s; every sled is proven afresh", str_cfg.cache_dir,
                    rc == -EPERM ? "not a private directory of this user" : strerror(-rc));
    }
    return state == 1 ? str_cfg.cache_dir : NULL;
}

/* Proves obj's sleds: with the cache, and at start-up (threads allowed: not inside
 * dl_iterate_phdr, where the dynamic linker's lock is held) on every CPU the process may use.
 * cache_only: Capstone is not loaded (inside dl_iterate_phdr it cannot be): STP_E_UNPROVEN
 * unless the cache holds every proof. */
static int prove(struct stp_object *obj, int threads, int cache_only)
{
    struct stp_verify_opts o = {
        .cache_dir = cache_dir(), .spawn = spawn_worker, .cache_only = cache_only};
    cpu_set_t cpus;
    if (threads && sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1)
        o.workers = (unsigned)CPU_COUNT(&cpus) - 1;
    int saved = errno;
    int rc = stp_object_verify_opts(obj, &o);
    errno = saved;
    return rc;
}

static void log_counts(const struct stp_object *obj, const char *name)
{
    size_t n[STP_NSTATUS];
    stp_object_counts(obj, n);
    size_t ok = n[STP_OK];
    size_t total = stp_object_nsleds(obj);
    str_log(STR_INFO, "%s: %zu functions (%zu proven, %zu by the cache), %zu sleds, %zu patched",
            name, stp_object_nfuncs(obj), stp_object_proven(obj), stp_object_cached(obj), total,
            ok);
    for (int s = 1; s < STP_NSTATUS; s++) {
        size_t c = n[s];
        if (c)
            str_log(STR_INFO, "%zu sleds left untouched: %s", c,
                    stp_status_name((enum stp_status)s));
    }
    if (ok < total)
        str_log(STR_DEBUG, "first refusals:");
    size_t shown = 0;
    for (size_t i = 0; i < total && shown < 10; i++) {
        uintptr_t addr;
        enum stp_kind kind;
        uint32_t fid;
        enum stp_status st;
        stp_object_sled(obj, i, &addr, &kind, &fid, &st);
        if (st != STP_OK) {
            str_log(STR_DEBUG, "  %s sled of function %u at %#lx: %s", stp_kind_name(kind), fid,
                    (unsigned long)addr, stp_status_name(st));
            shown++;
        }
    }
}

/* Functions a debugger's breakpoint sits on, or whose sleds someone changed since their proof:
 * told at the warning level (a user who set a breakpoint wants to know the function is not
 * traced), with the first one's name. */
static void warn_untouched(const struct stp_object *obj, const char *name)
{
    for (int st = STP_BREAKPOINT; st <= STP_CHANGED; st++) {
        size_t funcs = 0, n = stp_object_nsleds(obj);
        uint32_t last = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
            uintptr_t addr;
            enum stp_kind kind;
            uint32_t fid;
            enum stp_status s;
            stp_object_sled(obj, i, &addr, &kind, &fid, &s);
            if ((int)s == st && fid != last) {
                funcs++;
                last = fid;
                first = first ? first : fid;
            }
        }
        if (!funcs)
            continue;
        uint32_t id;
        uintptr_t addr;
        const char *fname;
        stp_object_func(obj, first - 1, &id, &addr, &fname);
        char more[32] = "";
        if (funcs > 1)
            snprintf(more, sizeof more, " and %zu more", funcs - 1);
        str_log(STR_WARN, "%s: %zu function%s left untraced (%s): %s%s", name, funcs,
                funcs == 1 ? "" : "s", stp_status_name((enum stp_status)st), *fname ? fname : "?",
                more);
    }
}

/* Before each rewrite of code: the patcher reads the pages' protections from /proc/self/maps,
 * through its PROCMAP_QUERY ioctl unless the program installed a seccomp filter (threads.c),
 * which may kill on ioctl where it allows the open and the reads of the text. */
static void maps_query_setting(void)
{
    stp_maps_query(!atomic_load_explicit(&str_seccomp_filter, memory_order_relaxed));
}

static int patch(struct stp_object *obj, const char *name, uint32_t id_base)
{
    maps_query_setting();
    struct stp_targets t;
    memset(&t, 0, sizeof t);
    if (str_args_mark(obj, base_name(name), id_base)) { /* SLEDTRACE_ARGS (args.c) */
        t.args_entry = stp_tramp_entry_args;
        t.args_exit = stp_tramp_exit_args;
    }
    t.fn[STP_ENTRY] = stp_tramp_entry;
    /* with SLEDTRACE_MIN_DURATION the exits go to stp_event_min (hot.c); else stp_event */
    t.fn[STP_EXIT] = str_cfg.min_duration_ns ? stp_tramp_exit_min : stp_tramp_exit;
    t.fn[STP_TAIL] = str_cfg.min_duration_ns ? stp_tramp_tail_min : stp_tramp_tail;
    t.fn[STP_LOG_ARGS_ENTER] = stp_tramp_log_args;
    t.fn[STP_CUSTOM_EVENT] = stp_tramp_custom;
    t.fn[STP_TYPED_EVENT] = stp_tramp_typed;
    int rc = stp_object_patch(obj, &t);
    if (rc != 0)
        str_log(STR_WARN, "%s: %s; some sleds left untouched", name, stp_strerror(rc));
    log_counts(obj, name);
    warn_untouched(obj, name);
    return rc;
}

/* A shared object loaded at start-up or by dlopen: patched if it has an instrumentation map.
 * ADD_NEED_CAPSTONE: the object needs Capstone to be proven, and it is not loaded: the caller
 * (inside dl_iterate_phdr, under the dynamic linker's lock, where dlopen would deadlock) must
 * load it outside and come back (scan_objects). */
enum { ADD_NONE = -1, ADD_NEED_CAPSTONE = -2 };

/* The ids a range takes for an object of nfuncs functions (ids 1..nfuncs), a multiple of 16. */
static uint64_t range_size(size_t nfuncs)
{
    return ((uint64_t)nfuncs + 1 + 15) & ~(uint64_t)15;
}

/* An object number to give the file: that of an unloaded object of the same file (its id base
 * too), else a new one (*base: its ids' base; a range of nfuncs + 1 ids from the 15th object
 * on); -1 when the ids are used up. */
static int number_for(const char *path, const struct stat *st, size_t nfuncs, uint32_t *base)
{
    for (unsigned i = 1; i < nobjs; i++)
        if (!objs[i].live && objs[i].obj && st && objs[i].dev == st->st_dev &&
            objs[i].ino == st->st_ino && strcmp(objs[i].name, path) == 0 &&
            stp_object_nfuncs(objs[i].obj) == nfuncs) {
            *base = objs[i].id_base;
            return (int)i;
        }
    if (nobjs < PACKED_OBJECTS) {
        *base = nobjs << OBJECT_SHIFT;
        return (int)nobjs;
    }
    if (range_next + range_size(nfuncs) > ID_END)
        return -1;
    *base = range_next;
    return (int)nobjs;
}

/* Room for objs[nobjs]: 0, or -1 (out of memory). */
static int objs_room(void)
{
    if (nobjs < objs_cap)
        return 0;
    unsigned cap = objs_cap ? 2 * objs_cap : 16;
    struct traced *p = realloc(objs, cap * sizeof *p);
    if (!p)
        return -1;
    memset(p + objs_cap, 0, (cap - objs_cap) * sizeof *p);
    objs = p;
    objs_cap = cap;
    return 0;
}

/* Proves and patches a newly loaded object. Returns its number, ADD_NONE (not instrumented, or
 * left alone: logged), or ADD_NEED_CAPSTONE (see the callers). */
static int add_object(const char *path, uintptr_t bias, const struct stat *st)
{
    struct stp_object *obj;
    if (stp_file_has_map(path) == 0)
        return ADD_NONE; /* not instrumented: the usual case, told cheaply */
    int rc = stp_object_open(path, bias, &obj);
    if (rc == STP_E_NO_MAP || rc == STP_E_OPEN)
        return ADD_NONE; /* not instrumented, or not a file we can read */
    uint32_t base = 0;
    int num = rc == 0 ? number_for(path, st, stp_object_nfuncs(obj), &base) : 0;
    if (rc == 0 && (num < 0 || objs_room() != 0)) {
        static int said;
        if (!said++)
            str_log(STR_WARN, "%s: %s; it and any like it loaded later are left alone (untraced)",
                    path,
                    num < 0 ? "the trace's 28-bit function ids are used up" : strerror(ENOMEM));
        stp_object_close(obj);
        return ADD_NONE;
    }
    if (rc == 0) {
        /* before the proofs: left out, never proven */
        size_t left = apply_filters(obj, base_name(path));
        /* Without Capstone (it cannot be loaded in here), the cache may still hold every proof;
         * if not, the caller loads Capstone and scans again. */
        rc = prove(obj, 0, !stp_capstone_loaded());
        if (rc == STP_E_UNPROVEN) {
            stp_object_close(obj);
            return ADD_NEED_CAPSTONE;
        }
        log_filtered(obj, base_name(path), left);
    }
    if (rc != 0) {
        str_log(STR_WARN, "%s: %s; left alone", path, stp_strerror(rc));
        stp_object_close(obj);
        return ADD_NONE;
    }
    if (stp_object_nfuncs(obj) >= STF_FID_RESERVED_FIRST ||
        (num >= PACKED_OBJECTS && base + stp_object_nfuncs(obj) >= ID_END)) {
        /* Its ids would reach the pseudo-functions (the tracer's, the waits: stf.h). */
        str_log(STR_WARN, "%s: %zu functions, more than a trace can number; left alone", path,
                stp_object_nfuncs(obj));
        stp_object_close(obj);
        return ADD_NONE;
    }
    unsigned objid = (unsigned)num;
    int reused = objid < nobjs;
    if (reused)
        stp_object_close(objs[objid].obj); /* the unloaded image's (its stub page stays) */
    else if (objid >= PACKED_OBJECTS)
        range_next = base + (uint32_t)range_size(stp_object_nfuncs(obj));
    stp_object_set_id_base(obj, base);
    objs[objid] = (struct traced){
        obj, stp_object_path(obj), 1, st ? st->st_dev : 0, st ? st->st_ino : 0, base, scan_gen};
    if (!reused)
        nobjs++;
    patch(obj, path, base);
    if (!patched_now) /* tracing is switched off (sledtrace_unpatch, the toggle signal) */
        stp_object_toggle(obj, -1, 0, NULL);
    if (!reused)
        append_syms(objid);
    str_log(STR_DEBUG, "%s: object %u%s", path, objid, reused ? " (loaded again)" : "");
    return (int)objid;
}

static uintptr_t self_base;

/* Every loaded object of every link-map namespace. dl_iterate_phdr lists only its caller's
 * namespace (the program's): the libraries dlmopen put in others are reached through the
 * dynamic linker's debugger interface, _r_debug, whose version 2 (glibc 2.35) links one
 * r_debug per namespace, each heading its namespace's link_map list. That walk is made from
 * inside a dl_iterate_phdr callback, whose lock (held for its whole duration) keeps every list
 * as it is and every listed object mapped, as for the program's own. Objects of other
 * namespaces get only dlpi_addr and dlpi_name. fn returns nonzero to stop. */
struct all_objects {
    int (*fn)(struct dl_phdr_info *, size_t, void *);
    void *data;
    const struct r_debug_extended *namespaces; /* _r_debug, the program's namespace's */
    int first, stopped;
};

static int all_objects_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct all_objects *a = arg;
    if (a->first) {
        a->first = 0;
        const struct r_debug_extended *ns = a->namespaces;
        if (ns && ns->base.r_version >= 2)
            for (ns = ns->r_next; ns; ns = ns->r_next)
                for (const struct link_map *l = ns->base.r_map; l; l = l->l_next) {
                    struct dl_phdr_info other = {.dlpi_addr = l->l_addr, .dlpi_name = l->l_name};
                    if ((a->stopped = a->fn(&other, sizeof other, a->data)) != 0)
                        return 1;
                }
    }
    return (a->stopped = a->fn(info, size, a->data)) != 0;
}

static void each_object(int (*fn)(struct dl_phdr_info *, size_t, void *), void *data)
{
    /* Looked up (outside the callback: dlsym takes the dynamic linker's lock) rather than
     * named: the header declares _r_debug as the smaller, version 1 structure. Once: it is the
     * dynamic linker's, never moves, and a lookup in the global scope costs microseconds
     * (twice per scan). Any thread may be first; each finds the same address (relaxed: the
     * pointer alone, whose target the dynamic linker's lock orders). */
    static _Atomic(const struct r_debug_extended *) r_debug;
    const struct r_debug_extended *ns = atomic_load_explicit(&r_debug, memory_order_relaxed);
    if (!ns) {
        ns = dlsym(RTLD_DEFAULT, "_r_debug");
        atomic_store_explicit(&r_debug, ns, memory_order_relaxed);
    }
    struct all_objects a = {fn, data, ns, 1, 0};
    dl_iterate_phdr(all_objects_one, &a);
}

/* A shared object dl_iterate_phdr lists that could be traced (not the executable, listed first
 * with no name, nor sledtrace itself, nor the vDSO). */
static int candidate(const struct dl_phdr_info *info)
{
    const char *name = info->dlpi_name;
    return name && *name && info->dlpi_addr != self_base && !strstr(name, "linux-vdso");
}

/* The live traced object that info lists (called inside dl_iterate_phdr: the object is
 * mapped), NULL if none; *intact: whether it is still the image the runtime patched. st: its
 * file, if known. */
static struct traced *traced_as(const struct dl_phdr_info *info, const struct stat *st, int *intact)
{
    for (unsigned i = 1; i < nobjs; i++) {
        struct traced *o = &objs[i];
        if (o->live && stp_object_bias(o->obj) == info->dlpi_addr &&
            strcmp(o->name, info->dlpi_name) == 0 &&
            (!st || (o->dev == st->st_dev && o->ino == st->st_ino))) {
            *intact = stp_object_intact(o->obj);
            return o;
        }
    }
    return NULL;
}

struct scan {
    int need; /* the scan stopped at an object that needs Capstone (ADD_NEED_CAPSTONE): load
                 it, scan again (0: it went through) */
};

/* The traced object info lists, if it is still the image the runtime patched, else NULL. */
static struct traced *still_patched(const struct dl_phdr_info *info)
{
    if (!candidate(info))
        return NULL;
    struct stat st;
    int intact;
    struct traced *o = traced_as(info, stat(info->dlpi_name, &st) == 0 ? &st : NULL, &intact);
    return o && intact ? o : NULL;
}

/* The first pass: every traced object still loaded, as the image it patched, is seen. */
static int mark_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    struct traced *o = still_patched(info);
    if (o)
        o->seen = scan_gen;
    return 0;
}

/* The second pass: what the first did not see is new (or a new image of an old file). */
static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct scan *sc = data;
    if (!candidate(info))
        return 0;
    const char *name = info->dlpi_name;
    struct stat st;
    int have = stat(name, &st) == 0;
    int intact;
    struct traced *o = traced_as(info, have ? &st : NULL, &intact);
    if (o && intact)
        return 0;
    if (o) { /* replaced, between the passes, by a new image at the same address */
        o->live = 0;
        str_log(STR_DEBUG, "%s loaded again", o->name);
    }
    int num = add_object(name, info->dlpi_addr, have ? &st : NULL);
    if (num == ADD_NEED_CAPSTONE) {
        sc->need = num;
        return 1; /* stop */
    }
    return 0;
}

/* Patches every loaded object not seen yet and forgets those that are gone (dlclose). Capstone,
 * loaded by the proofs, is unloaded afterwards until the next object needs proving. Two passes:
 * the objects gone (or replaced) are forgotten before the new ones are numbered, so that a file
 * unloaded and loaded again between two scans, at any address, gets its own number back. */
static void scan_objects(void)
{
    struct scan sc;
    int loaded = 0;
    scan_gen++;
    int any = 0; /* a shared object to look for: else the first pass finds nothing (at start-up,
                    it cost a stat of every library) */
    for (unsigned i = 1; i < nobjs; i++)
        any |= objs[i].live;
    if (any)
        each_object(mark_one, NULL);
    for (unsigned i = 1; i < nobjs; i++)
        if (objs[i].live && objs[i].seen != scan_gen) {
            objs[i].live = 0;
            str_log(STR_DEBUG, "%s unloaded", objs[i].name);
        }
    do {
        memset(&sc, 0, sizeof sc);
        each_object(scan_one, &sc);
        if (sc.need)
            loaded = stp_capstone_load();
    } while (sc.need && loaded == 0);
    if (str_filter_active())
        str_filter_report(); /* patterns that matched no function so far */
    if (sc.need) {
        static int said; /* once (under objs_lock) */
        if (!said++)
            str_log(STR_WARN, "cannot load %s; libraries loaded from now on are left alone",
                    STP_CAPSTONE_NAME);
        return;
    }
    stp_capstone_release();
}

static char exe_path[PATH_MAX];

static int open_outputs(char *path, size_t plen, char *syms, size_t slen)
{
    struct stat dir;
    if (make_dir(str_cfg.output, &dir) != 0) {
        str_log(STR_WARN, "cannot create output directory %s (%s); running untraced",
                str_cfg.output, strerror(errno));
        return -1;
    }
    const char *why;
    if (!safe_dir(&dir, &why)) {
        str_log(STR_WARN,
                "output directory %s is %s: other users could remove or replace the "
                "trace; running untraced",
                str_cfg.output, why);
        return -1;
    }
    int pid = (int)getpid();
    const char *prog = base_name(exe_path);
    /* sledtrace.PROG.PID.fdr; if that exists (a program that exec'd itself keeps its pid, or
     * something squats the name), sledtrace.PROG.PID.N.fdr for the first free N. Nothing that
     * exists is ever opened. */
    int fd = -1;
    for (int n = 0; n < 100 && fd < 0; n++) {
        char seq[16] = "";
        if (n > 0)
            snprintf(seq, sizeof seq, ".%d", n);
        if (snprintf(path, plen, "%s/sledtrace.%s.%d%s.fdr", str_cfg.output, prog, pid, seq) >=
                (int)plen ||
            snprintf(syms, slen, "%s/sledtrace.%s.%d%s.syms", str_cfg.output, prog, pid, seq) >=
                (int)slen) {
            str_log(STR_WARN, "output path too long; running untraced");
            return -1;
        }
        fd = create_file(path);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        str_log(STR_WARN, "cannot create %s (%s); running untraced", path, strerror(errno));
        return -1;
    }
    snprintf(syms_now, sizeof syms_now, "%s", syms);
    if (write_syms(syms) != 0) {
        /* a full disk is said by the trace itself (trace_file.c), not here: every process of a
         * run on that disk would say it */
        int err = errno;
        str_log(err == ENOSPC || err == EDQUOT ? STR_INFO : STR_WARN,
                "cannot write %s (%s); tools will print ids, not names", syms, strerror(err));
    }
    return fd;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Is an instrumented shared object loaded (not the executable, sledtrace or the vDSO)? */
static int probe_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name;
    if (!name || !*name || info->dlpi_addr == self_base || strstr(name, "linux-vdso"))
        return 0;
    if (stp_file_has_map(name) != 1)
        return 0;
    *(int *)data = 1;
    return 1; /* stop */
}

static int instrumented_loaded(void)
{
    int found = 0;
    each_object(probe_one, &found);
    return found;
}

/* fork: no lock of the runtime's may be held across it, or the child would find it locked
 * forever: objs_lock (a dlopen scan, or the flush thread toggling sleds: a page of text may be
 * writable meanwhile) and buffers.c's registry lock (no path holds both otherwise).
 * str_fork_prepare first blocks the forking thread's asynchronous signals (a handler may fork
 * too), and str_fork_child gives them back last. */
static void fork_prepare(void)
{
    str_fork_prepare();
    pthread_mutex_lock(&objs_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&objs_lock);
    str_fork_parent();
}

static void fork_child(void)
{
    pthread_mutex_init(&objs_lock, NULL);
    str_fork_child();
}

static void toggle_all(void);

/* The trace files, the flush thread and the exit paths. Returns 0, or -1 (logged). */
static int begin_outputs(char *path, size_t plen)
{
    char syms[PATH_MAX];
    int fd = open_outputs(path, plen, syms, sizeof syms);
    if (fd < 0)
        return -1;
    stp_fpu_init();
    static const struct str_outputs outputs = {open_outputs, syms_finish, toggle_all};
    if (str_buffers_start(fd, path, syms, &outputs) != 0) {
        str_log(STR_WARN, "cannot start the flush thread; running untraced");
        close(fd);
        return -1;
    }
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    at_quick_exit(str_buffers_finish);
    str_signals_install();
    str_sanitizer_death_hook(); /* an ASan or UBSan error report that ends the process */
    return 0;
}

static void start(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    str_signals_early();
    str_threads_early();
    str_context_early();
    str_config_load();
    str_waits_early();
    if (str_cfg.disable)
        return;

    char *exe = exe_path;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe_path - 1);
    if (n <= 0) {
        str_log_release(1);
        str_log(STR_WARN, "cannot read /proc/self/exe (%s); not tracing", strerror(errno));
        return;
    }
    exe[n] = '\0';
    Dl_info self;
    if (dladdr(&self_base, &self))
        self_base = (uintptr_t)self.dli_fbase;
    uintptr_t bias = 0;
    dl_iterate_phdr(find_main, &bias);
    stepped_aside = str_sanitizer_unsupported();
    if (stepped_aside) {
        /* Before anything is proven, created or started: the program runs as untraced. One
         * message: a warning where there is something to trace, now or when dlopen brings the
         * first instrumented library (lazy_start says it then). */
        int something = stp_file_has_map("/proc/self/exe") == 1 || instrumented_loaded();
        if (something) {
            str_log_release(1);
            str_log(STR_WARN, "%s: %s", exe, str_sanitizer_why(stepped_aside));
        } else {
            atomic_store_explicit(&lazy, 1, memory_order_relaxed);
        }
        return;
    }
    /* Most processes LD_PRELOAD reaches have no sleds: the executable's section headers say so
     * (a few system calls), and nothing more is read of it then. */
    int rc = stp_object_open("/proc/self/exe", bias, &main_obj);
    if (rc == STP_E_NO_MAP) {
        /* No sleds in the executable: its instrumented libraries are traced, if it has any. */
        main_obj = NULL;
        if (objs_room() != 0)
            return;
        objs[0] = (struct traced){.obj = NULL, .name = exe_path, .live = 1};
        nobjs = 1;
        if (!instrumented_loaded()) {
            /* Most likely a program a traced one started (sh, cat, a compiler): quiet at the
             * default level, and its held warnings stay held (log.c). */
            str_log(STR_INFO, "%s: %s; running untraced unless it dlopens an instrumented library",
                    exe, stp_strerror(rc));
            atomic_store_explicit(&lazy, 1, memory_order_relaxed); /* unless dlopen brings one */
            return;
        }
        str_log_release(1);
        str_log(STR_INFO, "%s has no sleds; tracing its instrumented libraries", exe);
    } else if (rc != 0) {
        /* An executable that cannot be read (mode 111) is as quiet as one without sleds; one
         * whose ELF or map is broken is worth a warning. */
        int err = errno;
        str_log_release(rc != STP_E_OPEN);
        str_log(rc == STP_E_OPEN ? STR_INFO : STR_WARN, "%s: %s%s%s; running untraced", exe,
                stp_strerror(rc), rc == STP_E_OPEN ? ": " : "",
                rc == STP_E_OPEN ? strerror(err) : "");
        main_obj = NULL;
        return;
    }
    double t_map = ms_since(&t0);
    if (main_obj) {
        str_log_release(1);
        /* before the proofs: left out, never proven */
        log_filtered(main_obj, base_name(exe), apply_filters(main_obj, base_name(exe)));
        rc = prove(main_obj, 1, 0);
        if (rc != 0) {
            str_log(STR_WARN, "%s: %s; running untraced", exe, stp_strerror(rc));
            return;
        }
        if (objs_room() != 0)
            return;
        objs[0] = (struct traced){.obj = main_obj, .name = exe_path, .live = 1};
        nobjs = 1;
        if (stp_object_has_xray_runtime(main_obj))
            str_log(STR_INFO, "%s links compiler-rt's XRay runtime; sledtrace owns the sleds", exe);
    }
    double t_verify = ms_since(&t0);

    char path[PATH_MAX];
    if (begin_outputs(path, sizeof path) != 0)
        return;
    double t_files = ms_since(&t0);
    if (main_obj)
        patch(main_obj, exe, 0);
    scan_objects();
    str_args_report(); /* SLEDTRACE_ARGS patterns that matched no function at start-up */
    atomic_store_explicit(&tracing, 1, memory_order_release); /* pairs: see its declaration */
    double t_patch = ms_since(&t0);
    str_log(STR_INFO,
            "start-up took %.1f ms: map and names %.1f, Capstone proofs %.1f, files and flush "
            "thread %.1f, patching (shared objects included) %.1f",
            t_patch, t_map, t_verify - t_map, t_files - t_verify, t_patch - t_files);
    str_log(STR_INFO, "tracing to %s", path);
}

/* dlopen brought the first instrumented object into a program that had none (called with
 * objs_lock held). */
static void lazy_start(void)
{
    if (atomic_load_explicit(&tracing, memory_order_acquire) || !instrumented_loaded())
        return;
    str_log_release(1);
    if (stepped_aside) {
        str_log(STR_WARN, "%s: %s", exe_path, str_sanitizer_why(stepped_aside));
        atomic_store_explicit(&lazy, 0, memory_order_release); /* said once; never traced */
        return;
    }
    char path[PATH_MAX];
    if (begin_outputs(path, sizeof path) != 0) {
        atomic_store_explicit(&lazy, 0, memory_order_release); /* one attempt; it is logged */
        return;
    }
    scan_objects();
    atomic_store_explicit(&tracing, 1, memory_order_release); /* pairs: see its declaration */
    atomic_store_explicit(&lazy, 0, memory_order_release);    /* pairs: see its declaration */
    str_log(STR_INFO, "an instrumented library was dlopen'd; tracing to %s", path);
}

/* ---- exit ----
 *
 * exit() runs, last-registered first, every handler on libc's exit list (atexit, on_exit,
 * __cxa_atexit: C++ static objects), then stdio's clean-up, then the system call. One handler is
 * the dynamic loader's _dl_fini, registered by __libc_start_main just before it runs the
 * executable's constructors and main: it runs the ELF destructors of every loaded object (and,
 * through each library's __cxa_finalize, the C++ static objects of libraries that were
 * constructed before it was registered), the executable's first, then the preloaded runtime's
 * (nothing depends on it, so it is sorted second), then those of every library loaded after it,
 * at start-up or by dlopen. An ELF destructor of the runtime's therefore ran before the
 * destructors of every other library (issue 23.8: a plugin's or a linked C++ library's static
 * objects, __attribute__((destructor)) functions), and their calls were lost.
 *
 * The final flush is an on_exit handler registered by the runtime's constructor, which runs
 * before __libc_start_main (the runtime is initialised by the dynamic loader): it sits below
 * _dl_fini on the list and runs after it, after every destructor, once. A program that calls
 * exit() again from a destructor or an exit handler makes libc run the rest of the list (this
 * handler included) with the new status: still once, with the status the process ends with.
 * on_exit hands the status to the handler, so it goes into the sidecar from here. The handler
 * stays valid: the runtime is linked -z nodelete (it patches code and installs signal handlers;
 * unmapping it would break the program anyway). If on_exit fails (no memory), the ELF
 * destructor does the final flush, as before. What a handler registered before the runtime's
 * constructor (by a library initialised earlier, with no __cxa_finalize of its own) records
 * after that is not in the trace. */
static int exit_handler_set;

static void final_at_exit(int status, void *arg)
{
    (void)arg;
    int saved = errno;
    str_set_end(STR_END_STATUS, status & 0xff);
    str_buffers_finish();
    errno = saved;
}

/* glibc passes every ELF constructor the program's argc, argv and environment. */
__attribute__((constructor)) static void sledtrace_init(int argc, char **argv, char **envp)
{
    (void)envp;
    int saved = errno;
    save_cmdline(argc, argv);
    start();
    if (!str_cfg.disable && !stepped_aside)
        exit_handler_set = on_exit(final_at_exit, NULL) == 0;
    errno = saved;
}

__attribute__((destructor)) static void sledtrace_fini(void)
{
    if (exit_handler_set)
        return; /* final_at_exit runs later, after every other object's destructors */
    int saved = errno;
    str_buffers_finish();
    errno = saved;
}

/* dlopen, dlmopen and dlclose: a library loaded later is patched before dlopen returns (its
 * own constructors, which run inside dlopen, are not traced); one unloaded is forgotten. */

/* After a dlopen or dlmopen that returned h. */
static void loaded(void *h)
{
    int was_lazy = atomic_load_explicit(&lazy, memory_order_acquire); /* before `tracing` */
    if (h && atomic_load_explicit(&tracing, memory_order_acquire)) {
        int saved = errno;
        /* The scan (proofs and patching) is the tracer's time, not the caller's: in a thread
         * that records (a traced function may be on its stack), it is recorded as a call of
         * its pseudo-function (stf.h). */
        int record = str_tls.th != NULL;
        if (record)
            stp_event(STF_ID_TRACER_PATCHING, 0);
        pthread_mutex_lock(&objs_lock);
        scan_objects();
        pthread_mutex_unlock(&objs_lock);
        if (record)
            stp_event(STF_ID_TRACER_PATCHING, 1);
        errno = saved;
    } else if (h && was_lazy) {
        int saved = errno;
        pthread_mutex_lock(&objs_lock);
        if (atomic_load_explicit(&tracing, memory_order_acquire))
            scan_objects(); /* another thread's dlopen started tracing meanwhile */
        else if (atomic_load_explicit(&lazy, memory_order_relaxed))
            lazy_start();
        pthread_mutex_unlock(&objs_lock);
        errno = saved;
    }
}

__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dlopen");
    unsigned long long loads = (mode & RTLD_DEEPBIND) ? str_deepbind_loads() : 0;
    void *h = real(file, mode);
    loaded(h);
    if (h && (mode & RTLD_DEEPBIND) && atomic_load_explicit(&tracing, memory_order_acquire)) {
        int saved = errno;
        pthread_mutex_lock(&objs_lock); /* one fix at a time; never held across fork */
        str_deepbind_fix(h, loads);     /* its calls of _exit, exec..., back to the runtime's */
        pthread_mutex_unlock(&objs_lock);
        errno = saved;
    }
    return h;
}

/* A library in another link-map namespace (LM_ID_NEWLM, or one dlmopen made before) is traced
 * like any other: the scans walk every namespace (each_object). RTLD_DEEPBIND is handled for
 * dlopen only (deepbind.c). */
__attribute__((visibility("default"))) void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
    static void *(*real)(Lmid_t, const char *, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dlmopen");
    void *h = real(lmid, file, mode);
    loaded(h);
    return h;
}

__attribute__((visibility("default"))) int dlclose(void *handle)
{
    static int (*real)(void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dlclose");
    int rc = real(handle);
    if (atomic_load_explicit(&tracing, memory_order_acquire)) {
        int saved = errno;
        pthread_mutex_lock(&objs_lock);
        scan_objects();
        pthread_mutex_unlock(&objs_lock);
        errno = saved;
    }
    return rc;
}

/* The program's own mprotect: it waits while the runtime rewrites code (patcher/patch.c, "The
 * window"), so that a program hot-patching its own code never has a protection it set undone
 * by the runtime restoring one it read before. */
__attribute__((visibility("default"))) int mprotect(void *addr, size_t len, int prot)
{
    stp_program_mprotect_begin();
    int rc = (int)syscall(SYS_mprotect, addr, len, prot);
    int err = errno;
    stp_program_mprotect_end();
    errno = err;
    return rc;
}

/* ---- control: sledtrace.h, and SLEDTRACE_TOGGLE_SIGNAL (through the flush thread) ---- */

/* A switch: on or off, every function or those named `name`; what it did. */
struct switching {
    int on;
    const char *name;
    int rc, count;
    size_t changed; /* functions found changed by someone else (a debugger), left alone */
};

static void switch_object(struct traced *o, struct switching *sw)
{
    size_t changed = 0;
    if (!sw->name) {
        if (stp_object_toggle(o->obj, -1, sw->on, &changed) != 0)
            sw->rc = -1;
        sw->changed += changed;
        return;
    }
    size_t n = stp_object_nfuncs(o->obj);
    for (size_t f = 0; f < n; f++) {
        uint32_t id;
        uintptr_t addr;
        const char *fname;
        stp_object_func(o->obj, f, &id, &addr, &fname);
        if (strcmp(fname, sw->name) != 0)
            continue;
        if (stp_object_toggle(o->obj, (long)f, sw->on, &changed) != 0)
            sw->rc = -1;
        sw->changed += changed;
        sw->count++;
    }
}

/* Shared objects are switched from inside dl_iterate_phdr, and only when it lists them as the
 * image the runtime patched: one that another thread's dlclose has unloaded, or replaced by a
 * fresh copy at the same address, is left to the scan that follows that dlopen or dlclose. */
static int switch_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct traced *o = still_patched(info);
    if (o)
        switch_object(o, data);
    return 0;
}

static int switch_all(int on, const char *name)
{
    if (!atomic_load_explicit(&tracing, memory_order_acquire))
        return -1;
    int saved = errno;
    struct switching sw = {.on = on, .name = name};
    pthread_mutex_lock(&objs_lock);
    maps_query_setting();
    if (objs[0].obj) /* the executable: never unloaded */
        switch_object(&objs[0], &sw);
    each_object(switch_one, &sw);
    patched_now = name ? patched_now : on;
    if (!name)
        str_waits_switch(on);
    pthread_mutex_unlock(&objs_lock);
    if (sw.changed)
        str_log(STR_WARN,
                "%zu function%s whose sled someone else changed (a debugger's breakpoint?) left "
                "as %s, no longer switched on or off",
                sw.changed, sw.changed == 1 ? "" : "s", sw.changed == 1 ? "it is" : "they are");
    errno = saved;
    return sw.rc < 0 ? -1 : name ? sw.count : 0;
}

__attribute__((visibility("default"))) int sledtrace_flush(void)
{
    int saved = errno, rc = str_flush_now();
    if (rc == 0)
        errno = saved;
    return rc;
}

__attribute__((visibility("default"))) int sledtrace_patch(void)
{
    return switch_all(1, NULL);
}

__attribute__((visibility("default"))) int sledtrace_unpatch(void)
{
    return switch_all(0, NULL);
}

__attribute__((visibility("default"))) int sledtrace_patch_function(const char *name)
{
    return name ? switch_all(1, name) : -1;
}

__attribute__((visibility("default"))) int sledtrace_unpatch_function(const char *name)
{
    return name ? switch_all(0, name) : -1;
}

/* The flush thread, asked by SLEDTRACE_TOGGLE_SIGNAL: everything off if on, on if off. */
static void toggle_all(void)
{
    int on = !patched_now;
    str_log(STR_INFO, "SLEDTRACE_TOGGLE_SIGNAL: tracing %s", on ? "on" : "off");
    switch_all(on, NULL);
}

/* Libraries built with clang >= 20 -fxray-shared register themselves with compiler-rt's runtime
 * and read handler pointers from it; without those symbols they cannot even be loaded into a
 * program that does not link compiler-rt. sledtrace defines them: it patches such a library's
 * sleds itself (its map is read like any other's, at start-up or in dlopen), pointing them at
 * its own stubs, so the library's own trampolines and these handlers are never used. The names
 * are the mangled C++ ones the libraries refer to (__xray::XRayPatchedFunction...). */
#define STR_EXPORT_DATA __attribute__((visibility("default")))
STR_EXPORT_DATA void *_ZN6__xray19XRayPatchedFunctionE;
STR_EXPORT_DATA void *_ZN6__xray13XRayArgLoggerE;
STR_EXPORT_DATA void *_ZN6__xray22XRayPatchedCustomEventE;
STR_EXPORT_DATA void *_ZN6__xray21XRayPatchedTypedEventE;

static _Atomic int32_t dso_ids = 1;

__attribute__((visibility("default"))) int32_t
__xray_register_dso(const void *sleds_begin, const void *sleds_end, const void *fn_index_begin,
                    const void *fn_index_end, const void *trampolines)
{
    (void)sleds_begin, (void)sleds_end, (void)fn_index_begin, (void)fn_index_end, (void)trampolines;
    return atomic_fetch_add_explicit(&dso_ids, 1, memory_order_relaxed);
}

__attribute__((visibility("default"))) _Bool __xray_deregister_dso(int32_t id)
{
    (void)id;
    return 1;
}
