/* Writing a call's recorded arguments and return value (callargs.h). Without the program's
 * types (DWARF) a register is a 64-bit number of unknown type: shown as argN=0x... in hex (its
 * low half may be a negative int, its whole an address), as the issue that asked for them says;
 * the string arguments the user asked for (argN/s) are shown as strings instead. */
#include "callargs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct out {
    char *p;
    size_t len, n;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->n + 1 >= o->len)
        return;
    size_t room = o->len - 1 - o->n;
    if (n > room) { /* cut: say so */
        memcpy(o->p + o->n, s, room);
        o->n += room;
        if (o->len >= 4)
            memcpy(o->p + o->len - 4, "...", 3);
        return;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static void put_hex(struct out *o, uint64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof b, "0x%" PRIx64, v);
    put(o, b, (size_t)n);
}

static void put_string(struct out *o, const uint8_t *b, size_t n, bool cut)
{
    put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        char e[8];
        uint8_t c = b[i];
        int k;
        switch (c) {
        case '\n':
            k = snprintf(e, sizeof e, "\\n");
            break;
        case '\t':
            k = snprintf(e, sizeof e, "\\t");
            break;
        case '\r':
            k = snprintf(e, sizeof e, "\\r");
            break;
        case '"':
        case '\\':
            k = snprintf(e, sizeof e, "\\%c", c);
            break;
        default:
            k = c >= 0x20 && c < 0x7f ? snprintf(e, sizeof e, "%c", c)
                                      : snprintf(e, sizeof e, "\\x%02x", c);
        }
        put(o, e, (size_t)k);
    }
    put(o, cut ? "\"..." : "\"", cut ? 4 : 1);
}

static void one_string(void *arg, unsigned argno, unsigned flags, const uint8_t *b, size_t n)
{
    struct tool_callargs *a = arg;
    if (argno < 1 || argno > CS_MAX_ARGS)
        return;
    a->s[argno - 1].have = true;
    a->s[argno - 1].flags = flags;
    a->s[argno - 1].b = b;
    a->s[argno - 1].n = n;
}

void tool_callargs_of(struct tool_callargs *a, const struct cs_thread *t, size_t i,
                      const struct cs_frame *f, const uint64_t *ret)
{
    memset(a, 0, sizeof *a);
    a->nargs = f->nargs;
    a->ret = ret;
    if (f != &t->st[i] || t->switched) { /* a parked context's frame: its first argument only */
        a->nargs = f->nargs > 1 ? 1 : f->nargs;
        a->v[0] = f->arg;
        return;
    }
    for (unsigned k = 0; k < f->nargs && k < CS_MAX_ARGS; k++)
        a->v[k] = k == 0 ? f->arg : t->xargs[i][k];
    if (f->nargs)
        cs_strings(t, i, one_string, a);
}

/* The raw registers of a value located at loc, from the recorded arguments (is_ret: from the
 * return registers): how many of its eightbytes were recorded (0: "?"). */
static size_t regs_of(const struct tool_callargs *a, const struct tool_dw_loc *loc, bool is_ret,
                      uint64_t vals[2], int *argno)
{
    enum tool_dw_where w[2] = {loc->where, loc->where2};
    int r[2] = {loc->reg, loc->reg2};
    size_t n = 0;
    *argno = 0;
    for (int i = 0; i < 2 && (i == 0 || w[1] != TOOL_DW_NONE); i++) {
        if (is_ret && a->ret && w[i] == TOOL_DW_IREG && (r[i] == 0 || r[i] == -1))
            vals[n++] = a->ret[r[i] == 0 ? 0 : 1];
        else if (is_ret && a->ret && w[i] == TOOL_DW_SSE && (r[i] == 0 || r[i] == 1))
            vals[n++] = a->ret[2 + r[i]];
        else if (!is_ret && w[i] == TOOL_DW_IREG && r[i] >= 1 && (unsigned)r[i] <= a->nargs &&
                 r[i] <= CS_MAX_ARGS) {
            if (i == 0)
                *argno = r[i];
            vals[n++] = a->v[r[i] - 1];
        } else {
            break;
        }
    }
    return n;
}

