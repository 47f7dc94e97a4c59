/* How the tools show C++ names: --names short (the default), full or mangled.
 *
 * full is the demangler's output (libstdc++'s __cxa_demangle, the Itanium C++ ABI's):
 * `long rt::twice<long>(long)`. short keeps the namespaces, classes and the function's own name
 * and drops the return type, template arguments and parameter list, as uftrace's simple
 * demangling does: `rt::twice`. It is the default because tables, flame graphs and call graphs
 * are read by name, and full names of templated code run to hundreds of characters; the price is
 * that overloads and template instances share a short name (account and graph keep them apart
 * by id; stack and flamegraph merge them), which --names full tells apart. mangled shows the
 * symbols as the object has them (so does SLEDTRACE_NO_DEMANGLE=1, kept for scripts). */
#include "names.h"

#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (C linkage). Debian's libstdc++6 is on every machine that has clang,
 * so this adds no package. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static int mode = TOOL_NAMES_SHORT;
static int explicit_mode; /* --names was given */

int tool_names_mode(const char *v)
{
    static const char *const modes[] = {"short", "full", "mangled"};
    for (int i = 0; i < 3; i++)
        if (strcmp(v, modes[i]) == 0) {
            mode = i;
            explicit_mode = 1;
            return 0;
        }
    return -1;
}

void tool_names_default(int m)
{
    if (!explicit_mode)
        mode = m;
}

/* Where the parameter list of a demangled name begins (its last top-level "(...)", before any
 * trailing qualifiers such as " const" or " [clone .cold]"), or NULL when it has none. */
static const char *params(const char *d)
{
    size_t n = strlen(d);
    const char *end = d + n;
    /* " [clone .cold.1]" suffixes */
    while (end > d && end[-1] == ']') {
        const char *open = end - 1;
        while (open > d && *open != '[')
            open--;
        if (open == d || open[-1] != ' ')
            break;
        end = open - 1;
    }
    /* trailing qualifiers: " const", " volatile", " &", " &&" */
    for (;;) {
        static const char *const quals[] = {" const", " volatile", " &&", " &"};
        int cut = 0;
        for (size_t q = 0; q < sizeof quals / sizeof quals[0]; q++) {
            size_t ql = strlen(quals[q]);
            if ((size_t)(end - d) > ql && strncmp(end - ql, quals[q], ql) == 0) {
                end -= ql;
                cut = 1;
            }
        }
        if (!cut)
            break;
    }
    if (end == d || end[-1] != ')')
        return NULL;
    int depth = 0;
    for (const char *p = end - 1; p >= d; p--) {
        if (*p == ')')
            depth++;
        else if (*p == '(' && --depth == 0)
            return p;
    }
    return NULL;
}

/* Is "operator" the name at p (a word, not part of another identifier)? */
static int is_operator(const char *start, const char *p)
{
    return strncmp(p, "operator", 8) == 0 && (p == start || p[-1] == ':' || p[-1] == ' ') &&
           !((p[8] >= 'a' && p[8] <= 'z') || (p[8] >= 'A' && p[8] <= 'Z') ||
             (p[8] >= '0' && p[8] <= '9') || p[8] == '_');
}

char *tool_short_name(const char *d)
{
    const char *stop = params(d);
    size_t n = stop ? (size_t)(stop - d) : strlen(d);
    char *out = malloc(n + 1), *q = out;
    if (!out)
        return NULL;
    /* Copy without template arguments; an operator's own symbols (operator<, operator()) are
     * kept as they are. The name begins after the last top-level space before it (a return
     * type ends there; spaces inside "(anonymous namespace)" or a lambda's "{...}" are not
     * top-level), and an operator's own spaces ("operator new") do not count. */
    const char *p = d, *end = d + n;
    char *start = out;
    int angle = 0, paren = 0, brace = 0, in_operator = 0;
    while (p < end) {
        if (angle == 0 && !in_operator && is_operator(d, p)) {
            in_operator = 1;
            const char *e = p + 8;
            while (e < end && *e == ' ')
                e++;
            /* operator<, operator<<, operator<=, operator<=>: the symbol, not template args */
            while (e < end && (*e == '<' || *e == '=' || *e == '>') &&
                   (e == p + 8 || e[-1] == '<' || e[-1] == '=' || e[-1] == 'r'))
                e++;
            memcpy(q, p, (size_t)(e - p));
            q += e - p;
            p = e;
            continue;
        }
        char c = *p++;
        if (c == '<') {
            angle++;
            continue;
        }
        if (c == '>' && angle > 0) {
            angle--;
            continue;
        }
        if (angle > 0)
            continue;
        if (c == '(')
            paren++;
        else if (c == ')' && paren > 0)
            paren--;
        else if (c == '{')
            brace++;
        else if (c == '}' && brace > 0)
            brace--;
        else if (c == ':' && in_operator && p < end && *p == ':')
            in_operator = 0; /* "A::operator B::..." does not happen; safe */
        *q++ = c;
        if (c == ' ' && paren == 0 && brace == 0 && !in_operator)
            start = q;
    }
    while (q > out && q[-1] == ' ')
        q--; /* "operator<< <int>": the space before the template arguments */
    *q = '\0';
    if (start != out)
        memmove(out, start, strlen(start) + 1);
    return out;
}

char *tool_demangle(const char *name, void *arg)
{
    (void)arg;
    if (mode == TOOL_NAMES_MANGLED || name[0] != '_' || name[1] != 'Z')
        return NULL;
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    if (mode == TOOL_NAMES_FULL)
        return d;
    char *s = tool_short_name(d);
    free(d);
    return s;
}
