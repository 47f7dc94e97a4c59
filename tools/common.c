/* Shared helpers for the sledtrace subcommands (see common.h); reading a trace is in trace.c. Errors are one line on stderr,
 * "sledtrace: FILE: offset N: reason", so that scripts can match them. */
#include "common.h"

#include "names.h"
#include "stp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_WARNINGS_SHOWN = 10 };

static uint64_t warnings_seen;
/* --force-syms was given (tool_option): a binary given to --syms whose build id is not the
 * traced executable's is used anyway, with a warning. */
static bool force_syms;

void tool_err(const char *fmt, ...)
{
    va_list ap;
    fputs("sledtrace: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

bool tool_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return false;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    }
    return false;
}

void tool_warn_cb(void *ctx, uint64_t off, const char *msg)
{
    const char *path = ctx;
    warnings_seen++;
    if (warnings_seen <= MAX_WARNINGS_SHOWN)
        tool_err("%s: warning: offset %" PRIu64 ": %s", path, off, msg);
}

void tool_warn_more(uint64_t n)
{
    warnings_seen += n;
}

void tool_warn_summary(const char *path)
{
    if (warnings_seen > MAX_WARNINGS_SHOWN)
        tool_err("%s: warning: %" PRIu64 " more warnings not shown", path,
                 warnings_seen - MAX_WARNINGS_SHOWN);
}

/* One line for a reader or cursor error: the byte offset unless the error is not about bytes. */
int tool_report_error(const char *path, int rc, const char *msg, uint64_t off)
{
    if (!msg || !*msg)
        tool_err("%s: %s", path, stf_strerror(rc));
    else if (rc == STF_ERR_IO || rc == STF_ERR_NOMEM)
        tool_err("%s: %s", path, msg);
    else
        tool_err("%s: offset %" PRIu64 ": %s", path, off, msg);
    return EXIT_BAD_TRACE;
}

int tool_reader_fail(struct stf_reader *r, const char *path, int rc)
{
    uint64_t off = 0;
    const char *msg = r ? stf_reader_error(r, &off) : NULL;
    return tool_report_error(path, rc, msg, off);
}

struct stf_reader *tool_open_trace_as(const char *path, const char *name, int flags)
{
    struct stf_reader *r = NULL;
    int rc = stf_reader_open(&r, path, flags);
    if (rc != STF_OK) {
        tool_reader_fail(r, name, rc);
        stf_reader_close(r);
        return NULL;
    }
    stf_reader_set_warn(r, tool_warn_cb, (void *)name);
    return r;
}

struct stf_reader *tool_open_trace(const char *path, int flags)
{
    return tool_open_trace_as(strcmp(path, "-") == 0 ? "/dev/stdin" : path, path, flags);
}

/* Loads the sidecar (syms_opt, else the one beside the trace) and demangles C++ names unless
 * SLEDTRACE_NO_DEMANGLE is set in the environment. */
static struct stf_syms *load_syms(const char *trace_path, const char *syms_opt, bool *ok);

int tool_option(int argc, char **argv, int *i, const char *cmd, const char *name, const char **val)
{
    const char *o = argv[*i];
    size_t n = strlen(name);
    if (strcmp(name, "--syms") == 0 && strcmp(o, "--force-syms") == 0) {
        force_syms = true; /* --syms's companion flag: every command taking --syms takes it */
        return 1;
    }
    if (strcmp(name, "--syms") == 0 &&
        (strcmp(o, "--names") == 0 || strncmp(o, "--names=", 8) == 0)) {
        /* also --syms's companion: how C++ names are shown (names.c) */
        const char *v = o[7] == '=' ? o + 8 : *i + 1 < argc ? argv[++*i] : NULL;
        if (!v) {
            tool_err("%s: --names needs a value", cmd);
            return -1;
        }
        if (tool_names_mode(v) != 0) {
            tool_err("%s: --names must be short, full or mangled, not '%s'", cmd, v);
            return -1;
        }
        return 1;
    }
    if (strcmp(o, name) == 0) {
        if (*i + 1 >= argc) {
            tool_err("%s: %s needs a value", cmd, name);
            return -1;
        }
        *val = argv[++*i];
        return 1;
    }
    if (strncmp(o, name, n) == 0 && o[n] == '=') {
        *val = o + n + 1;
        return 1;
    }
    return 0;
}

