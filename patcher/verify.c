/* Proving sleds with Capstone before anything is written.
 *
 * A sled is proven when (1) all its bytes lie in an executable segment of its object, (2) its
 * bytes equal the template for its kind (or the patched form carrying its own function id, as
 * left by compiler-rt's patch_premain or an earlier sledtrace), (3) Capstone decodes the sled as
 * the expected instruction pair, and (4) a linear disassembly from the function's first byte
 * lands exactly on the sled's first byte. Each function is swept once, its sleds visited in
 * address order, so the cost is linear in the instrumented code size. For (3), Capstone's
 * decoding is a function of the bytes alone: each sweeper decodes the two templates once when
 * it opens Capstone, and a sled equal to a template is known to decode the same way; the
 * patched forms (whose bytes carry the function id) are decoded sled by sled.
 *
 * Capstone is loaded, and the sweep between sleds is made cheap, in decode.c: the sweep asks
 * only for instruction lengths there, the sleds' own instructions go to an ordinary handle.
 */
#include "stp_internal.h"

#include <capstone/capstone.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/platform/x86.h>
#include <string.h>

/* A sweeping thread's decoder, and whether its full handle decodes both sled templates as
 * entry_shape and exit_shape. */
struct sweeper {
    struct stp_dec d;
    int templates_proven;
};

static const uint8_t entry_template[STP_SLED_SIZE] = {0xeb, 0x09, 0x66, 0x0f, 0x1f, 0x84,
                                                      0x00, 0x00, 0x02, 0x00, 0x00};
static const uint8_t exit_template[STP_SLED_SIZE] = {0xc3, 0x2e, 0x66, 0x0f, 0x1f, 0x84,
                                                     0x00, 0x00, 0x02, 0x00, 0x00};

/* Expected Capstone instruction ids and sizes for the two instructions of a sled; tmpl: the
 * bytes are a template's. */
struct shape {
    unsigned id0, size0, id1, size1;
    int tmpl;
};

static const struct shape entry_shape = {X86_INS_JMP, 2, X86_INS_NOP, 9, 1};
static const struct shape exit_shape = {X86_INS_RET, 1, X86_INS_NOP, 10, 1};

enum stp_form stp_sled_form(const uint8_t b[STP_SLED_SIZE], unsigned kind, uint32_t *id, int *int3)
{
    const uint8_t *tmpl = kind == STP_EXIT ? exit_template : entry_template;
    memcpy(id, b + 2, 4);
    enum stp_form f = STP_FORM_NONE;
    uint8_t head0 = 0;
    if (memcmp(b + 1, tmpl + 1, STP_SLED_SIZE - 1) == 0)
        f = STP_FORM_TEMPLATE, head0 = tmpl[0];
    else if (b[1] == 0xba && b[6] == (kind == STP_EXIT ? 0xe9 : 0xe8))
        f = STP_FORM_PATCHED, head0 = 0x41;
    *int3 = f != STP_FORM_NONE && b[0] == 0xcc;
    return f != STP_FORM_NONE && (b[0] == head0 || *int3) ? f : STP_FORM_NONE;
}

/* Byte check: template, or our own patched form for this function id. Sets *shape. */
static enum stp_status check_bytes(const uint8_t *b, unsigned kind, uint32_t expect_id,
                                   struct shape *shape)
{
    uint32_t id;
    int int3;
    enum stp_form f = stp_sled_form(b, kind, &id, &int3);
    if (f == STP_FORM_PATCHED && id != expect_id)
        return STP_BAD_BYTES;
    /* A debugger's breakpoint over the first byte of either form: refused, but named as such
     * (the runtime says it louder than other refusals: the user may not know it matters). */
    if (f != STP_FORM_NONE && int3)
        return STP_BREAKPOINT;
    if (f == STP_FORM_TEMPLATE)
        *shape = kind == STP_EXIT ? exit_shape : entry_shape;
    else if (f == STP_FORM_PATCHED)
        *shape =
            (struct shape){X86_INS_MOV, 6, kind == STP_EXIT ? X86_INS_JMP : X86_INS_CALL, 5, 0};
    return f == STP_FORM_NONE ? STP_BAD_BYTES : STP_OK;
}