static void put_value(struct out *o, const struct tool_callargs *a, const struct tool_dw_param *p)
{
    uint64_t vals[2] = {0, 0};
    int argno;
    size_t n = regs_of(a, &p->loc, p->ret, vals, &argno);
    const uint8_t *str = NULL;
    size_t slen = 0;
    bool cut = false, fault = false;
    if (p->kind == TOOL_DW_STR && argno && a->s[argno - 1].have) {
        unsigned fl = a->s[argno - 1].flags;
        if (!(fl & (STF_ARGSTR_NULL | STF_ARGSTR_SKIPPED)) &&
            !((fl & STF_ARGSTR_FAULT) && a->s[argno - 1].n == 0)) {
            str = a->s[argno - 1].b;
            slen = a->s[argno - 1].n;
            cut = (fl & (STF_ARGSTR_TRUNCATED | STF_ARGSTR_FAULT)) != 0;
        }
        fault = (fl & STF_ARGSTR_FAULT) != 0 && a->s[argno - 1].n == 0;
    }
    char b[512];
    int k = tool_dw_format(p, vals, n, str, slen, cut, fault, b, sizeof b);
    if (k < 0)
        put(o, "?", 1);
    else
        put(o, b, (size_t)k < sizeof b ? (size_t)k : sizeof b - 1);
}

const char *tool_args_text(const struct tool_callargs *a, const struct tool_dw_func *dw, char *buf,
                           size_t len)
{
    struct out o = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    if (!a->nargs || !len)
        return buf;
    put(&o, "(", 1);
    if (dw) {
        for (size_t k = 0; k < dw->nparams; k++) {
            const struct tool_dw_param *p = &dw->params[k];
            if (k)
                put(&o, ", ", 2);
            if (p->name[0]) {
                put(&o, p->name, strlen(p->name));
                put(&o, "=", 1);
            }
            if (dw->abi_changed)
                put(&o, "?", 1);
            else
                put_value(&o, a, p);
        }
        if (dw->variadic)
            put(&o, dw->nparams ? ", ..." : "...", dw->nparams ? 5 : 3);
        put(&o, ")", 1);
        buf[o.n] = '\0';
        return buf;
    }
    for (unsigned k = 0; k < a->nargs && k < CS_MAX_ARGS; k++) {
        char name[8];
        int nl = snprintf(name, sizeof name, "%sarg%u=", k ? ", " : "", k + 1);
        put(&o, name, (size_t)nl);
        if (!a->s[k].have) {
            put_hex(&o, a->v[k]);
            continue;
        }
        unsigned fl = a->s[k].flags;
        if (fl & STF_ARGSTR_NULL)
            put(&o, "NULL", 4);
        else if ((fl & (STF_ARGSTR_FAULT | STF_ARGSTR_SKIPPED)) && a->s[k].n == 0)
            put_hex(&o, a->v[k]); /* unreadable: its address */
        else
            put_string(&o, a->s[k].b, a->s[k].n,
                       (fl & (STF_ARGSTR_TRUNCATED | STF_ARGSTR_FAULT)) != 0);
    }
    if (a->nargs > CS_MAX_ARGS)
        put(&o, ", ...", 5);
    put(&o, ")", 1);
    buf[o.n] = '\0';
    return buf;
}

const char *tool_ret_text(const struct tool_callargs *a, const struct tool_dw_func *dw, char *buf,
                          size_t len)
{
    struct out o = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    if (!a->ret || !len)
        return buf;
    if (dw && (dw->ret.loc.where == TOOL_DW_NONE || dw->abi_changed))
        return buf; /* void (or nothing known of it) */
    put(&o, " = ", 3);
    if (dw)
        put_value(&o, a, &dw->ret);
    else
        put_hex(&o, a->ret[0]);
    buf[o.n] = '\0';
    return buf;
}
