/* A preloaded library, loaded before libsledtrace.so, that counts the mmap calls of at least
 * MMAPCOUNT_MIN bytes (decimal) made through libc's mmap by anything after it in the search
 * order (the runtime among them), and writes the count to the file MMAPCOUNT_OUT at exit.
 * For tests/e2e/test_runtime.c: threads set up after others exited take their buffers and
 * alternate stacks from slots (preload/slots.c) rather than mapping new ones. */
/* Both names are defined: without this, <sys/mman.h> would make mmap an alias of mmap64. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static atomic_long calls;
static size_t min_len = (size_t)-1;

__attribute__((constructor)) static void init(void)
{
    const char *m = getenv("MMAPCOUNT_MIN");
    if (m)
        min_len = strtoull(m, NULL, 10);
}

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

static void *counted(mmap_fn *real, const char *name, void *addr, size_t len, int prot, int flags,
                     int fd, off_t off)
{
    if (!*real)
        *(void **)real = dlsym(RTLD_NEXT, name);
    if (len >= min_len)
        atomic_fetch_add(&calls, 1);
    return (*real)(addr, len, prot, flags, fd, off);
}

/* Both names: the runtime is built with 64-bit file offsets (mmap64). */
__attribute__((visibility("default"))) void *mmap(void *addr, size_t len, int prot, int flags,
                                                  int fd, off_t off)
{
    static mmap_fn real;
    return counted(&real, "mmap", addr, len, prot, flags, fd, off);
}

__attribute__((visibility("default"))) void *mmap64(void *addr, size_t len, int prot, int flags,
                                                    int fd, off_t off)
{
    static mmap_fn real;
    return counted(&real, "mmap64", addr, len, prot, flags, fd, off);
}

__attribute__((destructor)) static void report(void)
{
    const char *out = getenv("MMAPCOUNT_OUT");
    FILE *f = out ? fopen(out, "w") : NULL;
    if (f) {
        fprintf(f, "%ld\n", atomic_load(&calls));
        fclose(f);
    }
}