/* Decodes two instructions at *p with d's full handle (moving *p, *left, *addr past them): 1
 * when they have the ids and sizes of `want`. */
static int decode_pair(struct stp_dec *d, const uint8_t **p, size_t *left, uint64_t *addr,
                       const struct shape *want)
{
    const cs_insn *in = stp_dec_full(d, p, left, addr);
    if (!in || in->id != want->id0 || in->size != want->size0)
        return 0;
    in = stp_dec_full(d, p, left, addr);
    return in && in->id == want->id1 && in->size == want->size1;
}

/* Proves an event sled (the sweep stands on its first byte) and moves the sweep past it: the
 * exact instruction sequence clang emits, `jmp` over the rest (or the 2-byte nop that enables
 * it), pushes of the argument registers, one mov per argument, the call at its fixed offset,
 * the pops. Returns STP_OK or STP_BAD_BYTES. */
static enum stp_status check_event(struct stp_dec *d, const uint8_t **p, size_t *left,
                                   uint64_t *addr, const struct stp_sled *s)
{
    static const unsigned custom[] = {X86_INS_JMP, X86_INS_PUSH, X86_INS_PUSH, X86_INS_MOV,
                                      X86_INS_MOV, X86_INS_CALL, X86_INS_POP,  X86_INS_POP};
    static const unsigned typed[] = {X86_INS_JMP, X86_INS_PUSH, X86_INS_PUSH, X86_INS_PUSH,
                                     X86_INS_MOV, X86_INS_MOV,  X86_INS_MOV,  X86_INS_CALL,
                                     X86_INS_POP, X86_INS_POP,  X86_INS_POP};
    const unsigned *want = s->kind == STP_CUSTOM_EVENT ? custom : typed;
    size_t n = s->kind == STP_CUSTOM_EVENT ? sizeof custom / sizeof custom[0]
                                           : sizeof typed / sizeof typed[0];
    unsigned size = stp_sled_size(s->kind);
    const uint8_t *b = *p;
    int enabled = b[0] == 0x66 && b[1] == 0x90;
    if (!enabled && !(b[0] == 0xeb && b[1] == size - 2))
        return STP_BAD_BYTES;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = *addr;
        const cs_insn *insn = stp_dec_full(d, p, left, addr);
        if (!insn)
            return STP_BAD_BYTES;
        unsigned id = i == 0 && enabled ? X86_INS_JMP : insn->id;
        if (i == 0 && enabled && insn->id != X86_INS_NOP)
            return STP_BAD_BYTES;
        if (id != want[i])
            return STP_BAD_BYTES;
        if (want[i] == X86_INS_CALL && (at - s->addr != stp_event_call_offset(s->kind) ||
                                        insn->size != 5 || insn->bytes[0] != 0xe8))
            return STP_BAD_BYTES;
    }
    return *addr - s->addr == size ? STP_OK : STP_BAD_BYTES;
}

/* Target of a relative jump, call, conditional jump or loop (the n bytes at b, mapped at
 * `address`), or 0 for anything else. The opcode follows any legacy or REX prefixes; rel8 and
 * rel32 are the instruction's last bytes. */
static uint64_t branch_target(const uint8_t *b, size_t n, uint64_t address)
{
    size_t i = 0;
    while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x2e ||
                     b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x64 || b[i] == 0x65 || b[i] == 0x36 ||
                     (b[i] & 0xf0) == 0x40))
        i++;
    if (i >= n)
        return 0;
    uint64_t next = address + n;
    uint8_t op = b[i];
    if (op == 0xeb || (op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3))
        return next + (uint64_t)(int64_t)(int8_t)b[n - 1];
    if (op == 0xe8 || op == 0xe9 || (op == 0x0f && i + 1 < n && (b[i + 1] & 0xf0) == 0x80)) {
        int32_t rel;
        memcpy(&rel, b + n - 4, 4);
        return next + (uint64_t)(int64_t)rel;
    }
    return 0;
}

