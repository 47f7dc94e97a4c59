/* SLEDTRACE_FILTER and SLEDTRACE_EXCLUDE: which functions are patched.
 *
 * Each is a comma-separated list of patterns `[LIB:]GLOB` (fnmatch). LIB, a glob on the object's
 * file name, is what comes before the first single ':'; a "::" belongs to the name, so C++
 * patterns need no escaping: `app::risky*` is a GLOB, `libapp.so:app::risky*` a LIB and a GLOB.
 * A function is tested under each of its names: the symbol as the object has it (C++: mangled),
 * and for a C++ symbol its demangled form (`app::risky(int)`) and that form without its
 * parameter list (`app::risky`). Demangling uses the program's own __cxa_demangle (libstdc++,
 * which a C++ program has loaded): the runtime links no C++ library; without it only the symbol
 * as written is tested.
 *
 * A pattern that matches no function is a mistake worth a warning at the default level (a typo
 * leaves everything, or nothing, traced): str_filter_report, after each scan of the loaded
 * objects, warns once about every pattern that has matched nothing so far in the objects its
 * LIB part names (a LIB matching no loaded object yet waits for one).
 *
 * Threads: called under the runtime's objs_lock (start-up, dlopen), never on the hot path.
 */
#include "str.h"

#include <dlfcn.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PATTERNS = 64, MAX_PATTERN = 512 };

struct pattern {
    char text[MAX_PATTERN]; /* as the user wrote it */
    char lib[MAX_PATTERN];  /* "" when none */
    const char *glob;       /* into text */
    unsigned long matched;  /* functions whose name matched */
    int lib_seen;           /* an object matching lib was scanned */
    int warned;
};

struct list {
    const char *var;
    struct pattern p[MAX_PATTERNS];
    size_t n;
    int parsed;
};

static struct list filter = {.var = "SLEDTRACE_FILTER"}, exclude = {.var = "SLEDTRACE_EXCLUDE"};

static void parse(struct list *l, const char *spec)
{
    l->parsed = 1;
    for (const char *p = spec; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= MAX_PATTERN || l->n == MAX_PATTERNS) {
            if (n >= MAX_PATTERN || l->n == MAX_PATTERNS)
                str_log(STR_WARN, "%s: pattern %zu ignored (more than %d patterns or %d bytes)",
                        l->var, l->n + 1, MAX_PATTERNS, MAX_PATTERN - 1);
        } else {
            struct pattern *pt = &l->p[l->n++];
            memcpy(pt->text, p, n);
            pt->text[n] = '\0';
            pt->glob = pt->text;
            for (size_t i = 0; i < n; i++) {
                if (pt->text[i] != ':')
                    continue;
                if (pt->text[i + 1] == ':') {
                    i++; /* "::": part of a C++ name */
                    continue;
                }
                memcpy(pt->lib, pt->text, i);
                pt->lib[i] = '\0';
                pt->glob = pt->text + i + 1;
                break;
            }
        }
        p += n;
        if (*p == ',')
            p++;
    }
}

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The names a function is tested under (see the top): up to three. */
struct names {
    const char *v[3];
    size_t n;
    char *demangled, *bare;
};

static void names_of(const char *name, struct names *nm)
{
    static demangle_fn demangle;
    static int looked;
    *nm = (struct names){.v = {name}, .n = 1};
    if (strncmp(name, "_Z", 2) != 0)
        return;
    if (!looked) {
        looked = 1;
        *(void **)&demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    }
    int status = -1;
    char *d = demangle ? demangle(name, NULL, NULL, &status) : NULL;
    if (!d || status != 0) {
        free(d);
        return;
    }
    nm->demangled = d;
    nm->v[nm->n++] = d;
    /* Without the parameter list: up to the first '(' outside template arguments. */
    int depth = 0;
    for (const char *c = d; *c; c++) {
        if (*c == '<')
            depth++;
        else if (*c == '>' && depth > 0)
            depth--;
        else if (*c == '(' && depth == 0 && c > d) {
            nm->bare = strndup(d, (size_t)(c - d));
            if (nm->bare)
                nm->v[nm->n++] = nm->bare;
            break;
        }
    }
}

static void names_free(struct names *nm)
{
    free(nm->demangled);
    free(nm->bare);
}

/* Whether a pattern of l matches the function (marks every pattern that does). */
static int list_matches(struct list *l, const char *lib, const struct names *nm)
{
    int any = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct pattern *pt = &l->p[i];
        if (pt->lib[0] && fnmatch(pt->lib, lib, 0) != 0)
            continue;
        pt->lib_seen = 1;
        for (size_t k = 0; k < nm->n; k++)
            if (fnmatch(pt->glob, nm->v[k], 0) == 0) {
                pt->matched++;
                any = 1;
                break;
            }
    }
    return any;
}

int str_filter_active(void)
{
    return str_cfg.filter || str_cfg.exclude;
}

int str_filter_keep(const char *lib, const char *name)
{
    if (!filter.parsed)
        parse(&filter, str_cfg.filter);
    if (!exclude.parsed)
        parse(&exclude, str_cfg.exclude);
    if (!name)
        name = "";
    struct names nm;
    names_of(name, &nm);
    int keep = !str_cfg.filter || list_matches(&filter, lib, &nm);
    /* Exclude patterns are tested even for functions the filter left out, so that they count as
     * matching what they name. */
    if (str_cfg.exclude && list_matches(&exclude, lib, &nm))
        keep = 0;
    names_free(&nm);
    return keep;
}

/* A LIB part that names no object scanned so far may still match a library loaded later. */
static void report(struct list *l, const char *lib)
{
    for (size_t i = 0; i < l->n; i++) {
        struct pattern *pt = &l->p[i];
        if (pt->matched || pt->warned)
            continue;
        if (pt->lib[0] && !pt->lib_seen && lib && fnmatch(pt->lib, lib, 0) == 0)
            pt->lib_seen = 1;
        if (pt->lib[0] && !pt->lib_seen)
            continue;
        pt->warned = 1;
        /* A descendant of the process `sledtrace run` started (same environment, another
         * program) keeps quiet: the patterns were written for the program the user ran. */
        str_log(str_cfg.descendant ? STR_INFO : STR_WARN,
                "%s: '%s' matches no function%s (patterns are shell globs on function names, "
                "C++ names demangled or not; LIB:GLOB limits one to an object)",
                l->var, pt->text, pt->lib[0] ? " of the objects it names" : "");
    }
}

void str_filter_report(void)
{
    report(&filter, NULL);
    report(&exclude, NULL);
}
