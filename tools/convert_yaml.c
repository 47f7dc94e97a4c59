/* sledtrace convert --format yaml: the YAML that `llvm-xray convert --output-format=yaml` (LLVM
 * 14) writes, in one streaming pass, grouped by thread (first-seen order; llvm-xray also groups
 * by thread, in its hash table's order; with -sort, by TSC):
 *
 *   ---
 *   header:
 *     version:         5
 *     ...
 *   records:
 *     - { type: 0, func-id: 1, function: main, cpu: 0, thread: 100, process: 100,
 *         kind: function-enter, tsc: 1000, data: '' }      (one line per record)
 *   ...
 *
 * Like llvm-xray, event records repeat the func-id of the thread's last function record, and
 * `type` keeps the thread's last typed-event type (function records do not reset it).
 * `function` is the sidecar's name, or the id as a string (what llvm-xray prints without -m).
 * Scalars are quoted by LLVM's YAML rules; one difference: payload bytes >= 0x80 are written as
 * \xXX escapes (llvm-xray passes valid UTF-8 through and mangles invalid UTF-8). Loss markers are
 * ordinary custom events here, as in llvm-xray. */
#include "convert.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct ythr {
    uint32_t func_id;
    uint16_t type;
};

struct yaml {
    FILE *f;
    const struct stf_syms *syms;
    struct u64map map;
    struct ythr *t;
    size_t nt, cap;
    /* a function record waits for the CallArguments that follow it */
    bool pending;
    struct stf_item fn;
    uint64_t *args;
    size_t nargs, capargs;
    struct tool_names names; /* each function's name as a YAML scalar */
};

static bool is_numeric(const char *s, size_t n)
{
    if (n == 0)
        return false;
    static const char *const special[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf", "+.INF",
                                          "-.inf", "-.Inf", "-.INF", ".nan",  ".NaN",  ".NAN"};
    for (size_t k = 0; k < sizeof special / sizeof special[0]; k++)
        if (strlen(special[k]) == n && memcmp(s, special[k], n) == 0)
            return true;
    size_t i = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
        for (i = 2; i < n; i++)
            if (s[1] == 'x' ? !isxdigit((unsigned char)s[i]) : (s[i] < '0' || s[i] > '7'))
                return false;
        return true;
    }
    if (s[i] == '+' || s[i] == '-')
        i++;
    size_t digits = 0;
    while (i < n && isdigit((unsigned char)s[i]))
        i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && isdigit((unsigned char)s[i]))
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < n && isdigit((unsigned char)s[i]))
            i++, ed++;
        if (ed == 0)
            return false;
    }
    return i == n;
}

static bool is_word(const char *s, size_t n, const char *const *words, size_t nw)
{
    for (size_t k = 0; k < nw; k++)
        if (strlen(words[k]) == n && memcmp(s, words[k], n) == 0)
            return true;
    return false;
}

enum quote { Q_NONE, Q_SINGLE, Q_DOUBLE };

/* llvm::yaml::needsQuotes (LLVM 14). */
static enum quote needs_quotes(const char *s, size_t n)
{
    static const char *const nulls[] = {"null", "Null", "NULL", "~"};
    static const char *const bools[] = {"true", "True", "TRUE", "false", "False", "FALSE"};
    if (n == 0)
        return Q_SINGLE;
    enum quote q = Q_NONE;
    if (isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1]))
        q = Q_SINGLE;
    if (is_word(s, n, nulls, 4) || is_word(s, n, bools, 6) || is_numeric(s, n))
        q = Q_SINGLE;
    if (strchr("-?:\\,[]{}#&*!|>'\"%@`", s[0]))
        q = Q_SINGLE;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || strchr("_-^., \t", c))
            continue;
        if (c <= 0x1f || c >= 0x7f)
            return Q_DOUBLE;
        q = Q_SINGLE;
    }
    return q;
}

