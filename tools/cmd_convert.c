/* sledtrace convert TRACE --format fdr|chrome|yaml|perfetto [-o OUT]
 *
 * chrome, yaml and perfetto live in convert_chrome.c, convert_yaml.c and convert_perfetto.c,
 * the helper they share in
 * convert.c; this file has the fdr rewrite and the dispatch.
 *
 * --format fdr: the same trace with one block per thread.
 *
 * Why: llvm-xray 14 sorts each thread's blocks by their WalltimeMarker with a comparator that is
 * not a strict weak order (both the seconds and the microseconds must be smaller), so a thread
 * with more than 16 blocks written within the same second can come out reordered, and its
 * account/convert/stack output is wrong. A runtime cannot avoid that with real times; a trace
 * with one block per thread cannot be reordered.
 *
 * How, in two streaming passes (memory grows with the number of blocks, not the trace size):
 * pass 1 reads the trace (lenient: a torn last block keeps its complete records) and notes, per
 * (pid, tid), each block's body: from its first NewCPUId to the end of its last complete record.
 * Pass 2 writes the input's header, then per thread in order of first appearance one block:
 * BufferExtents, NewBuffer, the first block's WalltimeMarker, Pid (v3+), and the bodies one after
 * another, copied byte for byte. Every body starts with a NewCPUId carrying an absolute TSC, so
 * the deltas that follow stay valid. Records are neither dropped nor altered. */
#include "convert.h"
#include "names.h"
#include "window.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace convert TRACE --format fdr -o OUT\n"
          "       sledtrace convert TRACE --format chrome|yaml|perfetto|speedscope [-o OUT]\n"
          "                         [--syms FILE [--force-syms]]\n"
          "       sledtrace convert TRACE --format chrome|perfetto [--from TIME] [--to TIME]\n"
          "                         [--tid N] [--filter P] [--exclude P] [--max-depth N]\n"
          "                         [--min-duration TIME (chrome)] [-o OUT]\n"
          "\n"
          "  --format fdr     rewrites an FDR trace (version 2 or later) with one block per\n"
          "                   thread: the same records, byte for byte, in the same order per\n"
          "                   thread. llvm-xray 14 can reorder the blocks of a thread that has\n"
          "                   more than 16 of them; the converted trace is safe for llvm-xray\n"
          "                   account, convert and stack.\n"
          "  --format chrome  Chrome trace_event JSON (Perfetto, chrome://tracing): one\n"
          "                   complete event per call, times in microseconds from the earliest\n"
          "                   thread start; custom/typed events and loss markers as instant\n"
          "                   events.\n"
          "  --from TIME, --to TIME\n"
          "                   chrome, perfetto: only the time in this window (since the\n"
          "                   earliest thread start, as replay shows it; 10us, 2.5ms, 1s): a\n"
          "                   call crossing an edge keeps its part inside (chrome: marked\n"
          "                   args.clipped \"start\", \"end\" or \"both\"; otherData.clipped\n"
          "                   counts them)\n"
          "  --tid N          chrome, perfetto: only thread N\n"
          "  --filter P       chrome, perfetto: only the calls of functions matching P and\n"
          "                   their callees (subtree); P: comma-separated [LIB:]GLOB, on\n"
          "                   names as shown (repeatable)\n"
          "  --exclude P      chrome, perfetto: not the calls of functions matching P nor\n"
          "                   their subtree (wins over --filter)\n"
          "  --max-depth N    chrome, perfetto: only calls at depth < N (top level: 0)\n"
          "  --min-duration TIME\n"
          "                   chrome: only calls lasting at least TIME. Calls hidden are not\n"
          "                   written; a call's parent in the file is its nearest shown\n"
          "                   ancestor (chrome: otherData.shown counts the calls written).\n"
          "                   yaml and fdr take none of these: they copy records\n"
          "  --format perfetto\n"
          "                   Perfetto's protobuf trace (ui.perfetto.dev, trace_processor):\n"
          "                   a begin and an end event per call on a track per thread,\n"
          "                   interned names, under a quarter of the Chrome JSON's size;\n"
          "                   custom/typed events and loss markers as instant events.\n"
          "  --format speedscope\n"
          "                   speedscope's own JSON (speedscope.app): a profile per thread,\n"
          "                   frames named by the functions alone (the Chrome JSON's per-call\n"
          "                   args would split them); takes what perfetto takes\n"
          "  --format yaml    the YAML of 'llvm-xray convert --output-format=yaml', one record\n"
          "                   per line, grouped by thread, names from the symbols file.\n"
          "  -o OUT           output file (written beside it and renamed over it when whole);\n"
          "                   chrome, yaml and perfetto write to stdout without it\n"
          "  --raw-times      chrome, perfetto: times as measured, the tracer's own cost\n"
          "                   included (default: corrected, when the trace records that cost)\n"
          "  --syms FILE      symbols file (default: TRACE with .fdr replaced by .syms), or\n"
          "                   the traced binary: refused if its build id is not the one the\n"
          "                   trace's symbols file records\n"
          "  --force-syms     use a --syms binary even if its build id differs\n"
          "  --names MODE  C++ names: short (default: namespaces and name), full or mangled\n",
          out);
}

