/* Arguments and return values (SLEDTRACE_ARGS, issue 26.1 and 26.3): argvals.c's calls, read back
 * from the trace record by record (format/stf.h, "Arguments") into a transcript that must be
 * exactly the one its calls imply: every argument register asked for, every string with its
 * flags (NULL, unmapped, unterminated at a mapping's end, longer than the bound, control bytes),
 * every return register that carries the value; the function not chosen stays plain. llvm-xray
 * still reads the trace (its CallArgument records as args). */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"
#include "progs.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

static const char *const spec = "SLEDTRACE_ARGS=fib@arg1,retval;parse@arg1/s,arg2,retval;many;"
                                "vsum@args;half@retval;pair@arg2,retval;flags@arg3";

struct buf {
    char *p;
    size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[1024];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)n + 1 > b->cap) {
        b->cap = (b->n + (size_t)n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    memcpy(b->p + b->n, tmp, (size_t)n + 1);
    b->n += (size_t)n;
}

/* The trace as lines: "F(a1, a2...)" for an entry with arguments (up to `show` of them, the
 * registers past what the call passed hold whatever they held), "  sK flags \"...\"" per string,
 * "F" for a plain entry, "F = ..." for a return value (rax; half: xmm0 as a double; pair: rax and
 * rdx), nothing for exits. */
static char *transcript(const char *trace, const char *syms_path)
{
    struct stf_syms *syms = NULL;
    char err[256];
    cr_assert_eq(stf_syms_load(&syms, syms_path, err, sizeof err), STF_OK, "%s", err);
    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK);
    struct buf b = {0};
    struct stf_item it;
    const char *fn = NULL;
    int nargs = 0, show = 0;
    while (stf_reader_next(r, &it) == STF_OK) {
        if (it.kind == STF_M_CALL_ARG) {
            cr_assert(fn, "a CallArgument after no entry");
            if (nargs < show)
                put(&b, "%s%" PRIu64, nargs ? ", " : "", it.value);
            nargs++;
            continue;
        }
        if (fn) {
            put(&b, ") [%d]\n", nargs);
            fn = NULL;
        }
        unsigned argno, flags;
        const uint8_t *bytes;
        size_t n;
        uint64_t regs[4];
        if (it.kind == STF_M_TYPED_EVENT &&
            stf_decode_argstr(it.event_type, it.payload, it.payload_len, &argno, &flags, &bytes,
                              &n)) {
            put(&b, "  s%u %u \"", argno, flags);
            for (size_t i = 0; i < n; i++)
                put(&b,
                    bytes[i] >= 0x20 && bytes[i] < 0x7f && bytes[i] != '"' && bytes[i] != '\\'
                        ? "%c"
                        : "\\x%02x",
                    bytes[i]);
            put(&b, "\"\n");
            continue;
        }
        if (it.kind == STF_M_TYPED_EVENT &&
            stf_decode_retval(it.event_type, it.payload, it.payload_len, regs)) {
            put(&b, "= ");
            /* the next record is the exit: its function says which registers matter */
            struct stf_item x;
            cr_assert_eq(stf_reader_next(r, &x), STF_OK);
            cr_assert_eq(x.kind, STF_K_FUNCTION);
            cr_assert_eq(x.action, STF_EXIT);
            const char *nm = stf_syms_lookup(syms, 0, x.func_id);
            double d;
            memcpy(&d, &regs[2], 8);
            if (strcmp(nm, "half") == 0)
                put(&b, "%s %g\n", nm, d);
            else if (strcmp(nm, "pair") == 0)
                put(&b, "%s %" PRId64 " %" PRId64 "\n", nm, (int64_t)regs[0], (int64_t)regs[1]);
            else
                put(&b, "%s %" PRId64 "\n", nm, (int64_t)regs[0]);
            continue;
        }
        if (it.kind != STF_K_FUNCTION || it.func_id >= STF_FID_TRACER_FIRST)
            continue;
        const char *nm = stf_syms_lookup(syms, 0, it.func_id);
        cr_assert(nm, "function %u has no name", it.func_id);
        if (it.action == STF_ENTER_ARGS) {
            fn = nm;
            nargs = 0;
            show = strcmp(nm, "vsum") == 0 ? 4 : strcmp(nm, "many") == 0 ? 6 : 6;
            put(&b, "%s(", nm);
        } else if (it.action == STF_ENTER && strcmp(nm, "main") != 0) {
            put(&b, "%s\n", nm);
        }
    }
    stf_reader_close(r);
    stf_syms_free(syms);
    return b.p ? b.p : strdup("");
}