static void scalar(FILE *f, const void *p, size_t n)
{
    const char *s = p;
    switch (needs_quotes(s, n)) {
    case Q_NONE:
        fwrite(s, 1, n, f);
        return;
    case Q_SINGLE:
        fputc('\'', f);
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '\'')
                fputc('\'', f);
            fputc(s[i], f);
        }
        fputc('\'', f);
        return;
    case Q_DOUBLE:
        break;
    }
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        static const char esc[] = "0\0\0\0\0\0\0abtnvfre";
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
        } else if (c < 0x0e && esc[c]) {
            fputc('\\', f);
            fputc(esc[c], f);
        } else if (c == 0x1b) {
            fputs("\\e", f);
        } else if (c < 0x20 || c >= 0x7f) {
            fprintf(f, "\\x%02X", c);
        } else {
            fputc(c, f);
        }
    }
    fputc('"', f);
}

static struct ythr *ythread(struct yaml *y, const struct stf_item *it)
{
    bool added;
    long i = u64map_get(&y->map, ((uint64_t)(uint32_t)it->pid << 32) | (uint32_t)it->tid, &added);
    if (i < 0)
        return NULL;
    if (added) {
        if (y->nt == y->cap) {
            struct ythr *n = tool_grow(y->t, &y->cap, sizeof *n, 16);
            if (!n)
                return NULL;
            y->t = n;
        }
        y->t[y->nt++] = (struct ythr){0, 0};
    }
    return &y->t[i];
}

/* The sidecar's name, else the id in decimal (llvm-xray without -m). */
static const char *yname(const struct stf_syms *s, uint32_t id, char *buf, size_t len)
{
    uint32_t obj, fid;
    stf_syms_split(s, id, &obj, &fid);
    const char *nm = stf_tracer_name(id);
    if (!nm)
        nm = stf_syms_lookup(s, obj, fid);
    if (nm)
        return nm;
    snprintf(buf, len, "%" PRIu32, id);
    return buf;
}

static void make_name(FILE *f, uint32_t id, void *ctx)
{
    const struct yaml *y = ctx;
    char buf[24];
    const char *name = yname(y->syms, id, buf, sizeof buf);
    scalar(f, name, strlen(name));
}

/* One record line. The converter writes one per record, so the line is put together without
 * printf, and each function's quoted name is made once (tool_names). */
static int record(struct yaml *y, const struct stf_item *it, const struct ythr *t, const char *kind,
                  const uint8_t *data, size_t len)
{
    const char *name = tool_names_get(&y->names, t->func_id, make_name, y);
    if (!name)
        return -1;
    char buf[160];
    char *p = tool_put_str(buf, "  - { type: ");
    p = tool_put_i64(p, t->type);
    p = tool_put_str(p, ", func-id: ");
    p = tool_put_i64(p, t->func_id);
    p = tool_put_str(p, ", function: ");
    fwrite(buf, 1, (size_t)(p - buf), y->f);
    fputs(name, y->f);
    if (y->nargs && it->kind == STF_K_FUNCTION) {
        fputs(", args: [ ", y->f);
        for (size_t i = 0; i < y->nargs; i++)
            fprintf(y->f, "%s%" PRIu64, i ? ", " : "", y->args[i]);
        fputs(" ]", y->f);
    }
    p = tool_put_str(buf, ", cpu: ");
    p = tool_put_i64(p, it->cpu);
    p = tool_put_str(p, ", thread: ");
    p = tool_put_i64(p, it->tid);
    p = tool_put_str(p, ", process: ");
    p = tool_put_i64(p, it->pid);
    p = tool_put_str(p, ", kind: ");
    p = tool_put_str(p, kind);
    p = tool_put_str(p, ", tsc: ");
    p = tool_put_u64(p, it->tsc);
    p = tool_put_str(p, ", data: ");
    fwrite(buf, 1, (size_t)(p - buf), y->f);
    if (len == 0)
        fputs("''", y->f); /* what scalar() writes for an empty string */
    else
        scalar(y->f, data, len);
    fputs(" }\n", y->f);
    return 0;
}

