/* SLEDTRACE_FILTER, SLEDTRACE_EXCLUDE and SLEDTRACE_EXCLUDE_FILE: which functions are patched.
 *
 * The two variables are comma-separated lists of patterns `[LIB:]GLOB` (fnmatch). The file
 * (log.c reads it whole at start-up) holds one pattern per line: a C++ name may contain commas,
 * `#` at the start of a line makes it a comment, blank lines are skipped and each line loses its
 * leading and trailing blanks (and a '\r'). Its patterns and SLEDTRACE_EXCLUDE's add up. LIB, a
 * glob on the object's file name, is what comes before the first single ':'; a "::" belongs to
 * the name, so C++ patterns need no escaping: `app::risky*` is a GLOB, `libapp.so:app::risky*`
 * a LIB and a GLOB. A function is tested under each of its names: the symbol as the object has
 * it (C++: mangled), and for a C++ symbol its demangled form (`app::risky(int)`) and that form
 * without its parameter list (`app::risky`). Demangling uses the program's own __cxa_demangle
 * (libstdc++, which a C++ program has loaded): the runtime links no C++ library; without it only
 * the symbol as written is tested.
 *
 * Any number of patterns of any length: each list is parsed once, at the first function tested
 * (start-up, or the first dlopen of an instrumented library), into three allocations made then
 * (the patterns, their text, an index) and never again. A file written by `sledtrace account
 * --suggest-exclude` holds thousands of exact names, and start-up tests every function of every
 * object against them, so a GLOB without a wildcard (none of `*?[` outside a backslash escape)
 * is a literal: literals sit in a hash table on their unescaped text, and each of a function's
 * names costs one lookup whatever their number. Only the other patterns are tried one by one
 * with fnmatch.
 *
 * A pattern that matches no function is a mistake worth a warning at the default level (a typo
 * leaves everything, or nothing, traced): str_filter_report, after each scan of the loaded
 * objects, warns once about every pattern that has matched nothing so far in the objects its
 * LIB part names (a LIB matching no loaded object yet waits for one). A file that outlived the
 * build it was written for may hold hundreds of such names: past MAX_SAID warnings a list's
 * others are counted in one line (SLEDTRACE_LOG=info names each).
 *
 * Threads: called under the runtime's objs_lock (start-up, dlopen), never on the hot path.
 */
#include "str.h"

#include <dlfcn.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SAID = 8 };

struct pattern {
    const char *text;      /* as the user wrote it (the line, trimmed) */
    const char *lib;       /* "" when none */
    const char *glob;      /* into text */
    const char *literal;   /* the glob unescaped when it has no wildcard, else NULL */
    uint32_t line;         /* its line in SLEDTRACE_EXCLUDE_FILE, 0 for a variable's */
    uint32_t next;         /* the next literal in its hash bucket, index + 1 (0: none) */
    unsigned long matched; /* functions whose name matched */
    int lib_seen;          /* an object matching lib was scanned */
    int warned;
};

struct list {
    const char *var;
    struct pattern *p;
    size_t n;
    uint32_t *bucket; /* literals by hash: index + 1 of the first (0: none); mask + 1 of them */
    uint32_t mask;
    uint32_t *globs; /* indices of the patterns that are not literals */
    size_t nglobs;
    char *arena; /* every pattern's text, lib and literal */
    size_t said; /* warnings given about patterns matching nothing */
    int parsed, on;
};

static struct list filter = {.var = "SLEDTRACE_FILTER"}, exclude = {.var = "SLEDTRACE_EXCLUDE"};

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The glob unescaped into out (room for strlen(glob) + 1), when it has no wildcard: 1; else 0. */
static int unescape(const char *glob, char *out)
{
    for (; *glob; glob++) {
        if (*glob == '*' || *glob == '?' || *glob == '[')
            return 0;
        if (*glob == '\\') {
            if (!glob[1])
                return 0; /* a trailing backslash: left to fnmatch */
            glob++;
        }
        *out++ = *glob;
    }
    *out = '\0';
    return 1;
}