int tool_trace_arg(int argc, char **argv, int *i, const char *cmd, const char **path,
                   const char **syms)
{
    const char *o = argv[*i];
    int m = tool_option(argc, argv, i, cmd, "--syms", syms);
    if (m != 0)
        return m;
    if (strcmp(o, "--raw-times") == 0) {
        tool_raw_times = true;
        return 1;
    }
    if (o[0] == '-' && o[1]) {
        tool_err("%s: unknown option '%s'", cmd, o);
        return -1;
    }
    if (*path) {
        tool_err("%s: more than one trace given", cmd);
        return -1;
    }
    *path = o;
    return 1;
}

int tool_tid_option(int argc, char **argv, int *i, const char *cmd, int32_t *tid)
{
    const char *v;
    int m = tool_option(argc, argv, i, cmd, "--tid", &v);
    if (m <= 0)
        return m;
    char *end;
    errno = 0;
    long t = strtol(v, &end, 10);
    if (!*v || *end || errno || t < INT32_MIN || t > INT32_MAX) {
        tool_err("%s: --tid needs an integer, not '%s'", cmd, v);
        return -1;
    }
    *tid = (int32_t)t;
    return 1;
}

int tool_choice(const char *cmd, const char *what, const char *v, const char *const *names,
                size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return (int)i;
    char list[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", names[i]);
    tool_err("%s: unknown %s '%s' (%s)", cmd, what, v, list);
    return -1;
}

void *tool_grow(void *p, size_t *cap, size_t elem, size_t init)
{
    size_t nc = *cap ? *cap * 2 : init;
    if (nc < *cap || nc > SIZE_MAX / elem)
        return NULL;
    void *n = realloc(p, nc * elem);
    if (n)
        *cap = nc;
    return n;
}

static size_t utf8_len(const uint8_t *s, size_t n);

/* Does the well-formed UTF-8 sequence at s (len bytes) encode a character a terminal acts on:
 * a C1 control (U+0080-U+009F; U+009B is CSI) or a bidi embedding, override or isolate
 * (U+202A-U+202E, U+2066-U+2069), which reorder the rest of the line? */
static bool utf8_control(const uint8_t *s, size_t len)
{
    if (len == 2)
        return s[0] == 0xc2 && s[1] <= 0x9f;
    if (len == 3 && s[0] == 0xe2)
        return (s[1] == 0x80 && s[2] >= 0xaa && s[2] <= 0xae) ||
               (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9);
    return false;
}

/* Is the character of len bytes at s (len 0: a byte that starts no well-formed UTF-8
 * sequence) one tool_printable escapes? */
static bool unprintable(const uint8_t *s, size_t len)
{
    return s[0] < 0x20 || s[0] == 0x7f || len == 0 || (len > 1 && utf8_control(s, len));
}

/* Bytes of tool_printable(text) without its terminator; *same: text needs no change. */
static size_t printable_len(const uint8_t *s, size_t n, bool *same)
{
    size_t out = 0;
    *same = true;
    for (size_t i = 0; i < n;) {
        size_t len = s[i] < 0x80 ? 1 : utf8_len(s + i, n - i);
        bool bad = unprintable(s + i, len);
        len += len == 0;
        if (bad || s[i] == '\\')
            *same = false;
        out += bad ? 4 * len : len + (s[i] == '\\');
        i += len;
    }
    return out;
}

void tool_printable_to(char *buf, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *s = (const uint8_t *)text;
    size_t n = strlen(text);
    char *q = buf;
    for (size_t i = 0; i < n;) {
        size_t len = s[i] < 0x80 ? 1 : utf8_len(s + i, n - i);
        bool bad = unprintable(s + i, len);
        len += len == 0;
        for (size_t k = 0; k < len; k++, i++) {
            if (bad) {
                *q++ = '\\';
                *q++ = 'x';
                *q++ = hex[s[i] >> 4];
                *q++ = hex[s[i] & 15];
                continue;
            }
            if (s[i] == '\\')
                *q++ = '\\';
            *q++ = (char)s[i];
        }
    }
    *q = '\0';
}

char *tool_printable(const char *text)
{
    bool same;
    size_t out = printable_len((const uint8_t *)text, strlen(text), &same);
    char *r = same ? NULL : malloc(out + 1);
    if (r)
        tool_printable_to(r, text);
    return r;
}

/* stf_syms_rename's callback; *arg (a bool) is set when a change could not be made. */
static char *printable(const char *text, void *arg)
{
    char *r = tool_printable(text);
    bool same;
    if (!r)
        printable_len((const uint8_t *)text, strlen(text), &same);
    if (!r && !same)
        *(bool *)arg = true;
    return r;
}

struct stf_syms *tool_load_syms(const char *trace_path, const char *syms_opt, bool *ok)
{
    struct stf_syms *s = load_syms(trace_path, syms_opt, ok);
    const char *no = getenv("SLEDTRACE_NO_DEMANGLE");
    if (s && !(no && *no))
        stf_syms_rename(s, tool_demangle, NULL);
    /* after demangling, which can make such bytes too */
    bool oom = false;
    stf_syms_rename(s, printable, &oom);
    stf_syms_rename_objects(s, printable, &oom);
    if (oom) { /* no raw name may be shown */
        tool_err("out of memory");
        stf_syms_free(s);
        *ok = false;
        return NULL;
    }
    return s;
}

static bool is_elf(const char *path)
{
    unsigned char m[4] = {0};
    FILE *f = fopen(path, "rbe");
    if (!f)
        return false;
    size_t n = fread(m, 1, sizeof m, f);
    fclose(f);
    return n == 4 && memcmp(m, "\177ELF", 4) == 0;
}

/* Names from an instrumented binary, as llvm-xray -m reads them: its xray_instr_map gives the
 * function ids (the ones compiler-rt and sledtrace write for the executable, object 0), its
 * symbol table their names. The patcher reads both, and its build id; they become a sidecar in
 * memory. */
static int syms_from_binary(struct stf_syms **s, const char *path, char *err, size_t errlen)
{
    struct stp_object *obj;
    int rc = stp_object_open(path, 0, &obj);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, stp_strerror(rc));
        return STF_ERR_SYMS;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *w = open_memstream(&text, &len);
    if (!w) {
        stp_object_close(obj);
        return STF_ERR_NOMEM;
    }
    /* A line cannot hold a newline: a name or path with one would end its line early and make
     * the rest a line of its own (a forged entry). Such a function is left unnamed. */
    fprintf(w, "sledtrace-syms\t1\n");
    if (!strchr(path, '\n'))
        fprintf(w, "o\t0\t0x0\t%s\n", path);
    const uint8_t *id;
    size_t idlen = stp_object_build_id(obj, &id);
    if (idlen) {
        fprintf(w, "b\t0\t");
        for (size_t i = 0; i < idlen; i++)
            fprintf(w, "%02x", id[i]);
        fputc('\n', w);
    }
    for (size_t i = 0; i < stp_object_nfuncs(obj); i++) {
        uint32_t id;
        uintptr_t addr;
        const char *name;
        stp_object_func(obj, i, &id, &addr, &name);
        fprintf(w, "f\t0\t%" PRIu32 "\t0x%llx\t%s\n", id, (unsigned long long)addr,
                strchr(name, '\n') ? "" : name);
    }
    stp_object_close(obj);
    if (fclose(w) != 0) {
        free(text);
        return STF_ERR_NOMEM;
    }
    FILE *r = fmemopen(text, len, "r");
    rc = r ? stf_syms_load_stream(s, r, path, err, errlen) : STF_ERR_NOMEM;
    free(text);
    return rc;
}