static int flush_pending(struct yaml *y)
{
    if (!y->pending)
        return 0;
    y->pending = false;
    struct ythr *t = ythread(y, &y->fn);
    if (!t)
        return -1;
    t->func_id = y->fn.func_id;
    static const char *const kinds[] = {"function-enter", "function-exit", "function-tail-exit",
                                        "function-enter-arg"};
    int rc =
        record(y, &y->fn, t, y->fn.action < 4 ? kinds[y->fn.action] : "function-enter", NULL, 0);
    y->nargs = 0;
    return rc;
}

static int yaml_item(struct yaml *y, const struct stf_item *it)
{
    if (it->kind == STF_M_CALL_ARG) {
        if (!y->pending)
            return 0;
        if (y->nargs == y->capargs) {
            uint64_t *n = tool_grow(y->args, &y->capargs, sizeof *n, 8);
            if (!n)
                return -1;
            y->args = n;
        }
        y->args[y->nargs++] = it->value;
        return 0;
    }
    if (it->kind != STF_K_FUNCTION && it->kind != STF_M_CUSTOM_EVENT &&
        it->kind != STF_M_TYPED_EVENT)
        return 0;
    if (flush_pending(y) != 0)
        return -1;
    if (it->kind == STF_K_FUNCTION) {
        y->fn = *it;
        y->fn.payload = NULL;
        y->pending = true;
        return 0;
    }
    struct ythr *t = ythread(y, it);
    if (!t)
        return -1;
    if (it->kind == STF_M_TYPED_EVENT)
        t->type = it->event_type;
    return record(y, it, t, it->kind == STF_M_TYPED_EVENT ? "typed-event" : "custom-event",
                  it->payload, it->payload_len);
}

int convert_yaml(const char *path, const char *out, const char *syms_opt)
{
    struct tool_trace tr;
    struct tool_out o;
    FILE *f = conv_begin(&tr, &o, path, out, syms_opt, NULL);
    if (f) /* the records as llvm-xray writes them: their own timestamps, never corrected */
        vclock_init(&tr.vc, NULL);
    if (!f)
        return EXIT_BAD_TRACE;
    const struct stf_header *h = stf_cursor_header(tr.c);
    fprintf(
        f,
        "---\nheader:\n  version:         %u\n  type:            %u\n"
        "  constant-tsc:    %s\n  nonstop-tsc:     %s\n  cycle-frequency: %" PRIu64 "\nrecords:\n",
        (unsigned)h->version, (unsigned)h->type, h->bits & STF_BIT_CONSTANT_TSC ? "true" : "false",
        h->bits & STF_BIT_NONSTOP_TSC ? "true" : "false", h->cycle_freq);
    struct yaml y = {.f = f, .syms = tr.syms};
    struct stf_item it;
    int rc, status = EXIT_OK;
    while ((rc = tool_trace_next(&tr, &it)) == STF_OK) {
        if (yaml_item(&y, &it) != 0) {
            tool_err("out of memory");
            status = EXIT_BAD_TRACE;
            break;
        }
    }
    if (tool_trace_end(&tr, rc) != EXIT_OK && status == EXIT_OK)
        status = EXIT_BAD_TRACE;
    if (status == EXIT_OK && flush_pending(&y) != 0) {
        tool_err("out of memory");
        status = EXIT_BAD_TRACE;
    }
    fputs("...\n", f);
    int st = tool_out_close(&o, status == EXIT_OK) ? EXIT_BAD_TRACE : EXIT_OK;
    if (status == EXIT_OK)
        status = st;
    free(y.t);
    free(y.args);
    u64map_free(&y.map);
    tool_names_free(&y.names);
    tool_trace_close(&tr);
    return status;
}
