/* Streaming reader for XRay FDR traces, versions 1 to 5.
 *
 * Design
 *  - Input is consumed through one growable window (`buf`): fill(n) guarantees n bytes at the
 *    cursor or reports end of file. The window only grows to the largest single record (16 bytes)
 *    or event payload seen, and a payload must first fit inside its block, whose extent was
 *    checked against the file size when that is known. Memory is independent of the trace length.
 *  - A regular file opened at its start is read with pread(2) at the window's offset, never
 *    moving the descriptor's offset: seeking is only setting that offset, skipping a block
 *    whose bytes the file holds reads nothing, and a second reader over the same file
 *    (stf_reader_dup, for decoding threads in parallel) needs no offset of its own. Anything
 *    else (a pipe, a descriptor not at offset 0) is read with read(2). (Mapping the file was
 *    tried: the kernel maps a page-cache folio whole, up to 2 MiB per fault, so the resident
 *    size grew by megabytes however often the pages read were dropped; pread's copy costs
 *    about 6 ms per 100 MB.)
 *  - Framing: v1 has fixed buffers of header.buffer_size bytes, each NewBuffer ... EndOfBuffer
 *    followed by padding that is skipped unread. v2+ blocks are a BufferExtents record giving the
 *    byte count of the rest of the block; zero bytes between blocks are skipped.
 *  - Per block we track tid, pid, cpu and the running TSC base: NewCPUId and TSCWrap set it,
 *    function records and v5 event markers add their delta; the absolute TSC is reported.
 *  - A small state machine enforces the block grammar (NewBuffer, Walltime, [Pid], NewCPUId,
 *    body; CallArgument only after an enter-with-args record; no EndOfBuffer in v2+). Strict mode
 *    turns the first violation into a sticky error carrying the byte offset; lenient mode warns
 *    and, where the bytes can no longer be decoded, skips to the end of the block.
 *  - Every length read from the file is checked against the block end and the bytes actually
 *    present before use; every loop consumes input, so corrupt input cannot hang the reader.
 *  - A torn end (STF_READ_TORN_END, stf.h): a file cut inside its last block, as a SIGKILL
 *    during the runtime's write(2) leaves it. Strict reading with the flag goes on through a
 *    block whose extents overrun the file, checking each complete record as usual, and where
 *    the bytes run out (torn(), or inside the BufferExtents record) ends with STF_END and notes
 *    the cut instead of failing. Only the end of the file can be torn: a block whose extents
 *    overrun the file because they are damaged, with blocks after it, holds the next
 *    block's BufferExtents record, which the grammar rejects at its offset before the end.
 */
#include "stf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

enum { WINDOW_MIN = 64 * 1024 };

/* Grammar states inside a block. */
enum bstate {
    B_EXPECT_NEWBUFFER, /* v2+: right after BufferExtents; v1: at buffer start */
    B_EXPECT_WALLTIME,
    B_AFTER_WALLTIME, /* Pid or NewCPUId next */
    B_AFTER_PID,      /* NewCPUId next */
    B_BODY,           /* NewCPUId seen */
};

struct stf_reader {
    int fd;
    bool own_fd;
    bool strict;

    uint8_t *buf;
    size_t cap, pos, len; /* window: buf[pos..len) is unread */
    uint64_t base;        /* file offset of buf[0] */
    bool eof;
    bool positional; /* a regular file read with pread at base + len (see the top) */
    int flags;

    bool size_known;
    uint64_t file_size;

    struct stf_header hdr;

    /* block state */
    bool in_block;
    uint64_t block_ext_off; /* offset of the BufferExtents record (v2+) or buffer start (v1) */
    uint64_t block_end;     /* exclusive */
    uint64_t block_index;   /* index of the current / next block */
    enum bstate state;
    bool eob_seen;
    bool args_ok; /* a CallArgument may follow */
    int32_t tid, pid;
    uint16_t cpu;
    uint64_t tsc;
    bool torn_warned;
    /* STF_READ_TORN_END: accepted (torn_ok), and the torn end once reached */
    bool torn_ok, torn_end;
    struct stf_torn torn;

    bool done;
    bool one_block; /* after stf_reader_seek: stop at the end of block `block_index` */
    uint64_t seek_block;
    int err;
    uint64_t err_off;
    char msg[256];

    stf_warn_fn warn;
    void *warn_ctx;
    struct stf_reader_stats st;
};

/* ---- errors ------------------------------------------------------------------------------- */

