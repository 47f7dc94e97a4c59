/* Symbols sidecar (`sledtrace.PROG.PID.syms`) parser and lookup.
 *
 * Design
 *  - The file is read line by line (getline), so memory is proportional to the symbols kept, not
 *    to line lengths seen. Fields are split on single TABs; the last field (path or name) takes
 *    the rest of the line, so it may contain anything but a newline.
 *  - Function entries live in one array; an open-addressing hash table keyed on (objid, fid)
 *    indexes it. Names are individually allocated strings (an empty name is stored as NULL and
 *    looked up as unknown).
 *  - The first line must be `sledtrace-syms<TAB>1`. Lines of unknown type are ignored so that
 *    later runtimes can add record types. A malformed known line (field count, number, NUL byte)
 *    is skipped with a warning "FILE:LINE: reason, line skipped": one bad line must not cost
 *    every other name. The ids such a line may have named (its object and function id fields,
 *    when they parse) are left unnamed, as is a function or object id given twice: which line
 *    is right cannot be told, and a wrong name is worse than "#id". Unnamed ids stay in the
 *    table as entries without a name, so that a later line for them stays unnamed too.
 *  - Objects ('o' lines: load bias and path; 'b' lines: build id) are kept in a small array, in
 *    the order their first line came; either kind of line may come first, and each is
 *    checked for repetition on its own. A build id is kept as lower-case hex.
 *  - Warnings are counted; the first STF_SYMS_WARNINGS_KEPT messages are kept for the caller.
 */
#include "stf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

struct sym {
    uint32_t objid, fid;
    uint64_t addr;
    char *name;     /* NULL if empty or unnamed */
    bool ambiguous; /* named twice or by a skipped line: stays unnamed */
};

struct obj {
    uint32_t objid;
    uint64_t bias;
    char *path;        /* NULL if unknown or ambiguous */
    char *build_id;    /* lower-case hex; NULL if none recorded or ambiguous */
    bool has_o, has_b; /* an 'o' / 'b' line (or a skipped one) was seen for it */
};

struct stf_syms {
    struct sym *syms;
    size_t nsyms, capsyms;
    struct obj *objs;
    size_t nobjs, capobjs;
    uint32_t *table; /* index + 1 into syms; 0 = empty */
    size_t tcap;     /* power of two */
    size_t nwarn;    /* warnings issued while loading */
    char *warn[STF_SYMS_WARNINGS_KEPT];
    char *command; /* the `cmd` line, or NULL */
    int end_kind;  /* enum stf_end: the `exit` line */
    int end_value;
    struct tname *tnames; /* the `thread` lines */
    size_t ntnames, captnames;
    struct range *ranges; /* the `r` lines, sorted by first id once loaded */
    size_t nranges, capranges;
};

/* An object's own range of ids (an 'r' line): trace id = first + fid. */
struct range {
    uint32_t first, objid;
};

struct tname {
    int32_t pid, tid;
    char *name;
};

/* The process lines: cmd<TAB>text, exit<TAB>status|signal<TAB>N or exit<TAB>exec, and
 * thread<TAB>pid<TAB>tid<TAB>name. A malformed one is ignored (they only add to what the tools
 * show); the last of each wins. 1 when line was one of them. */
