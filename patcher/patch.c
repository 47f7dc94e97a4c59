/* Writing proven sleds.
 *
 * Stubs: a patched sled reaches its trampoline with a rel32 call/jmp, but the runtime library is
 * mapped terabytes away from a PIE executable, so each object gets one page mapped within +-2 GiB
 * of all its sleds, holding per kind `jmp *0(%rip)` followed by the trampoline's absolute
 * address. The page is made read+execute once written and is never unmapped while sleds use it.
 *
 * Writes: pages holding sleds are made read+write (never write+execute), written, and given back
 * the protection /proc/self/maps showed (its PROCMAP_QUERY ioctl, else its text: prot_of). Within a sled, bytes 2..10 are written first (dead code
 * behind `jmp +9` or `ret`), then the first two bytes with one aligned 16-bit atomic store, the
 * order xray-facts section 3 gives for patching under running threads. No byte is written
 * over anything but what the proof saw or what the patcher itself left (as_proven, as_patched):
 * a debugger's int3 placed since, or a fresh copy of a reloaded library at the same address,
 * is left alone (STP_CHANGED; stp_object_intact tells the runtime about the second).
 *
 * The window. Other threads may run code in those pages meanwhile (a toggle, a dlopen whose
 * plugin constructor started a thread), and the program may change their protection itself (a
 * program that hot-patches its own code). Every rewrite happens inside one window: `window` is
 * set (seq_cst), then the patcher waits until no mprotect of the program is in flight, reads the
 * protections, writes, restores them, and clears `window`. The program's mprotect calls (the
 * runtime interposes them) announce themselves in `program_mprotects` (seq_cst) and, if a window
 * is open, wait for it to close: so no program mprotect lands between the reading and the
 * restoring of a protection (the Dekker handshake: each side stores its flag, then reads the
 * other's, both seq_cst). A thread that executes a page of the window faults (SEGV_ACCERR,
 * the page is not executable); the runtime's SIGSEGV handler asks stp_fault_in_rewrite, which
 * waits for the window to close (if it still is open) and says to return: the instruction runs
 * again. A fault handled after its window closed is retried once per thread and window. The patcher's own
 * mprotect calls are raw system calls, never the interposed one. Windows are serialised by the
 * caller (the runtime's objs_lock), and the thread that holds one has its asynchronous signals
 * blocked meanwhile (window_signals: its own handlers could otherwise wait for it).
 */
#include "stp_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

enum { STUB_SLOT = 16, REACH = 0x7fff0000 };

/* The window (see the top of this file). window_seq is odd while one is open; the ranges of
 * the last WINDOWS windows are kept, so that a fault taken inside a window but handled after it
 * closed (or after the next one opened) is still recognised. */
enum { WINDOWS = 8 };
static _Atomic unsigned window_seq;
static struct {
    _Atomic uintptr_t lo, hi;
    _Atomic unsigned seq; /* the window's odd (open) sequence number */
} windows[WINDOWS];
static _Atomic long program_mprotects;
/* Per thread: the window a fault was last retried for (a second fault there is genuine); and,
 * for faults outside the windows kept, the address last retried, the window_seq then, and how
 * many times in a row at that address (stp_fault_in_rewrite). */
static __thread unsigned retried __attribute__((tls_model("initial-exec")));
static __thread uintptr_t retried_addr __attribute__((tls_model("initial-exec")));
static __thread unsigned retried_at_seq __attribute__((tls_model("initial-exec")));
static __thread unsigned retries __attribute__((tls_model("initial-exec")));
enum { RETRIES = 64 };

/* mprotect as a system call: the runtime interposes mprotect for the program (see above). */
static int raw_mprotect(void *addr, size_t len, int prot)
{
    return (int)syscall(SYS_mprotect, addr, len, prot);
}

static void nap(void)
{
    struct timespec ts = {0, 50000};
    syscall(SYS_nanosleep, &ts, NULL);
}

#define SIGBIT(n) (1ull << ((n)-1))
const uint64_t stp_async_signals =
    ~(SIGBIT(4) | SIGBIT(5) | SIGBIT(7) | SIGBIT(8) | SIGBIT(9) | SIGBIT(11) | SIGBIT(19) |
      SIGBIT(31) | SIGBIT(32) | SIGBIT(33));