struct targets {
    uint64_t *v;
    size_t n, cap;
    int lost; /* a target could not be kept: the function's sleds are refused */
};

static void note_target(struct targets *t, const uint8_t *b, size_t n, uint64_t address,
                        uint64_t lo, uint64_t hi)
{
    uint64_t to = branch_target(b, n, address);
    if (to <= lo || to >= hi)
        return; /* outside the function (or its first byte): cannot split a sled of it */
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 32;
        uint64_t *v = realloc(t->v, nc * sizeof *v);
        if (!v) {
            t->lost = 1;
            return;
        }
        t->v = v;
        t->cap = nc;
    }
    t->v[t->n++] = to;
}

/* Moves the sweep (*p, *left, *addr) instruction by instruction until it reaches `to` or
 * Capstone cannot decode, noting each instruction's branch target (lo, hi: the function). */
static void sweep_to(struct stp_dec *d, struct targets *tg, const uint8_t **p, size_t *left,
                     uint64_t *addr, uint64_t to, uint64_t lo, uint64_t hi)
{
    while (*addr < to) {
        const uint8_t *at = *p;
        uint64_t a = *addr;
        unsigned n = stp_dec_step(d, p, left, addr);
        if (!n)
            return;
        note_target(tg, at, n, a, lo, hi);
    }
}

/* Sweeps code[0..len) (mapped at func_addr) once, sleds[] sorted by address: proves each sled,
 * and notes every relative branch target; then refuses any proven sled a branch lands inside
 * (after its first byte: patching rewrites the instructions there). */
static void check_function(struct sweeper *w, struct targets *tgp, const uint8_t *code, size_t len,
                           uint64_t func_addr, struct stp_sled **sleds, size_t n)
{
    struct stp_dec *d = &w->d;
    const uint8_t *p = code;
    size_t left = len;
    uint64_t addr = func_addr, end = func_addr + len;
    struct targets *tg = tgp;
    for (size_t i = 0; i < n; i++) {
        struct stp_sled *s = sleds[i];
        if (s->status != STP_OK)
            continue;
        if (s->kind >= STP_NKINDS) {
            s->status = STP_UNSUPPORTED_KIND;
            continue;
        }
        if (s->version > 2) {
            s->status = STP_UNSUPPORTED_VERSION;
            continue;
        }
        if (s->addr < func_addr || s->addr + stp_sled_size(s->kind) > end) {
            s->status = STP_OUTSIDE_TEXT;
            continue;
        }
        if (s->kind == STP_CUSTOM_EVENT || s->kind == STP_TYPED_EVENT) {
            sweep_to(d, tg, &p, &left, &addr, s->addr, func_addr, end);
            if (addr != s->addr)
                s->status = addr < s->addr ? STP_UNDECODABLE : STP_NOT_ON_BOUNDARY;
            else
                s->status = check_event(d, &p, &left, &addr, s);
            continue;
        }
        struct shape shape;
        s->status = check_bytes(code + (s->addr - func_addr), s->kind, s->fid, &shape);
        if (s->status != STP_OK)
            continue;
        /* Sweep forward to the sled (the sweep position never moves backwards). */
        sweep_to(d, tg, &p, &left, &addr, s->addr, func_addr, end);
        if (addr != s->addr) {
            s->status = addr < s->addr ? STP_UNDECODABLE : STP_NOT_ON_BOUNDARY;
            continue;
        }
        /* The sled's own two instructions; leave the sweep after them. Capstone's decoding is
         * a function of the bytes, so a sled whose bytes equal a template (check_bytes) decodes
         * as the template did when open_sweeper decoded it; any other form is decoded here. */
        if (shape.tmpl && w->templates_proven) {
            p += STP_SLED_SIZE;
            left -= STP_SLED_SIZE;
            addr += STP_SLED_SIZE;
        } else if (!decode_pair(d, &p, &left, &addr, &shape)) {
            s->status = STP_BAD_BYTES;
        }
    }
    /* The rest of the function: its branches may go back into a sled. */
    sweep_to(d, tg, &p, &left, &addr, end, func_addr, end);
    for (size_t i = 0; i < n; i++) {
        struct stp_sled *s = sleds[i];
        if (tg->lost && s->status == STP_OK)
            s->status = STP_BRANCH_INTO;
        for (size_t k = 0; s->status == STP_OK && k < tg->n; k++)
            if (tg->v[k] > s->addr && tg->v[k] < s->addr + stp_sled_size(s->kind))
                s->status = STP_BRANCH_INTO;
    }
}

