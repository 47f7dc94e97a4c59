/* Test helper: builds FDR traces in memory with the stf.h writer helpers (the same encoders the
 * runtime uses), so tests exercise writer and reader together. v1 traces get fixed-size buffers
 * ended by EndOfBuffer and zero padding; v2+ blocks get a BufferExtents record patched on
 * tg_block_end(). Absolute TSCs are turned into deltas here, with TSCWrap when needed. */
#ifndef SLEDTRACE_TESTS_TRACEGEN_H
#define SLEDTRACE_TESTS_TRACEGEN_H

#include "stf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tg {
    uint8_t *buf;
    size_t len, cap;
    uint16_t version;
    uint64_t buffer_size;
    size_t block_start; /* offset of BufferExtents (v2+) or NewBuffer (v1) */
    bool in_block;
    uint64_t tsc; /* delta base */
};

void tg_init(struct tg *g, uint16_t version, uint64_t freq, uint64_t buffer_size);
void tg_free(struct tg *g);
void tg_raw(struct tg *g, const void *p, size_t n);
void tg_zeros(struct tg *g, size_t n);
/* Block header: [extents] NewBuffer Walltime [Pid if v>=3] NewCPUId. */
void tg_block_begin(struct tg *g, int32_t tid, int32_t pid, uint16_t cpu, uint64_t tsc);
void tg_block_end(struct tg *g);
/* Function record at absolute tsc (TSCWrap first if the delta does not fit / goes back). */
void tg_func(struct tg *g, uint32_t id, enum stf_action a, uint64_t tsc);
void tg_func_delta(struct tg *g, uint32_t id, enum stf_action a, uint32_t delta);
void tg_new_cpu(struct tg *g, uint16_t cpu, uint64_t tsc);
void tg_tsc_wrap(struct tg *g, uint64_t tsc);
void tg_call_arg(struct tg *g, uint64_t arg);
void tg_custom(struct tg *g, uint64_t tsc, const void *p, int32_t n);
void tg_typed(struct tg *g, uint64_t tsc, uint16_t type, const void *p, int32_t n);
/* Write to path; returns 0 on success. */
int tg_write(const struct tg *g, const char *path);

/* A fresh temporary file path (mkstemp under $TMPDIR or /tmp) with the given suffix. */
char *tg_tmpname(const char *suffix);

#endif