const char *stf_strerror(int code)
{
    switch (code) {
    case STF_OK:
        return "success";
    case STF_END:
        return "end of trace";
    case STF_ERR_IO:
        return "I/O error";
    case STF_ERR_NOMEM:
        return "out of memory";
    case STF_ERR_HEADER:
        return "not an XRay FDR trace header";
    case STF_ERR_VERSION:
        return "unsupported FDR version";
    case STF_ERR_FORMAT:
        return "malformed trace";
    case STF_ERR_TRUNCATED:
        return "truncated trace";
    case STF_ERR_ARG:
        return "invalid argument";
    case STF_ERR_SYMS:
        return "malformed symbols file";
    default:
        return "unknown error";
    }
}

const char *stf_kind_name(int kind)
{
    static const char *const names[] = {
        "NewBuffer",   "EndOfBuffer",  "NewCPUId",      "TSCWrap",    "Walltime",
        "CustomEvent", "CallArgument", "BufferExtents", "TypedEvent", "Pid",
    };
    if (kind == STF_K_FUNCTION)
        return "Function";
    if (kind >= 0 && kind < (int)(sizeof names / sizeof names[0]))
        return names[kind];
    return "?";
}

const char *stf_action_name(int action)
{
    switch (action) {
    case STF_ENTER:
        return "enter";
    case STF_EXIT:
        return "exit";
    case STF_TAIL_EXIT:
        return "tail-exit";
    case STF_ENTER_ARGS:
        return "enter-args";
    default:
        return "?";
    }
}

__attribute__((format(printf, 4, 5))) static int fail(struct stf_reader *r, int code, uint64_t off,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->err = code;
    r->err_off = off;
    return code;
}

__attribute__((format(printf, 3, 4))) static void warn(struct stf_reader *r, uint64_t off,
                                                       const char *fmt, ...)
{
    char m[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    r->st.warnings++;
    if (r->warn)
        r->warn(r->warn_ctx, off, m);
}

bool stf_reader_torn(const struct stf_reader *r, struct stf_torn *out)
{
    if (!r || !r->torn_end || r->err)
        return false;
    if (out)
        *out = r->torn;
    return true;
}

const char *stf_reader_error(const struct stf_reader *r, uint64_t *offset)
{
    if (!r)
        return "";
    if (offset)
        *offset = r->err_off;
    return r->err ? r->msg : "";
}

/* ---- input window ------------------------------------------------------------------------- */

static uint64_t cur_off(const struct stf_reader *r)
{
    return r->base + r->pos;
}
static size_t avail(const struct stf_reader *r)
{
    return r->len - r->pos;
}

/* Make n bytes available at the cursor. Returns 1 if they are, 0 at end of file, <0 on error. */
static int fill(struct stf_reader *r, size_t n)
{
    if (avail(r) >= n)
        return 1;
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, avail(r));
        r->base += r->pos;
        r->len -= r->pos;
        r->pos = 0;
    }
    while (r->len < n && !r->eof) {
        if (r->len == r->cap) {
            size_t ncap = r->cap ? r->cap * 2 : WINDOW_MIN;
            while (ncap < r->len + 1)
                ncap *= 2;
            uint8_t *nb = realloc(r->buf, ncap);
            if (!nb)
                return fail(r, STF_ERR_NOMEM, cur_off(r), "out of memory");
            r->buf = nb;
            r->cap = ncap;
        }
        ssize_t k = r->positional
                        ? pread(r->fd, r->buf + r->len, r->cap - r->len, (off_t)(r->base + r->len))
                        : read(r->fd, r->buf + r->len, r->cap - r->len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return fail(r, STF_ERR_IO, r->base + r->len, "read failed: %s", strerror(errno));
        }
        if (k == 0)
            r->eof = true;
        else
            r->len += (size_t)k;
    }
    return avail(r) >= n ? 1 : 0;
}

/* Consume n bytes, reading past them if needed. Returns 1 when all were consumed, 0 at EOF. */
static int skip(struct stf_reader *r, uint64_t n)
{
    uint64_t to = cur_off(r) + n;
    if (r->positional && n > avail(r) && to >= cur_off(r) && to <= r->file_size) {
        r->base = to; /* the file holds the bytes: nothing to read */
        r->pos = r->len = 0;
        r->eof = false;
        return 1;
    }
    while (n > 0) {
        if (avail(r) == 0) {
            int f = fill(r, 1);
            if (f <= 0)
                return f;
        }
        size_t k = avail(r) < n ? avail(r) : (size_t)n;
        r->pos += k;
        n -= k;
    }
    return 1;
}

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- header ------------------------------------------------------------------------------- */