/* Splits `[LIB:]GLOB` (copied into the arena at *a) and indexes the pattern. */
static void add(struct list *l, const char *s, size_t n, uint32_t line, char **a)
{
    struct pattern *pt = &l->p[l->n];
    *pt = (struct pattern){.line = line, .lib = ""};
    char *text = *a;
    memcpy(text, s, n);
    text[n] = '\0';
    *a += n + 1;
    pt->text = pt->glob = text;
    for (size_t i = 0; i < n; i++) {
        if (text[i] != ':')
            continue;
        if (text[i + 1] == ':') {
            i++; /* "::": part of a C++ name */
            continue;
        }
        char *lib = *a;
        memcpy(lib, text, i);
        lib[i] = '\0';
        *a += i + 1;
        pt->lib = lib;
        pt->glob = text + i + 1;
        break;
    }
    char *lit = *a;
    if (unescape(pt->glob, lit)) {
        pt->literal = lit;
        *a += strlen(lit) + 1;
    } else {
        l->globs[l->nglobs++] = (uint32_t)l->n;
    }
    l->n++;
}

/* The list's patterns from the variable's value (spec, comma-separated) and, for the exclude
 * list, the file's text (file, one a line). On failure (no memory) the list is off: as if not
 * given, said once. */
static void parse(struct list *l, const char *spec, const char *file)
{
    l->parsed = 1;
    size_t max = 0, bytes = 0;
    if (spec) {
        max += 1;
        for (const char *c = spec; *c; c++)
            max += *c == ',';
        bytes += strlen(spec) + 1;
    }
    if (file) {
        max += 1;
        for (const char *c = file; *c; c++)
            max += *c == '\n';
        bytes += strlen(file) + 1;
    }
    if (!max)
        return;
    size_t nb = 16; /* buckets: at most half of them used */
    while (nb < 2 * max)
        nb *= 2;
    l->p = malloc(max * sizeof *l->p);
    l->globs = malloc(max * sizeof *l->globs);
    l->bucket = calloc(nb, sizeof *l->bucket);
    /* a pattern's text, lib and literal: each at most its length + 1 */
    l->arena = malloc(3 * (bytes + max));
    if (!l->p || !l->globs || !l->bucket || !l->arena || max >= UINT32_MAX) {
        str_log(STR_WARN, "%s: out of memory for %zu patterns; ignored", l->var, max);
        free(l->p), free(l->globs), free(l->bucket), free(l->arena);
        l->p = NULL, l->globs = NULL, l->bucket = NULL, l->arena = NULL;
        return;
    }
    l->mask = (uint32_t)(nb - 1);
    char *a = l->arena;
    for (const char *p = spec; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n)
            add(l, p, n, 0, &a);
        p += n;
        if (*p == ',')
            p++;
    }
    uint32_t line = 0;
    for (const char *p = file; p && *p;) {
        size_t n = strcspn(p, "\n");
        const char *next = p + n + (p[n] == '\n');
        line++;
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
            n--;
        if (n && *p != '#')
            add(l, p, n, line, &a);
        p = next;
    }
    /* literals into their buckets, in file order along each chain */
    for (size_t i = l->n; i-- > 0;) {
        struct pattern *pt = &l->p[i];
        if (!pt->literal)
            continue;
        uint32_t *b = &l->bucket[hash(pt->literal) & l->mask];
        pt->next = *b;
        *b = (uint32_t)i + 1;
    }
    l->on = 1;
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

size_t str_filter_names(const char *name, char *out[3])
{
    struct names nm;
    names_of(name, &nm);
    for (size_t i = 0; i < 3; i++) /* out[1..n): demangled, bare (allocated) */
        out[i] = i < nm.n ? (char *)nm.v[i] : NULL;
    return nm.n;
}

void str_filter_names_free(char *names[3], size_t n)
{
    for (size_t i = 1; i < n; i++)
        free(names[i]);
}

/* Whether pattern pt's LIB part admits object lib (marking it seen if so). */
static int lib_ok(struct pattern *pt, const char *lib)
{
    if (pt->lib[0] && fnmatch(pt->lib, lib, 0) != 0)
        return 0;
    pt->lib_seen = 1;
    return 1;
}

