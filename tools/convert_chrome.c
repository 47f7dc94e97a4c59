/* sledtrace convert --format chrome: Chrome trace_event JSON (the "JSON Array/Object Format"
 * that Perfetto and chrome://tracing load), in one streaming pass, thread after thread.
 *
 *   {"traceEvents":[
 *   {"ph":"M","name":"process_name","pid":P,"tid":P,"ts":0,"args":{"name":"prog"}},
 *   {"ph":"M","name":"thread_name","pid":P,"tid":T,"ts":0,"args":{"name":"thread T"}},
 *   {"ph":"X","name":"main","cat":"function","pid":P,"tid":T,"ts":1.000,"dur":3.000},
 *   {"ph":"i","s":"t","name":"custom event","cat":"event",...,"args":{"payload":"..."}},
 *   ...
 *   ],"displayTimeUnit":"ns","otherData":{"calls":N,"stack_repairs":R,...}}
 *
 * A complete event ("X") is written when its frame closes (callstack.h's walker with
 * close_open), so events are not in timestamp order; viewers sort them. Frames that
 * did not close with their own exit carry args.closed: "repaired" (closed by an exit of a
 * function below them), "gap" (open at a loss marker: closed at the thread's last timestamp
 * before it) or "unfinished" (open at the end: closed at the thread's last timestamp).
 * otherData (the format's free-form metadata) carries the walker's counts: calls, stack
 * repairs, unmatched exits, gaps and the events lost in them. Times are microseconds with three
 * decimals, relative to the earliest first timestamp of any thread (tool_trace_base), so none
 * is negative; they are computed in integer nanoseconds, so nested calls stay nested after
 * rounding. */
#include "callstack.h"
#include "convert.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct chrome {
    FILE *f;
    const struct stf_syms *syms;
    uint64_t freq, base;
    bool first;
    int32_t named[8]; /* pids given a process_name (a trace has one, or a few after exec) */
    size_t nnamed;
    struct tool_names names; /* JSON-escaped function names */
    bool nomem;
};

/* Nanoseconds from the base, signed. */
static int64_t rel_ns(const struct chrome *c, uint64_t tsc)
{
    if (tsc >= c->base)
        return (int64_t)tool_ticks_to_ns(tsc - c->base, c->freq);
    return -(int64_t)tool_ticks_to_ns(c->base - tsc, c->freq);
}

/* Microseconds with three decimals from signed ns, at p; returns the end. */
static char *put_us(char *p, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        *p++ = '-';
    p = tool_put_i64(p, (int64_t)(a / 1000));
    *p++ = '.';
    *p++ = (char)('0' + a % 1000 / 100);
    *p++ = (char)('0' + a % 100 / 10);
    *p++ = (char)('0' + a % 10);
    return p;
}

/* An event object's start (separator, ph, pid, tid, ts) at p (64 bytes suffice); returns the
 * end. The converter writes one event per call, so events are put together without printf. */
