/* Test helper implementation; see tracegen.h. Aborts on allocation failure (tests only). */
#include "tracegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void reserve(struct tg *g, size_t n)
{
    if (g->len + n <= g->cap)
        return;
    size_t nc = g->cap ? g->cap : 1024;
    while (nc < g->len + n)
        nc *= 2;
    g->buf = realloc(g->buf, nc);
    if (!g->buf)
        abort();
    g->cap = nc;
}

void tg_raw(struct tg *g, const void *p, size_t n)
{
    reserve(g, n);
    memcpy(g->buf + g->len, p, n);
    g->len += n;
}

void tg_zeros(struct tg *g, size_t n)
{
    reserve(g, n);
    memset(g->buf + g->len, 0, n);
    g->len += n;
}

void tg_init(struct tg *g, uint16_t version, uint64_t freq, uint64_t buffer_size)
{
    memset(g, 0, sizeof *g);
    g->version = version;
    g->buffer_size = buffer_size;
    struct stf_header h = {
        .version = version,
        .type = STF_TYPE_FDR,
        .bits = STF_BIT_CONSTANT_TSC | STF_BIT_NONSTOP_TSC,
        .cycle_freq = freq,
        .buffer_size = buffer_size,
    };
    uint8_t b[STF_HEADER_SIZE];
    stf_encode_header(b, &h);
    tg_raw(g, b, sizeof b);
}

void tg_free(struct tg *g)
{
    free(g->buf);
    memset(g, 0, sizeof *g);
}

void tg_block_begin(struct tg *g, int32_t tid, int32_t pid, uint16_t cpu, uint64_t tsc)
{
    uint8_t m[STF_META_SIZE];
    g->block_start = g->len;
    g->in_block = true;
    if (g->version >= 2) {
        stf_meta_u64(m, STF_M_BUFFER_EXTENTS, 0);
        tg_raw(g, m, sizeof m);
    }
    stf_meta_new_buffer(m, tid);
    tg_raw(g, m, sizeof m);
    stf_meta_walltime(m, 1700000000 + (int64_t)g->len, 123456);
    tg_raw(g, m, sizeof m);
    if (g->version >= 3) {
        stf_meta_pid(m, pid);
        tg_raw(g, m, sizeof m);
    }
    tg_new_cpu(g, cpu, tsc);
}

void tg_block_end(struct tg *g)
{
    if (!g->in_block)
        return;
    g->in_block = false;
    if (g->version >= 2) {
        uint64_t n = g->len - g->block_start - STF_META_SIZE;
        stf_put64(g->buf + g->block_start + 1, n);
        return;
    }
    uint8_t m[STF_META_SIZE];
    stf_meta_begin(m, STF_M_END_OF_BUFFER);
    tg_raw(g, m, sizeof m);
    size_t used = g->len - g->block_start;
    if (used < g->buffer_size)
        tg_zeros(g, g->buffer_size - used);
}

void tg_new_cpu(struct tg *g, uint16_t cpu, uint64_t tsc)
{
    uint8_t m[STF_META_SIZE];
    stf_meta_new_cpu(m, cpu, tsc);
    tg_raw(g, m, sizeof m);
    g->tsc = tsc;
}

void tg_tsc_wrap(struct tg *g, uint64_t tsc)
{
    uint8_t m[STF_META_SIZE];
    stf_meta_u64(m, STF_M_TSC_WRAP, tsc);
    tg_raw(g, m, sizeof m);
    g->tsc = tsc;
}

void tg_func_delta(struct tg *g, uint32_t id, enum stf_action a, uint32_t delta)
{
    uint8_t r[STF_FUNC_SIZE];
    uint64_t v = stf_func_record(stf_func_word(id, a), delta);
    memcpy(r, &v, sizeof r);
    tg_raw(g, r, sizeof r);
    g->tsc += delta;
}

void tg_func(struct tg *g, uint32_t id, enum stf_action a, uint64_t tsc)
{
    if (tsc < g->tsc || tsc - g->tsc > UINT32_MAX)
        tg_tsc_wrap(g, tsc);
    tg_func_delta(g, id, a, (uint32_t)(tsc - g->tsc));
}

void tg_call_arg(struct tg *g, uint64_t arg)
{
    uint8_t m[STF_META_SIZE];
    stf_meta_u64(m, STF_M_CALL_ARG, arg);
    tg_raw(g, m, sizeof m);
}

void tg_custom(struct tg *g, uint64_t tsc, const void *p, int32_t n)
{
    uint8_t m[STF_META_SIZE];
    stf_meta_custom_event(m, n, (int32_t)(tsc - g->tsc));
    tg_raw(g, m, sizeof m);
    tg_raw(g, p, (size_t)n);
    g->tsc = tsc;
}

void tg_typed(struct tg *g, uint64_t tsc, uint16_t type, const void *p, int32_t n)
{
    uint8_t m[STF_META_SIZE];
    stf_meta_typed_event(m, n, (int32_t)(tsc - g->tsc), type);
    tg_raw(g, m, sizeof m);
    tg_raw(g, p, (size_t)n);
    g->tsc = tsc;
}

int tg_write(const struct tg *g, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(g->buf, 1, g->len, f);
    int rc = fclose(f);
    return (w == g->len && rc == 0) ? 0 : -1;
}

char *tg_tmpname(const char *suffix)
{
    const char *env = getenv("TMPDIR");
    const char *dir = env && *env ? env : "/tmp";
    size_t dl = strlen(dir), sl = strlen(suffix);
    char *p = malloc(dl + sl + sizeof "/stf-test-XXXXXX");
    if (!p)
        abort();
    memcpy(p, dir, dl);
    memcpy(p + dl, "/stf-test-XXXXXX", 16);
    memcpy(p + dl + 16, suffix, sl + 1);
    int fd = mkstemps(p, (int)strlen(suffix));
    if (fd < 0)
        abort();
    close(fd);
    return p;
}