/* The sidecar's warnings (lines skipped, ids named twice), each once: the first
 * MAX_WARNINGS_SHOWN, then a count. */
static void syms_warnings(const struct stf_syms *s, const char *path)
{
    size_t n = stf_syms_warnings(s);
    for (size_t i = 0; i < n && i < MAX_WARNINGS_SHOWN && stf_syms_warning(s, i); i++)
        tool_err("warning: %s", stf_syms_warning(s, i));
    if (n > MAX_WARNINGS_SHOWN)
        tool_err("warning: %s: %zu more warnings not shown", path, n - MAX_WARNINGS_SHOWN);
    /* an object most of whose functions have no name was stripped when traced: said, with the
     * way out, rather than #13-style names without a word (issue 28.8) */
    for (size_t i = 0; i < stf_syms_objects(s); i++) {
        uint32_t objid = stf_syms_object_id(s, i);
        size_t all, none = stf_syms_unnamed(s, objid, &all);
        const char *obj = stf_syms_object(s, objid);
        if (all && 2 * none > all)
            tool_err("warning: %s: %zu of its %zu functions have no name (no symbol table when "
                     "traced: stripped?); they show as #ID; --syms with an unstripped build of "
                     "it names them",
                     obj ? obj : "an object", none, all);
    }
}

