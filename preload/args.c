/* SLEDTRACE_ARGS: the functions that record their arguments and return value, and what of them.
 *
 * Syntax (uftrace's -A/-R shape): a list of `PATTERN[@SPEC]` separated by commas or semicolons,
 * PATTERN as SLEDTRACE_FILTER's (`[LIB:]GLOB`, tested against the symbol, its demangled form and
 * that form without its parameters: filter.c), SPEC a comma-separated list of
 *   argN      record the integer argument registers 1..N (rdi rsi rdx rcx r8 r9; N 1..6)
 *   argN/s    the same, and N's pointer as a string (copied, bounded: SLEDTRACE_ARGS_STRLEN)
 *   args      all six
 *   retval    the return registers (rax, rdx, xmm0, xmm1)
 * A token after a SPEC that is one of these words belongs to it; any other token starts the next
 * pattern (so a function named `retval` is written `[r]etval`). A pattern without SPEC records
 * all six argument registers and the return value. A function matching several patterns takes
 * the union. The format (CallArgument records, typed events) is format/stf.h's "Arguments".
 *
 * Functions that match are patched to their own trampolines (patcher: stp_object_record_args,
 * stp_tramp_entry_args / stp_tramp_exit_args): every other function keeps its plain ones and
 * pays nothing. Their handlers (hot.c, stp_event_args / stp_event_ret) find what to record in a
 * table from function id (as written into the sleds: the object's id base + its function id) to
 * spec, made here when an object is patched (start-up, dlopen: under the runtime's objs_lock):
 * open addressing, grown by copying into a table twice the size that is then published with a
 * release store (paired with the acquire load in str_args_spec); the old one is never freed, for
 * a handler may still be reading it (the sum of all is under twice the last). A slot's spec is
 * written before its id, the id with release (paired with the acquire in str_args_spec). */
#include "str.h"
#include "stp.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Atomic(struct str_args_table *) str_args_table;
unsigned str_args_strlen = 64;

struct pat {
    char *lib, *glob;
    uint16_t spec;
    unsigned long matched;
};

static struct pat *pats;
static size_t npats;
static int parsed;

/* A SPEC word: its bits, or 0 when tok is not one. */
static uint16_t spec_word(const char *tok, size_t n)
{
    if (n == 6 && memcmp(tok, "retval", 6) == 0)
        return STR_ARGS_RET;
    if (n == 4 && memcmp(tok, "args", 4) == 0)
        return 6;
    if (n >= 4 && memcmp(tok, "arg", 3) == 0 && tok[3] >= '1' && tok[3] <= '6' &&
        (n == 4 || (n == 6 && tok[4] == '/' && tok[5] == 's'))) {
        unsigned k = (unsigned)(tok[3] - '0');
        return (uint16_t)(k | (n == 6 ? 1u << (STR_ARGS_STR_SHIFT + k - 1) : 0));
    }
    return 0;
}

/* The union of two specs (the larger argument count). */
static uint16_t spec_or(uint16_t a, uint16_t b)
{
    unsigned na = a & STR_ARGS_N, nb = b & STR_ARGS_N;
    return (uint16_t)(((a | b) & ~STR_ARGS_N) | (na > nb ? na : nb));
}

static void parse(void)
{
    parsed = 1;
    const char *v = str_cfg.args;
    if (!v)
        return;
    size_t cap = 1;
    for (const char *c = v; *c; c++)
        cap += *c == ',' || *c == ';';
    pats = calloc(cap, sizeof *pats);
    if (!pats) {
        str_log(STR_WARN, "SLEDTRACE_ARGS: out of memory; no arguments recorded");
        return;
    }
    struct pat *cur = NULL;
    int has_spec = 0;
    for (const char *s = v; *s;) {
        size_t n = strcspn(s, ",;");
        uint16_t w = n ? spec_word(s, n) : 0;
        if (n && w && cur && has_spec) {
            cur->spec = spec_or(cur->spec, w);
        } else if (n) {
            const char *at = memchr(s, '@', n);
            size_t pn = at ? (size_t)(at - s) : n;
            cur = &pats[npats];
            char *text = strndup(s, pn);
            if (!text)
                break;
            cur->glob = text;
            cur->lib = NULL;
            for (size_t i = 0; i < pn; i++) { /* [LIB:] as filter.c: a "::" is the name's */
                if (text[i] != ':')
                    continue;
                if (text[i + 1] == ':') {
                    i++;
                    continue;
                }
                text[i] = '\0';
                cur->lib = text;
                cur->glob = text + i + 1;
                break;
            }
            has_spec = at != NULL;
            cur->spec = has_spec ? 0 : 6 | STR_ARGS_RET;
            if (at) {
                size_t sn = n - pn - 1;
                uint16_t sw = spec_word(at + 1, sn);
                if (!sw)
                    str_log(STR_WARN,
                            "SLEDTRACE_ARGS: '%.*s' is not argN, argN/s, args or retval; ignored",
                            (int)sn, at + 1);
                cur->spec = sw;
            }
            npats++;
        }
        s += n;
        if (*s)
            s++;
    }
    const char *l = getenv("SLEDTRACE_ARGS_STRLEN");
    if (l && *l) {
        char *end;
        unsigned long k = strtoul(l, &end, 10);
        if (*end || k < 1 || k > STR_ARGS_STRLEN_MAX)
            str_log(STR_WARN, "SLEDTRACE_ARGS_STRLEN=%s is not 1..%u; using %u", l,
                    STR_ARGS_STRLEN_MAX, str_args_strlen);
        else
            str_args_strlen = (unsigned)k;
    }
}