static char *event_head(struct chrome *c, char *p, const char *ph, int32_t pid, int32_t tid,
                        int64_t ts)
{
    p = tool_put_str(p, c->first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    c->first = false;
    p = tool_put_str(p, ph);
    p = tool_put_str(p, "\",\"pid\":");
    p = tool_put_i64(p, pid);
    p = tool_put_str(p, ",\"tid\":");
    p = tool_put_i64(p, tid);
    p = tool_put_str(p, ",\"ts\":");
    return put_us(p, ts);
}

static void begin_event(struct chrome *c, const char *ph, int32_t pid, int32_t tid, int64_t ts)
{
    char buf[96];
    fwrite(buf, 1, (size_t)(event_head(c, buf, ph, pid, tid, ts) - buf), c->f);
}

static void make_name(FILE *f, uint32_t id, void *ctx)
{
    const struct chrome *c = ctx;
    char buf[24];
    const char *name = stf_syms_name(c->syms, id, buf, sizeof buf);
    tool_json_escape(f, (const uint8_t *)name, strlen(name));
}

/* The process's name: the executable's base name from the sidecar, else "pid N". */
static void name_process(struct chrome *c, int32_t pid)
{
    for (size_t i = 0; i < c->nnamed; i++)
        if (c->named[i] == pid)
            return;
    if (c->nnamed < sizeof c->named / sizeof c->named[0])
        c->named[c->nnamed++] = pid;
    const char *exe = stf_syms_object(c->syms, 0);
    const char *base = exe ? strrchr(exe, '/') : NULL;
    base = base ? base + 1 : exe;
    begin_event(c, "M", pid, pid, 0);
    fputs(",\"name\":\"process_name\",\"args\":{\"name\":\"", c->f);
    if (base && *base)
        tool_json_escape(c->f, (const uint8_t *)base, strlen(base));
    else
        fprintf(c->f, "pid %" PRId32, pid);
    fputs("\"}}", c->f);
}

static int on_thread(void *ctx, const struct cs_thread *t)
{
    struct chrome *c = ctx;
    name_process(c, t->pid);
    begin_event(c, "M", t->pid, t->tid, 0);
    fprintf(c->f, ",\"name\":\"thread_name\",\"args\":{\"name\":\"thread %" PRId32 "\"}}", t->tid);
    return 0;
}

static int on_close(void *ctx, const struct cs_close *cl)
{
    struct chrome *c = ctx;
    const struct cs_frame *fr = cl->f;
    int64_t s = rel_ns(c, fr->start), e = rel_ns(c, cl->end);
    const char *name = tool_names_get(&c->names, fr->id, make_name, c);
    if (!name) {
        c->nomem = true;
        return -1;
    }
    char buf[192];
    char *p = event_head(c, buf, "X", cl->t->pid, cl->t->tid, s);
    p = tool_put_str(p, ",\"dur\":");
    p = put_us(p, e > s ? e - s : 0);
    p = tool_put_str(p, ",\"cat\":\"function\",\"name\":\"");
    fwrite(buf, 1, (size_t)(p - buf), c->f);
    fputs(name, c->f);
    p = tool_put_str(buf, "\",\"args\":{\"id\":");
    p = tool_put_i64(p, fr->id);
    if (fr->nargs) { /* the logged argument: a number while JSON keeps it exact, else hex */
        if (fr->arg < (1ull << 53)) {
            p = tool_put_str(p, ",\"arg\":");
            p = tool_put_u64(p, fr->arg);
        } else {
            p += snprintf(p, 32, ",\"arg\":\"0x%" PRIx64 "\"", fr->arg);
        }
    }
    static const char *const closed[] = {NULL, ",\"closed\":\"repaired\"", ",\"closed\":\"gap\"",
                                         ",\"closed\":\"unfinished\""};
    if (closed[cl->why])
        p = tool_put_str(p, closed[cl->why]);
    p = tool_put_str(p, "}}");
    fwrite(buf, 1, (size_t)(p - buf), c->f);
    return 0;
}

static void instant(struct chrome *c, const struct stf_item *it)
{
    uint64_t lost;
    begin_event(c, "i", it->pid, it->tid, rel_ns(c, it->tsc));
    if (it->kind == STF_M_CUSTOM_EVENT && stf_decode_loss(it->payload, it->payload_len, &lost)) {
        fprintf(
            c->f,
            ",\"s\":\"t\",\"cat\":\"loss\",\"name\":\"events lost\",\"args\":{\"count\":%" PRIu64
            "}}",
            lost);
        return;
    }
    if (it->kind == STF_M_TYPED_EVENT)
        fprintf(c->f,
                ",\"s\":\"t\",\"cat\":\"event\",\"name\":\"typed event\",\"args\":{\"type\":%u,"
                "\"payload\":\"",
                (unsigned)it->event_type);
    else
        fputs(",\"s\":\"t\",\"cat\":\"event\",\"name\":\"custom event\",\"args\":{\"payload\":\"",
              c->f);
    tool_json_escape(c->f, it->payload, it->payload_len);
    fputs("\"}}", c->f);
}

int convert_chrome(const char *path, const char *out, const char *syms_opt)
{
    struct tool_trace tr;
    struct tool_out o;
    FILE *f = conv_begin(&tr, &o, path, out, syms_opt);
    if (!f)
        return EXIT_BAD_TRACE;
    struct chrome c = {
        .f = f, .syms = tr.syms, .freq = tr.freq, .first = true, .base = tool_trace_base(&tr)};
    static const struct cs_ops ops = {.thread = on_thread, .close = on_close};
    struct callstack cs = {.close_open = true};
    fputs("{\"traceEvents\":[", f);

    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = tool_trace_next(&tr, &it)) == STF_OK) {
        if (cs_feed(&cs, &it, &ops, &c) != 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
        if (it.kind == STF_M_CUSTOM_EVENT || it.kind == STF_M_TYPED_EVENT)
            instant(&c, &it);
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK && cs_finish(&cs, &ops, &c) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    fprintf(f,
            "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"calls\":%" PRIu64
            ",\"stack_repairs\":%" PRIu64 ",\"unmatched_exits\":%" PRIu64 ",\"gaps\":%" PRIu64
            ",\"events_lost\":%" PRIu64 "}}\n",
            cs.calls, cs.repairs, cs.unmatched, cs.gaps, cs.gap_events);
    int st = tool_out_close(&o, status == EXIT_OK) ? EXIT_BAD_TRACE : EXIT_OK;
    if (status == EXIT_OK)
        status = st;
    cs_free(&cs);
    tool_names_free(&c.names);
    tool_trace_close(&tr);
    return status;
}
