/* Capstone for the proofs: loading it, and the sweep's fast path.
 *
 * Capstone is loaded by the first proof (dlopen of its SONAME, through the dynamic linker's own
 * dlopen and dlclose, never through interposed ones), not linked: LD_PRELOAD reaches every
 * process a traced program starts, and loading Capstone cost each of them about 0.6 ms even
 * when it had nothing to prove. stp_capstone_release() unloads it (about 5 MiB resident) until
 * a later proof needs it again. Loading and releasing are not thread-safe with proofs; the
 * runtime serialises them.
 *
 * A decoder (struct stp_dec) belongs to one sweeping thread. It has two handles. `full` is an
 * ordinary one: the sleds' own instructions, whose Capstone ids verify.c checks, are decoded by
 * it. The sweep between sleds needs only each instruction's length (verify.c reads the branch
 * targets from the bytes itself), so it takes two shortcuts, each of which leaves Capstone's
 * answer unchanged:
 *
 *  - A quiet handle. Capstone's decoder finds an instruction's length before its printer
 *    formats the text, the printer is half of cs_disasm_iter's cost, and no public option turns
 *    it off. Capstone 4.0's private handle (struct cs_struct in its cs_priv.h) begins with its
 *    arch and mode, then the printer's address; the quiet handle's printer is a no-op. That
 *    layout is relied on only when every check holds: at load, library version 4.0, and a new
 *    handle with the arch and mode where expected, no post-printer, and its printer, decoder
 *    and id mapper inside libcapstone (probe_layout); for each quiet handle, the same head as
 *    that one's, and a sample of many instruction shapes split alike with the printer off and
 *    on (quiet_printer). Otherwise the sweep uses the full handle.
 *
 *  - A memo. Capstone's x86 decoder reads an instruction's bytes in order and no further, so an
 *    instruction's length is a function of its own bytes: once Capstone has split bytes b[0..L)
 *    off as one instruction, the same L bytes anywhere else are that instruction again. Code
 *    repeats (xmllint: 78% of its instructions are byte-for-byte copies of others), so each
 *    decoder keeps the instructions Capstone split for it (bytes and length) in a hash table,
 *    and asks Capstone only about bytes it has not seen. The lookup needs no length to start
 *    with: a table indexed by an instruction's first two bytes holds the lengths seen after
 *    them, and each is tried (instructions are prefix-free: at most one can match). The tests
 *    split libc's and the test program's text both ways and require the same lengths
 *    (stp_capstone_compare).
 *
 * Nothing here is shared between threads but cs_api, written by stp_capstone_load before any
 * sweeper starts (the runtime serialises loading with proofs; pthread_create orders the writes
 * before the workers' reads).
 */
#include "stp_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The Capstone functions the patcher calls, resolved from the library once it is loaded. */
static struct {
    void *handle;
    int (*dlclose)(void *);
    cs_err (*open)(cs_arch, cs_mode, csh *);
    cs_err (*option)(csh, cs_opt_type, size_t);
    cs_insn *(*malloc)(csh);
    void (*free)(cs_insn *, size_t);
    cs_err (*close)(csh *);
    bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
    unsigned (*version)(int *, int *);
    /* What a new x86-64 handle's head holds (struct cs4_head below), as checked by
     * probe_layout() when Capstone was loaded; printer NULL: the layout is not relied on. */
    void (*printer)(void *, void *, void *);
    void (*disasm)(void), (*insn_id)(void);
} cs_api;

static void probe_layout(void);

int stp_capstone_loaded(void)
{
    return cs_api.handle != NULL;
}

int stp_capstone_load(void)
{
    if (cs_api.handle)
        return 0;
    /* The dynamic linker's own dlopen and dlclose: a program's interposed ones (the runtime's
     * rescan loaded objects under a lock its caller may hold) must not see Capstone come and go. */
    void *(*real_dlopen)(const char *, int);
    int (*real_dlclose)(void *);
    *(void **)&real_dlopen = dlsym(RTLD_NEXT, "dlopen");
    *(void **)&real_dlclose = dlsym(RTLD_NEXT, "dlclose");
    void *h =
        real_dlopen && real_dlclose ? real_dlopen(STP_CAPSTONE_NAME, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h)
        return STP_E_CAPSTONE;
    static const char *const names[] = {"cs_open",  "cs_option",      "cs_malloc", "cs_free",
                                        "cs_close", "cs_disasm_iter", "cs_version"};
    void **slots[] = {(void **)&cs_api.open,   (void **)&cs_api.option,
                      (void **)&cs_api.malloc, (void **)&cs_api.free,
                      (void **)&cs_api.close,  (void **)&cs_api.disasm_iter,
                      (void **)&cs_api.version};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(*slots[i] = dlsym(h, names[i]))) {
            real_dlclose(h);
            return STP_E_CAPSTONE;
        }
    cs_api.dlclose = real_dlclose;
    cs_api.handle = h;
    probe_layout();
    return 0;
}

