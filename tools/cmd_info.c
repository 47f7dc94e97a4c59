/* sledtrace info: header, per-thread summary, record counts by kind, time span, drops, the
 * tracer's own cost as the runtime measured it (its calibration record, format/stf.h), the
 * traced objects with their build ids (from the sidecar beside the trace), and the cost of
 * decoding (wall time, peak RSS). One streaming pass; memory grows with the number of threads
 * only (and the sidecar's size). */
#include "common.h"
#include "resolution.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static void help(FILE *out)
{
    fputs("usage: sledtrace info TRACE\n"
          "\n"
          "Summarize a trace: header fields, the clock's resolution as the records show it\n"
          "(the greatest common divisor of the time steps between a thread's consecutive\n"
          "function records, and the smallest step), the tracer's own cost per pair of\n"
          "records as the runtime measured it at start-up (compiler-rt's traces and older\n"
          "ones do not record it: their times are as measured), records by kind, time span,\n"
          "dropped records, file size, one line per thread (blocks, records, calls, custom\n"
          "and typed events other than the tracer's own, first/last TSC and time since the\n"
          "first record, events lost), the traced objects (object id, GNU build id of the\n"
          "file when it was traced, path; from the symbols file beside the trace, TRACE with\n"
          ".fdr replaced by .syms), and the time and peak memory the decoding took.\n",
          out);
}

struct thr {
    int32_t pid, tid;
    size_t order; /* first seen */
    uint64_t blocks, records;
    uint64_t calls, events; /* function entries; custom/typed events other than loss markers */
    uint64_t drops, gaps;   /* from loss markers */
    uint64_t first_tsc, last_tsc;
    bool have_tsc;
};

/* Add a finished block's counts to its (pid, tid) entry. */
static int credit(struct u64map *map, struct thr **thr, size_t *n, size_t *cap, const struct thr *b)
{
    uint64_t key = ((uint64_t)(uint32_t)b->pid << 32) | (uint32_t)b->tid;
    bool added;
    long idx = u64map_get(map, key, &added);
    if (idx < 0)
        return -1;
    if (added) {
        if (*n == *cap) {
            struct thr *nt = tool_grow(*thr, &*cap, sizeof *nt, 16);
            if (!nt)
                return -1;
            *thr = nt;
        }
        memset(&(*thr)[*n], 0, sizeof **thr);
        (*thr)[*n].pid = b->pid;
        (*thr)[*n].tid = b->tid;
        (*thr)[*n].order = *n;
        (*n)++;
    }
    struct thr *t = &(*thr)[idx];
    t->blocks++;
    t->records += b->records;
    t->calls += b->calls;
    t->events += b->events;
    t->drops += b->drops;
    t->gaps += b->gaps;
    if (b->have_tsc) {
        if (!t->have_tsc || b->first_tsc < t->first_tsc)
            t->first_tsc = b->first_tsc;
        if (!t->have_tsc || b->last_tsc > t->last_tsc)
            t->last_tsc = b->last_tsc;
        t->have_tsc = true;
    }
    return 0;
}

/* The sidecar beside the trace, or NULL with why there is none in why. */
static struct stf_syms *load_side(const char *path, char *why, size_t len)
{
    if (strcmp(path, "-") == 0) {
        snprintf(why, len, "standard input: no symbols file");
        return NULL;
    }
    char *side = stf_syms_path_for(path);
    if (!side) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    struct stf_syms *s = NULL;
    char err[512];
    int rc = stf_syms_load(&s, side, err, sizeof err);
    if (rc == STF_ERR_IO && errno == ENOENT)
        snprintf(why, len, "no symbols file %s", side);
    else if (rc != STF_OK)
        snprintf(why, len, "%s", err[0] ? err : stf_strerror(rc));
    free(side);
    return rc == STF_OK ? s : NULL;
}

/* What the sidecar says of the process: its command line and how it ended. */
static void print_process(const struct stf_syms *s)
{
    const char *cmd = stf_syms_command(s);
    char *shown = cmd ? tool_printable(cmd) : NULL;
    printf("command:       %s\n", shown ? shown : cmd ? cmd : "- (not recorded)");
    free(shown);
    int value;
    switch (stf_syms_end(s, &value)) {
    case STF_END_STATUS:
        printf("exit:          status %d\n", value);
        break;
    case STF_END_SIGNAL:
        printf("exit:          killed by signal %d (%s)\n", value, strsignal(value));
        break;
    case STF_END_EXEC:
        printf("exit:          replaced by exec\n");
        break;
    default:
        printf("exit:          - (not recorded)\n");
        break;
    }
}