static int sled_addr_cmp(const void *a, const void *b)
{
    const struct stp_sled *x = *(struct stp_sled *const *)a, *y = *(struct stp_sled *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sleds in address order: most functions have two, so insertion sort, qsort past a few. */
static void sort_sleds(struct stp_sled **v, size_t n)
{
    if (n > 16) {
        qsort(v, n, sizeof *v, sled_addr_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        struct stp_sled *s = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1]->addr > s->addr; j--)
            v[j] = v[j - 1];
        v[j] = s;
    }
}

/* Opens a sweeper and proves the templates' decoding: 0 or STP_E_CAPSTONE. */
static int open_sweeper(struct sweeper *w, size_t bytes)
{
    if (stp_dec_open(&w->d, bytes) != 0)
        return STP_E_CAPSTONE;
    const uint8_t *p = entry_template;
    size_t left = STP_SLED_SIZE;
    uint64_t addr = 0x1000;
    int entry_ok = decode_pair(&w->d, &p, &left, &addr, &entry_shape);
    p = exit_template;
    left = STP_SLED_SIZE;
    w->templates_proven = entry_ok && decode_pair(&w->d, &p, &left, &addr, &exit_shape);
    return 0;
}

enum stp_status stp_check_sled(const uint8_t *code, size_t len, uint64_t func_addr,
                               uint64_t sled_addr, enum stp_kind kind, unsigned version,
                               uint32_t expect_id)
{
    struct sweeper w;
    if (open_sweeper(&w, len) != 0)
        return STP_UNDECODABLE;
    struct stp_sled s = {.addr = sled_addr,
                         .fid = expect_id,
                         .kind = (uint8_t)kind,
                         .version = (uint8_t)version,
                         .status = STP_OK};
    struct stp_sled *ps = &s;
    struct targets tg = {NULL, 0, 0, 0};
    check_function(&w, &tg, code, len, func_addr, &ps, 1);
    free(tg.v);
    stp_dec_close(&w.d);
    return (enum stp_status)s.status;
}

/* ---- proving an object ------------------------------------------------------------------
 * First, on the calling thread, each function with a sled left to patch gets its sweep's end;
 * with a cache, its digest (cache.c), and the cache's statuses when the digests agree. The
 * others become jobs, swept with Capstone by the calling thread and the workers: each takes
 * JOB_CHUNK jobs at a time from `next` (fetch_add: every job is taken exactly once), with a
 * Capstone handle and buffers of its own, and writes only the statuses of its jobs' sleds.
 * pthread_join orders the workers' writes before the caller reads them. A job taken is a job
 * done: its only allocation is the growth of its branch-target list, and if that fails its
 * function's sleds are refused (STP_BRANCH_INTO), never patched unproven. */

enum { JOB_CHUNK = 64, JOBS_PER_WORKER = 1024 };

struct job {
    uint32_t f;  /* function index */
    uint64_t hi; /* end of its sweep */
};

struct jobs {
    struct stp_object *obj;
    const struct job *v;
    size_t n;
    size_t max_sleds; /* the most sleds of one job's function */
    size_t bytes;     /* code each sweeper can expect to sweep (its memo is sized by it) */
    atomic_size_t next;
};

/* Sweeps jobs until none is left. 0, or STP_E_CAPSTONE / STP_E_NOMEM before taking any. */
static int sweep_jobs(struct jobs *j)
{
    struct sweeper w;
    if (open_sweeper(&w, j->bytes) != 0)
        return STP_E_CAPSTONE;
    struct stp_sled **order = malloc((j->max_sleds ? j->max_sleds : 1) * sizeof *order);
    struct targets tg = {malloc(64 * sizeof(uint64_t)), 0, 64, 0};
    if (!order || !tg.v) {
        free(order);
        free(tg.v);
        stp_dec_close(&w.d);
        return STP_E_NOMEM;
    }
    struct stp_object *obj = j->obj;
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&j->next, JOB_CHUNK, memory_order_relaxed);
        if (i >= j->n)
            break;
        size_t end = i + JOB_CHUNK < j->n ? i + JOB_CHUNK : j->n;
        for (; i < end; i++) {
            struct stp_func *fn = &obj->funcs[j->v[i].f];
            for (uint32_t k = 0; k < fn->nsleds; k++)
                order[k] = &obj->sleds[fn->first_sled + k];
            sort_sleds(order, fn->nsleds);
            tg.n = 0;
            tg.lost = 0;
            check_function(&w, &tg, (const uint8_t *)(uintptr_t)fn->addr, j->v[i].hi - fn->addr,
                           fn->addr, order, fn->nsleds);
            stp_func_whole(obj, fn);
        }
    }
    free(order);
    free(tg.v);
    stp_dec_close(&w.d);
    return 0;
}