void stp_capstone_release(void)
{
    if (!cs_api.handle)
        return;
    void *h = cs_api.handle;
    int (*real_dlclose)(void *) = cs_api.dlclose;
    memset(&cs_api, 0, sizeof cs_api);
    real_dlclose(h);
}

/* ---- the quiet handle ------------------------------------------------------------------- */

/* The head of Capstone 4.0's private handle (struct cs_struct in its cs_priv.h), as far as the
 * post-printer: read and written only by quiet_printer(), after its checks. */
struct cs4_head {
    int arch, mode; /* cs_arch, cs_mode */
    void (*printer)(void *mcinst, void *sstream, void *info);
    void *printer_info;
    void (*disasm)(void);
    void *getinsn_info;
    void (*reg_name)(void), (*insn_name)(void), (*group_name)(void), (*insn_id)(void);
    void (*post_printer)(void);
};

static void no_print(void *mcinst, void *sstream, void *info)
{
    (void)mcinst;
    (void)sstream;
    (void)info;
}

/* 1 when function f lies in the object that holds cs_open. */
static int in_capstone(void (*f)(void))
{
    Dl_info a, b;
    void *pf, *po;
    memcpy(&pf, &f, sizeof pf);
    memcpy(&po, &cs_api.open, sizeof po);
    return pf && dladdr(pf, &a) && dladdr(po, &b) && a.dli_fbase == b.dli_fbase;
}

/* Instructions of many shapes (prefixes, ModRM/SIB/displacements, immediates, VEX, EVEX, rel8
 * and rel32 branches, the sled templates) that a quiet handle must split as the full one does. */
static const uint8_t quiet_sample[] = {
    0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x41, 0x57, 0x48, 0x81, 0xec, 0x88, 0x00,
    0x00, 0x00, 0x48, 0x8d, 0x84, 0x24, 0x10, 0x01, 0x00, 0x00, 0x4c, 0x8b, 0x3d, 0x01, 0x02,
    0x03, 0x04, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, 0x48, 0xb8, 0x88, 0x77,
    0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xf3, 0x48, 0xab, 0xf0, 0x48, 0x0f, 0xb1, 0x0a, 0xc5,
    0xfe, 0x6f, 0x44, 0x24, 0x20, 0x62, 0xf1, 0x7d, 0x48, 0xfe, 0xc1, 0x66, 0x0f, 0x1f, 0x44,
    0x00, 0x00, 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00, 0x74, 0xf0, 0xe8, 0x00, 0x00, 0x00, 0x00,
    0xff, 0x25, 0x00, 0x10, 0x00, 0x00, 0xeb, 0x09, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x02,
    0x00, 0x00, 0x41, 0xba, 0x07, 0x00, 0x00, 0x00, 0xe9, 0x00, 0x00, 0x00, 0x00, 0xc3, 0x2e,
    0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x02, 0x00, 0x00, 0xcc, 0x0f, 0x0b, 0xc3,
};

/* 1 when handles a and b split `quiet_sample` into the same instructions (lengths and bytes). */
static int same_split(csh a, csh b, cs_insn *ia, cs_insn *ib)
{
    const uint8_t *pa = quiet_sample, *pb = quiet_sample;
    size_t la = sizeof quiet_sample, lb = la;
    uint64_t aa = 0x1000, ab = 0x1000;
    while (la > 0) {
        int ra = cs_api.disasm_iter(a, &pa, &la, &aa, ia);
        int rb = cs_api.disasm_iter(b, &pb, &lb, &ab, ib);
        if (ra != rb || !ra || ia->size != ib->size || memcmp(ia->bytes, ib->bytes, ia->size))
            return 0;
    }
    return lb == 0;
}