/* --syms BINARY (its names in bin): the binary must be the traced executable, object 0, whose
 * build id the sidecar beside the trace records. Without such a sidecar (compiler-rt's traces, a
 * trace from a pipe) or a build id in it (runtimes before 'b' lines, an executable linked with
 * --build-id=none), there is nothing to compare and the binary is taken as it is, silently:
 * such traces are what --syms BINARY is for. Returns false after printing the error on a
 * mismatch, unless --force-syms was given (then it is a warning). What the sidecar records of
 * the process (command line, thread names) moves to bin. */
static bool check_build_id(const char *trace_path, const char *binary, struct stf_syms *bin)
{
    if (strcmp(trace_path, "-") == 0)
        return true;
    char *side = stf_syms_path_for(trace_path);
    if (!side) {
        tool_err("out of memory");
        return false;
    }
    struct stf_syms *t = NULL;
    char err[512];
    bool ok = true;
    const char *want = stf_syms_load(&t, side, err, sizeof err) == STF_OK
                           ? stf_syms_build_id(t, 0)
                           : NULL; /* no sidecar, or none to use (its own commands say why) */
    const char *have = stf_syms_build_id(bin, 0);
    if (want && (!have || strcmp(have, want) != 0)) {
        char what[512];
        if (have)
            snprintf(what, sizeof what,
                     "%s: build id %s differs from the traced executable's %s (recorded in %s)",
                     binary, have, want, side);
        else
            snprintf(what, sizeof what,
                     "%s: no build id, but the traced executable had %s (recorded in %s)", binary,
                     want, side);
        if (force_syms) {
            tool_err("warning: %s; using its names anyway (--force-syms)", what);
        } else {
            tool_err("%s; its names would be wrong (--force-syms uses them anyway)", what);
            ok = false;
        }
    }
    stf_syms_take_process(bin, t); /* the command and thread names still come from there */
    stf_syms_free(t);
    free(side);
    return ok;
}

static struct stf_syms *load_syms(const char *trace_path, const char *syms_opt, bool *ok)
{
    char err[512];
    struct stf_syms *s = NULL;
    *ok = true;
    if (syms_opt) {
        bool binary = is_elf(syms_opt);
        int rc = binary ? syms_from_binary(&s, syms_opt, err, sizeof err)
                        : stf_syms_load(&s, syms_opt, err, sizeof err);
        if (rc != STF_OK) {
            tool_err("%s", err[0] ? err : stf_strerror(rc));
            *ok = false;
        } else if (binary && !check_build_id(trace_path, syms_opt, s)) {
            stf_syms_free(s);
            *ok = false;
            return NULL;
        }
        syms_warnings(s, syms_opt);
        return s;
    }
    if (strcmp(trace_path, "-") == 0) {
        tool_err("standard input: warning: no symbols file (--syms FILE names one); functions are "
                 "shown as #id");
        return NULL;
    }
    char *path = stf_syms_path_for(trace_path);
    if (!path) {
        tool_err("out of memory");
        *ok = false;
        return NULL;
    }
    int rc = stf_syms_load(&s, path, err, sizeof err);
    struct stat sb;
    if (rc == STF_ERR_IO && errno == ENOENT) {
        tool_err("%s: warning: no symbols file; functions are shown as #id", path);
    } else if (rc != STF_OK && stat(path, &sb) == 0 && sb.st_size == 0) {
        /* an empty sidecar (a runtime that found no room on its disk) names nothing: as none */
        tool_err("%s: warning: empty symbols file; functions are shown as #id", path);
    } else if (rc != STF_OK) {
        tool_err("%s", err[0] ? err : stf_strerror(rc));
        *ok = false;
    }
    syms_warnings(s, path);
    free(path);
    return s;
}