static void *worker_main(void *arg)
{
    sweep_jobs(arg); /* one that cannot start leaves its share to the others */
    return NULL;
}

/* Where the workers go. A new thread is often queued on its creator's CPU, and on these VMs
 * waits there up to a scheduler tick (3 ms, measured) before another CPU takes it, while the
 * creator sweeps: each worker is therefore placed on one of the process's other CPUs (its
 * affinity: never outside what the process may use), in turn. A failure leaves it where the
 * scheduler put it. */
struct cpus {
    cpu_set_t allowed;
    int here, next, ok;
};

static void cpus_init(struct cpus *c)
{
    c->ok = sched_getaffinity(0, sizeof c->allowed, &c->allowed) == 0;
    c->here = sched_getcpu();
    c->next = -1;
}

static void place_worker(struct cpus *c, pthread_t t)
{
    if (!c->ok)
        return;
    for (int tries = 0; tries < CPU_SETSIZE; tries++) {
        c->next = (c->next + 1) % CPU_SETSIZE;
        if (c->next != c->here && CPU_ISSET(c->next, &c->allowed)) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c->next, &one);
            pthread_setaffinity_np(t, sizeof one, &one);
            return;
        }
    }
}

/* The digest of everything function fn's proof reads (cache.c); never 0. */
static uint64_t function_digest(const struct stp_object *obj, const struct stp_func *fn,
                                uint64_t hi)
{
    uint64_t h = stp_cache_mix(STP_PROOF_RULES, fn->addr - obj->bias);
    h = stp_cache_mix(h, fn->size);
    for (uint32_t k = 0; k < fn->nsleds; k++) {
        const struct stp_sled *s = &obj->sleds[fn->first_sled + k];
        h = stp_cache_mix(h, s->addr - obj->bias);
        h = stp_cache_mix(h, (uint64_t)s->fid | (uint64_t)s->kind << 32 |
                                 (uint64_t)s->version << 40 | (uint64_t)s->status << 48);
    }
    h = stp_cache_bytes(h, (const uint8_t *)(uintptr_t)fn->addr, hi - fn->addr);
    return h ? h : 1;
}

/* Takes function fn's statuses from the cache; the sleds it proved keep their bytes' check
 * (template or our patched form), which costs nothing. */
static void apply_cached(struct stp_object *obj, const struct stp_func *fn,
                         const struct stp_cache *c)
{
    for (uint32_t k = 0; k < fn->nsleds; k++) {
        struct stp_sled *s = &obj->sleds[fn->first_sled + k];
        s->status = c->status[fn->first_sled + k];
        struct shape shape;
        if (s->status == STP_OK && s->kind != STP_CUSTOM_EVENT && s->kind != STP_TYPED_EVENT)
            s->status = check_bytes((const uint8_t *)(uintptr_t)s->addr, s->kind, s->fid, &shape);
    }
    stp_func_whole(obj, fn);
}