static int process_line(struct stf_syms *s, char *line)
{
    if (strncmp(line, "cmd\t", 4) == 0) {
        char *c = strdup(line + 4);
        if (!c)
            return -1;
        free(s->command);
        s->command = c;
        return 1;
    }
    if (strncmp(line, "exit\t", 5) == 0) {
        const char *v = line + 5;
        char *end;
        long n;
        if (strcmp(v, "exec") == 0) {
            s->end_kind = STF_END_EXEC;
            s->end_value = 0;
        } else if (strncmp(v, "status\t", 7) == 0 && (n = strtol(v + 7, &end, 10), !*end) && v[7] &&
                   n >= 0 && n <= 255) {
            s->end_kind = STF_END_STATUS;
            s->end_value = (int)n;
        } else if (strncmp(v, "signal\t", 7) == 0 && (n = strtol(v + 7, &end, 10), !*end) && v[7] &&
                   n > 0 && n < 128) {
            s->end_kind = STF_END_SIGNAL;
            s->end_value = (int)n;
        }
        return 1;
    }
    if (line[0] == 'r' && line[1] == '\t') {
        /* r<TAB>objid<TAB>first: ids from `first` belong to objid. Malformed: ignored (its
         * functions then show as ids). */
        char *p = line + 2, *end;
        unsigned long obj = strtoul(p, &end, 10);
        if (end == p || *end != '\t')
            return 1;
        p = end + 1;
        unsigned long first = strtoul(p, &end, 10);
        if (end == p || *end || obj > UINT32_MAX || first >= (1ul << 28) ||
            first < STF_ID_RANGES_FIRST)
            return 1;
        if (s->nranges == s->capranges) {
            size_t nc = s->capranges ? 2 * s->capranges : 16;
            struct range *nr = realloc(s->ranges, nc * sizeof *nr);
            if (!nr)
                return -1;
            s->ranges = nr;
            s->capranges = nc;
        }
        s->ranges[s->nranges++] = (struct range){(uint32_t)first, (uint32_t)obj};
        return 1;
    }
    if (strncmp(line, "thread\t", 7) == 0) {
        char *p = line + 7, *end;
        long pid = strtol(p, &end, 10);
        if (end == p || *end != '\t')
            return 1;
        p = end + 1;
        long tid = strtol(p, &end, 10);
        if (end == p || *end != '\t' || pid <= 0 || tid <= 0 || pid > INT32_MAX || tid > INT32_MAX)
            return 1;
        if (s->ntnames == s->captnames) {
            size_t nc = s->captnames ? 2 * s->captnames : 16;
            struct tname *nt = realloc(s->tnames, nc * sizeof *nt);
            if (!nt)
                return -1;
            s->tnames = nt;
            s->captnames = nc;
        }
        char *name = strdup(end + 1);
        if (!name)
            return -1;
        s->tnames[s->ntnames++] = (struct tname){(int32_t)pid, (int32_t)tid, name};
        return 1;
    }
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

void stf_syms_split(const struct stf_syms *s, uint32_t id, uint32_t *objid, uint32_t *fid)
{
    stf_split_id(id, objid, fid);
    if (!s || !s->nranges || id < s->ranges[0].first)
        return;
    size_t lo = 0, hi = s->nranges; /* the last range starting at or below id */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ranges[mid].first <= id)
            lo = mid;
        else
            hi = mid;
    }
    *objid = s->ranges[lo].objid;
    *fid = id - s->ranges[lo].first;
}

void stf_syms_take_process(struct stf_syms *dst, struct stf_syms *src)
{
    if (!dst || !src)
        return;
    free(dst->command);
    for (size_t i = 0; i < dst->ntnames; i++)
        free(dst->tnames[i].name);
    free(dst->tnames);
    dst->command = src->command;
    dst->end_kind = src->end_kind;
    dst->end_value = src->end_value;
    dst->tnames = src->tnames;
    dst->ntnames = src->ntnames;
    dst->captnames = src->captnames;
    src->command = NULL;
    src->tnames = NULL;
    src->ntnames = src->captnames = 0;
    src->end_kind = STF_END_UNKNOWN;
}

const char *stf_syms_command(const struct stf_syms *s)
{
    return s ? s->command : NULL;
}

int stf_syms_end(const struct stf_syms *s, int *value)
{
    if (value)
        *value = s ? s->end_value : 0;
    return s ? s->end_kind : STF_END_UNKNOWN;
}

const char *stf_syms_thread_name(const struct stf_syms *s, int32_t pid, int32_t tid)
{
    const char *name = NULL;
    for (size_t i = 0; s && i < s->ntnames; i++)
        if (s->tnames[i].tid == tid && (pid == 0 || s->tnames[i].pid == pid))
            name = s->tnames[i].name; /* the last line wins */
    return name;
}