/* A window's thread runs with its asynchronous signals blocked (stp_async_signals). A handler
 * of the program's that ran on it meanwhile could execute a page of the window
 * (stp_fault_in_rewrite would then wait for the window this very thread holds) or call mprotect
 * (stp_program_mprotect_begin waits for it likewise): a hang, seen with a 20 us timer armed from
 * .preinit_array while the runtime patched at start-up. The signals are delivered when the
 * window closes. A raw rt_sigprocmask, as the rest of this file makes raw system calls. */
static __thread uint64_t window_mask __attribute__((tls_model("initial-exec")));

static void window_signals(int block)
{
    syscall(SYS_rt_sigprocmask, block ? SIG_BLOCK : SIG_SETMASK,
            block ? &stp_async_signals : &window_mask, block ? &window_mask : NULL, 8);
}

static void window_open(uintptr_t lo, uintptr_t hi)
{
    window_signals(1);
    unsigned seq = atomic_load_explicit(&window_seq, memory_order_relaxed) + 1;
    unsigned w = (seq / 2) % WINDOWS;
    atomic_store_explicit(&windows[w].lo, lo, memory_order_relaxed);
    atomic_store_explicit(&windows[w].hi, hi, memory_order_relaxed);
    atomic_store_explicit(&windows[w].seq, seq, memory_order_relaxed);
    /* seq_cst: the Dekker handshake with stp_program_mprotect_begin; it also publishes the
     * range to the fault handler's seq_cst load. */
    atomic_store_explicit(&window_seq, seq, memory_order_seq_cst);
    while (atomic_load_explicit(&program_mprotects, memory_order_seq_cst) != 0)
        nap();
}

static void window_close(void)
{
    atomic_fetch_add_explicit(&window_seq, 1, memory_order_seq_cst);
    window_signals(0);
}

int stp_fault_in_rewrite(uintptr_t addr)
{
    unsigned now = atomic_load_explicit(&window_seq, memory_order_seq_cst);
    for (unsigned k = 0; k < WINDOWS; k++) {
        unsigned seq = atomic_load_explicit(&windows[k].seq, memory_order_relaxed);
        if (!seq || addr < atomic_load_explicit(&windows[k].lo, memory_order_relaxed) ||
            addr >= atomic_load_explicit(&windows[k].hi, memory_order_relaxed))
            continue;
        if (seq == now) { /* open: wait for it to close, then the instruction runs again */
            while (atomic_load_explicit(&window_seq, memory_order_seq_cst) == seq)
                nap();
            retried = seq;
            return 1;
        }
        if (retried != seq) { /* closed since the fault was taken: once more */
            retried = seq;
            return 1;
        }
    }
    /* Not in the last WINDOWS windows, but windows opened since this thread last faulted here:
     * its fault may have been taken in one that has since been forgotten (a thread descheduled
     * between the fault and its handler while the patcher went through more than WINDOWS
     * windows: 1 run in 50 of objects/switches_while_threads_reload_plugins under CPU load).
     * The instruction runs again, up to RETRIES times at one address; a fault that comes back
     * with no window opened in between is the program's. */
    if (now != retried_at_seq || addr != retried_addr) {
        if (addr != retried_addr)
            retries = 0;
        if (retries < RETRIES) {
            retries++;
            retried_addr = addr;
            retried_at_seq = now;
            return 1;
        }
    }
    return 0;
}

void stp_program_mprotect_begin(void)
{
    for (;;) {
        atomic_fetch_add_explicit(&program_mprotects, 1, memory_order_seq_cst);
        unsigned seq = atomic_load_explicit(&window_seq, memory_order_seq_cst);
        if (!(seq & 1))
            return;
        atomic_fetch_sub_explicit(&program_mprotects, 1, memory_order_seq_cst);
        while (atomic_load_explicit(&window_seq, memory_order_seq_cst) == seq)
            nap();
    }
}

void stp_program_mprotect_end(void)
{
    atomic_fetch_sub_explicit(&program_mprotects, 1, memory_order_seq_cst);
}

/* The protection of the pages about to be written, as the kernel has it now (a program may have
 * changed it since the object was loaded).
 *
 * Asked of /proc/self/maps with its PROCMAP_QUERY ioctl (Linux 6.11): one query returns the
 * mapping that holds an address, and the next pages usually lie in the same one. Where the
 * kernel lacks it (ENOTTY, or any other refusal), the file's text is read and parsed instead, by
 * hand (no stdio, no sscanf). Reading the whole text through stdio and sscanf took 65 us of a
 * small program's 90 us of patching on the development VM (in-process probes), most of it the
 * kernel formatting every mapping; the query costs an open and one ioctl. */