int str_args_active(void)
{
    return str_cfg.args != NULL;
}

/* The spec of function `name` of object lib (0: none). */
static uint16_t spec_of(const char *lib, const char *name)
{
    uint16_t spec = 0;
    char *names[3] = {(char *)name, NULL, NULL};
    size_t nn = str_filter_names(name, names);
    for (size_t i = 0; i < npats; i++) {
        struct pat *p = &pats[i];
        if (p->lib && fnmatch(p->lib, lib, 0) != 0)
            continue;
        for (size_t k = 0; k < nn; k++)
            if (fnmatch(p->glob, names[k], 0) == 0) {
                spec = spec_or(spec, p->spec);
                p->matched++;
                break;
            }
    }
    str_filter_names_free(names, nn);
    return spec;
}

static uint32_t slot_hash(uint32_t id)
{
    return id * 0x9e3779b1u;
}

/* Adds id -> spec; 0, or -1 when out of memory. Under objs_lock. */
static int table_add(uint32_t id, uint16_t spec)
{
    static size_t count;
    struct str_args_table *t = atomic_load_explicit(&str_args_table, memory_order_relaxed);
    if (!t || 2 * (count + 1) > (size_t)t->mask + 1) {
        uint32_t cap = t ? 2 * (t->mask + 1) : 256;
        struct str_args_table *nt =
            calloc(1, sizeof *nt + cap * sizeof nt->slot[0]); /* never freed: see the top */
        if (!nt)
            return -1;
        nt->mask = cap - 1;
        for (uint32_t i = 0; t && i <= t->mask; i++) {
            uint32_t have = atomic_load_explicit(&t->slot[i].id, memory_order_relaxed);
            if (!have)
                continue;
            uint32_t h = slot_hash(have) & nt->mask;
            while (atomic_load_explicit(&nt->slot[h].id, memory_order_relaxed))
                h = (h + 1) & nt->mask;
            nt->slot[h].spec = t->slot[i].spec;
            atomic_store_explicit(&nt->slot[h].id, have, memory_order_relaxed);
        }
        /* Release: the slots above are written before the table is seen (str_args_spec's
         * acquire load of the pointer). */
        atomic_store_explicit(&str_args_table, nt, memory_order_release);
        t = nt;
    }
    uint32_t h = slot_hash(id) & t->mask;
    for (;;) {
        uint32_t have = atomic_load_explicit(&t->slot[h].id, memory_order_relaxed);
        if (have == id) { /* an object loaded again: the same function, the same spec */
            t->slot[h].spec = spec;
            return 0;
        }
        if (!have)
            break;
        h = (h + 1) & t->mask;
    }
    t->slot[h].spec = spec;
    /* Release: the spec is written before the id is seen (str_args_spec's acquire). */
    atomic_store_explicit(&t->slot[h].id, id, memory_order_release);
    count++;
    return 0;
}

size_t str_args_mark(struct stp_object *obj, const char *lib, uint32_t id_base)
{
    if (!str_cfg.args)
        return 0;
    if (!parsed)
        parse();
    size_t n = stp_object_nfuncs(obj), marked = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t id;
        uintptr_t addr;
        const char *name;
        stp_object_func(obj, i, &id, &addr, &name);
        uint16_t spec = spec_of(lib, name ? name : "");
        if (!spec)
            continue;
        if (table_add(id_base + id, spec) != 0) {
            str_log(STR_WARN, "SLEDTRACE_ARGS: out of memory; %s: no more arguments recorded", lib);
            break;
        }
        stp_object_record_args(obj, i, (spec & STR_ARGS_N) != 0, (spec & STR_ARGS_RET) != 0);
        marked++;
    }
    return marked;
}

void str_args_report(void)
{
    for (size_t i = 0; i < npats; i++)
        if (!pats[i].matched && !pats[i].lib) { /* a LIB's may come with a dlopen */
            pats[i].matched = 1;                /* said once */
            str_log(STR_WARN, "SLEDTRACE_ARGS: %s%s%s matches no function",
                    pats[i].lib ? pats[i].lib : "", pats[i].lib ? ":" : "", pats[i].glob);
        }
}