/* Writes the cache file. digest[f]: this run's digest of each function it proved, and the old
 * file's for the others (0: none); a function whose digest is the old file's keeps the old
 * file's statuses (the same as this run's when it was proven from the cache; what the old
 * file knew when it was left out this time), any other gets this run's. */
static void save_cache(const struct stp_object *obj, const char *dir, const uint64_t *digest,
                       const struct stp_cache *old)
{
    uint8_t *status = malloc(obj->nsleds ? obj->nsleds : 1);
    if (!status)
        return;
    for (size_t f = 0; f < obj->nfuncs; f++) {
        const struct stp_func *fn = &obj->funcs[f];
        int carry = digest[f] && old->buf && stp_cache_digest_of(old, f) == digest[f];
        for (uint32_t k = 0; k < fn->nsleds; k++) {
            size_t i = fn->first_sled + k;
            status[i] = carry ? old->status[i] : obj->sleds[i].status;
        }
    }
    stp_cache_save(obj, dir, obj->file_size, digest, status);
    free(status);
}

/* The digests to save, made at the first function the cache cannot prove (a run that finds
 * every proof in the cache writes nothing, and needs none): the old file's to begin with. */
static uint64_t *new_digests(const struct stp_object *obj, const struct stp_cache *old)
{
    uint64_t *d = calloc(obj->nfuncs ? obj->nfuncs : 1, sizeof *d);
    if (d && old->buf)
        for (size_t f = 0; f < obj->nfuncs; f++)
            d[f] = stp_cache_digest_of(old, f);
    return d;
}

int stp_object_verify(struct stp_object *obj)
{
    return stp_object_verify_opts(obj, NULL);
}

int stp_object_verify_opts(struct stp_object *obj, const struct stp_verify_opts *o)
{
    struct stp_cache cache = {0};
    uint64_t *digest = NULL;
    const char *dir = o && o->cache_dir && obj->build_id_len ? o->cache_dir : NULL;
    if (dir)
        stp_cache_load(&cache, obj, dir, obj->file_size);
    struct job *jv = malloc((obj->nfuncs ? obj->nfuncs : 1) * sizeof *jv);
    if (!jv) {
        free(digest);
        stp_cache_free(&cache);
        return STP_E_NOMEM;
    }
    struct jobs j = {.obj = obj, .v = jv};
    size_t njobs = 0;
    for (size_t f = 0; f < obj->nfuncs; f++) {
        struct stp_func *fn = &obj->funcs[f];
        /* A function with no sled left to patch (all left out by a filter, or refused when the
         * map was read) is not proven: it will never be written. */
        uint32_t live = 0;
        uint64_t hi = fn->addr;
        for (uint32_t k = 0; k < fn->nsleds; k++) {
            const struct stp_sled *s = &obj->sleds[fn->first_sled + k];
            live += s->status == STP_OK;
            if (s->status == STP_OK && s->addr + stp_sled_size(s->kind) > hi)
                hi = s->addr + stp_sled_size(s->kind);
        }
        if (!live)
            continue;
        obj->nproven++;
        /* Sweep the whole function when its size is known (branches after the last sled). */
        if (fn->size && fn->addr + fn->size > hi && stp_find_seg(obj, fn->addr, fn->size))
            hi = fn->addr + fn->size;
        /* The whole range swept must be mapped text of this object. */
        if (!stp_find_seg(obj, fn->addr, hi - fn->addr)) {
            for (uint32_t k = 0; k < fn->nsleds; k++) {
                struct stp_sled *s = &obj->sleds[fn->first_sled + k];
                if (s->status == STP_OK)
                    s->status = STP_OUTSIDE_TEXT;
            }
            continue;
        }
        if (dir) {
            uint64_t d = function_digest(obj, fn, hi);
            if (cache.buf && stp_cache_digest_of(&cache, f) == d) {
                apply_cached(obj, fn, &cache);
                obj->ncached++;
                continue;
            }
            if (!digest && !(digest = new_digests(obj, &cache)))
                dir = NULL; /* no room to remember: prove without the cache */
            else
                digest[f] = d;
        }
        jv[njobs++] = (struct job){(uint32_t)f, hi};
        j.bytes += hi - fn->addr;
        if (fn->nsleds > j.max_sleds)
            j.max_sleds = fn->nsleds;
    }
    j.n = njobs;
    int rc = 0;
    if (njobs && o && o->cache_only) {
        rc = STP_E_UNPROVEN;
    } else if (njobs) {
        rc = stp_capstone_load();
        unsigned want = o ? o->workers : 0;
        if (want > njobs / JOBS_PER_WORKER)
            want = (unsigned)(njobs / JOBS_PER_WORKER);
        if (want > STP_MAX_WORKERS)
            want = STP_MAX_WORKERS;
        j.bytes /= want + 1; /* each sweeper's share, before any starts */
        pthread_t tids[STP_MAX_WORKERS];
        unsigned started = 0;
        struct cpus cpus;
        cpus_init(&cpus);
        for (unsigned w = 0; rc == 0 && w < want && w < STP_MAX_WORKERS; w++) {
            int (*spawn)(pthread_t *, void *(*)(void *), void *) = o->spawn;
            if ((spawn ? spawn(&tids[started], worker_main, &j)
                       : pthread_create(&tids[started], NULL, worker_main, &j)) != 0)
                break;
            place_worker(&cpus, tids[started]);
            started++;
        }
        if (rc == 0)
            rc = sweep_jobs(&j);
        for (unsigned w = 0; w < started; w++)
            pthread_join(tids[w], NULL);
        if (rc != 0 && started && atomic_load_explicit(&j.next, memory_order_relaxed) >= njobs)
            rc = 0; /* the caller could not sweep, but the workers swept every job */
        if (rc == 0 && dir && digest)
            save_cache(obj, dir, digest, &cache);
    }
    free(jv);
    free(digest);
    stp_cache_free(&cache);
    return rc;
}