/* Decimal digits of v at p (no terminator); returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

void tool_fmt_ns(char *buf, size_t len, uint64_t ns)
{
    char tmp[32], *p = tmp;
    if (ns < 1000000 && len >= 12) {
        /* the common cases without printf: "512ns", "12.345us" (exact: three decimals of an
         * integer count of ns) */
        if (ns < 1000) {
            p = put_u64(p, ns);
            *p++ = 'n';
        } else {
            p = put_u64(p, ns / 1000);
            *p++ = '.';
            *p++ = (char)('0' + ns % 1000 / 100);
            *p++ = (char)('0' + ns % 100 / 10);
            *p++ = (char)('0' + ns % 10);
            *p++ = 'u';
        }
        *p++ = 's';
        *p = '\0';
        memcpy(buf, tmp, (size_t)(p - tmp) + 1);
    } else if (ns < 1000)
        snprintf(buf, len, "%" PRIu64 "ns", ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.3fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.3fms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.6fs", (double)ns / 1e9);
}

void tool_fmt_weight(char *buf, size_t len, uint64_t v, bool count)
{
    if (count)
        snprintf(buf, len, "%" PRIu64, v);
    else
        tool_fmt_ns(buf, len, v);
}

char *tool_put_secs(char *p, uint64_t ns, int width)
{
    char tmp[32], *q = put_u64(tmp, ns / 1000000000);
    *q++ = '.';
    uint64_t frac = ns % 1000000000;
    for (uint64_t d = 100000000; d; d /= 10)
        *q++ = (char)('0' + frac / d % 10);
    for (int pad = width - (int)(q - tmp); pad > 0; pad--)
        *p++ = ' ';
    memcpy(p, tmp, (size_t)(q - tmp));
    return p + (q - tmp);
}

char *tool_put_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

char *tool_put_u64(char *p, uint64_t v)
{
    return put_u64(p, v);
}

char *tool_put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

uint64_t tool_ticks_to_ns(uint64_t ticks, uint64_t freq)
{
    if (freq == 0 || freq == 1000000000)
        return ticks;
    long double v = (long double)ticks * 1e9L / (long double)freq + 0.5L;
    if (v >= 18446744073709551615.0L)
        return UINT64_MAX;
    return (uint64_t)v;
}

double tool_ticks_to_s(uint64_t ticks, uint64_t freq)
{
    return freq ? (double)((long double)ticks / (long double)freq) : (double)ticks / 1e9;
}

bool tool_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

long u64map_get(struct u64map *m, uint64_t key, bool *added)
{
    if (added)
        *added = false;
    if (m->n + 1 > m->cap / 2) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        uint32_t *nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->vals[i])
                continue;
            size_t j = (size_t)mix(m->keys[i]) & (ncap - 1);
            while (nv[j])
                j = (j + 1) & (ncap - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t j = (size_t)mix(key) & (m->cap - 1);
    while (m->vals[j]) {
        if (m->keys[j] == key)
            return (long)m->vals[j] - 1;
        j = (j + 1) & (m->cap - 1);
    }
    m->keys[j] = key;
    m->vals[j] = (uint32_t)(++m->n);
    if (added)
        *added = true;
    return (long)m->n - 1;
}

void u64map_free(struct u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 if none (RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint8_t lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

void tool_json_escape(FILE *f, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t len;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", (unsigned)c);
            i++;
        } else if (c < 0x80) {
            fputc(c, f);
            i++;
        } else if ((len = utf8_len(s + i, n - i)) != 0 && utf8_control(s + i, len)) {
            /* the code point, which JSON readers decode to the same text */
            unsigned cp =
                len == 2 ? (unsigned)(s[i + 1] & 0x3f) | 0x80u
                         : 0x2000u | (unsigned)(s[i + 1] & 0x3f) << 6 | (unsigned)(s[i + 2] & 0x3f);
            fprintf(f, "\\u%04x", cp);
            i += len;
        } else if (len != 0) {
            fwrite(s + i, 1, len, f);
            i += len;
        } else {
            fprintf(f, "\\u%04x", (unsigned)c);
            i++;
        }
    }
}

enum { PROGRESS_MIN_BYTES = 4 << 20 };

/* Is stdout the terminal stderr is? Then streamed output and a progress line would mix. */
static bool stdout_is_stderr_tty(void)
{
    struct stat o, e;
    return isatty(STDOUT_FILENO) && fstat(STDOUT_FILENO, &o) == 0 &&
           fstat(STDERR_FILENO, &e) == 0 && o.st_rdev == e.st_rdev;
}

void tool_progress_init(struct tool_progress *p, uint64_t total, const char *what,
                        bool streams_stdout)
{
    p->on = what && total >= PROGRESS_MIN_BYTES && isatty(STDERR_FILENO) &&
            !(streams_stdout && stdout_is_stderr_tty());
    p->pct = 101;
    p->total = total;
    p->what = what;
}