/* The objects the sidecar beside the trace describes: one line each, id, build id (what
 * --syms BINARY is checked against) and path; or why there are none to show. */
static void print_objects(const struct stf_syms *s, const char *why)
{
    if (!s) {
        printf("objects:       - (%s)\n", why);
        return;
    }
    static const char none[] = "(none recorded)";
    size_t n = stf_syms_objects(s), width = sizeof none - 1;
    for (size_t i = 0; i < n; i++) {
        const char *id = stf_syms_build_id(s, stf_syms_object_id(s, i));
        if (id && strlen(id) > width)
            width = strlen(id);
    }
    printf("objects:       %zu (id, build id, path)\n", n);
    for (size_t i = 0; i < n; i++) {
        uint32_t objid = stf_syms_object_id(s, i);
        const char *id = stf_syms_build_id(s, objid), *obj = stf_syms_object(s, objid);
        char *shown = obj ? tool_printable(obj) : NULL;
        printf("  %2" PRIu32 "  %-*s  %s\n", objid, (int)width, id ? id : none,
               shown ? shown
               : obj ? obj
                     : "(path unknown)");
        free(shown);
    }
}

/* Main threads (tid == pid) first, then the order the trace gives. */
static int cmp_main_first(const void *a, const void *b)
{
    const struct thr *x = a, *y = b;
    int mx = x->tid == x->pid, my = y->tid == y->pid;
    if (mx != my)
        return my - mx;
    return (x->order > y->order) - (x->order < y->order);
}

/* "N ticks (D UNIT)": D with 3 significant digits in ns, us, ms or s (frequency 0: ticks are
 * taken as ns, as elsewhere). */
static void fmt_ticks(char *buf, size_t len, uint64_t ticks, uint64_t freq)
{
    double v = tool_res_ns(ticks, freq);
    const char *unit = "ns";
    if (v >= 1e9) {
        v /= 1e9;
        unit = "s";
    } else if (v >= 1e6) {
        v /= 1e6;
        unit = "ms";
    } else if (v >= 1e3) {
        v /= 1e3;
        unit = "us";
    }
    snprintf(buf, len, "%" PRIu64 " tick%s (%.3g %s)", ticks, ticks == 1 ? "" : "s", v, unit);
}

/* The tracer's cost per pair of records (calibration record): one line. Gaps are in 1/256
 * tick; frequency 0 takes ticks as ns, as elsewhere. */
