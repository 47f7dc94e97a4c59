/* The proof cache: what Capstone proved about an object's sleds, kept per user between runs.
 *
 * A proof is a pure function of its inputs: the bytes a function's sweep reads, the function's
 * place and size relative to the object's load address, and its sleds' places, kinds, versions,
 * ids and statuses before the proof. Each function's inputs are hashed into a 64-bit digest
 * (stp_cache_digest); the cache keeps, per object file, every function's digest and every sled's
 * status after its proof. A later run takes a function's statuses from the cache only when its
 * digest, computed again from the live image, is the same; any other function is proven again.
 * So the cache never needs to be right about the file: a changed byte anywhere a proof looked
 * changes the digest. The file is found by the object's GNU build id and size (no build id: no
 * cache).
 *
 * Trust: the directory must be the calling user's own (owned by the effective uid, a real
 * directory, no permission for group or others: 0700 when created here, also its parent when
 * this creates it, as the XDG base directory rules ask); a cache file must be a regular file of
 * that user, not writable by others, of exactly the size its header implies, with a matching
 * checksum. Anything else is ignored (read) or left alone (write). Files are written to a
 * temporary name and renamed, so a reader sees a whole file or none. Every descriptor is
 * O_CLOEXEC and closed before these functions return.
 *
 * File (little-endian): magic[8] "stproof\0", u32 format version, u32 rule version
 * (STP_PROOF_RULES, raised whenever verify.c proves differently), u64 file size, u32 build id
 * length, u8 build id[64], u64 functions, u64 sleds, u64 digest[functions] (0: not proven),
 * u8 status[sleds], u64 checksum of everything before it.
 *
 * Size: the directory keeps at most CACHE_FILES files; a write that finds more removes the
 * least recently used (a hit touches its file, unless it did less than a minute ago).
 */
#include "stp_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum {
    CACHE_FORMAT = 1,
    CACHE_HEAD = 8 + 4 + 4 + 8 + 4 + STP_BUILD_ID_MAX + 8 + 8,
    CACHE_FILES = 128,
    CACHE_KEEP = 96,
};
static const char cache_magic[8] = "stproof";

static uint64_t rotl(uint64_t v, int r)
{
    return v << r | v >> (64 - r);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    return rotl(h ^ (v * 0x9e3779b97f4a7c15ull), 29) * 0xbf58476d1ce4e5b9ull;
}

static uint64_t finish(uint64_t h)
{
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return h;
}

uint64_t stp_cache_mix(uint64_t h, uint64_t v)
{
    return mix(h, v);
}

uint64_t stp_cache_bytes(uint64_t h, const uint8_t *p, size_t n)
{
    h = mix(h, n);
    for (; n >= 16; p += 16, n -= 16) {
        uint64_t a, b;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        h = mix(mix(h, a), b);
    }
    if (n >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        h = mix(h, a);
        p += 8;
        n -= 8;
    }
    uint64_t t = 0;
    memcpy(&t, p, n);
    return finish(mix(h, t));
}

/* ---- the directory ---- */

static int owned_private_dir(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return -EPERM;
    return 0;
}

int stp_cache_prepare(const char *dir)
{
    size_t n = strlen(dir);
    if (n == 0 || n >= 4096 || dir[0] != '/')
        return -EINVAL;
    int rc = owned_private_dir(dir);
    if (rc != -ENOENT)
        return rc;
    /* Create the parent (e.g. ~/.cache) when it is missing, 0700; an existing parent is the
     * user's business. Then the directory itself. */
    char parent[4096];
    memcpy(parent, dir, n + 1);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        struct stat st;
        if (stat(parent, &st) != 0 && (errno != ENOENT || mkdir(parent, 0700) != 0))
            return -errno;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    return owned_private_dir(dir);
}

/* ---- files ---- */

