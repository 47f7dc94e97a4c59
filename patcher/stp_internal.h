/* Internal state shared by the patcher's source files. Not installed, not exported. */
#ifndef SLEDTRACE_STP_INTERNAL_H
#define SLEDTRACE_STP_INTERNAL_H

#include "stp.h"

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
    size_t nproven;                     /* functions stp_object_verify swept */
};

/* The executable segment holding [addr, addr + len), or NULL. */
const struct stp_seg *stp_find_seg(const struct stp_object *obj, uint64_t addr, size_t len);

#endif