struct mapping {
    uint64_t start, end;
    int prot;
};

/* stp_maps_query: cleared once a program's seccomp filter may forbid the ioctl (relaxed: a flag
 * alone, read at each rewrite). */
static atomic_int query_allowed = 1;

void stp_maps_query(int allowed)
{
    atomic_store_explicit(&query_allowed, allowed, memory_order_relaxed);
}

struct maps {
    int fd;             /* /proc/self/maps, -1: cannot be opened (the fallback protection) */
    int text;           /* the query is refused: the table below holds the whole text */
    struct mapping hit; /* the last mapping the query returned (end 0: none) */
    struct mapping *m;  /* the text's mappings (text = 1) */
    size_t n;
};

/* The kernel's struct procmap_query (uapi linux/fs.h, 6.11), defined here: Debian 12's headers
 * predate it. */
struct stp_procmap_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define STP_PROCMAP_QUERY _IOWR('f', 17, struct stp_procmap_query)
enum { QUERY_READ = 1, QUERY_WRITE = 2, QUERY_EXEC = 4 };

/* Parses the text of /proc/self/maps ("start-end perms ..." per line) from fd into ms->m. */
static void read_maps_text(struct maps *ms)
{
    size_t len = 0, cap = 16384;
    char *buf = malloc(cap);
    for (ssize_t r = 1; buf && r > 0;) {
        if (cap - len < 4096) {
            char *p = realloc(buf, cap * 2);
            if (!p)
                break;
            buf = p;
            cap *= 2;
        }
        r = read(ms->fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            r = 1;
        else if (r > 0)
            len += (size_t)r;
    }
    if (!buf)
        return;
    buf[len] = '\0';
    size_t n = 0, cap_m = 0;
    for (char *line = buf, *next; *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        char *end;
        unsigned long long s = strtoull(line, &end, 16), e;
        if (*end != '-')
            continue;
        e = strtoull(end + 1, &end, 16);
        if (*end != ' ' || !end[1] || !end[2] || !end[3])
            continue;
        if (n == cap_m) {
            cap_m = cap_m ? cap_m * 2 : 64;
            struct mapping *p = realloc(ms->m, cap_m * sizeof *p);
            if (!p)
                break;
            ms->m = p;
        }
        ms->m[n].start = s;
        ms->m[n].end = e;
        ms->m[n].prot = (end[1] == 'r' ? PROT_READ : 0) | (end[2] == 'w' ? PROT_WRITE : 0) |
                        (end[3] == 'x' ? PROT_EXEC : 0);
        n++;
    }
    ms->n = n;
    free(buf);
}

/* text: never the query (stp_maps_query(0), and the tests, which compare both ways). */
static void maps_open(struct maps *ms, int text)
{
    text |= !atomic_load_explicit(&query_allowed, memory_order_relaxed);
    *ms = (struct maps){.fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), .text = text};
    if (ms->fd >= 0 && text)
        read_maps_text(ms);
}

static void maps_close(struct maps *ms)
{
    if (ms->fd >= 0)
        close(ms->fd);
    free(ms->m);
}

/* The protection of page, or fallback when no mapping holds it (or none can be read). */
static int prot_of(struct maps *ms, uint64_t page, int fallback)
{
    if (ms->fd < 0)
        return fallback;
    if (!ms->text) {
        if (page >= ms->hit.start && page < ms->hit.end)
            return ms->hit.prot;
        struct stp_procmap_query q = {.size = sizeof q, .query_addr = page};
        if (ioctl(ms->fd, STP_PROCMAP_QUERY, &q) == 0) {
            ms->hit.start = q.vma_start;
            ms->hit.end = q.vma_end;
            ms->hit.prot = (q.vma_flags & QUERY_READ ? PROT_READ : 0) |
                           (q.vma_flags & QUERY_WRITE ? PROT_WRITE : 0) |
                           (q.vma_flags & QUERY_EXEC ? PROT_EXEC : 0);
            return page >= ms->hit.start && page < ms->hit.end ? ms->hit.prot : fallback;
        }
        if (errno == ENOENT)
            return fallback; /* no mapping there */
        ms->text = 1;        /* no such ioctl (before Linux 6.11): the text, from the start */
        if (lseek(ms->fd, 0, SEEK_SET) != 0) {
            close(ms->fd);
            ms->fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
            if (ms->fd < 0)
                return fallback;
        }
        read_maps_text(ms);
    }
    for (size_t i = 0; i < ms->n; i++)
        if (page >= ms->m[i].start && page < ms->m[i].end)
            return ms->m[i].prot;
    return fallback;
}