size_t stp_object_cached(const struct stp_object *obj)
{
    return obj->ncached;
}

/* Size of the XSAVE area for the components enabled in XCR0; 0 selects FXSAVE. Read by
 * stp_call_preserving_fpu. Written once by stp_fpu_init before any patching.
 *
 * Under a hypervisor every CPUID instruction traps to it (about 7 us on the development VM):
 * OSXSAVE comes from the copy of leaf 1 glibc's dynamic linker made (<sys/platform/x86.h>; leaf
 * 1 is never all zero, so a zero copy means none and CPUID is asked), and leaf 0xd's presence
 * from glibc's copy of its subleaf 1, which glibc reads only where the leaf exists (a copy all
 * zero: the highest leaf is asked, as before). Only the size itself, leaf 0xd subleaf 0, takes a
 * CPUID instruction: one where there were four. */
__attribute__((visibility("hidden"))) uint32_t stp_xsave_size;

void stp_fpu_init(void)
{
    unsigned a, b, c, d;
    const struct cpuid_feature *l1 = __x86_get_cpuid_feature_leaf(CPUID_INDEX_1);
    const struct cpuid_feature *d1 = __x86_get_cpuid_feature_leaf(CPUID_INDEX_D_ECX_1);
    if (l1->cpuid_array[cpuid_register_index_eax] != 0)
        c = l1->cpuid_array[cpuid_register_index_ecx];
    else if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    if (!(c & bit_OSXSAVE))
        return;
    if (!(d1->cpuid_array[cpuid_register_index_eax] | d1->cpuid_array[cpuid_register_index_ebx] |
          d1->cpuid_array[cpuid_register_index_ecx] | d1->cpuid_array[cpuid_register_index_edx]) &&
        __get_cpuid_max(0, NULL) < 0xd)
        return;
    __cpuid_count(0xd, 0, a, b, c, d);
    if (b >= 576)
        stp_xsave_size = b + 64; /* room to align down to 64 */
}