static csh open_handle(void)
{
    csh h = 0;
    if (cs_api.open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
        return 0;
    cs_api.option(h, CS_OPT_DETAIL, CS_OPT_OFF);
    return h;
}

/* Checks, once per load (never inside dl_iterate_phdr: dladdr takes the loader's lock), that a
 * new handle looks as Capstone 4.0's does, and records what its head holds. */
static void probe_layout(void)
{
    int major = 0, minor = 0;
    cs_api.version(&major, &minor);
    csh q = major == 4 && minor == 0 ? open_handle() : 0;
    if (!q)
        return;
    const struct cs4_head *h = (const struct cs4_head *)(uintptr_t)q;
    void (*printer)(void);
    memcpy(&printer, &h->printer, sizeof printer);
    if (h->arch == CS_ARCH_X86 && h->mode == CS_MODE_64 && !h->post_printer &&
        in_capstone(printer) && in_capstone(h->disasm) && in_capstone(h->insn_id)) {
        cs_api.printer = h->printer;
        cs_api.disasm = h->disasm;
        cs_api.insn_id = h->insn_id;
    }
    cs_api.close(&q);
}

/* Turns handle q's printer off: 1 when done, 0 when any check fails (q is left as it was
 * then). `full` is an ordinary handle to compare with. */
static int quiet_printer(csh q, csh full, cs_insn *iq, cs_insn *ifull)
{
    struct cs4_head *h = (struct cs4_head *)(uintptr_t)q;
    if (!cs_api.printer || !h || h->arch != CS_ARCH_X86 || h->mode != CS_MODE_64 ||
        h->post_printer || h->printer != cs_api.printer || h->disasm != cs_api.disasm ||
        h->insn_id != cs_api.insn_id)
        return 0;
    h->printer = no_print;
    if (!same_split(q, full, iq, ifull)) {
        h->printer = cs_api.printer;
        return 0;
    }
    return 1;
}

/* ---- the memo ---------------------------------------------------------------------------
 * An entry is 16 bytes: the instruction's bytes (at most 15) zero-padded, its length in the
 * last byte (0: empty). Open addressing, linear probing; inserts stop at half full, so a probe
 * always ends at an empty slot. lens[b0 | b1 << 8]: bit L set when an instruction of length L
 * beginning with b0 b1 is in the table (a one-byte instruction b0 sets bit 1 for every b1). */
enum { MEMO_MIN_BITS = 10, MEMO_MAX_BITS = 17, MEMO_MIN_CODE = 8192 };

struct stp_memo {
    uint16_t lens[1 << 16];
    size_t n, mask; /* entries in use; slots - 1 */
    unsigned bits;  /* log2 of the slots */
    uint64_t v[][2];
};

/* Bytes of a memo with 2^bits slots. */
static size_t memo_bytes(unsigned bits)
{
    return sizeof(struct stp_memo) + ((size_t)1 << bits) * 2 * sizeof(uint64_t);
}

/* The first L bytes of a 16-byte window (two little-endian words), with L in the last byte. */
static inline void memo_key(const uint64_t w[2], unsigned L, uint64_t k[2])
{
    k[0] = L >= 8 ? w[0] : w[0] & ((1ull << (8 * L)) - 1);
    k[1] = L <= 8 ? 0 : w[1] & ((1ull << (8 * (L - 8))) - 1);
    k[1] |= (uint64_t)L << 56;
}

static inline size_t memo_slot(const struct stp_memo *m, const uint64_t k[2])
{
    uint64_t h = (k[0] ^ (k[1] * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(h >> (64 - m->bits));
}

/* The length of the instruction the window begins with, from the memo, or 0. At most `left`. */
static unsigned memo_find(const struct stp_memo *m, const uint64_t w[2], size_t left)
{
    unsigned bits = m->lens[w[0] & 0xffff];
    while (bits) {
        unsigned L = (unsigned)__builtin_ctz(bits);
        bits &= bits - 1;
        if (L > left)
            return 0; /* lengths are tried shortest first */
        uint64_t k[2];
        memo_key(w, L, k);
        for (size_t i = memo_slot(m, k);; i = (i + 1) & m->mask) {
            const uint64_t *e = m->v[i];
            if (e[0] == k[0] && e[1] == k[1])
                return L;
            if (!e[1])
                break;
        }
    }
    return 0;
}

static void memo_add(struct stp_memo *m, const uint64_t w[2], unsigned L)
{
    if (m->n >= (m->mask + 1) / 2 || L == 0 || L > 15)
        return;
    uint64_t k[2];
    memo_key(w, L, k);
    size_t i = memo_slot(m, k);
    for (; m->v[i][1]; i = (i + 1) & m->mask)
        if (m->v[i][0] == k[0] && m->v[i][1] == k[1])
            return;
    m->v[i][0] = k[0];
    m->v[i][1] = k[1];
    m->n++;
    if (L == 1)
        for (unsigned b1 = 0; b1 < 256; b1++)
            m->lens[(w[0] & 0xff) | b1 << 8] |= 1u << 1;
    else
        m->lens[w[0] & 0xffff] |= (uint16_t)(1u << L);
}

/* ---- decoders --------------------------------------------------------------------------- */

void stp_dec_close(struct stp_dec *d)
{
    if (d->isweep && d->isweep != d->ifull)
        cs_api.free(d->isweep, 1);
    if (d->sweep && d->sweep != d->full)
        cs_api.close(&d->sweep);
    if (d->ifull)
        cs_api.free(d->ifull, 1);
    if (d->full)
        cs_api.close(&d->full);
    if (d->memo) {
        munmap(d->memo, memo_bytes(d->memo->bits));
    }
    memset(d, 0, sizeof *d);
}

int stp_dec_open(struct stp_dec *d, size_t bytes)
{
    memset(d, 0, sizeof *d);
    if (stp_capstone_load() != 0 || !(d->full = open_handle()) ||
        !(d->ifull = cs_api.malloc(d->full))) {
        stp_dec_close(d);
        return STP_E_CAPSTONE;
    }
    d->sweep = open_handle();
    d->isweep = d->sweep ? cs_api.malloc(d->sweep) : NULL;
    if (!d->isweep || !quiet_printer(d->sweep, d->full, d->isweep, d->ifull)) {
        if (d->isweep)
            cs_api.free(d->isweep, 1);
        if (d->sweep)
            cs_api.close(&d->sweep);
        d->sweep = d->full;
        d->isweep = d->ifull;
    }
    /* No memo is no error: the sweep asks Capstone about every instruction then. None for a
     * small sweep (a library's few functions, a filtered program: filling it would cost more
     * than it saves); else about one slot per 2 bytes of code (an instruction takes 3 to 4 on
     * average, at most half the slots are used), up to 2^MEMO_MAX_BITS (2 MiB).
     * Mapped with its pages populated: a page first read through the shared zero page and then
     * written is copied, and the copy flushes the TLB of every other CPU running the process
     * (an interprocessor interrupt, a VM exit here): with a proof worker running, that was a
     * quarter of the start-up's time. */
    if (bytes < MEMO_MIN_CODE)
        return 0;
    unsigned bits = MEMO_MIN_BITS;
    while (bits < MEMO_MAX_BITS && ((size_t)1 << bits) < bytes / 2)
        bits++;
    void *m = mmap(NULL, memo_bytes(bits), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    d->memo = m == MAP_FAILED ? NULL : m;
    if (d->memo) {
        d->memo->bits = bits;
        d->memo->mask = ((size_t)1 << bits) - 1;
    }
    return 0;
}

const cs_insn *stp_dec_full(struct stp_dec *d, const uint8_t **p, size_t *left, uint64_t *addr)
{
    return cs_api.disasm_iter(d->full, p, left, addr, d->ifull) ? d->ifull : NULL;
}

unsigned stp_dec_step(struct stp_dec *d, const uint8_t **p, size_t *left, uint64_t *addr)
{
    if (!*left)
        return 0;
    uint64_t w[2] = {0, 0};
    if (*left >= sizeof w)
        memcpy(w, *p, sizeof w); /* a constant size: two loads, no call */
    else
        memcpy(w, *p, *left);
    unsigned L = d->memo ? memo_find(d->memo, w, *left) : 0;
    if (L) {
        *p += L;
        *left -= L;
        *addr += L;
        return L;
    }
    /* Capstone decodes the copy the memo will hold (an instruction is at most 15 bytes), so
     * what it remembers is exactly what Capstone saw. */
    const uint8_t *q = (const uint8_t *)w;
    size_t n = *left < sizeof w ? *left : sizeof w;
    uint64_t a = *addr;
    if (!cs_api.disasm_iter(d->sweep, &q, &n, &a, d->isweep))
        return 0;
    L = d->isweep->size;
    if (d->memo)
        memo_add(d->memo, w, L);
    *p += L;
    *left -= L;
    *addr += L;
    return L;
}

int stp_capstone_quiet(void)
{
    struct stp_dec d;
    if (stp_dec_open(&d, 0) != 0)
        return -1;
    int quiet = d.sweep != d.full;
    stp_dec_close(&d);
    return quiet;
}

long stp_capstone_compare(const uint8_t *code, size_t len, uint64_t addr)
{
    struct stp_dec d;
    if (stp_dec_open(&d, len < MEMO_MIN_CODE ? MEMO_MIN_CODE : len) != 0 || !d.memo) {
        stp_dec_close(&d);
        return LONG_MIN;
    }
    const uint8_t *pf = code, *pq = code;
    size_t lf = len, lq = len;
    uint64_t af = addr, aq = addr;
    long n = 0;
    while (lf > 0) {
        long at = (long)(pf - code);
        const cs_insn *in = stp_dec_full(&d, &pf, &lf, &af);
        unsigned L = stp_dec_step(&d, &pq, &lq, &aq);
        if (!in != !L || (in && in->size != L)) {
            n = -1 - at;
            break;
        }
        if (!in) { /* neither decodes here: go on at the next byte, as a disassembler would */
            pf++, pq++, lf--, lq--, af++, aq++;
            continue;
        }
        n++;
    }
    stp_dec_close(&d);
    return n;
}