static int file_name(const struct stp_object *obj, const char *dir, uint64_t size, char *out,
                     size_t outlen)
{
    if (!obj->build_id_len)
        return -1;
    char hex[2 * STP_BUILD_ID_MAX + 1];
    for (size_t i = 0; i < obj->build_id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", obj->build_id[i]);
    int w = snprintf(out, outlen, "%s/%s-%llu.proofs", dir, hex, (unsigned long long)size);
    return w > 0 && (size_t)w < outlen ? 0 : -1;
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static size_t file_bytes(size_t nfuncs, size_t nsleds)
{
    return CACHE_HEAD + 8 * nfuncs + nsleds + 8;
}

static void encode_head(uint8_t *h, const struct stp_object *obj, uint64_t size)
{
    memset(h, 0, CACHE_HEAD);
    memcpy(h, cache_magic, 8);
    put32(h + 8, CACHE_FORMAT);
    put32(h + 12, STP_PROOF_RULES);
    put64(h + 16, size);
    put32(h + 24, (uint32_t)obj->build_id_len);
    memcpy(h + 28, obj->build_id, obj->build_id_len);
    put64(h + 28 + STP_BUILD_ID_MAX, obj->nfuncs);
    put64(h + 36 + STP_BUILD_ID_MAX, obj->nsleds);
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int stp_cache_load(struct stp_cache *c, const struct stp_object *obj, const char *dir,
                   uint64_t size)
{
    memset(c, 0, sizeof *c);
    char path[4200];
    if (file_name(obj, dir, size, path, sizeof path) != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t want = file_bytes(obj->nfuncs, obj->nsleds);
    struct stat st;
    uint8_t *buf = NULL;
    /* Read, not mapped: a mapped file that someone truncates meanwhile would raise SIGBUS in
     * the program (about 0.5 ms more at 100,000 functions). */
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
             !(st.st_mode & 022) && (uint64_t)st.st_size == want && (buf = malloc(want)) != NULL &&
             stp_pread_all(fd, buf, want, 0) == 0;
    if (ok) {
        uint8_t head[CACHE_HEAD];
        encode_head(head, obj, size);
        ok = memcmp(buf, head, CACHE_HEAD) == 0 &&
             stp_cache_bytes(0, buf, want - 8) == get64(buf + want - 8);
    }
    if (ok) {
        c->buf = buf;
        c->len = want;
        c->digest = buf + CACHE_HEAD;
        c->status = buf + CACHE_HEAD + 8 * obj->nfuncs;
        for (size_t i = 0; i < obj->nsleds && ok; i++)
            ok = c->status[i] < STP_NSTATUS;
    }
    /* A hit: the file is in use (least recently used files go first). Touched at most once a
     * minute: a program started in a loop would otherwise dirty the inode at every start. */
    if (ok && st.st_mtime + 60 < time(NULL))
        futimens(fd, NULL);
    close(fd);
    if (!ok) {
        free(buf);
        memset(c, 0, sizeof *c);
        return -1;
    }
    return 0;
}

uint64_t stp_cache_digest_of(const struct stp_cache *c, size_t f)
{
    return c->buf ? get64(c->digest + 8 * f) : 0;
}

void stp_cache_free(struct stp_cache *c)
{
    free(c->buf);
    memset(c, 0, sizeof *c);
}

struct entry {
    char name[256];
    struct timespec used;
};

static int older(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec < y->used.tv_nsec);
}

/* Keeps the directory at most CACHE_FILES files: past that, down to CACHE_KEEP, least recently
 * used first. Only our own files (*.proofs) are removed. */
static void trim(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct entry *e = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 7 || len >= sizeof e->name || strcmp(de->d_name + len - 7, ".proofs") != 0)
            continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct entry *ne = realloc(e, nc * sizeof *ne);
            if (!ne)
                break;
            e = ne;
            cap = nc;
        }
        memcpy(e[n].name, de->d_name, len + 1);
        e[n].used = st.st_mtim;
        n++;
    }
    if (n > CACHE_FILES) {
        qsort(e, n, sizeof *e, older);
        for (size_t i = 0; i + CACHE_KEEP < n; i++)
            unlinkat(dfd, e[i].name, 0);
    }
    free(e);
    closedir(d); /* closes dfd */
}

int stp_cache_save(const struct stp_object *obj, const char *dir, uint64_t size,
                   const uint64_t *digest, const uint8_t *status)
{
    char path[4200], tmp[4300];
    if (file_name(obj, dir, size, path, sizeof path) != 0)
        return -1;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    size_t total = file_bytes(obj->nfuncs, obj->nsleds);
    uint8_t *buf = malloc(total);
    if (!buf)
        return -1;
    encode_head(buf, obj, size);
    for (size_t f = 0; f < obj->nfuncs; f++)
        put64(buf + CACHE_HEAD + 8 * f, digest[f]);
    memcpy(buf + CACHE_HEAD + 8 * obj->nfuncs, status, obj->nsleds);
    put64(buf + total - 8, stp_cache_bytes(0, buf, total - 8));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = -1;
    if (fd >= 0) {
        rc = write_all(fd, buf, total);
        if (close(fd) != 0)
            rc = -1;
        if (rc == 0 && rename(tmp, path) != 0)
            rc = -1;
        if (rc != 0)
            unlink(tmp);
    }
    free(buf);
    if (rc == 0)
        trim(dir);
    return rc;
}
