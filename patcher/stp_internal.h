/* Internal state shared by the patcher's source files. Not installed, not exported. */
#ifndef SLEDTRACE_STP_INTERNAL_H
#define SLEDTRACE_STP_INTERNAL_H

#include "stp.h"

#include <capstone/capstone.h>

enum { STP_MAX_SEGS = 16, STP_SLED_SIZE = 11, STP_CUSTOM_SIZE = 17, STP_TYPED_SIZE = 22 };

/* Bytes a sled of this kind spans. */
static inline unsigned stp_sled_size(unsigned kind)
{
    return kind == STP_CUSTOM_EVENT  ? STP_CUSTOM_SIZE
           : kind == STP_TYPED_EVENT ? STP_TYPED_SIZE
                                     : STP_SLED_SIZE;
}

/* Offset of the `call rel32` inside an event sled (custom: +10, typed: +14). */
static inline unsigned stp_event_call_offset(unsigned kind)
{
    return kind == STP_CUSTOM_EVENT ? 10 : 14;
}

struct stp_sled {
    uint64_t addr;   /* run-time address */
    uint32_t fid;    /* function id (1-based) */
    uint8_t kind;    /* enum stp_kind */
    uint8_t version; /* map entry version */
    uint8_t status;  /* enum stp_status */
    uint8_t args;    /* its function records arguments (stp_object_record_args) */
};

struct stp_func {
    uint64_t addr;       /* run-time address */
    uint64_t size;       /* from its symbol, 0 if unknown */
    size_t name_off;     /* into stp_object.names, SIZE_MAX if unnamed */
    uint32_t first_sled; /* index of its first map entry */
    uint32_t nsleds;     /* consecutive entries sharing this id */
};

struct stp_seg {
    uint64_t start, end; /* run-time addresses */
    unsigned flags;      /* PF_R | PF_W | PF_X of the PT_LOAD */
};

struct stp_object {
    char *path;
    uintptr_t bias;
    int has_xray_runtime;
    struct stp_sled *sleds;
    size_t nsleds;
    struct stp_func *funcs;
    size_t nfuncs;
    char *names;
    size_t names_cap;
    struct stp_seg segs[STP_MAX_SEGS];
    size_t nsegs;
    void *stub_page;  /* mapped by stp_object_patch, never unmapped while sleds point at it */
    uint32_t id_base; /* ORed into the ids written into the sleds (stp_object_set_id_base) */
    uint8_t build_id[STP_BUILD_ID_MAX]; /* NT_GNU_BUILD_ID note's bytes */
    size_t build_id_len;                /* 0: none */
    size_t nproven;                     /* functions proven (swept, or by the cache) */
    size_t ncached;                     /* of those, functions the cache gave */
    uint64_t file_size;                 /* of the ELF file when it was opened */
};

/* Reads n bytes of fd at off, all of them (EINTR retried): 0, or -1. */
int stp_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* The two forms an entry, exit or tail sled may hold (xray-facts section 3): the compiler's
 * template (its head off: `jmp +9` or `ret` over a 9-byte nop), or the patched form `mov $id,
 * %r10d` + `call` (`jmp` for an exit) rel32, whoever patched it. *id: the patched form's id.
 * *int3: the form matched but for an int3 (0xcc) over its first byte, a debugger's breakpoint
 * (the form is returned as if the byte were intact). verify.c's proof and patch.c's check
 * before writing both ask this. */
enum stp_form { STP_FORM_NONE, STP_FORM_TEMPLATE, STP_FORM_PATCHED };
enum stp_form stp_sled_form(const uint8_t b[STP_SLED_SIZE], unsigned kind, uint32_t *id, int *int3);

/* A function is traced whole or not at all: an entry patched without its exits (or the
 * reverse) records calls that never end (or end without starting). When one of fn's entry,
 * exit, tail or log-args sleds is refused (any status but STP_OK and STP_FILTERED), its other
 * proven ones of those kinds get the same status. Returns how many it changed. */
size_t stp_func_whole(struct stp_object *obj, const struct stp_func *fn);

/* The protection (PROT_*) of the mapping holding addr, -1 if none, as patch.c reads it before
 * a rewrite: /proc/self/maps's PROCMAP_QUERY ioctl, else (or with text = 1) its text. */
int stp_page_prot(uint64_t addr, int text);

/* The executable segment holding [addr, addr + len), or NULL. */
const struct stp_seg *stp_find_seg(const struct stp_object *obj, uint64_t addr, size_t len);

/* ---- the proof cache (cache.c) ---- */

/* Raised whenever verify.c proves differently: older cache files are then ignored. */
enum { STP_PROOF_RULES = 2 }; /* 2: STP_BREAKPOINT */

/* One object's cache file, loaded: digest[8 * f] (u64, 0 = none) per function, status[i] per
 * sled; buf NULL when nothing was loaded. */
struct stp_cache {
    uint8_t *buf; /* the file's bytes (len) */
    size_t len;
    const uint8_t *digest;
    const uint8_t *status;
};

/* The digest's steps: one 64-bit value, a byte range (its length included). */
uint64_t stp_cache_mix(uint64_t h, uint64_t v);
uint64_t stp_cache_bytes(uint64_t h, const uint8_t *p, size_t n);
/* Loads obj's file of the cache in dir (the object file's size: size): 0, or -1 with *c empty
 * (none, another user's, damaged, stale). */
int stp_cache_load(struct stp_cache *c, const struct stp_object *obj, const char *dir,
                   uint64_t size);
uint64_t stp_cache_digest_of(const struct stp_cache *c, size_t f);
void stp_cache_free(struct stp_cache *c);
/* Writes obj's file: a digest per function (0: none) and a status per sled. 0 or -1. */
int stp_cache_save(const struct stp_object *obj, const char *dir, uint64_t size,
                   const uint64_t *digest, const uint8_t *status);

/* ---- decode.c: Capstone for the sweeps (see its top comment) ---- */
struct stp_memo;
/* One sweeping thread's decoder: `full` is an ordinary handle; `sweep` the quiet one (or full);
 * memo: instructions already split (NULL when there was no room). */
struct stp_dec {
    csh full, sweep;
    cs_insn *ifull, *isweep;
    struct stp_memo *memo;
};
/* Loads Capstone when needed and opens d, for a sweep of about `bytes` of code (the memo is
 * sized by it: none for a small one): 0 or STP_E_CAPSTONE. */
int stp_dec_open(struct stp_dec *d, size_t bytes);
void stp_dec_close(struct stp_dec *d);
/* Decodes one instruction at *p with the full handle (moving *p, *left and *addr past it): the
 * instruction (ids and sizes as Capstone gives them), or NULL when Capstone cannot decode it. */
const cs_insn *stp_dec_full(struct stp_dec *d, const uint8_t **p, size_t *left, uint64_t *addr);
/* The length of the instruction at *p, as Capstone splits it (moving past it), or 0 when
 * Capstone cannot decode it. */
unsigned stp_dec_step(struct stp_dec *d, const uint8_t **p, size_t *left, uint64_t *addr);

#endif