struct body {
    uint64_t start, end; /* file offsets */
};

struct thr {
    int32_t pid, tid;
    int64_t wall_sec;
    uint32_t wall_usec;
    struct body *b;
    size_t n, cap;
    uint64_t bytes;
};

struct state {
    struct u64map map;
    struct thr *t;
    size_t nt, capt;
};

static struct thr *thread_of(struct state *s, int32_t pid, int32_t tid)
{
    bool added;
    long i = u64map_get(&s->map, ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid, &added);
    if (i < 0)
        return NULL;
    if (added) {
        if (s->nt == s->capt) {
            struct thr *n = tool_grow(s->t, &s->capt, sizeof *n, 16);
            if (!n)
                return NULL;
            s->t = n;
        }
        memset(&s->t[s->nt], 0, sizeof s->t[0]);
        s->t[s->nt].pid = pid;
        s->t[s->nt].tid = tid;
        s->nt++;
    }
    return &s->t[i];
}

static int add_body(struct thr *t, struct body b)
{
    if (b.end <= b.start)
        return 0;
    if (t->n == t->cap) {
        struct body *n = tool_grow(t->b, &t->cap, sizeof *n, 64);
        if (!n)
            return -1;
        t->b = n;
    }
    t->b[t->n++] = b;
    t->bytes += b.end - b.start;
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Copies in[start, end) to out. */
static int copy_range(int in, int out, uint64_t start, uint64_t end)
{
    static uint8_t buf[1 << 16];
    while (start < end) {
        size_t want = end - start < sizeof buf ? (size_t)(end - start) : sizeof buf;
        ssize_t n = pread(in, buf, want, (off_t)start);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || write_full(out, buf, (size_t)n) != 0)
            return -1;
        start += (uint64_t)n;
    }
    return 0;
}

static int convert_fdr(const char *path, const char *out);

