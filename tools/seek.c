/* Checkpoints for seeking a time window (seek.h has the design): looking them up, and their cache
 * file (seek_build.c makes them).
 *
 * Cache file (native byte order and sizes: it never leaves the machine that wrote it; another
 * layout fails the magic or size checks and is rebuilt):
 *   struct head                       magic, layout version, the trace file's identity, counts
 *   struct sthread[nthreads]          per thread: pid, tid, its block count, first checkpoint
 *   struct spoint[npoints]            per checkpoint: block, keys, clock state, its frames
 *   struct tool_seek_frame[nframes]
 * Written to a temporary name and renamed, so a reader sees a whole file or none. */
#include "seek_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char seek_magic[8] = "STSEEK\0\1";

static uint32_t layout(void)
{
    return (uint32_t)(sizeof(struct head) << 24 | sizeof(struct sthread) << 16 |
                      sizeof(struct spoint) << 8 | sizeof(struct tool_seek_frame));
}

void tool_seek_free(struct tool_seek *s)
{
    if (!s)
        return;
    free(s->t);
    free(s->p);
    free(s->f);
    free(s);
}

int tool_seek_find(const struct tool_seek *s, int32_t pid, int32_t tid, uint64_t from,
                   bool corrected, size_t *block, uint64_t *acc, uint8_t *prev,
                   const struct tool_seek_frame **frames, size_t *nframes)
{
    for (size_t i = 0; s && i < s->h.nthreads; i++) {
        const struct sthread *t = &s->t[i];
        if (t->pid != pid || t->tid != tid)
            continue;
        const struct spoint *best = NULL; /* the last one before from (keys grow) */
        for (uint32_t k = 0; k < t->npoints; k++) {
            const struct spoint *p = &s->p[t->point0 + k];
            if ((corrected ? p->key_cor : p->key_raw) >= from)
                break;
            best = p;
        }
        if (!best)
            return 0;
        *block = best->block;
        *acc = best->acc;
        *prev = best->prev;
        *frames = s->f + best->frame0;
        *nframes = best->nframes;
        return 1;
    }
    return 0;
}

void tool_seek_extent(const struct tool_seek *s, uint64_t *items, uint64_t *last)
{
    *items = s->h.items;
    *last = s->h.last;
}

/* ---- the cache ----------------------------------------------------------------------------- */