static void print_tracer_cost(const struct stf_calib *c, bool have, uint64_t freq)
{
    if (!have) {
        printf("tracer cost:   not recorded (times are as measured)\n");
        return;
    }
    static const struct {
        int gap;
        const char *name;
    } pairs[STF_GAPS] = {{STF_GAP_EX, "entry->exit"},  {STF_GAP_XE, "exit->entry"},
                         {STF_GAP_EE, "entry->entry"}, {STF_GAP_XX, "exit->exit"},
                         {STF_GAP_ET, "entry->tail"},  {STF_GAP_TE, "tail->entry"}};
    double ns_per = (freq ? 1e9 / (double)freq : 1.0) / 256.0;
    printf("tracer cost:  ");
    for (int i = 0; i < STF_GAPS; i++)
        printf(" %s %.1f ns (+-%.1f)%s", pairs[i].name, c->gap[pairs[i].gap] * ns_per,
               c->spread[pairs[i].gap] * ns_per, i + 1 < STF_GAPS ? "," : "");
    printf(" (calibrated at start-up: %" PRIu32 " rounds of %" PRIu32 " calls; clock step %" PRIu32
           " tick%s)\n",
           c->rounds, c->calls, c->step, c->step == 1 ? "" : "s");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    if (tool_wants_help(argc, argv)) {
        help(stdout);
        return EXIT_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            tool_err("info: unknown option '%s'", argv[i]);
            return EXIT_USAGE;
        }
        if (path) {
            tool_err("info: more than one trace given");
            return EXIT_USAGE;
        }
        path = argv[i];
    }
    if (!tool_default_trace(&path, "info"))
        return EXIT_USAGE;

    double t0 = now_s();
    struct stf_reader *r = tool_open_trace(path, STF_READ_LENIENT);
    if (!r)
        return EXIT_BAD_TRACE;
    const struct stf_header *h = stf_reader_header(r);

    uint64_t by_kind[STF_K_FUNCTION + 1] = {0};
    uint64_t by_action[4] = {0};
    uint64_t first_tsc = 0, last_tsc = 0;
    bool have_tsc = false;
    /* Events the runtime dropped (discard policy), from its loss markers. */
    uint64_t drops = 0, gaps = 0;
    /* The clock's resolution as the trace shows it (resolution.h): the gcd of the non-zero
     * time steps between a thread's consecutive function records, and the smallest step. */
    struct tool_res res = {0};
    /* The runtime's calibration: the first one before any function record (tools/vclock.h). */
    struct stf_calib calib = {0};
    bool has_calib = false, seen_func = false;
    struct u64map map = {0};
    struct thr *thr = NULL;
    size_t nthr = 0, capthr = 0;
    struct thr blk = {0}; /* the block being read; credited to its thread when it ends */
    uint64_t blk_index = 0;
    bool blk_active = false;
    int status = EXIT_OK;

    struct stf_item it;
    int rc;
    for (;;) {
        rc = stf_reader_next(r, &it);
        if (blk_active && (rc != STF_OK || it.block != blk_index)) {
            if (credit(&map, &thr, &nthr, &capthr, &blk) != 0) {
                tool_err("out of memory");
                status = EXIT_BAD_TRACE;
                break;
            }
            blk_active = false;
        }
        if (rc != STF_OK)
            break;
        if (it.kind >= 0 && it.kind <= STF_K_FUNCTION)
            by_kind[it.kind]++;
        if (!blk_active) {
            memset(&blk, 0, sizeof blk);
            blk_active = true;
            blk_index = it.block;
        }
        uint64_t lost;
        struct stf_calib c;
        if (it.kind == STF_M_CUSTOM_EVENT && stf_decode_loss(it.payload, it.payload_len, &lost)) {
            drops += lost;
            gaps++;
            blk.drops += lost;
            blk.gaps++;
        } else if (it.kind == STF_M_TYPED_EVENT &&
                   stf_decode_calib(it.event_type, it.payload, it.payload_len, &c)) {
            if (!has_calib && !seen_func) { /* the tracer's, not an event of the program */
                calib = c;
                has_calib = true;
            }
        } else if (it.kind == STF_M_CUSTOM_EVENT || it.kind == STF_M_TYPED_EVENT) {
            blk.events++;
        }
        if (it.kind == STF_K_FUNCTION && (it.action == STF_ENTER || it.action == STF_ENTER_ARGS))
            blk.calls++;
        blk.records++;
        if (it.kind != STF_M_BUFFER_EXTENTS) {
            blk.pid = it.pid;
            blk.tid = it.tid;
        }
        if (it.kind == STF_K_FUNCTION) {
            tool_res_add(&res, it.delta);
            seen_func = true;
            if (it.action < 4)
                by_action[it.action]++;
            if (!blk.have_tsc || it.tsc < blk.first_tsc)
                blk.first_tsc = it.tsc;
            if (!blk.have_tsc || it.tsc > blk.last_tsc)
                blk.last_tsc = it.tsc;
            blk.have_tsc = true;
            if (!have_tsc || it.tsc < first_tsc)
                first_tsc = it.tsc;
            if (!have_tsc || it.tsc > last_tsc)
                last_tsc = it.tsc;
            have_tsc = true;
        }
    }
    if (rc < 0 && status == EXIT_OK)
        status = tool_reader_fail(r, path, rc);
    struct stf_reader_stats st;
    stf_reader_stats(r, &st);
    double dt = now_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    if (status == EXIT_OK) {
        uint64_t freq = h->cycle_freq;
        char why[600];
        struct stf_syms *side = load_side(path, why, sizeof why);
        printf("file:          %s\n", path);
        print_process(side);
        printf("file size:     %" PRIu64 " bytes\n", st.file_size ? st.file_size : st.bytes);
        printf("format:        FDR version %u (type %u)\n", (unsigned)h->version,
               (unsigned)h->type);
        printf("tsc:           constant=%s nonstop=%s (bits 0x%" PRIx32 ")\n",
               (h->bits & STF_BIT_CONSTANT_TSC) ? "yes" : "no",
               (h->bits & STF_BIT_NONSTOP_TSC) ? "yes" : "no", h->bits);
        printf("cycle freq:    %" PRIu64 " Hz%s\n", freq,
               freq ? "" : " (unknown: TSC shown as ns)");
        /* 1e9 Hz exactly is a clock's nanoseconds, not a TSC, whatever the bits say (they
         * tell what CPUID said about the TSC): sledtrace's CLOCK_MONOTONIC, or compiler-rt's
         * clock_gettime when it finds no TSC frequency (on KVM guests). */
        if (freq == 1000000000u)
            printf("clock:         nanoseconds of a clock, not a TSC (1e9 Hz: sledtrace's "
                   "CLOCK_MONOTONIC, or compiler-rt's clock_gettime fallback)\n");
        else if (h->bits & STF_BIT_CONSTANT_TSC)
            printf("clock:         TSC (invariant)\n");
        else
            printf("clock:         TSC, not invariant (times may drift between CPUs)\n");
        if (res.gcd) {
            char step[64], min[64];
            fmt_ticks(step, sizeof step, res.gcd, freq);
            fmt_ticks(min, sizeof min, res.min, freq);
            printf("clock resolution: %s observed, smallest step %s\n", step, min);
        } else {
            printf("clock resolution: - (no two records at different times)\n");
        }
        print_tracer_cost(&calib, has_calib, freq);
        printf("buffer size:   %" PRIu64 " bytes\n", h->buffer_size);
        if (st.blocks == 0)
            printf("blocks:        0 (a header alone: the process ended before its first flush, "
                   "e.g. killed by SIGKILL, or recorded nothing)\n");
        else
            printf("blocks:        %" PRIu64 "\n", st.blocks);
        printf("records:       %" PRIu64 "\n", st.records);
        for (int k = 0; k <= STF_K_FUNCTION; k++) {
            if (!by_kind[k])
                continue;
            printf("  %-13s %" PRIu64 "\n", stf_kind_name(k), by_kind[k]);
        }
        printf("functions:     enter=%" PRIu64 " exit=%" PRIu64 " tail-exit=%" PRIu64
               " enter-args=%" PRIu64 "\n",
               by_action[STF_ENTER], by_action[STF_EXIT], by_action[STF_TAIL_EXIT],
               by_action[STF_ENTER_ARGS]);
        if (have_tsc) {
            printf("first tsc:     %" PRIu64 "\n", first_tsc);
            printf("last tsc:      %" PRIu64 "\n", last_tsc);
            printf("duration:      %.9f s\n", tool_ticks_to_s(last_tsc - first_tsc, freq));
        } else {
            printf("first tsc:     -\nlast tsc:      -\nduration:      0 s\n");
        }
        printf("drops:         %" PRIu64 "\n", drops);
        if (gaps)
            printf("gaps:          %" PRIu64 " (loss markers)\n", gaps);
        printf("warnings:      %" PRIu64 "\n", st.warnings);
        printf("threads:       %zu\n", nthr);
        if (nthr)
            printf("  %10s %10s %8s %12s %12s %8s %20s %20s %14s %14s  %s\n", "tid", "pid",
                   "blocks", "records", "calls", "events", "first_tsc", "last_tsc", "start_s",
                   "end_s", "name");
        qsort(thr, nthr, sizeof *thr, cmp_main_first);
        for (size_t i = 0; i < nthr; i++) {
            const struct thr *t = &thr[i];
            const char *nm = stf_syms_thread_name(side, t->pid, t->tid);
            char *shown = nm ? tool_printable(nm) : NULL;
            if (shown)
                nm = shown;
            if (t->have_tsc)
                printf("  %10" PRId32 " %10" PRId32 " %8" PRIu64 " %12" PRIu64 " %12" PRIu64
                       " %8" PRIu64 " %20" PRIu64 " %20" PRIu64 " %14.9f %14.9f  %s\n",
                       t->tid, t->pid, t->blocks, t->records, t->calls, t->events, t->first_tsc,
                       t->last_tsc, tool_ticks_to_s(t->first_tsc - first_tsc, freq),
                       tool_ticks_to_s(t->last_tsc - first_tsc, freq), nm ? nm : "-");
            else
                printf("  %10" PRId32 " %10" PRId32 " %8" PRIu64 " %12" PRIu64 " %12" PRIu64
                       " %8" PRIu64 " %20s %20s %14s %14s  %s\n",
                       t->tid, t->pid, t->blocks, t->records, t->calls, t->events, "-", "-", "-",
                       "-", nm ? nm : "-");
            free(shown);
        }
        for (size_t i = 0; i < nthr; i++)
            if (thr[i].gaps)
                printf("  tid %" PRId32 ": %" PRIu64 " events dropped in %" PRIu64 " gaps\n",
                       thr[i].tid, thr[i].drops, thr[i].gaps);
        print_objects(side, why);
        stf_syms_free(side);
        printf("decode time:   %.6f s\n", dt);
        printf("peak memory:   %ld KiB\n", ru.ru_maxrss);
    }
    tool_warn_summary(path);
    free(thr);
    u64map_free(&map);
    stf_reader_close(r);
    return status;
}