int stp_page_prot(uint64_t addr, int text)
{
    struct maps ms;
    maps_open(&ms, text);
    int prot = prot_of(&ms, addr & ~(uint64_t)4095, -1);
    maps_close(&ms);
    return prot;
}

static int seg_prot(unsigned flags)
{
    return (flags & 4 ? PROT_READ : 0) | (flags & 2 ? PROT_WRITE : 0) | (flags & 1 ? PROT_EXEC : 0);
}

static void *map_at(uint64_t a, uint64_t page)
{
    void *p = mmap((void *)(uintptr_t)a, page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if ((uint64_t)(uintptr_t)p == a)
        return p;
    munmap(p, page); /* an old kernel ignored the hint */
    return NULL;
}

/* Maps a page from which every address in [lo, hi) is within rel32 reach. First at a random
 * distance of 64 MiB to 1 GiB below lo: not right next to the object, where a program's own
 * MAP_FIXED mapping is likeliest to land (with ASLR off, as under gdb, the page used to sit right
 * under the executable), and not above it, where the heap of an executable grows. Then the
 * nearest free page, up or down. A MAP_FIXED mapping over the stub page itself still breaks the
 * object's patched sleds (README). */
static void *map_stub_page(uint64_t lo, uint64_t hi, uint64_t page)
{
    uint64_t min = hi > REACH ? hi - REACH : page;
    uint64_t max = lo + REACH - page;
    enum { NEAR = 64u << 20, FAR = 1u << 30 };
    if (lo > NEAR + page) {
        uint64_t top = lo - NEAR, bottom = lo > FAR ? lo - FAR : page;
        if (bottom < min)
            bottom = min;
        uint64_t x = __builtin_ia32_rdtsc() ^ (lo * 0x9e3779b97f4a7c15ull);
        for (int k = 0; k < 16 && bottom < top; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t a = (bottom + (x >> 20) % (top - bottom)) & ~(page - 1);
            void *p = map_at(a, page);
            if (p)
                return p;
        }
    }
    uint64_t up = (hi + page - 1) & ~(page - 1);
    uint64_t down = (lo & ~(page - 1)) - page;
    for (uint64_t step = 0; step < REACH; step += 16 * page) {
        uint64_t cand[2] = {up + step, down - step};
        for (int k = 0; k < 2; k++) {
            uint64_t a = cand[k];
            if (a < min || a > max || a < page)
                continue;
            void *p = map_at(a, page);
            if (p)
                return p;
        }
    }
    return NULL;
}

static void encode(uint8_t b[STP_SLED_SIZE], const struct stp_sled *s, uint32_t id_base,
                   uint64_t target)
{
    int32_t rel = (int32_t)(int64_t)(target - (s->addr + STP_SLED_SIZE));
    uint32_t id = id_base + s->fid; /* a base ends in 24 zero bits, or is a range's start */
    b[0] = 0x41;                    /* mov $id, %r10d */
    b[1] = 0xba;
    memcpy(b + 2, &id, 4);
    b[6] = s->kind == STP_EXIT ? 0xe9 : 0xe8; /* jmp replaces ret; call otherwise */
    memcpy(b + 7, &rel, 4);
}

static void write_sled(const struct stp_sled *s, const uint8_t b[STP_SLED_SIZE])
{
    uint8_t *p = (uint8_t *)(uintptr_t)s->addr;
    memcpy(p + 2, b + 2, STP_SLED_SIZE - 2);
    uint16_t head = (uint16_t)(b[0] | (b[1] << 8));
    if (((uintptr_t)p & 1) == 0)
        /* Release: the body written above is visible to other CPUs before the new head. There is
         * no matching acquire: the readers are instruction fetches, ordered by x86's
         * cross-modifying-code rules for a single aligned store. */
        atomic_store_explicit((_Atomic uint16_t *)(void *)p, head, memory_order_release);
    else
        memcpy(p, &head, 2);
}

/* Event sleds: their call is pointed at the stub (dead code behind the jmp), then the jmp over
 * them becomes a 2-byte nop (`66 90`) with one aligned atomic store, like the other heads. */
static void write_event_sled(const struct stp_sled *s, uint64_t target)
{
    uint8_t *p = (uint8_t *)(uintptr_t)s->addr;
    unsigned off = stp_event_call_offset(s->kind);
    int32_t rel = (int32_t)(int64_t)(target - (s->addr + off + 5));
    memcpy(p + off + 1, &rel, 4);
    uint16_t head = (uint16_t)(0x66 | (0x90 << 8));
    if (((uintptr_t)p & 1) == 0)
        /* Release, as in write_sled: no matching acquire (instruction fetch). */
        atomic_store_explicit((_Atomic uint16_t *)(void *)p, head, memory_order_release);
    else
        memcpy(p, &head, 2);
}

/* The first two bytes of a sled, patched (on) or not. */
static uint16_t head_bytes(unsigned kind, int on)
{
    if (kind == STP_CUSTOM_EVENT || kind == STP_TYPED_EVENT)
        return on ? 0x9066 : kind == STP_CUSTOM_EVENT ? 0x0feb : 0x14eb;
    if (on)
        return 0xba41;                         /* 41 ba: mov $id, %r10d */
    return kind == STP_EXIT ? 0x2ec3 : 0x09eb; /* c3 2e: ret; eb 09: jmp +9 */
}

/* "Never write a head without checking the bytes under it." Whether sled s holds what the
 * patcher itself left there: its patched body (the id and the call or jmp to target) behind a
 * head on or off. The head is read once: a debugger may write an int3 over it at any time, and
 * the check is only as good as the moment it is made (a writer that races the patcher's own
 * window is not excluded; ptrace writes are rare and the window is short). */
static int as_patched(const struct stp_sled *s, uint32_t id_base, uint64_t target)
{
    const uint8_t *p = (const uint8_t *)(uintptr_t)s->addr;
    uint16_t head;
    memcpy(&head, p, 2);
    if (head != head_bytes(s->kind, 1) && head != head_bytes(s->kind, 0))
        return 0;
    if (s->kind == STP_CUSTOM_EVENT || s->kind == STP_TYPED_EVENT) {
        unsigned off = stp_event_call_offset(s->kind);
        int32_t rel = (int32_t)(int64_t)(target - (s->addr + off + 5)), was;
        memcpy(&was, p + off + 1, 4);
        return was == rel;
    }
    uint8_t b[STP_SLED_SIZE];
    encode(b, s, id_base, target);
    return memcmp(p + 2, b + 2, STP_SLED_SIZE - 2) == 0;
}

/* Before the first patch: the sled still holds a form its proof accepted (stp_sled_form): the
 * template, or the patched form carrying its function's id (compiler-rt's patch_premain leaves
 * it calling compiler-rt's trampolines). Event sleds: their unpatched head. Anything else, such
 * as an int3 a debugger put there since the proof, is left alone. */
static int as_proven(const struct stp_sled *s, uint32_t id_base, uint64_t target)
{
    (void)target;
    const uint8_t *p = (const uint8_t *)(uintptr_t)s->addr;
    if (s->kind == STP_CUSTOM_EVENT || s->kind == STP_TYPED_EVENT) {
        uint16_t head;
        memcpy(&head, p, 2);
        return head == head_bytes(s->kind, 0);
    }
    uint32_t id;
    int int3;
    enum stp_form f = stp_sled_form(p, s->kind, &id, &int3);
    return !int3 && (f == STP_FORM_TEMPLATE ||
                     (f == STP_FORM_PATCHED && (id == s->fid || id == id_base + s->fid)));
}

static int sled_cmp(const void *a, const void *b)
{
    const struct stp_sled *x = *(struct stp_sled *const *)a, *y = *(struct stp_sled *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A sled's stub slot: one per kind, then the two of the functions that record arguments
 * (stp_object_record_args): their entries (and log-args entries), their exits. */
enum { SLOT_ARGS_ENTRY = STP_NKINDS, SLOT_ARGS_EXIT, NSLOTS };
static unsigned slot_of(const struct stp_sled *s)
{
    if (!s->args)
        return s->kind;
    return s->kind == STP_EXIT ? SLOT_ARGS_EXIT : SLOT_ARGS_ENTRY;
}

static uint64_t stub_for(const struct stp_object *obj, const struct stp_sled *s)
{
    return (uint64_t)(uintptr_t)obj->stub_page + STUB_SLOT * slot_of(s);
}

/* Sleds of func (-1: all) that no longer hold what `ok` expects become STP_CHANGED, with the
 * rest of their function (stp_func_whole). Returns how many functions it marked. Reads the code
 * outside any window: only a writer other than the patcher can change it, and that is what is
 * looked for. */
static size_t mark_changed(struct stp_object *obj, long func,
                           int (*ok)(const struct stp_sled *, uint32_t, uint64_t))
{
    size_t n = 0;
    for (size_t f = func < 0 ? 0 : (size_t)func; f < obj->nfuncs; f++) {
        const struct stp_func *fn = &obj->funcs[f];
        int marked = 0;
        for (uint32_t k = 0; k < fn->nsleds; k++) {
            struct stp_sled *s = &obj->sleds[fn->first_sled + k];
            if (s->status == STP_OK && !ok(s, obj->id_base, stub_for(obj, s))) {
                s->status = STP_CHANGED;
                marked = 1;
            }
        }
        stp_func_whole(obj, fn);
        n += marked;
        if (func >= 0)
            break;
    }
    return n;
}

int stp_object_patch(struct stp_object *obj, const struct stp_targets *t)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    mark_changed(obj, -1, as_proven); /* since the proof: a debugger's int3 */
    struct stp_sled **todo = malloc((obj->nsleds ? obj->nsleds : 1) * sizeof *todo);
    if (!todo)
        return STP_E_NOMEM;
    size_t n = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < obj->nsleds; i++) {
        struct stp_sled *s = &obj->sleds[i];
        if (s->status != STP_OK || s->kind >= STP_NKINDS || !t->fn[s->kind])
            continue;
        todo[n++] = s;
        if (s->addr < lo)
            lo = s->addr;
        if (s->addr + stp_sled_size(s->kind) > hi)
            hi = s->addr + stp_sled_size(s->kind);
    }
    if (n == 0) {
        free(todo);
        return 0;
    }
    /* In address order (maps are, nearly always, already: then no sort). */
    size_t sorted = 1;
    while (sorted < n && todo[sorted - 1]->addr <= todo[sorted]->addr)
        sorted++;
    if (sorted < n)
        qsort(todo, n, sizeof *todo, sled_cmp);

    /* Stub page. */
    uint8_t *stubs = map_stub_page(lo, hi, page);
    if (!stubs) {
        for (size_t i = 0; i < n; i++)
            todo[i]->status = STP_NO_STUB;
        free(todo);
        return STP_E_STUB;
    }
    for (int k = 0; k < NSLOTS; k++) {
        uint8_t *slot = stubs + STUB_SLOT * k;
        static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
        void (*fn)(void) = k < STP_NKINDS ? t->fn[k]
                           : k == SLOT_ARGS_ENTRY
                               ? (t->args_entry ? t->args_entry : t->fn[STP_ENTRY])
                               : (t->args_exit ? t->args_exit : t->fn[STP_EXIT]);
        uint64_t target = (uint64_t)(uintptr_t)fn;
        memcpy(slot, jmp_rip, sizeof jmp_rip);
        memcpy(slot + 6, &target, 8);
    }
    if (raw_mprotect(stubs, page, PROT_READ | PROT_EXEC) != 0) {
        munmap(stubs, page);
        for (size_t i = 0; i < n; i++)
            todo[i]->status = STP_PROTECT_FAILED;
        free(todo);
        return STP_E_PROTECT;
    }
    obj->stub_page = stubs;

    window_open(lo & ~(page - 1), (hi + page - 1) & ~(page - 1));
    struct maps maps;
    maps_open(&maps, 0);
    int rc = 0;
    /* Runs of sleds whose pages are contiguous and share one protection. */
    for (size_t i = 0; i < n;) {
        uint64_t first = todo[i]->addr & ~(page - 1);
        const struct stp_seg *seg = stp_find_seg(obj, todo[i]->addr, stp_sled_size(todo[i]->kind));
        int prot = prot_of(&maps, first, seg ? seg_prot(seg->flags) : PROT_READ | PROT_EXEC);
        uint64_t last = (todo[i]->addr + stp_sled_size(todo[i]->kind) - 1) & ~(page - 1);
        size_t j = i + 1;
        while (j < n) {
            uint64_t a = todo[j]->addr & ~(page - 1);
            uint64_t b = (todo[j]->addr + stp_sled_size(todo[j]->kind) - 1) & ~(page - 1);
            if (a > last + page)
                break;
            if (b > last && prot_of(&maps, b, prot) != prot)
                break;
            if (b > last)
                last = b;
            j++;
        }
        void *start = (void *)(uintptr_t)first;
        size_t len = last + page - first;
        if (raw_mprotect(start, len, (prot | PROT_WRITE) & ~PROT_EXEC) != 0) {
            for (size_t k = i; k < j; k++)
                todo[k]->status = STP_PROTECT_FAILED;
            rc = STP_E_PROTECT;
            i = j;
            continue;
        }
        for (size_t k = i; k < j; k++) {
            uint64_t target = (uint64_t)(uintptr_t)stubs + STUB_SLOT * slot_of(todo[k]);
            if (todo[k]->kind == STP_CUSTOM_EVENT || todo[k]->kind == STP_TYPED_EVENT) {
                write_event_sled(todo[k], target);
                continue;
            }
            uint8_t b[STP_SLED_SIZE];
            encode(b, todo[k], obj->id_base, target);
            write_sled(todo[k], b);
        }
        if (raw_mprotect(start, len, prot) != 0)
            rc = STP_E_PROTECT; /* cannot happen for a protection we just had; report anyway */
        i = j;
    }
    window_close();
    maps_close(&maps);
    free(todo);
    return rc;
}

int stp_object_intact(const struct stp_object *obj)
{
    if (!obj->stub_page)
        return 1;
    for (size_t i = 0; i < obj->nsleds; i++) {
        const struct stp_sled *s = &obj->sleds[i];
        if (s->status == STP_OK)
            return as_patched(s, obj->id_base, stub_for(obj, s));
    }
    return 1;
}

int stp_object_toggle(struct stp_object *obj, long func, int on, size_t *changed)
{
    if (changed)
        *changed = 0;
    if (!obj->stub_page)
        return 0;
    size_t marked = mark_changed(obj, func, as_patched);
    if (changed)
        *changed = marked;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    int rc = 0;
    uint32_t fid = func < 0 ? 0 : (uint32_t)func + 1;
    for (size_t g = 0; g < obj->nsegs; g++) {
        const struct stp_seg *seg = &obj->segs[g];
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < obj->nsleds; i++) {
            const struct stp_sled *s = &obj->sleds[i];
            if (s->status == STP_OK && (!fid || s->fid == fid) && s->addr >= seg->start &&
                s->addr < seg->end) {
                if (s->addr < lo)
                    lo = s->addr;
                if (s->addr + stp_sled_size(s->kind) > hi)
                    hi = s->addr + stp_sled_size(s->kind);
            }
        }
        if (hi == 0)
            continue;
        uint64_t first = lo & ~(page - 1), len = ((hi + page - 1) & ~(page - 1)) - first;
        window_open(first, first + len);
        struct maps maps;
        maps_open(&maps, 0);
        int prot = prot_of(&maps, first, seg_prot(seg->flags));
        maps_close(&maps);
        /* Never writable and executable: a thread running here meanwhile waits (see the top). */
        if (raw_mprotect((void *)(uintptr_t)first, len, (prot | PROT_WRITE) & ~PROT_EXEC) != 0) {
            window_close();
            rc = STP_E_PROTECT;
            continue;
        }
        for (size_t i = 0; i < obj->nsleds; i++) {
            const struct stp_sled *s = &obj->sleds[i];
            if (s->status != STP_OK || (fid && s->fid != fid) || s->addr < seg->start ||
                s->addr >= seg->end)
                continue;
            uint16_t head = head_bytes(s->kind, on);
            uint8_t *p = (uint8_t *)(uintptr_t)s->addr;
            if (((uintptr_t)p & 1) == 0)
                /* Release, as in write_sled: the instruction fetch side has no acquire. */
                atomic_store_explicit((_Atomic uint16_t *)(void *)p, head, memory_order_release);
            else
                memcpy(p, &head, 2);
        }
        if (raw_mprotect((void *)(uintptr_t)first, len, prot) != 0)
            rc = STP_E_PROTECT;
        window_close();
    }
    return rc;
}