/* The cache directory into buf, created; false when there is none. */
static bool cache_dir(char *buf, size_t len)
{
    const char *e = getenv("SLEDTRACE_CACHE"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (e)
        n = *e && strcmp(e, "off") != 0 ? snprintf(buf, len, "%s", e) : -1;
    else if (x && *x == '/')
        n = snprintf(buf, len, "%s/sledtrace", x);
    else if (h && *h == '/')
        n = snprintf(buf, len, "%s/.cache/sledtrace", h);
    else
        n = -1;
    if (n < 0 || (size_t)n >= len)
        return false;
    for (char *p = buf + 1; *p; p++) { /* mkdir -p */
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(buf, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return false;
    }
    return mkdir(buf, 0700) == 0 || errno == EEXIST;
}

/* The newest SEEK_KEEP indexes stay; the others go. */
static void prune(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct ent {
        char name[64];
        int64_t t;
    } *e = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        struct stat sb;
        if (l < 6 || l >= 64 || strcmp(de->d_name + l - 5, ".seek") != 0 ||
            fstatat(dirfd(d), de->d_name, &sb, 0) != 0)
            continue;
        if (n == cap) {
            void *g = tool_grow(e, &cap, sizeof *e, 64);
            if (!g)
                break;
            e = g;
        }
        snprintf(e[n].name, sizeof e[n].name, "%s", de->d_name);
        e[n++].t = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    }
    while (n > SEEK_KEEP) { /* drop the oldest, one at a time (n is small) */
        size_t o = 0;
        for (size_t i = 1; i < n; i++)
            if (e[i].t < e[o].t)
                o = i;
        unlinkat(dirfd(d), e[o].name, 0);
        e[o] = e[--n];
    }
    free(e);
    closedir(d);
}

static bool read_all(int fd, void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t r = read(fd, (char *)buf + done, len - done);
        if (r <= 0)
            return false;
        done += (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t r = write(fd, (const char *)buf + done, len - done);
        if (r <= 0)
            return false;
        done += (size_t)r;
    }
    return true;
}

/* The cached index at path if it is the one of the trace (identity in want, blocks as the cursor
 * has them), else NULL. */
static struct tool_seek *load(const char *path, const struct head *want, struct stf_cursor *c)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct tool_seek *s = calloc(1, sizeof *s);
    bool ok = s && read_all(fd, &s->h, sizeof s->h) &&
              memcmp(s->h.magic, seek_magic, sizeof seek_magic) == 0 &&
              s->h.version == SEEK_VERSION && s->h.sizes == layout() && s->h.dev == want->dev &&
              s->h.ino == want->ino && s->h.size == want->size && s->h.mtime_s == want->mtime_s &&
              s->h.mtime_ns == want->mtime_ns && s->h.nthreads == stf_cursor_threads(c) &&
              s->h.npoints < (1ull << 32) && s->h.nframes < (1ull << 32);
    if (ok) {
        s->t = malloc((s->h.nthreads ? s->h.nthreads : 1) * sizeof *s->t);
        s->p = malloc((s->h.npoints ? s->h.npoints : 1) * sizeof *s->p);
        s->f = malloc((s->h.nframes ? s->h.nframes : 1) * sizeof *s->f);
        ok = s->t && s->p && s->f && read_all(fd, s->t, s->h.nthreads * sizeof *s->t) &&
             read_all(fd, s->p, s->h.npoints * sizeof *s->p) &&
             read_all(fd, s->f, s->h.nframes * sizeof *s->f);
    }
    char extra;
    ok = ok && read(fd, &extra, 1) == 0;
    close(fd);
    for (size_t i = 0; ok && i < s->h.nthreads; i++) { /* the same threads and blocks */
        const struct sthread *t = &s->t[i];
        int32_t pid, tid;
        ok = stf_cursor_select(c, i, &pid, &tid, NULL) == STF_OK && pid == t->pid &&
             tid == t->tid && stf_cursor_blocks(c, NULL) == t->blocks &&
             (uint64_t)t->point0 + t->npoints <= s->h.npoints;
        for (uint32_t k = 0; ok && k < t->npoints; k++) {
            const struct spoint *p = &s->p[t->point0 + k];
            ok = p->block < t->blocks && (uint64_t)p->frame0 + p->nframes <= s->h.nframes;
        }
    }
    if (!ok) {
        tool_seek_free(s);
        return NULL;
    }
    return s;
}

void seek_store(const char *dir, const char *path, struct tool_seek *s, const struct head *want)
{
    memcpy(s->h.magic, seek_magic, sizeof seek_magic);
    s->h.version = SEEK_VERSION;
    s->h.sizes = layout();
    s->h.dev = want->dev;
    s->h.ino = want->ino;
    s->h.size = want->size;
    s->h.mtime_s = want->mtime_s;
    s->h.mtime_ns = want->mtime_ns;
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.tmp.%ld", dir, (long)getpid()) >= sizeof tmp)
        return;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    bool ok = write_all(fd, &s->h, sizeof s->h) &&
              write_all(fd, s->t, s->h.nthreads * sizeof *s->t) &&
              write_all(fd, s->p, s->h.npoints * sizeof *s->p) &&
              write_all(fd, s->f, s->h.nframes * sizeof *s->f);
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp);
    prune(dir);
}

struct tool_seek *seek_cached(const struct head *want, struct stf_cursor *c, char *path, size_t len,
                              char *dir, size_t dlen)
{
    path[0] = '\0';
    if (!cache_dir(dir, dlen))
        return NULL;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the identity: the file's name */
    const uint64_t id[5] = {want->dev, want->ino, want->size, want->mtime_s, want->mtime_ns};
    const unsigned char *k = (const unsigned char *)id;
    for (size_t i = 0; i < sizeof id; i++)
        h = (h ^ k[i]) * 0x100000001b3ull;
    if ((size_t)snprintf(path, len, "%s/%016llx.seek", dir, (unsigned long long)h) >= len) {
        path[0] = '\0';
        return NULL;
    }
    struct tool_seek *s = load(path, want, c);
    if (s)
        utimensat(AT_FDCWD, path, NULL, 0); /* recently used: kept by prune */
    return s;
}