int stf_header_decode(const uint8_t *buf, size_t len, struct stf_header *out)
{
    if (!buf || !out)
        return STF_ERR_ARG;
    if (len < STF_HEADER_SIZE)
        return STF_ERR_HEADER;
    out->version = rd16(buf);
    out->type = rd16(buf + 2);
    out->bits = rd32(buf + 4);
    out->cycle_freq = rd64(buf + 8);
    out->buffer_size = rd64(buf + 16);
    if (out->type != STF_TYPE_FDR)
        return STF_ERR_HEADER;
    if (out->version < 1 || out->version > 5)
        return STF_ERR_VERSION;
    return STF_OK;
}

static int read_header(struct stf_reader *r)
{
    int f = fill(r, STF_HEADER_SIZE);
    if (f < 0)
        return f;
    if (f == 0)
        return fail(r, STF_ERR_HEADER, 0, "truncated header (%zu of %d bytes)", avail(r),
                    STF_HEADER_SIZE);
    int rc = stf_header_decode(r->buf + r->pos, avail(r), &r->hdr);
    if (rc == STF_ERR_HEADER)
        return fail(r, rc, 2, "not an FDR trace (type %u, expected 1)", (unsigned)r->hdr.type);
    if (rc == STF_ERR_VERSION)
        return fail(r, rc, 0, "unsupported FDR version %u (supported: 1 to 5)",
                    (unsigned)r->hdr.version);
    if (r->hdr.version == 1 && r->hdr.buffer_size < 2 * STF_META_SIZE)
        return fail(r, STF_ERR_HEADER, 16, "v1 header buffer size %" PRIu64 " is too small",
                    r->hdr.buffer_size);
    r->pos += STF_HEADER_SIZE;
    return STF_OK;
}