static void expect_fib(struct buf *b, long n)
{
    put(b, "fib(%ld) [1]\n", n);
    if (n >= 2) {
        expect_fib(b, n - 1);
        expect_fib(b, n - 2);
    }
    put(b, "= fib %ld\n", fibonacci(n));
}

static void run_argvals(const char *strlen_env, struct e2e_run *t, char *trace, size_t len,
                        char *syms, size_t slen, char *work)
{
    char out[PATH_MAX];
    const char *bin = BIN("argvals");
    e2e_workdir(work, PATH_MAX);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out, .env = {spec, strlen_env}};
    e2e_run(work, &s, t);
    cr_assert(WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0, "status %#x: %s", t->status,
              t->err);
    cr_assert_str_eq(t->err, "");
    e2e_trace_path(trace, len, out, bin, t->pid, "fdr");
    e2e_trace_path(syms, slen, out, bin, t->pid, "syms");
    struct e2e_expect e;
    e2e_parse_expect(t->out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, "argvals");
}

/* The whole transcript, exactly. */
Test(argvals, registers_strings_and_return_values)
{
    struct e2e_run t;
    char trace[PATH_MAX], syms[PATH_MAX], work[PATH_MAX];
    run_argvals(NULL, &t, trace, sizeof trace, syms, sizeof syms, work);
    unsigned long long gone = 0, tail = 0;
    const char *a = strstr(t.out, "addr gone ");
    cr_assert(a && sscanf(a, "addr gone %llx\naddr tail %llx", &gone, &tail) == 2, "%s", t.out);
    struct buf want = {0};
    expect_fib(&want, 6);
    put(&want, "parse(%s, 5) [2]\n  s1 0 \"GET /\"\n= parse 11\n", "PTR");
    put(&want, "parse(0, 0) [2]\n  s1 4 \"\"\n= parse 0\n");
    put(&want, "parse(%llu, 1) [2]\n  s1 2 \"\"\n= parse 3\n", gone);
    put(&want, "parse(%llu, 2) [2]\n  s1 2 \"AAAAAAAAAA\"\n= parse 5\n", tail);
    put(&want, "parse(PTR, 3) [2]\n  s1 1 \"%s\"\n= parse 7\n",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    put(&want, "parse(PTR, 4) [2]\n  s1 0 \"a\\x09b\\x0a\\x22q\\x22\\x01\"\n= parse 9\n");
    put(&want, "many(1, 2, 3, 4, 5, 6) [6]\n= many 36\n");
    put(&want, "vsum(3, 10, 20, 30) [6]\n"); /* args, no retval */
    put(&want, "half\n= half 1.5\n");
    put(&want, "pair(40, 50) [2]\n= pair 41 52\n");
    put(&want, "flags(1, 2, 4000000000) [3]\n");
    put(&want, "plain\n");
    char *got = transcript(trace, syms);
    /* the stack addresses of the string literals and buffers: PTR */
    for (char *p = got; (p = strstr(p, "parse(")) != NULL; p++) {
        char *v = p + 6, *end = strchr(v, ',');
        unsigned long long x = strtoull(v, NULL, 10);
        if (x == 0 || x == gone || x == tail || !end)
            continue;
        memmove(v + 3, end, strlen(end) + 1);
        memcpy(v, "PTR", 3);
    }
    cr_assert_str_eq(got, want.p);
    free(got);
    free(want.p);

    /* llvm-xray reads the arguments as XRay's own */
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd,
             "%s convert --output-format=yaml --instr_map=%s '%s' | grep -c 'args: \\[ 6 \\]'",
             E2E_LLVM_XRAY, BIN("argvals"), trace);
    FILE *p = popen(cmd, "r");
    char n[32] = "";
    cr_assert(p && fgets(n, sizeof n, p), "no output from %s", cmd);
    pclose(p);
    cr_assert_str_eq(n, "1\n");
    /* without -g: raw registers, and replay says why */
    struct e2e_run r;
    e2e_run_sh(work, &r, "'%s' replay '%s'", E2E_SLEDTRACE, trace);
    cr_assert(strstr(r.out, "  parse(arg1=\"GET /\", arg2=0x5) = 0xb\n") &&
                  strstr(r.out, "  parse(arg1=NULL, arg2=0x0) = 0x0\n"),
              "%s", r.out);
    cr_assert(strstr(r.out, "# arguments: as raw registers: ") && strstr(r.out, ": no DWARF"), "%s",
              r.out);
    e2e_run_free(&r);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* SLEDTRACE_ARGS_STRLEN bounds the strings. */
Test(argvals, string_bound)
{
    struct e2e_run t;
    char trace[PATH_MAX], syms[PATH_MAX], work[PATH_MAX];
    run_argvals("SLEDTRACE_ARGS_STRLEN=8", &t, trace, sizeof trace, syms, sizeof syms, work);
    char *got = transcript(trace, syms);
    cr_assert(strstr(got, "  s1 0 \"GET /\"\n"), "%s", got);
    cr_assert(strstr(got, "  s1 1 \"xxxxxxxx\"\n"), "%s", got);
    cr_assert(strstr(got, "  s1 2 \"AAAAAAAA\"\n") == NULL && strstr(got, "  s1 1 \"AAAAAAAA\"\n"),
              "%s", got);
    free(got);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* With -g, replay names and types every recorded argument and return value from the binary's
 * DWARF (tools/dwarfargs.c): a string by its pointer's type, a NULL or unreadable one as its
 * address, a bool and an enum by name, arguments on the stack as ?, a struct returned in
 * rax:rdx by its members, a double return from xmm0; a variadic function's named ones; and
 * --no-args hides them all. */
Test(argvals, replay_names_and_types_from_dwarf)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("argvals-g");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out, .env = {spec}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    unsigned long long gone = 0;
    const char *a = strstr(t.out, "addr gone ");
    cr_assert(a && sscanf(a, "addr gone %llx", &gone) == 1, "%s", t.out);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_run r;
    e2e_run_sh(work, &r, "'%s' replay '%s'", E2E_SLEDTRACE, trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
    char gone_line[128];
    snprintf(gone_line, sizeof gone_line, "  parse(buf=0x%llx, len=1) = 3\n", gone);
    const char *want[] = {
        "  fib(n=6) {\n",
        "  fib(n=1) = 1\n",
        "  } fib = 8\n",
        "  parse(buf=\"GET /\", len=5) = 11\n",
        "  parse(buf=0x0, len=0) = 0\n",
        gone_line,
        "  parse(buf=\"AAAAAAAAAA\"..., len=2) = 5\n",
        "  parse(buf=\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"..., "
        "len=3) = 7\n",
        "  parse(buf=\"a\\tb\\n\\\"q\\\"\\x01\", len=4) = 9\n",
        "  many(a=1, b=2, c=3, d=4, e=5, f=6, g=?, h=?) = 36\n",
        "  vsum(n=3, ...)\n",
        "  half = 1.5\n",
        "  pair(a=40, b=50) = {a=41, b=52}\n",
        "  flags(on=true, c=BLUE, u=4000000000)\n",
        "  plain\n",
        "# arguments: names and types from DWARF (1 object)\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(r.out, want[i]), "no line ending '%s' in:\n%s", want[i], r.out);
    e2e_run_free(&r);
    e2e_run_sh(work, &r, "'%s' replay --no-args '%s'", E2E_SLEDTRACE, trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
    cr_assert(strstr(r.out, "  parse\n") && strstr(r.out, "  fib {\n") && !strchr(r.out, '='), "%s",
              r.out);
    e2e_run_free(&r);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

/* C++ (argvals_cxx.cpp, -g): patterns on demangled names, a member function's `this`, a
 * reference as its address, a class returned in rax:rdx by its members. */
Test(argvals, cxx_this_and_names)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX];
    const char *bin = BIN("argvals-cxx");
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin,
                         .preload = 1,
                         .outdir = out,
                         .env = {"SLEDTRACE_ARGS=geo::Box::area;geo::grow"}};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x: %s", t.status, t.err);
    cr_assert_str_eq(t.err, "");
    unsigned long long box = 0;
    const char *a = strstr(t.out, "addr box ");
    cr_assert(a && sscanf(a, "addr box %llx", &box) == 1, "%s", t.out);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_run r;
    e2e_run_sh(work, &r, "'%s' replay '%s'", E2E_SLEDTRACE, trace);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
    char want[2][128];
    snprintf(want[0], sizeof want[0], "  geo::Box::area(this=0x%llx, scale=2) = 24\n", box);
    snprintf(want[1], sizeof want[1], "  geo::grow(b=0x%llx, by=1) = {w=4, h=5}\n", box);
    for (int i = 0; i < 2; i++)
        cr_expect(strstr(r.out, want[i]), "no line ending '%s' in:\n%s", want[i], r.out);
    e2e_run_free(&r);
    e2e_run_free(&t);
    e2e_rmtree(work);
}