void tool_progress_set(struct tool_progress *p, uint64_t done)
{
    if (!p->on)
        return;
    unsigned pct = p->total ? (unsigned)(done * 100 / p->total) : 0;
    if (pct > 100)
        pct = 100;
    if (pct != p->pct) {
        p->pct = pct;
        fprintf(stderr, "\rsledtrace: %s: %3u%%", p->what, pct);
    }
}

void tool_progress_done(struct tool_progress *p)
{
    if (p->on && p->pct != 101)
        fprintf(stderr, "\rsledtrace: %s: 100%%\n", p->what);
}

const char *tool_names_get(struct tool_names *c, uint32_t id,
                           void (*make)(FILE *f, uint32_t id, void *ctx), void *ctx)
{
    if (c->n == c->cap) { /* room first: the map and the array must stay in step */
        char **ns = tool_grow(c->s, &c->cap, sizeof *ns, 64);
        if (!ns)
            return NULL;
        c->s = ns;
    }
    bool added;
    long i = u64map_get(&c->map, id, &added);
    if (i < 0)
        return NULL;
    if (!added)
        return c->s[i]; /* NULL if making it failed: out of memory again */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        make(f, id, ctx);
        if (fclose(f) != 0) {
            free(text);
            text = NULL;
        }
    }
    c->s[c->n++] = text;
    return text;
}

void tool_names_free(struct tool_names *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->s[i]);
    free(c->s);
    u64map_free(&c->map);
    memset(c, 0, sizeof *c);
}

/* The newest sledtrace.*.fdr (by modification time, then name) in $SLEDTRACE_OUTPUT, else the
 * current directory, for a command given no TRACE; says on stderr which one it took. */
bool tool_default_trace(const char **path, const char *cmd)
{
    if (*path)
        return true;
    static char chosen[PATH_MAX];
    const char *dir = getenv("SLEDTRACE_OUTPUT");
    if (!dir || !*dir)
        dir = ".";
    DIR *d = opendir(dir);
    struct timespec best = {0, 0};
    char best_name[256] = "";
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "sledtrace.", 10) != 0 || len < 15 ||
            strcmp(e->d_name + len - 4, ".fdr") != 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        bool newer = st.st_mtim.tv_sec > best.tv_sec ||
                     (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec) ||
                     (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec == best.tv_nsec &&
                      strcmp(e->d_name, best_name) > 0);
        if (!best_name[0] || newer) {
            best = st.st_mtim;
            snprintf(best_name, sizeof best_name, "%s", e->d_name);
        }
    }
    if (d)
        closedir(d);
    char shown[4 * PATH_MAX + 1];
    tool_printable_to(shown, strlen(dir) < PATH_MAX ? dir : "?");
    if (!best_name[0]) {
        tool_err("%s: no TRACE given, and no sledtrace.*.fdr in %s (see 'sledtrace %s --help')",
                 cmd, shown, cmd);
        return false;
    }
    snprintf(chosen, sizeof chosen, "%s%s%s", strcmp(dir, ".") == 0 ? "" : dir,
             strcmp(dir, ".") == 0 ? "" : "/", best_name);
    char name[4 * 256 + 1];
    tool_printable_to(name, best_name);
    tool_err("%s: no TRACE given; using %s%s%s, the newest trace in %s", cmd,
             strcmp(dir, ".") == 0 ? "" : shown, strcmp(dir, ".") == 0 ? "" : "/", name,
             strcmp(dir, ".") == 0 ? "the current directory" : shown);
    *path = chosen;
    return true;
}

bool tool_parse_duration(const char *s, uint64_t *ns)
{
    /* digits, an optional fraction, an optional unit */
    const char *p = s;
    uint64_t whole = 0, frac = 0, frac_div = 1;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return false;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        for (; *p >= '0' && *p <= '9'; p++)
            if (frac_div < 1000000000u) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_div *= 10;
            }
    }
    static const struct {
        const char *unit;
        uint64_t ns;
    } units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].unit) != 0)
            continue;
        uint64_t m = units[i].ns;
        if (whole > UINT64_MAX / m)
            return false;
        /* a fraction below the unit's nanosecond is cut */
        *ns = whole * m + frac * m / frac_div;
        return true;
    }
    return false;
}