static int setup(struct stf_reader *r, int fd, bool own, int flags)
{
    r->fd = fd;
    r->own_fd = own;
    r->strict = (flags & STF_READ_STRICT) != 0;
    r->torn_ok = r->strict && (flags & STF_READ_TORN_END) != 0;
    r->flags = flags;
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return fail(r, STF_ERR_IO, 0, "%s", strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return fail(r, STF_ERR_IO, 0, "%s", strerror(EISDIR));
    if (S_ISREG(sb.st_mode)) {
        r->size_known = true;
        r->file_size = (uint64_t)sb.st_size;
        r->st.file_size = r->file_size;
    }
    r->positional = S_ISREG(sb.st_mode) && lseek(fd, 0, SEEK_CUR) == 0;
    return read_header(r);
}

int stf_reader_open_fd(struct stf_reader **out, int fd, int flags)
{
    if (!out)
        return STF_ERR_ARG;
    *out = NULL;
    if (fd < 0 || (flags & ~(STF_READ_STRICT | STF_READ_TORN_END)))
        return STF_ERR_ARG;
    struct stf_reader *r = calloc(1, sizeof *r);
    if (!r)
        return STF_ERR_NOMEM;
    *out = r;
    return setup(r, fd, false, flags);
}

int stf_reader_open(struct stf_reader **out, const char *path, int flags)
{
    if (!out)
        return STF_ERR_ARG;
    *out = NULL;
    if (!path || (flags & ~(STF_READ_STRICT | STF_READ_TORN_END)))
        return STF_ERR_ARG;
    struct stf_reader *r = calloc(1, sizeof *r);
    if (!r)
        return STF_ERR_NOMEM;
    *out = r;
    r->fd = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(r, STF_ERR_IO, 0, "%s", strerror(errno));
    return setup(r, fd, true, flags);
}

int stf_reader_dup(struct stf_reader **out, const struct stf_reader *r)
{
    if (!out)
        return STF_ERR_ARG;
    *out = NULL;
    if (!r || !r->positional || r->err)
        return STF_ERR_ARG;
    struct stf_reader *d = calloc(1, sizeof *d);
    if (!d)
        return STF_ERR_NOMEM;
    d->fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
    if (d->fd < 0) {
        free(d);
        return STF_ERR_IO;
    }
    d->own_fd = true;
    d->positional = true;
    d->strict = r->strict;
    d->flags = r->flags;
    d->size_known = r->size_known;
    d->file_size = r->file_size;
    d->st.file_size = r->st.file_size;
    d->hdr = r->hdr;
    d->base = STF_HEADER_SIZE; /* after the header, as a reader just opened */
    *out = d;
    return STF_OK;
}

void stf_reader_close(struct stf_reader *r)
{
    if (!r)
        return;
    if (r->own_fd && r->fd >= 0)
        close(r->fd);
    free(r->buf);
    free(r);
}

void stf_reader_set_warn(struct stf_reader *r, stf_warn_fn fn, void *ctx)
{
    if (!r)
        return;
    r->warn = fn;
    r->warn_ctx = ctx;
}

const struct stf_header *stf_reader_header(const struct stf_reader *r)
{
    return r ? &r->hdr : NULL;
}

void stf_reader_stats(const struct stf_reader *r, struct stf_reader_stats *out)
{
    if (!r || !out)
        return;
    *out = r->st;
    out->bytes = cur_off(r);
}

/* ---- decoding ----------------------------------------------------------------------------- */

/* Internal step results, distinct from STF_OK / STF_END / errors: a record was produced, or keep
 * looping. */
enum { STEP_AGAIN = 2, STEP_ITEM = 3 };

static void begin_block(struct stf_reader *r, uint64_t start, uint64_t end)
{
    r->in_block = true;
    r->block_ext_off = start;
    r->block_end = end;
    r->state = B_EXPECT_NEWBUFFER;
    r->eob_seen = false;
    r->args_ok = false;
    r->tid = 0;
    r->pid = 0;
    r->cpu = 0;
    r->tsc = 0;
}

static void end_block(struct stf_reader *r)
{
    r->in_block = false;
    r->block_index++;
}

/* The file ends at `end`, inside the block whose BufferExtents record is at `block` (announcing
 * the block's end, block_end; 0: not even that record is whole), and the last complete record
 * ends at `off`: a torn end (STF_READ_TORN_END), the reading is over. */
static int torn_end(struct stf_reader *r, uint64_t block, uint64_t block_end, uint64_t off,
                    uint64_t end)
{
    r->torn_end = true;
    r->torn = (struct stf_torn){.block = block,
                                .offset = off,
                                .partial = end > off ? end - off : 0,
                                .missing = block_end > end ? block_end - end : 0};
    r->done = true;
    return STF_END;
}

/* Where the bytes present end (after a fill that met the end of the file). */
static uint64_t present_end(const struct stf_reader *r)
{
    return r->base + r->len;
}

/* The file ended inside the current block (or inside a record). */
static int torn(struct stf_reader *r, uint64_t rec_off)
{
    if (r->torn_ok && r->hdr.version >= 2)
        return torn_end(r, r->block_ext_off, r->block_end, rec_off, present_end(r));
    if (r->strict) {
        if (r->hdr.version >= 2 && r->block_ext_off + STF_META_SIZE <= rec_off)
            return fail(r, STF_ERR_TRUNCATED, r->block_ext_off,
                        "BufferExtents overruns file (block needs %" PRIu64
                        " bytes, file ends at %" PRIu64 ")",
                        r->block_end - r->block_ext_off - STF_META_SIZE, r->base + r->len);
        return fail(r, STF_ERR_TRUNCATED, rec_off, "file ends inside a record");
    }
    if (!r->torn_warned) {
        r->torn_warned = true;
        warn(r, rec_off,
             "truncated last block (started at offset %" PRIu64 "): incomplete tail skipped",
             r->block_ext_off);
    }
    r->done = true;
    return STF_END;
}

/* A record in the block cannot be decoded. Strict: error. Lenient: warn, skip rest of block. */
__attribute__((format(printf, 3, 4))) static int bad(struct stf_reader *r, uint64_t off,
                                                     const char *fmt, ...)
{
    char m[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (r->strict)
        return fail(r, STF_ERR_FORMAT, off, "%s", m);
    warn(r, off, "%s; rest of block skipped", m);
    uint64_t here = cur_off(r);
    int s = here < r->block_end ? skip(r, r->block_end - here) : 1;
    if (s < 0)
        return s;
    end_block(r);
    if (s == 0) {
        r->done = true;
        return STF_END;
    }
    return STEP_AGAIN;
}

/* Order violation that still decodes. Strict: error. Lenient: warn and deliver. */
__attribute__((format(printf, 3, 4))) static int order(struct stf_reader *r, uint64_t off,
                                                       const char *fmt, ...)
{
    char m[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (r->strict)
        return fail(r, STF_ERR_FORMAT, off, "%s", m);
    warn(r, off, "%s", m);
    return STF_OK;
}

/* Between blocks in v2+: skip zero gaps, read the next BufferExtents. */
static int next_extents(struct stf_reader *r, struct stf_item *it)
{
    for (;;) {
        int f = fill(r, 1);
        if (f < 0)
            return f;
        if (f == 0) { /* a header alone is a trace of no block: the process wrote none */
            r->done = true;
            return STF_END;
        }
        uint64_t off = cur_off(r);
        uint8_t b = r->buf[r->pos];
        if (b == 0) {
            /* zero gap: fine between blocks, not at the end of the file */
            uint64_t gap = off;
            while ((f = fill(r, 1)) == 1 && r->buf[r->pos] == 0) {
                size_t k = 0;
                while (r->pos + k < r->len && r->buf[r->pos + k] == 0)
                    k++;
                r->pos += k;
            }
            if (f < 0)
                return f;
            if (f == 0) {
                if (r->strict)
                    return fail(r, STF_ERR_FORMAT, gap,
                                r->st.records == 0 ? "header-only file"
                                                   : "bytes after last buffer (zero padding)");
                r->done = true;
                return STF_END;
            }
            continue;
        }
        if (b != ((STF_M_BUFFER_EXTENTS << 1) | 1)) {
            /* garbage: find out whether another block follows */
            uint64_t start = off;
            while ((f = fill(r, 1)) == 1 && r->buf[r->pos] != ((STF_M_BUFFER_EXTENTS << 1) | 1))
                r->pos++;
            if (f < 0)
                return f;
            if (f == 0) {
                if (r->strict)
                    return fail(r, STF_ERR_FORMAT, start, "bytes after last buffer");
                warn(r, start, "%" PRIu64 " bytes of garbage after last buffer ignored",
                     cur_off(r) - start);
                r->done = true;
                return STF_END;
            }
            if (r->strict)
                return fail(r, STF_ERR_FORMAT, start,
                            "expected BufferExtents, found byte 0x%02x (garbage between blocks)",
                            b);
            warn(r, start, "%" PRIu64 " bytes of garbage between blocks skipped",
                 cur_off(r) - start);
            continue;
        }
        f = fill(r, STF_META_SIZE);
        if (f < 0)
            return f;
        if (f == 0) {
            if (r->torn_ok)
                return torn_end(r, off, 0, off, present_end(r));
            if (r->strict)
                return fail(r, STF_ERR_TRUNCATED, off, "truncated BufferExtents record");
            warn(r, off, "truncated BufferExtents record at end of file ignored");
            r->done = true;
            return STF_END;
        }
        const uint8_t *p = r->buf + r->pos;
        uint64_t n = rd64(p + 1);
        r->pos += STF_META_SIZE;
        memset(it, 0, sizeof *it);
        it->kind = STF_M_BUFFER_EXTENTS;
        it->offset = off;
        it->size = STF_META_SIZE;
        it->block = r->block_index;
        it->value = n;
        uint64_t start = off + STF_META_SIZE;
        uint64_t end = n > UINT64_MAX - start ? UINT64_MAX : start + n;
        if (n == 0)
            return STEP_ITEM; /* empty block: nothing follows */
        begin_block(r, off, end);
        if (r->size_known && end > r->file_size) {
            if (r->torn_ok) /* checked record by record up to the end of the file (torn) */
                return STEP_ITEM;
            if (r->strict)
                return fail(r, STF_ERR_TRUNCATED, off,
                            "BufferExtents overruns file (block needs %" PRIu64 " bytes, %" PRIu64
                            " left)",
                            n, r->file_size - start);
            if (!r->torn_warned) {
                r->torn_warned = true;
                warn(r, off,
                     "truncated last block (extents %" PRIu64 ", %" PRIu64
                     " bytes present): incomplete tail skipped",
                     n, r->file_size - start);
            }
        }
        return STEP_ITEM;
    }
}

/* Check that a record of `kind` may appear now; advance the header part of the grammar. */
static int check_order(struct stf_reader *r, int kind, uint64_t off)
{
    int rc = STF_OK;
    switch (r->state) {
    case B_EXPECT_NEWBUFFER:
        if (kind != STF_M_NEW_BUFFER)
            return bad(r, off, "block does not start with NewBuffer (found %s)",
                       stf_kind_name(kind));
        r->state = B_EXPECT_WALLTIME;
        return STF_OK;
    case B_EXPECT_WALLTIME:
        if (kind == STF_M_WALLTIME) {
            r->state = B_AFTER_WALLTIME;
            return STF_OK;
        }
        rc = order(r, off, "%s after NewBuffer (expected Walltime)", stf_kind_name(kind));
        break;
    case B_AFTER_WALLTIME:
        if (kind == STF_M_PID) {
            r->state = B_AFTER_PID;
            return STF_OK;
        }
        if (kind == STF_M_NEW_CPU) {
            r->state = B_BODY;
            return STF_OK;
        }
        if (kind == STF_K_FUNCTION)
            rc = order(r, off, "function record before NewCPUId in block");
        else
            rc = order(r, off, "%s before NewCPUId in block", stf_kind_name(kind));
        break;
    case B_AFTER_PID:
        if (kind == STF_M_NEW_CPU) {
            r->state = B_BODY;
            return STF_OK;
        }
        if (kind == STF_K_FUNCTION)
            rc = order(r, off, "function record before NewCPUId in block");
        else
            rc = order(r, off, "%s before NewCPUId in block", stf_kind_name(kind));
        break;
    case B_BODY:
        if (kind == STF_M_WALLTIME || kind == STF_M_PID)
            return order(r, off, "%s inside block body", stf_kind_name(kind));
        return STF_OK;
    }
    /* lenient: resynchronise on whatever arrived */
    if (rc == STF_OK && kind == STF_M_NEW_CPU)
        r->state = B_BODY;
    if (rc == STF_OK && kind == STF_K_FUNCTION)
        r->state = B_BODY;
    return rc;
}

static int check_end_state(struct stf_reader *r)
{
    if (r->state == B_BODY || r->eob_seen)
        return STF_OK;
    /* reported where the block ends: that is where the NewCPUId turned out to be missing */
    return order(r, cur_off(r), "block ends before NewCPUId (after %s)",
                 r->state == B_EXPECT_NEWBUFFER  ? "start"
                 : r->state == B_EXPECT_WALLTIME ? "NewBuffer"
                 : r->state == B_AFTER_WALLTIME  ? "Walltime"
                                                 : "Pid");
}

static void fill_state(const struct stf_reader *r, struct stf_item *it)
{
    it->block = r->block_index;
    it->tid = r->tid;
    it->pid = r->pid;
    it->cpu = r->cpu;
}

/* Decode one record inside the current block. */
static int block_record(struct stf_reader *r, struct stf_item *it)
{
    uint64_t off = cur_off(r);
    if (off >= r->block_end) {
        int rc = check_end_state(r);
        if (rc < 0)
            return rc;
        end_block(r);
        return STEP_AGAIN;
    }
    if (r->eob_seen) {
        /* v1 padding after EndOfBuffer: skip unread; a short last buffer is fine */
        int s = skip(r, r->block_end - off);
        if (s < 0)
            return s;
        end_block(r);
        if (s == 0)
            r->done = true;
        return s == 0 ? STF_END : STEP_AGAIN;
    }
    int f = fill(r, 1);
    if (f < 0)
        return f;
    if (f == 0) {
        if (r->hdr.version == 1 && r->state == B_EXPECT_NEWBUFFER) {
            /* v1: clean end of file at a buffer boundary */
            r->in_block = false;
            r->done = true;
            return STF_END;
        }
        if (r->hdr.version == 1) {
            /* v1 buffer cut at a record boundary: llvm-xray accepts it */
            int rc = check_end_state(r);
            if (rc < 0)
                return rc;
            end_block(r);
            r->done = true;
            return STF_END;
        }
        return torn(r, off);
    }
    uint8_t b = r->buf[r->pos];
    bool meta = b & 1;
    size_t need = meta ? STF_META_SIZE : STF_FUNC_SIZE;
    uint64_t room = r->block_end - off;
    if (need > room)
        return bad(r, off, "%s record overruns %s by %" PRIu64 " bytes",
                   meta ? stf_kind_name(b >> 1) : "function",
                   r->hdr.version == 1 ? "buffer" : "BufferExtents", need - room);
    f = fill(r, need);
    if (f < 0)
        return f;
    if (f == 0)
        return torn(r, off);
    const uint8_t *p = r->buf + r->pos;

    memset(it, 0, sizeof *it);
    it->offset = off;
    it->size = (uint32_t)need;

    if (!meta) {
        uint32_t w = rd32(p);
        uint32_t action = (w >> 1) & 7u;
        if (action > STF_ENTER_ARGS)
            return bad(r, off, "unknown function action %u", action);
        int rc = check_order(r, STF_K_FUNCTION, off);
        if (rc != STF_OK)
            return rc;
        r->pos += need;
        it->kind = STF_K_FUNCTION;
        it->func_id = w >> 4;
        it->action = (uint8_t)action;
        it->delta = rd32(p + 4);
        r->tsc += it->delta;
        r->args_ok = action == STF_ENTER_ARGS;
        fill_state(r, it);
        it->tsc = r->tsc;
        return STEP_ITEM;
    }

    int kind = b >> 1;
    if (kind > STF_M_PID)
        return bad(r, off, "unknown metadata kind %d", kind);
    if (kind == STF_M_END_OF_BUFFER && r->hdr.version >= 2)
        return bad(r, off, "EndOfBuffer in v2+");
    if (kind == STF_M_BUFFER_EXTENTS) {
        if (r->hdr.version == 1)
            return bad(r, off, "BufferExtents in v1");
        return bad(r, off, "BufferExtents inside block");
    }
    if (kind == STF_M_NEW_BUFFER && r->state != B_EXPECT_NEWBUFFER)
        return bad(r, off, "NewBuffer inside block");
    int rc;
    if (kind == STF_M_CALL_ARG) {
        rc = r->args_ok ? STF_OK : order(r, off, "CallArgument not after enter-with-args");
    } else if (kind == STF_M_END_OF_BUFFER) {
        rc = r->state == B_BODY ? STF_OK : order(r, off, "EndOfBuffer before NewCPUId in block");
    } else {
        rc = check_order(r, kind, off);
    }
    if (rc != STF_OK)
        return rc;
    if (kind != STF_M_CALL_ARG)
        r->args_ok = false;

    it->kind = kind;
    const uint8_t *d = p + 1;
    switch (kind) {
    case STF_M_NEW_BUFFER:
        r->tid = (int32_t)rd32(d);
        r->pid = 0;
        break;
    case STF_M_END_OF_BUFFER:
        r->eob_seen = true;
        break;
    case STF_M_NEW_CPU:
        r->cpu = rd16(d);
        r->tsc = rd64(d + 2);
        it->tsc = r->tsc;
        break;
    case STF_M_TSC_WRAP:
        r->tsc = rd64(d);
        it->tsc = r->tsc;
        break;
    case STF_M_WALLTIME:
        it->wall_sec = (int64_t)rd64(d);
        it->wall_usec = rd32(d + 8);
        break;
    case STF_M_CALL_ARG:
        it->value = rd64(d);
        break;
    case STF_M_PID:
        r->pid = (int32_t)rd32(d);
        break;
    case STF_M_CUSTOM_EVENT:
    case STF_M_TYPED_EVENT: {
        int32_t size = (int32_t)rd32(d);
        if (size <= 0)
            return bad(r, off, "%s size %d must be positive", stf_kind_name(kind), size);
        if ((uint64_t)size > room - need)
            return bad(r, off, "%s payload (%d bytes) overruns %s", stf_kind_name(kind), size,
                       r->hdr.version == 1 ? "buffer" : "BufferExtents");
        it->event_size = size;
        if (kind == STF_M_TYPED_EVENT) {
            it->event_delta = (int32_t)rd32(d + 4);
            it->event_type = rd16(d + 8);
            r->tsc += (uint64_t)(int64_t)it->event_delta;
            it->tsc = r->tsc;
        } else if (r->hdr.version >= 5) {
            it->event_delta = (int32_t)rd32(d + 4);
            r->tsc += (uint64_t)(int64_t)it->event_delta;
            it->tsc = r->tsc;
        } else {
            it->tsc = rd64(d + 4); /* absolute; does not move the delta base */
            if (r->hdr.version >= 4)
                r->cpu = rd16(d + 12);
        }
        if (r->size_known && (uint64_t)size > r->file_size - off - need)
            return torn(r, off);
        r->pos += need;
        f = fill(r, (size_t)size);
        if (f < 0)
            return f;
        if (f == 0)
            return torn(r, off);
        it->payload = r->buf + r->pos;
        it->payload_len = (size_t)size;
        it->size = (uint32_t)(need + (size_t)size);
        r->pos += (size_t)size;
        fill_state(r, it);
        return STEP_ITEM;
    }
    default:
        break;
    }
    r->pos += need;
    fill_state(r, it);
    return STEP_ITEM;
}

static int step(struct stf_reader *r, struct stf_item *it)
{
    if (r->in_block)
        return block_record(r, it);
    if (r->hdr.version >= 2)
        return next_extents(r, it);
    /* v1: fixed-size buffers, no extents record */
    int f = fill(r, 1);
    if (f < 0)
        return f;
    if (f == 0) { /* a header alone: no block (see next_extents) */
        r->done = true;
        return STF_END;
    }
    uint64_t off = cur_off(r);
    uint64_t end = r->hdr.buffer_size > UINT64_MAX - off ? UINT64_MAX : off + r->hdr.buffer_size;
    begin_block(r, off, end);
    return STEP_AGAIN;
}

/* The common case, a function record in a block's body with its 8 bytes in the window: what
 * block_record does for it (same checks, same item), without the general path's calls. */
static bool fast_function(struct stf_reader *r, struct stf_item *it)
{
    if (!r->in_block || r->state != B_BODY || r->eob_seen || r->done || r->len - r->pos < 8)
        return false;
    uint64_t off = r->base + r->pos;
    const uint8_t *p = r->buf + r->pos;
    if ((p[0] & 1) || r->block_end - off < STF_FUNC_SIZE || off >= r->block_end)
        return false;
    uint32_t w = rd32(p);
    uint32_t action = (w >> 1) & 7u;
    if (action > STF_ENTER_ARGS)
        return false; /* the general path reports it */
    uint32_t delta = rd32(p + 4);
    r->pos += STF_FUNC_SIZE;
    r->tsc += delta;
    r->args_ok = action == STF_ENTER_ARGS;
    *it = (struct stf_item){.kind = STF_K_FUNCTION,
                            .offset = off,
                            .size = STF_FUNC_SIZE,
                            .block = r->block_index,
                            .tid = r->tid,
                            .pid = r->pid,
                            .cpu = r->cpu,
                            .tsc = r->tsc,
                            .func_id = w >> 4,
                            .action = (uint8_t)action,
                            .delta = delta};
    r->st.records++;
    return true;
}

size_t stf_reader_funcs(struct stf_reader *r, struct stf_func *out, size_t max)
{
    if (!r || !out || r->err || !r->in_block || r->state != B_BODY || r->eob_seen || r->done)
        return 0;
    uint64_t off = cur_off(r);
    if (off >= r->block_end)
        return 0;
    uint64_t room = (r->block_end - off) / STF_FUNC_SIZE;
    if (avail(r) < STF_FUNC_SIZE && fill(r, STF_FUNC_SIZE) <= 0)
        return 0; /* the general path reports the end or the error */
    size_t n = avail(r) / STF_FUNC_SIZE;
    if (n > room)
        n = (size_t)room;
    if (n > max)
        n = max;
    const uint8_t *p = r->buf + r->pos;
    uint64_t tsc = r->tsc;
    size_t i = 0;
    for (; i < n; i++) {
        uint64_t v;
        memcpy(&v, p + i * STF_FUNC_SIZE, sizeof v); /* little-endian: word, then delta */
        uint32_t action = (uint32_t)(v >> 1) & 7u;
        if ((v & 1) || action > STF_ENTER_ARGS)
            break; /* metadata, or an action the general path reports */
        tsc += v >> 32;
        out[i].tsc = tsc;
        out[i].id = (uint32_t)v >> 4;
        out[i].action = (uint8_t)action;
    }
    if (i == 0)
        return 0;
    r->pos += i * STF_FUNC_SIZE;
    r->tsc = tsc;
    r->args_ok = out[i - 1].action == STF_ENTER_ARGS;
    r->st.records += i;
    return i;
}

uint64_t stf_reader_offset(const struct stf_reader *r)
{
    return r ? cur_off(r) : 0;
}

int stf_reader_next(struct stf_reader *r, struct stf_item *item)
{
    if (!r || !item)
        return STF_ERR_ARG;
    if (r->err)
        return r->err;
    if (fast_function(r, item))
        return STF_OK;
    for (;;) {
        if (r->err)
            return r->err;
        if (r->done)
            return STF_END;
        if (r->one_block && !r->in_block && r->block_index != r->seek_block) {
            r->done = true;
            return STF_END;
        }
        bool was_in_block = r->in_block;
        uint64_t blk = r->block_index;
        int rc = step(r, item);
        if (rc == STEP_AGAIN)
            continue;
        if (rc != STEP_ITEM)
            return rc;
        if (!was_in_block && r->in_block && r->block_index == blk)
            r->st.blocks++;
        if (r->hdr.version == 1 && item->kind == STF_M_NEW_BUFFER)
            r->st.blocks++;
        r->st.records++;
        return STF_OK;
    }
}

/* ---- random access (used by the cursor) --------------------------------------------------- */

int stf_reader_seek(struct stf_reader *r, uint64_t offset, uint64_t block)
{
    if (!r)
        return STF_ERR_ARG;
    if (r->err)
        return r->err;
    if (offset >= r->base && offset <= r->base + r->len) {
        r->pos = (size_t)(offset - r->base); /* already in the window: no system call */
    } else if (r->positional) {
        r->base = offset; /* pread reads from there */
        r->pos = r->len = 0;
        r->eof = false;
    } else {
        if (lseek(r->fd, (off_t)offset, SEEK_SET) < 0)
            return fail(r, STF_ERR_IO, offset, "seek failed: %s", strerror(errno));
        r->base = offset;
        r->pos = r->len = 0;
        r->eof = false;
    }
    r->in_block = false;
    r->done = false;
    r->block_index = block;
    r->one_block = true;
    r->seek_block = block;
    return STF_OK;
}

int stf_reader_skip_block(struct stf_reader *r)
{
    if (!r)
        return STF_ERR_ARG;
    if (r->err)
        return r->err;
    if (!r->in_block)
        return STF_OK;
    uint64_t here = cur_off(r);
    int s = here < r->block_end ? skip(r, r->block_end - here) : 1;
    if (s < 0)
        return s;
    end_block(r);
    if (s == 0)
        r->done = true;
    return STF_OK;
}

void stf_reader_block_span(const struct stf_reader *r, uint64_t *start, uint64_t *end)
{
    uint64_t e = r->block_end;
    if (r->size_known && e > r->file_size)
        e = r->file_size;
    *start = r->block_ext_off;
    *end = e;
}
