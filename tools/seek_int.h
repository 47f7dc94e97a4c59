/* What seek.c (the index: lookups, cache file) and seek_build.c (making it) share: the index's
 * layout. Private to the two. */
#ifndef SLEDTRACE_TOOLS_SEEK_INT_H
#define SLEDTRACE_TOOLS_SEEK_INT_H

#include "seek.h"

enum { SEEK_EVERY = 1 << 20, SEEK_KEEP = 32, SEEK_VERSION = 1 };
#define SEEK_MIN_DEFAULT (64ull << 20)

struct spoint {
    uint64_t key_raw, key_cor; /* largest TSC of any record before the checkpoint */
    uint64_t acc;              /* the corrected clock there (vclock.acc, .prev) */
    uint32_t block;            /* the thread's block the checkpoint is the start of */
    uint32_t frame0, nframes;  /* its open frames: frames[frame0 .. frame0 + nframes) */
    uint8_t prev;
    uint8_t pad[3];
};

struct sthread {
    int32_t pid, tid;
    uint64_t blocks;
    uint32_t point0, npoints;
};

struct head {
    char magic[8];
    uint32_t version, sizes; /* sizes: the records' sizes, packed, to catch another layout */
    uint64_t dev, ino, size, mtime_s, mtime_ns;
    uint64_t nthreads, npoints, nframes;
    uint64_t items, last; /* tool_seek_extent */
};

struct tool_seek {
    struct head h;
    struct sthread *t;
    struct spoint *p;
    struct tool_seek_frame *f;
    size_t capt, capp, capf;
};

/* The cached index of the trace file whose identity is want (dev, ino, size, mtime), or NULL;
 * *path gets the cache file's name (empty when there is no cache directory). */
struct tool_seek *seek_cached(const struct head *want, struct stf_cursor *c, char *path, size_t len,
                              char *dir, size_t dlen);
/* Stores s (its counts and data; the identity and layout fields are set here) as path. */
void seek_store(const char *dir, const char *path, struct tool_seek *s, const struct head *want);

#endif