static uint64_t key_hash(uint32_t objid, uint32_t fid)
{
    uint64_t k = ((uint64_t)objid << 32) | fid;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static long find_slot(const struct stf_syms *s, uint32_t objid, uint32_t fid)
{
    if (!s || s->tcap == 0)
        return -1;
    size_t mask = s->tcap - 1;
    for (size_t i = (size_t)key_hash(objid, fid) & mask;; i = (i + 1) & mask) {
        uint32_t v = s->table[i];
        if (v == 0)
            return (long)i;
        const struct sym *e = &s->syms[v - 1];
        if (e->objid == objid && e->fid == fid)
            return (long)i;
    }
}

static int rehash(struct stf_syms *s, size_t ncap)
{
    uint32_t *t = calloc(ncap, sizeof *t);
    if (!t)
        return -1;
    free(s->table);
    s->table = t;
    s->tcap = ncap;
    for (size_t i = 0; i < s->nsyms; i++) {
        long slot = find_slot(s, s->syms[i].objid, s->syms[i].fid);
        s->table[slot] = (uint32_t)(i + 1);
    }
    return 0;
}

/* Parse a decimal u32 field of n bytes exactly. */
static bool parse_u32(const char *str, size_t n, uint32_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (str[i] < '0' || str[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(str[i] - '0');
        if (v > UINT32_MAX)
            return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Parse "0x" followed by 1..16 hex digits. */
static bool parse_hex(const char *str, uint64_t *out)
{
    if (str[0] != '0' || (str[1] != 'x' && str[1] != 'X') || !str[2])
        return false;
    uint64_t v = 0;
    int n = 0;
    for (str += 2; *str; str++, n++) {
        int d;
        if (*str >= '0' && *str <= '9')
            d = *str - '0';
        else if (*str >= 'a' && *str <= 'f')
            d = *str - 'a' + 10;
        else if (*str >= 'A' && *str <= 'F')
            d = *str - 'A' + 10;
        else
            return false;
        if (n >= 16)
            return false;
        v = (v << 4) | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* Split line into exactly n fields on TABs; the last field keeps any further TABs. */
static bool split(char *line, char **f, int n)
{
    for (int i = 0; i < n - 1; i++) {
        f[i] = line;
        char *t = strchr(line, '\t');
        if (!t)
            return false;
        *t = '\0';
        line = t + 1;
    }
    f[n - 1] = line;
    return true;
}

/* Keeps "PATH:LINE: msg" as warning number nwarn (if among the first kept) and counts it. */
static int warn(struct stf_syms *s, const char *path, unsigned long lineno, const char *msg)
{
    if (s->nwarn < STF_SYMS_WARNINGS_KEPT) {
        int n = snprintf(NULL, 0, "%s:%lu: %s", path, lineno, msg);
        char *m = n >= 0 ? malloc((size_t)n + 1) : NULL;
        if (!m)
            return STF_ERR_NOMEM;
        snprintf(m, (size_t)n + 1, "%s:%lu: %s", path, lineno, msg);
        s->warn[s->nwarn] = m;
    }
    s->nwarn++;
    return STF_OK;
}

/* Adds function (objid, fid). A name of NULL marks the id ambiguous: it stays unnamed, whatever
 * other lines say. *dup is set when the id was already there (the caller warns). */
static int add_sym(struct stf_syms *s, uint32_t objid, uint32_t fid, uint64_t addr,
                   const char *name, bool *dup)
{
    *dup = false;
    if (s->nsyms + 1 > s->tcap / 2) {
        if (rehash(s, s->tcap ? s->tcap * 2 : 256) != 0)
            return STF_ERR_NOMEM;
    }
    long slot = find_slot(s, objid, fid);
    if (s->table[slot] != 0) {
        struct sym *e = &s->syms[s->table[slot] - 1];
        *dup = name != NULL;
        free(e->name);
        e->name = NULL;
        e->addr = 0;
        e->ambiguous = true;
        return STF_OK;
    }
    if (s->nsyms == s->capsyms) {
        size_t nc = s->capsyms ? s->capsyms * 2 : 256;
        struct sym *ns = realloc(s->syms, nc * sizeof *ns);
        if (!ns)
            return STF_ERR_NOMEM;
        s->syms = ns;
        s->capsyms = nc;
    }
    if (s->nsyms >= UINT32_MAX - 1)
        return STF_ERR_NOMEM; /* the table's indexes are 32-bit */
    struct sym *e = &s->syms[s->nsyms];
    *e = (struct sym){.objid = objid, .fid = fid, .addr = name ? addr : 0, .ambiguous = !name};
    if (name && *name) {
        e->name = strdup(name);
        if (!e->name)
            return STF_ERR_NOMEM;
    }
    s->table[slot] = (uint32_t)(++s->nsyms);
    return STF_OK;
}

static struct obj *find_obj(const struct stf_syms *s, uint32_t objid)
{
    for (size_t i = 0; s && i < s->nobjs; i++)
        if (s->objs[i].objid == objid)
            return &s->objs[i];
    return NULL;
}

/* Object objid's entry, made (empty) if it has none yet; NULL when out of memory. */
static struct obj *get_obj(struct stf_syms *s, uint32_t objid)
{
    struct obj *o = find_obj(s, objid);
    if (o)
        return o;
    if (s->nobjs == s->capobjs) {
        size_t nc = s->capobjs ? s->capobjs * 2 : 8;
        struct obj *no = realloc(s->objs, nc * sizeof *no);
        if (!no)
            return NULL;
        s->objs = no;
        s->capobjs = nc;
    }
    o = &s->objs[s->nobjs++];
    *o = (struct obj){.objid = objid};
    return o;
}

/* Sets *field to a copy of text (NULL: unknown); a second setting (*seen already) leaves it
 * unknown for good, *dup telling whether the caller should warn (text given twice). */
static int set_once(char **field, bool *seen, const char *text, bool *dup)
{
    *dup = false;
    if (*seen) {
        *dup = text != NULL;
        free(*field);
        *field = NULL;
        return STF_OK;
    }
    *seen = true;
    if (text) {
        *field = strdup(text);
        if (!*field)
            return STF_ERR_NOMEM;
    }
    return STF_OK;
}

/* Adds object objid; a path of NULL (or a second line for the id) leaves its path unknown. */
static int add_obj(struct stf_syms *s, uint32_t objid, uint64_t bias, const char *path, bool *dup)
{
    struct obj *o = get_obj(s, objid);
    if (!o)
        return STF_ERR_NOMEM;
    if (!o->has_o)
        o->bias = bias;
    return set_once(&o->path, &o->has_o, path, dup);
}

/* Records object objid's build id (hex, already checked); NULL (or a second line for the id)
 * leaves it unknown. */
static int add_build_id(struct stf_syms *s, uint32_t objid, const char *hex, bool *dup)
{
    struct obj *o = get_obj(s, objid);
    return o ? set_once(&o->build_id, &o->has_b, hex, dup) : STF_ERR_NOMEM;
}

/* A build id field: 1 to STF_BUILD_ID_MAX bytes, two hex digits each, up to the end or to a TAB
 * (later fields are ignored); written to out (lower-case, NUL-terminated). */
static bool parse_build_id(const char *str, char out[2 * STF_BUILD_ID_MAX + 1])
{
    size_t n = strcspn(str, "\t");
    if (n == 0 || n % 2 != 0 || n > 2 * STF_BUILD_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = str[i];
        if (c >= 'A' && c <= 'F')
            c = (char)(c - 'A' + 'a');
        else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
        out[i] = c;
    }
    out[n] = '\0';
    return true;
}

/* The first line: STF_OK or STF_ERR_SYMS with *why set. */
static int parse_first(char *line, const char **why)
{
    char *f[2];
    if (!split(line, f, 2) || strcmp(f[0], "sledtrace-syms") != 0) {
        *why = "not a sledtrace symbols file (expected \"sledtrace-syms<TAB>1\")";
        return STF_ERR_SYMS;
    }
    if (strcmp(f[1], "1") != 0) {
        *why = "unsupported symbols file version";
        return STF_ERR_SYMS;
    }
    return STF_OK;
}

/* The object and function ids of an 'o', 'b' or 'f' line, its second and third fields, read
 * before the rest is checked: 0, 1 (the object id) or 2 (both) of them parse. For 'o' and 'b'
 * lines only the object id counts. */
static int ids_of(const char *line, uint32_t *objid, uint32_t *fid)
{
    const char *p = line + 2;
    size_t k = strcspn(p, "\t");
    if (!parse_u32(p, k, objid))
        return 0;
    if (p[k] != '\t')
        return 1;
    p += k + 1;
    k = strcspn(p, "\t");
    return parse_u32(p, k, fid) ? 2 : 1;
}

/* A malformed 'o', 'b' or 'f' line: the ids it names (nids of them parsed, see ids_of) become
 * unnamed (an object's path or build id unknown), and a warning "PATH:LINE: why, line skipped"
 * is counted. */
static int skip_line(struct stf_syms *s, char type, int nids, uint32_t objid, uint32_t fid,
                     const char *path, unsigned long lineno, const char *why)
{
    bool dup;
    int rc = STF_OK;
    if (type == 'f' && nids == 2)
        rc = add_sym(s, objid, fid, 0, NULL, &dup);
    else if (type == 'o' && nids >= 1)
        rc = add_obj(s, objid, 0, NULL, &dup);
    else if (type == 'b' && nids >= 1)
        rc = add_build_id(s, objid, NULL, &dup);
    if (rc != STF_OK)
        return rc;
    char msg[160];
    snprintf(msg, sizeof msg, "%s, line skipped", why);
    return warn(s, path, lineno, msg);
}

/* A line after the first (cut at a NUL byte if nul): STF_OK (added, skipped with a warning, or
 * ignored) or STF_ERR_NOMEM. */
static int parse_line(struct stf_syms *s, char *line, bool nul, const char *path,
                      unsigned long lineno)
{
    char type = line[0];
    if (!nul) {
        int pl = process_line(s, line);
        if (pl < 0)
            return STF_ERR_NOMEM;
        if (pl > 0)
            return STF_OK;
    }
    if ((type != 'o' && type != 'f' && type != 'b') || line[1] != '\t')
        return STF_OK; /* unknown line type (or blank): ignored */
    uint32_t objid = 0, fid = 0;
    int nids = ids_of(line, &objid, &fid); /* before split cuts the line */
    const char *why = NULL;
    char *f[5];
    uint64_t num;
    if (type == 'b') {
        char hex[2 * STF_BUILD_ID_MAX + 1];
        bool dup;
        if (nul)
            why = "NUL byte in line";
        else if (!split(line, f, 3))
            why = "build id line needs 3 fields";
        else if (nids < 1)
            why = "bad object id";
        else if (!parse_build_id(f[2], hex))
            why = "bad build id (expected 1 to 64 bytes in hex)";
        if (why)
            return skip_line(s, type, nids, objid, fid, path, lineno, why);
        int rc = add_build_id(s, objid, hex, &dup);
        if (rc != STF_OK || !dup)
            return rc;
        char msg[128];
        snprintf(msg, sizeof msg, "build id of object %" PRIu32 " given twice, it is left unknown",
                 objid);
        return warn(s, path, lineno, msg);
    }
    if (nul)
        why = "NUL byte in line";
    else if (!split(line, f, type == 'o' ? 4 : 5))
        why = type == 'o' ? "object line needs 4 fields" : "function line needs 5 fields";
    else if (nids < 1)
        why = "bad object id";
    else if (type == 'f' && nids < 2)
        why = "bad function id";
    else if (!parse_hex(f[type == 'o' ? 2 : 3], &num))
        why = type == 'o' ? "bad load bias (expected 0x hex)" : "bad address (expected 0x hex)";
    if (why)
        return skip_line(s, type, nids, objid, fid, path, lineno, why);
    bool dup;
    int rc =
        type == 'o' ? add_obj(s, objid, num, f[3], &dup) : add_sym(s, objid, fid, num, f[4], &dup);
    if (rc != STF_OK || !dup)
        return rc;
    char msg[128];
    if (type == 'o')
        snprintf(msg, sizeof msg, "object %" PRIu32 " given twice, its path is left unknown",
                 objid);
    else
        snprintf(msg, sizeof msg,
                 "function %" PRIu32 " of object %" PRIu32 " named twice, it is left unnamed", fid,
                 objid);
    return warn(s, path, lineno, msg);
}

int stf_syms_load(struct stf_syms **out, const char *path, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out || !path)
        return STF_ERR_ARG;
    *out = NULL;
    FILE *fp = fopen(path, "re");
    if (!fp) {
        int e = errno;
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(e));
        errno = e;
        return STF_ERR_IO;
    }
    return stf_syms_load_stream(out, fp, path, err, errlen);
}

int stf_syms_load_stream(struct stf_syms **out, FILE *fp, const char *path, char *err,
                         size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out || !fp || !path) {
        if (fp)
            fclose(fp);
        return STF_ERR_ARG;
    }
    *out = NULL;
    struct stf_syms *s = calloc(1, sizeof *s);
    if (!s) {
        fclose(fp);
        return STF_ERR_NOMEM;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned long lineno = 0;
    int rc = STF_OK;
    const char *why = "";
    while ((n = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        bool nul = (size_t)n != strlen(line);
        if (lineno == 1)
            rc = nul ? (why = "NUL byte in line", STF_ERR_SYMS) : parse_first(line, &why);
        else
            rc = parse_line(s, line, nul, path, lineno);
        if (rc != STF_OK)
            break;
    }
    if (rc == STF_OK && ferror(fp)) {
        int e = errno;
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(e));
        rc = STF_ERR_IO;
    } else if (rc == STF_OK && lineno == 0) {
        why = "empty file";
        lineno = 1;
        rc = STF_ERR_SYMS;
    }
    if (rc == STF_ERR_SYMS && err && errlen)
        snprintf(err, errlen, "%s:%lu: %s", path, lineno, why);
    else if (rc == STF_ERR_NOMEM && err && errlen)
        snprintf(err, errlen, "%s: out of memory", path);
    free(line);
    fclose(fp);
    if (rc != STF_OK) {
        stf_syms_free(s);
        return rc;
    }
    if (s->nranges > 1)
        qsort(s->ranges, s->nranges, sizeof *s->ranges, range_cmp);
    *out = s;
    return STF_OK;
}

void stf_syms_free(struct stf_syms *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nsyms; i++)
        free(s->syms[i].name);
    for (size_t i = 0; i < s->nobjs; i++) {
        free(s->objs[i].path);
        free(s->objs[i].build_id);
    }
    for (size_t i = 0; i < s->nwarn && i < STF_SYMS_WARNINGS_KEPT; i++)
        free(s->warn[i]);
    free(s->ranges);
    for (size_t i = 0; i < s->ntnames; i++)
        free(s->tnames[i].name);
    free(s->tnames);
    free(s->command);
    free(s->syms);
    free(s->objs);
    free(s->table);
    free(s);
}

size_t stf_syms_rename(struct stf_syms *s, char *(*fn)(const char *name, void *arg), void *arg)
{
    size_t n = 0;
    for (size_t i = 0; s && i < s->nsyms; i++) {
        if (!s->syms[i].name)
            continue;
        char *nn = fn(s->syms[i].name, arg);
        if (!nn)
            continue;
        free(s->syms[i].name);
        s->syms[i].name = nn;
        n++;
    }
    return n;
}

size_t stf_syms_rename_objects(struct stf_syms *s, char *(*fn)(const char *path, void *arg),
                               void *arg)
{
    size_t n = 0;
    for (size_t i = 0; s && i < s->nobjs; i++) {
        if (!s->objs[i].path)
            continue;
        char *np = fn(s->objs[i].path, arg);
        if (!np)
            continue;
        free(s->objs[i].path);
        s->objs[i].path = np;
        n++;
    }
    return n;
}

static const struct sym *find(const struct stf_syms *s, uint32_t objid, uint32_t fid)
{
    long slot = find_slot(s, objid, fid);
    if (slot < 0 || s->table[slot] == 0)
        return NULL;
    return &s->syms[s->table[slot] - 1];
}

const char *stf_syms_lookup(const struct stf_syms *s, uint32_t objid, uint32_t fid)
{
    const struct sym *e = find(s, objid, fid);
    return e ? e->name : NULL;
}

uint64_t stf_syms_address(const struct stf_syms *s, uint32_t objid, uint32_t fid)
{
    const struct sym *e = find(s, objid, fid);
    return e ? e->addr : 0;
}

size_t stf_syms_count(const struct stf_syms *s)
{
    size_t n = 0;
    for (size_t i = 0; s && i < s->nsyms; i++)
        n += !s->syms[i].ambiguous;
    return n;
}

size_t stf_syms_unnamed(const struct stf_syms *s, uint32_t objid, size_t *total)
{
    size_t n = 0, all = 0;
    for (size_t i = 0; s && i < s->nsyms; i++)
        if (s->syms[i].objid == objid && !s->syms[i].ambiguous) {
            all++;
            n += !s->syms[i].name;
        }
    if (total)
        *total = all;
    return n;
}

size_t stf_syms_warnings(const struct stf_syms *s)
{
    return s ? s->nwarn : 0;
}

const char *stf_syms_warning(const struct stf_syms *s, size_t i)
{
    return s && i < s->nwarn && i < STF_SYMS_WARNINGS_KEPT ? s->warn[i] : NULL;
}

const char *stf_syms_object(const struct stf_syms *s, uint32_t objid)
{
    const struct obj *o = find_obj(s, objid);
    return o ? o->path : NULL;
}

uint64_t stf_syms_object_bias(const struct stf_syms *s, uint32_t objid)
{
    const struct obj *o = find_obj(s, objid);
    return o ? o->bias : 0;
}

const char *stf_syms_build_id(const struct stf_syms *s, uint32_t objid)
{
    const struct obj *o = find_obj(s, objid);
    return o ? o->build_id : NULL;
}

size_t stf_syms_objects(const struct stf_syms *s)
{
    return s ? s->nobjs : 0;
}

uint32_t stf_syms_object_id(const struct stf_syms *s, size_t i)
{
    return s && i < s->nobjs ? s->objs[i].objid : UINT32_MAX;
}

const char *stf_syms_name(const struct stf_syms *s, uint32_t id, char *buf, size_t buflen)
{
    const char *pseudo = stf_pseudo_name(id);
    if (pseudo)
        return pseudo;
    uint32_t objid, fid;
    stf_syms_split(s, id, &objid, &fid);
    const char *n = stf_syms_lookup(s, objid, fid);
    if (n)
        return n;
    if (buf && buflen)
        snprintf(buf, buflen, "#%" PRIu32, id);
    return buf;
}

char *stf_syms_path_for(const char *trace_path)
{
    if (!trace_path)
        return NULL;
    size_t n = strlen(trace_path);
    size_t keep = (n >= 4 && strcmp(trace_path + n - 4, ".fdr") == 0) ? n - 4 : n;
    char *p = malloc(keep + sizeof ".syms");
    if (!p)
        return NULL;
    memcpy(p, trace_path, keep);
    memcpy(p + keep, ".syms", sizeof ".syms");
    return p;
}