/* Whether a pattern of l matches the function (marks every pattern that does). A literal
 * equals at most one of a function's names (they differ from each other), so each pattern
 * counts a function once. */
static int list_matches(struct list *l, const char *lib, const struct names *nm)
{
    int any = 0;
    for (size_t k = 0; k < nm->n; k++)
        for (uint32_t i = l->bucket[hash(nm->v[k]) & l->mask]; i; i = l->p[i - 1].next) {
            struct pattern *pt = &l->p[i - 1];
            if (strcmp(pt->literal, nm->v[k]) == 0 && lib_ok(pt, lib)) {
                pt->matched++;
                any = 1;
            }
        }
    for (size_t g = 0; g < l->nglobs; g++) {
        struct pattern *pt = &l->p[l->globs[g]];
        if (!lib_ok(pt, lib))
            continue;
        for (size_t k = 0; k < nm->n; k++)
            if (fnmatch(pt->glob, nm->v[k], 0) == 0) {
                pt->matched++;
                any = 1;
                break;
            }
    }
    return any;
}

/* A new object is being tested: literals whose LIB names it have now seen an object of theirs
 * (list_matches marks them only when a name matches too). Once per object, not per function. */
static void list_object(struct list *l, const char *lib)
{
    for (size_t i = 0; i < l->n; i++) {
        struct pattern *pt = &l->p[i];
        if (pt->literal && pt->lib[0] && !pt->lib_seen && fnmatch(pt->lib, lib, 0) == 0)
            pt->lib_seen = 1;
    }
}

int str_filter_active(void)
{
    return str_cfg.filter || str_cfg.exclude || str_cfg.exclude_text;
}

int str_filter_keep(const char *lib, const char *name)
{
    static uint32_t last_lib;
    static int have_last;
    if (!filter.parsed)
        parse(&filter, str_cfg.filter, NULL);
    if (!exclude.parsed)
        parse(&exclude, str_cfg.exclude, str_cfg.exclude_text);
    if (!have_last || hash(lib) != last_lib) {
        have_last = 1;
        last_lib = hash(lib);
        list_object(&filter, lib);
        list_object(&exclude, lib);
    }
    if (!name)
        name = "";
    struct names nm;
    names_of(name, &nm);
    int keep = !filter.on || list_matches(&filter, lib, &nm);
    /* Exclude patterns are tested even for functions the filter left out, so that they count as
     * matching what they name. */
    if (exclude.on && list_matches(&exclude, lib, &nm))
        keep = 0;
    names_free(&nm);
    return keep;
}

/* A LIB part that names no object scanned so far may still match a library loaded later. */
static void report(struct list *l)
{
    size_t more = 0;
    int more_file = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct pattern *pt = &l->p[i];
        if (pt->matched || pt->warned || (pt->lib[0] && !pt->lib_seen))
            continue;
        pt->warned = 1;
        /* A descendant of the process `sledtrace run` started (same environment, another
         * program) keeps quiet: the patterns were written for the program the user ran. */
        int level = str_cfg.descendant ? STR_INFO : STR_WARN;
        if (level == STR_WARN && l->said >= MAX_SAID) {
            more++;
            more_file |= pt->line != 0;
            level = STR_INFO;
        } else if (level == STR_WARN) {
            l->said++;
        }
        char where[32] = "";
        if (pt->line)
            snprintf(where, sizeof where, "_FILE line %u", (unsigned)pt->line);
        str_log(level,
                "%s%s: '%s' matches no function%s (patterns are shell globs on function names, "
                "C++ names demangled or not; LIB:GLOB limits one to an object)",
                l->var, where, pt->text, pt->lib[0] ? " of the objects it names" : "");
    }
    if (more)
        str_log(STR_WARN,
                "%s%s: %zu more patterns match no function (SLEDTRACE_LOG=info names them)", l->var,
                more_file ? "_FILE" : "", more);
}

void str_filter_report(void)
{
    report(&filter);
    report(&exclude);
}