int cmd_convert(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *format = NULL, *syms = NULL;
    struct tool_window win = {0};
    int32_t tid = 0;
    bool have_tid = false;
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        int m;
        if ((m = tool_option(argc, argv, &i, "convert", "-o", &out)) != 0 ||
            (m = tool_option(argc, argv, &i, "convert", "--output", &out)) != 0 ||
            (m = tool_option(argc, argv, &i, "convert", "--format", &format)) != 0 ||
            (m = tool_option(argc, argv, &i, "convert", "--syms", &syms)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_window_option(argc, argv, &i, "convert", &win)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
        } else if ((m = tool_tid_option(argc, argv, &i, "convert", &tid)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            have_tid = true;
        } else if (strcmp(argv[i], "--raw-times") == 0) {
            tool_raw_times = true;
        } else if ((argv[i][0] != '-' || !argv[i][1]) && !path) { /* "-": standard input */
            path = argv[i];
        } else {
            tool_err("convert: unexpected argument '%s'", argv[i]);
            help(stderr);
            return EXIT_USAGE;
        }
    }
    if (!format) {
        help(stderr);
        return EXIT_USAGE;
    }
    if (!tool_default_trace(&path, "convert"))
        return EXIT_USAGE;
    static const char *const formats[] = {"fdr", "chrome", "yaml", "perfetto", "speedscope"};
    int k = tool_choice("convert", "format", format, formats, 5);
    if (k < 0)
        return EXIT_USAGE;
    if ((k == 0 || k == 2) && (tool_window_timed(&win) || tool_window_filtered(&win) || have_tid)) {
        tool_err("convert: --from, --to, --tid and the call filters are for --format chrome, "
                 "perfetto and speedscope only");
        return EXIT_USAGE;
    }
    if ((k == 3 || k == 4) && win.min_ns) {
        tool_err("convert: --min-duration is for --format chrome only (%s writes a call's "
                 "begin at its entry)",
                 formats[k]);
        return EXIT_USAGE;
    }
    if (k == 4)
        return convert_speedscope(path, out, syms, &win, have_tid ? &tid : NULL);
    if (k == 1)
        return convert_chrome(path, out, syms, &win, have_tid ? &tid : NULL);
    if (k == 3)
        return convert_perfetto(path, out, syms, &win, have_tid ? &tid : NULL);
    if (k == 2) {
        tool_names_default(TOOL_NAMES_FULL); /* llvm-xray's YAML names functions in full */
        return convert_yaml(path, out, syms);
    }
    if (!out) {
        tool_err("convert: --format fdr needs -o OUT");
        return EXIT_USAGE;
    }
    return convert_fdr(path, out);
}

static int convert_fdr_from(const char *src, const char *path, const char *out);

/* A piped trace is read twice (blocks, then their bytes): it is copied to a file first. */
static int convert_fdr(const char *path, const char *out)
{
    char tmp[64];
    int spool;
    const char *src = tool_seekable(path, tmp, sizeof tmp, &spool);
    if (!src)
        return EXIT_BAD_TRACE;
    int status = convert_fdr_from(src, path, out);
    if (spool >= 0)
        close(spool);
    return status;
}

static int convert_fdr_from(const char *src, const char *path, const char *out)
{
    struct stf_reader *r = tool_open_trace_as(src, path, STF_READ_LENIENT);
    if (!r)
        return EXIT_BAD_TRACE;
    struct stf_header h = *stf_reader_header(r);
    if (h.version < 2) {
        stf_reader_close(r);
        tool_err("%s: FDR version %u has fixed-size buffers; nothing to convert", path,
                 (unsigned)h.version);
        return EXIT_BAD_TRACE;
    }

    /* Pass 1. The thread is known for sure at a block's first NewCPUId (Pid comes after the
     * WalltimeMarker), so the walltime is held until then. */
    struct state s = {0};
    struct stf_item it;
    int rc, status = EXIT_OK, nomem = 0;
    uint64_t block = UINT64_MAX;
    struct thr *cur = NULL;
    struct body b = {0, 0};
    int64_t wall_sec = 0;
    uint32_t wall_usec = 0;
    struct tool_progress prog;
    struct stf_reader_stats st;
    stf_reader_stats(r, &st);
    tool_progress_init(&prog, st.file_size, "reading", false);
    while (!nomem && (rc = stf_reader_next(r, &it)) == STF_OK) {
        if (prog.on) { /* the reader counts the records */
            stf_reader_stats(r, &st);
            if ((st.records & 4095) == 0)
                tool_progress_set(&prog, st.bytes);
        }
        if (it.block != block) {
            if (cur)
                nomem = add_body(cur, b) != 0;
            block = it.block;
            cur = NULL;
        }
        if (it.kind == STF_M_WALLTIME && !cur) {
            wall_sec = it.wall_sec;
            wall_usec = it.wall_usec;
            continue;
        }
        if (!cur) {
            if (it.kind != STF_M_NEW_CPU)
                continue; /* the preamble, or records the reader warned about */
            cur = thread_of(&s, it.pid, it.tid);
            if (!cur) {
                nomem = 1;
                break;
            }
            if (cur->n == 0) {
                cur->wall_sec = wall_sec;
                cur->wall_usec = wall_usec;
            }
            b.start = it.offset;
        }
        b.end = it.offset + it.size;
    }
    if (!nomem && rc == STF_END && cur)
        nomem = add_body(cur, b) != 0;
    tool_progress_done(&prog);
    if (nomem) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    } else if (rc != STF_END) {
        status = tool_reader_fail(r, path, rc);
    }

    /* Pass 2. */
    int in = -1, fd = -1;
    struct tool_out o = {0};
    if (status == EXIT_OK) {
        in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0) {
            tool_err("%s: %s", path, strerror(errno));
            status = EXIT_BAD_TRACE;
        } else if (!tool_out_open(&o, out)) {
            status = EXIT_BAD_TRACE;
        } else {
            fd = fileno(o.f); /* written with write(2) only; closed by tool_out_close */
        }
    }
    if (status == EXIT_OK) {
        uint8_t hb[STF_HEADER_SIZE];
        int ok =
            pread(in, hb, sizeof hb, 0) == (ssize_t)sizeof hb && write_full(fd, hb, sizeof hb) == 0;
        for (size_t i = 0; ok && i < s.nt; i++) {
            struct thr *t = &s.t[i];
            if (t->n == 0)
                continue;
            uint8_t m[4 * STF_META_SIZE];
            size_t pre = (h.version >= 3 ? 3 : 2) * STF_META_SIZE;
            stf_meta_u64(m, STF_M_BUFFER_EXTENTS, pre + t->bytes);
            stf_meta_new_buffer(m + 16, t->tid);
            stf_meta_walltime(m + 32, t->wall_sec, t->wall_usec);
            stf_meta_pid(m + 48, t->pid);
            ok = write_full(fd, m, STF_META_SIZE + pre) == 0;
            for (size_t k = 0; ok && k < t->n; k++)
                ok = copy_range(in, fd, t->b[k].start, t->b[k].end) == 0;
        }
        if (!ok) {
            tool_err("%s: %s", out, errno ? strerror(errno) : "write failed");
            status = EXIT_BAD_TRACE;
        }
    }
    if (o.f && tool_out_close(&o, status == EXIT_OK) != 0)
        status = EXIT_BAD_TRACE;
    if (in >= 0)
        close(in);
    tool_warn_summary(path);
    for (size_t i = 0; i < s.nt; i++)
        free(s.t[i].b);
    free(s.t);
    u64map_free(&s.map);
    stf_reader_close(r);
    return status;
}
