/* tools/dwarfargs.c on programs built with clang 14 (dw_c.c, dw_cpp.cc; meson.build): every
 * parameter's name, type as written, kind, size and register, held to the System V AMD64 ABI at
 * -O0 and -O2, and the exact text tool_dw_format makes of given raw register values. Functions
 * are found at their symbols' addresses (libelf), as the XRay map gives them. */
#include "dwarfargs.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *name)
{
    const char *v = getenv(name);
    cr_assert(v, "%s is not set (run through meson test)", name);
    return v;
}

/* The address of the function symbol `name` in path's symbol table. */
static uint64_t sym(const char *path, const char *name)
{
    cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "%s", path);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    cr_assert(e);
    uint64_t addr = 0;
    Elf_Scn *s = NULL;
    while (!addr && (s = elf_nextscn(e, s))) {
        GElf_Shdr sh;
        cr_assert(gelf_getshdr(s, &sh));
        if (sh.sh_type != SHT_SYMTAB)
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym y;
            cr_assert(gelf_getsym(d, (int)i, &y));
            const char *n = elf_strptr(e, sh.sh_link, y.st_name);
            if (GELF_ST_TYPE(y.st_info) == STT_FUNC && n && strcmp(n, name) == 0) {
                addr = y.st_value;
                break;
            }
        }
    }
    elf_end(e);
    close(fd);
    cr_assert_neq(addr, 0, "no symbol %s in %s", name, path);
    return addr;
}

static struct tool_dw *open_ok(const char *path)
{
    struct tool_dw *d = NULL;
    char err[256] = "";
    cr_assert_eq(tool_dw_open(&d, path, err, sizeof err), 0, "%s", err);
    cr_assert(d);
    return d;
}

static const struct tool_dw_func *func(struct tool_dw *d, const char *bin, const char *symbol,
                                       const char *name, size_t nparams)
{
    const struct tool_dw_func *f = tool_dw_func_at(d, sym(bin, symbol));
    cr_assert(f, "%s: no function at %s", bin, symbol);
    cr_assert_str_eq(f->name, name);
    cr_assert_eq(f->nparams, nparams, "%s: %zu parameters", name, f->nparams);
    cr_assert_not(f->abi_changed);
    return f;
}

static void param(const struct tool_dw_param *p, const char *name, const char *type,
                  enum tool_dw_kind kind, unsigned size, enum tool_dw_where where, int reg,
                  enum tool_dw_where where2, int reg2)
{
    cr_assert_str_eq(p->name, name);
    cr_assert_str_eq(p->type, type, "%s: type %s", name, p->type);
    cr_assert_eq(p->kind, kind, "%s: kind %d", name, p->kind);
    cr_assert_eq(p->size, size, "%s: size %u", name, p->size);
    cr_assert_eq(p->loc.where, where, "%s: where %d", name, p->loc.where);
    if (where == TOOL_DW_IREG || where == TOOL_DW_SSE)
        cr_assert_eq(p->loc.reg, reg, "%s: reg %d", name, p->loc.reg);
    cr_assert_eq(p->loc.where2, where2, "%s: where2 %d", name, p->loc.where2);
    if (where2 != TOOL_DW_NONE)
        cr_assert_eq(p->loc.reg2, reg2, "%s: reg2 %d", name, p->loc.reg2);
}

#define IREG(n) TOOL_DW_IREG, n, TOOL_DW_NONE, 0
#define SSE(n) TOOL_DW_SSE, n, TOOL_DW_NONE, 0
#define MEM TOOL_DW_MEM, 0, TOOL_DW_NONE, 0

static char out[512];

/* The text of one value in one or two registers. */
static const char *fmt1(const struct tool_dw_param *p, uint64_t v)
{
    cr_assert_geq(tool_dw_format(p, &v, 1, NULL, 0, false, false, out, sizeof out), 0);
    return out;
}

static const char *fmt2(const struct tool_dw_param *p, uint64_t v0, uint64_t v1, size_t n)
{
    uint64_t v[2] = {v0, v1};
    cr_assert_geq(tool_dw_format(p, v, n, NULL, 0, false, false, out, sizeof out), 0);
    return out;
}

static const char *fmts(const struct tool_dw_param *p, uint64_t ptr, const char *s, size_t n,
                        bool truncated, bool fault)
{
    cr_assert_geq(
        tool_dw_format(p, &ptr, 1, (const uint8_t *)s, n, truncated, fault, out, sizeof out), 0);
    return out;
}

#define EQ(got, want) cr_assert_str_eq(got, want, "line %d: [%s]", __LINE__, got)

/* -O0, -O2, -O2 with DWARF 4 (and for C++ its types in type units) */
static const char *const c_bins[] = {"DW_C_O0", "DW_C_O2", "DW_C_O2_DWARF4"};
static const char *const cxx_bins[] = {"DW_CXX_O0", "DW_CXX_O2", "DW_CXX_O2_TYPES"};
#define NBINS 3

Test(dwarf, c_integers)
{
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(c_bins[b]);
        struct tool_dw *d = open_ok(bin);
        cr_assert_null(tool_dw_why(d));
        const struct tool_dw_func *f = func(d, bin, "f_scalars", "f_scalars", 6);
        const struct tool_dw_param *p = f->params;
        cr_assert_not(f->variadic);
        cr_assert_not(f->sret);
        param(&p[0], "i", "int", TOOL_DW_INT, 4, IREG(1));
        param(&p[1], "u", "unsigned int", TOOL_DW_UINT, 4, IREG(2));
        param(&p[2], "l", "long", TOOL_DW_INT, 8, IREG(3));
        param(&p[3], "c", "char", TOOL_DW_CHAR, 1, IREG(4));
        param(&p[4], "b", "_Bool", TOOL_DW_BOOL, 1, IREG(5));
        param(&p[5], "e", "enum color", TOOL_DW_ENUM, 4, IREG(6));
        param(&f->ret, "", "int", TOOL_DW_INT, 4, IREG(0));
        cr_assert(f->ret.ret);
        /* an int: -1 sign-extended to 64 bits, or only in the low 32 */
        EQ(fmt1(&p[0], 0xffffffffffffffff), "-1");
        EQ(fmt1(&p[0], 0xffffffff), "-1");
        EQ(fmt1(&p[0], 0xdeadbeef7fffffff), "2147483647");
        EQ(fmt1(&p[0], 0x80000000), "-2147483648");
        EQ(fmt1(&p[1], 0xffffffffffffffff), "4294967295");
        EQ(fmt1(&p[1], 20), "20");
        EQ(fmt1(&p[2], 0xffffffffffffff85), "-123");
        EQ(fmt1(&p[2], 0xffffff85), "4294967173");
        EQ(fmt1(&p[2], 0x8000000000000000), "-9223372036854775808");
        EQ(fmt1(&p[3], 'a'), "'a'");
        EQ(fmt1(&p[3], 0x100000041), "'A'");
        EQ(fmt1(&p[3], '\n'), "'\\n'");
        EQ(fmt1(&p[3], '\''), "'\\''");
        EQ(fmt1(&p[3], '\\'), "'\\\\'");
        EQ(fmt1(&p[3], 0xffffffffffffffff), "'\\xff'");
        EQ(fmt1(&p[3], 0), "'\\x00'");
        EQ(fmt1(&p[4], 1), "true");
        EQ(fmt1(&p[4], 0), "false");
        EQ(fmt1(&p[4], 0xffffff00), "false");
        EQ(fmt1(&p[5], 5), "GREEN");
        EQ(fmt1(&p[5], 0), "RED");
        EQ(fmt1(&p[5], 0xfffffffe), "BLUE");
        EQ(fmt1(&p[5], 0xfffffffffffffffe), "BLUE");
        EQ(fmt1(&p[5], 3), "3");
        EQ(fmt1(&p[5], 0xfffffffd), "-3");
        /* __int128: two registers each way */
        f = func(d, bin, "f_i128", "f_i128", 2);
        param(&f->params[0], "v", "__int128", TOOL_DW_INT, 16, TOOL_DW_IREG, 1, TOOL_DW_IREG, 2);
        param(&f->params[1], "x", "long", TOOL_DW_INT, 8, IREG(3));
        param(&f->ret, "", "__int128", TOOL_DW_INT, 16, TOOL_DW_IREG, 0, TOOL_DW_IREG, -1);
        EQ(fmt2(&f->params[0], 0xffffffffffffffff, 0xffffffffffffffff, 2), "-1");
        EQ(fmt2(&f->params[0], 0, 1, 2), "18446744073709551616");
        EQ(fmt2(&f->ret, 0, 0x8000000000000000, 2), "-170141183460469231731687303715884105728");
        EQ(fmt2(&f->params[0], 5, 0, 1), "?"); /* only one register given */
        /* small types in wide registers */
        f = func(d, bin, "f_bits", "f_bits", 3);
        param(&f->params[1], "sc", "signed char", TOOL_DW_CHAR, 1, IREG(2));
        param(&f->params[2], "us", "unsigned short", TOOL_DW_UINT, 2, IREG(3));
        param(&f->ret, "", "short", TOOL_DW_INT, 2, IREG(0));
        EQ(fmt1(&f->params[1], 0xffffffff), "'\\xff'");
        EQ(fmt1(&f->params[2], 0xffff0002), "2");
        EQ(fmt1(&f->ret, 0xfffe), "-2");
        EQ(fmt1(&f->ret, 0xfffffffffffffffe), "-2");
        tool_dw_close(d);
    }
}

Test(dwarf, c_pointers_and_strings)
{
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(c_bins[b]);
        struct tool_dw *d = open_ok(bin);
        const struct tool_dw_func *f = func(d, bin, "f_ptrs", "f_ptrs", 4);
        const struct tool_dw_param *p = f->params;
        param(&p[0], "p", "void *", TOOL_DW_PTR, 8, IREG(1));
        param(&p[1], "s", "const char *", TOOL_DW_STR, 8, IREG(2));
        param(&p[2], "pp", "struct pt *", TOOL_DW_PTR, 8, IREG(3));
        param(&p[3], "bytes", "unsigned char *", TOOL_DW_STR, 8, IREG(4));
        param(&f->ret, "", "void *", TOOL_DW_PTR, 8, IREG(0));
        EQ(fmt1(&p[0], 0), "0x0");
        EQ(fmt1(&p[0], 0x7ffd1234abcd), "0x7ffd1234abcd");
        EQ(fmt1(&p[2], 0x55550000a010), "0x55550000a010"); /* a struct by pointer: its address */
        EQ(fmts(&p[1], 0x4000, "GET /", 5, false, false), "\"GET /\"");
        EQ(fmts(&p[1], 0x4000, "", 0, false, false), "\"\"");
        EQ(fmts(&p[1], 0x4000, "a\"b\\c\n\t\x01\x7f\r", 10, false, false),
           "\"a\\\"b\\\\c\\n\\t\\x01\\x7f\\x0d\"");
        EQ(fmts(&p[1], 0x4000, "caf\xc3\xa9 \xe2\x82\xac", 9, false, false),
           "\"caf\xc3\xa9 \xe2\x82\xac\""); /* valid UTF-8 as it is */
        EQ(fmts(&p[1], 0x4000, "\xc3(\xc0\x80\xed\xa0\x80\xc2\x85", 9, false, false),
           "\"\\xc3(\\xc0\\x80\\xed\\xa0\\x80\\xc2\\x85\""); /* invalid, surrogate, C1 */
        EQ(fmts(&p[1], 0x4000, "a\0b", 3, false, false), "\"a\\x00b\"");
        EQ(fmts(&p[1], 0x4000, "x\xe2\x80\xaey\xe2\x81\xa6", 8, false, false),
           "\"x\\xe2\\x80\\xaey\\xe2\\x81\\xa6\""); /* bidi override, isolate */
        EQ(fmts(&p[1], 0x4000, "\xe2\x80\xa9\xc2\xa0", 5, false, false),
           "\"\xe2\x80\xa9\xc2\xa0\""); /* U+2029, U+00A0: as they are */
        EQ(fmts(&p[1], 0x4000, "SELECT 1", 8, true, false), "\"SELECT 1\"...");
        EQ(fmts(&p[1], 0xdead0000, NULL, 0, false, true), "0xdead0000"); /* fault */
        EQ(fmts(&p[1], 0xdead0000, "junk", 4, false, true), "0xdead0000");
        EQ(fmts(&p[1], 0, NULL, 0, false, false), "0x0");         /* NULL */
        EQ(fmts(&p[1], 0x4000, NULL, 0, false, false), "0x4000"); /* not copied */
        EQ(fmts(&p[3], 0x4000, "\xff\x01", 2, false, false), "\"\\xff\\x01\"");
        /* variadic: the named parameter only */
        f = func(d, bin, "f_var", "f_var", 1);
        cr_assert(f->variadic);
        param(&f->params[0], "fmt", "const char *", TOOL_DW_STR, 8, IREG(1));
        /* void */
        f = func(d, bin, "f_void", "f_void", 1);
        param(&f->ret, "", "void", TOOL_DW_OTHER, 0, TOOL_DW_NONE, 0, TOOL_DW_NONE, 0);
        EQ(fmt1(&f->ret, 0), "");
        /* main's char ** is a pointer, not a string */
        f = func(d, bin, "main", "main", 2);
        param(&f->params[1], "argv", "char **", TOOL_DW_PTR, 8, IREG(2));
        tool_dw_close(d);
    }
}

Test(dwarf, c_floats)
{
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(c_bins[b]);
        struct tool_dw *d = open_ok(bin);
        const struct tool_dw_func *f = func(d, bin, "f_fp", "f_fp", 3);
        const struct tool_dw_param *p = f->params;
        param(&p[0], "f", "float", TOOL_DW_FLOAT, 4, SSE(0));
        param(&p[1], "d", "double", TOOL_DW_DOUBLE, 8, SSE(1));
        param(&p[2], "after", "int", TOOL_DW_INT, 4, IREG(1));
        param(&f->ret, "", "double", TOOL_DW_DOUBLE, 8, SSE(0));
        EQ(fmt1(&p[0], 0x3fc00000), "?"); /* an SSE argument is not recorded */
        EQ(fmt1(&p[1], 0x4004000000000000), "?");
        EQ(fmt1(&p[2], 3), "3");
        EQ(fmt1(&f->ret, 0x4004000000000000), "2.5");
        EQ(fmt1(&f->ret, 0x3fb999999999999a), "0.1");
        EQ(fmt1(&f->ret, 0x3fd5555555555555), "0.3333333333333333");
        EQ(fmt1(&f->ret, 0x7e37e43c8800759c), "1e+300");
        EQ(fmt1(&f->ret, 0x8000000000000000), "-0");
        EQ(fmt1(&f->ret, 0x7ff0000000000000), "inf");
        EQ(fmt1(&f->ret, 0xfff0000000000000), "-inf");
        EQ(fmt1(&f->ret, 0x7ff8000000000000), "nan");
        EQ(fmt1(&f->ret, 0x4059000000000000), "100");
        EQ(fmt1(&f->ret, 0x43abc16d674ec800), "1e+18");
        EQ(fmt1(&f->ret, 0x4341c37937e08000), "1e+16");
        EQ(fmt1(&f->ret, 0x40fe240c9fbe76c9), "123456.789");
        EQ(fmt1(&f->ret, 0x3f1a36e2eb1c432d), "0.0001");
        EQ(fmt1(&f->ret, 0x3ee4f8b588e368f1), "1e-05");
        f = func(d, bin, "f_half", "f_half", 1);
        param(&f->params[0], "x", "float", TOOL_DW_FLOAT, 4, SSE(0));
        param(&f->ret, "", "float", TOOL_DW_FLOAT, 4, SSE(0));
        EQ(fmt1(&f->ret, 0x3fc00000), "1.5");
        EQ(fmt1(&f->ret, 0xdeadbeef3fc00000), "1.5"); /* the low 32 bits of xmm0 */
        EQ(fmt1(&f->ret, 0x3dcccccd), "0.1");
        EQ(fmt1(&f->ret, 0x4b189680), "10000000");
        EQ(fmt1(&f->ret, 0x5a0e1bca), "1e+16");
        /* long double: memory in, st0 out: neither recorded */
        f = func(d, bin, "f_ld", "f_ld", 2);
        param(&f->params[0], "x", "long double", TOOL_DW_OTHER, 16, MEM);
        param(&f->params[1], "y", "int", TOOL_DW_INT, 4, IREG(1));
        param(&f->ret, "", "long double", TOOL_DW_OTHER, 16, TOOL_DW_X87, 0, TOOL_DW_NONE, 0);
        EQ(fmt1(&f->params[0], 1), "?");
        EQ(fmt1(&f->ret, 1), "?");
        tool_dw_close(d);
    }
}

Test(dwarf, c_structs)
{
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(c_bins[b]);
        struct tool_dw *d = open_ok(bin);
        /* two ints: one INTEGER eightbyte; an int and a double: INTEGER + SSE */
        const struct tool_dw_func *f = func(d, bin, "f_structs", "f_structs", 3);
        const struct tool_dw_param *p = f->params;
        param(&p[0], "p", "struct pt", TOOL_DW_STRUCT, 8, IREG(1));
        param(&p[1], "m", "struct mix", TOOL_DW_STRUCT, 16, TOOL_DW_IREG, 2, TOOL_DW_SSE, 0);
        param(&p[2], "z", "long", TOOL_DW_INT, 8, IREG(3));
        EQ(fmt1(&p[0], 0xfffffffe00000003), "{x=3, y=-2}");
        EQ(fmt2(&p[1], 0xdead000000000007, 0x4004000000000000, 2), "{i=7, d=?}");
        EQ(fmt2(&p[1], 7, 0, 1), "{...}"); /* one register given for two eightbytes */
        /* more than 16 bytes: memory; the int after it takes rdi */
        f = func(d, bin, "f_big", "f_big", 2);
        param(&f->params[0], "b", "struct big", TOOL_DW_STRUCT, 24, MEM);
        param(&f->params[1], "after", "int", TOOL_DW_INT, 4, IREG(1));
        EQ(fmt1(&f->params[0], 1), "?");
        /* two longs returned in rax:rdx */
        f = func(d, bin, "f_two", "f_two", 1);
        cr_assert_not(f->sret);
        param(&f->ret, "", "struct two", TOOL_DW_STRUCT, 16, TOOL_DW_IREG, 0, TOOL_DW_IREG, -1);
        param(&f->params[0], "a", "long", TOOL_DW_INT, 8, IREG(1));
        EQ(fmt2(&f->ret, 1, 0xffffffffffffffff, 2), "{a=1, b=-1}");
        /* a struct over 16 bytes returned through sret: the arguments move one register on */
        f = func(d, bin, "f_sret", "f_sret", 2);
        cr_assert(f->sret);
        param(&f->ret, "", "struct big", TOOL_DW_STRUCT, 24, MEM);
        param(&f->params[0], "a", "long", TOOL_DW_INT, 8, IREG(2));
        param(&f->params[1], "b", "long", TOOL_DW_INT, 8, IREG(3));
        EQ(fmt1(&f->ret, 0x7ffc0000), "?");
        /* bit-fields */
        f = func(d, bin, "f_bits", "f_bits", 3);
        param(&f->params[0], "fl", "struct flags", TOOL_DW_STRUCT, 4, IREG(1));
        EQ(fmt1(&f->params[0], 1 | 13 << 1 | 'x' << 8), "{ready=1, level=-3, tag='x'}");
        tool_dw_close(d);
    }
}

Test(dwarf, c_memory_arguments)
{
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(c_bins[b]);
        struct tool_dw *d = open_ok(bin);
        const struct tool_dw_func *f = func(d, bin, "f_eight", "f_eight", 8);
        char name[4];
        for (int i = 0; i < 6; i++) {
            snprintf(name, sizeof name, "a%d", i + 1);
            param(&f->params[i], name, "long", TOOL_DW_INT, 8, IREG(i + 1));
        }
        param(&f->params[6], "a7", "long", TOOL_DW_INT, 8, MEM);
        param(&f->params[7], "a8", "long", TOOL_DW_INT, 8, MEM);
        EQ(fmt1(&f->params[6], 7), "?");
        EQ(fmt1(&f->params[5], 6), "6");
        /* a two-register struct with one register left: memory; the long after it: r9 */
        f = func(d, bin, "f_out", "f_out", 7);
        param(&f->params[4], "a5", "long", TOOL_DW_INT, 8, IREG(5));
        param(&f->params[5], "t", "struct two", TOOL_DW_STRUCT, 16, MEM);
        param(&f->params[6], "a6", "long", TOOL_DW_INT, 8, IREG(6));
        tool_dw_close(d);
    }
}

/* Where `after` lands behind each struct shape (dw_c.c, SHAPE): the registers the shape took,
 * as clang 14's code for these functions shows them. */
Test(dwarf, c_eightbyte_classes)
{
    static const struct {
        const char *n;
        int ireg, sse; /* `after`'s register in g_N, in h_N */
    } shapes[] = {
        {"fff", 1, 2}, {"cd", 2, 1},   {"fi", 2, 0},  {"ia3", 3, 0}, {"uif", 2, 0},  {"dl", 2, 1},
        {"pk", 1, 0},  {"nest", 2, 1}, {"ld1", 1, 0}, {"f4", 1, 2},  {"cdbl", 1, 2}, {"cflt", 1, 1},
    };
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(c_bins[b]);
        struct tool_dw *d = open_ok(bin);
        char name[32];
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            snprintf(name, sizeof name, "g_%s", shapes[i].n);
            const struct tool_dw_func *f = func(d, bin, name, name, 2);
            param(&f->params[1], "after", "long", TOOL_DW_INT, 8, IREG(shapes[i].ireg));
            snprintf(name, sizeof name, "h_%s", shapes[i].n);
            f = func(d, bin, name, name, 2);
            param(&f->params[1], "after", "double", TOOL_DW_DOUBLE, 8, SSE(shapes[i].sse));
        }
        const struct tool_dw_func *f = func(d, bin, "g_cd", "g_cd", 2);
        param(&f->params[0], "x", "struct cd", TOOL_DW_STRUCT, 16, TOOL_DW_IREG, 1, TOOL_DW_SSE, 0);
        EQ(fmt2(&f->params[0], 0x41, 0, 2), "{c='A', d=?}");
        f = func(d, bin, "g_ia3", "g_ia3", 2);
        param(&f->params[0], "x", "struct ia3", TOOL_DW_STRUCT, 12, TOOL_DW_IREG, 1, TOOL_DW_IREG,
              2);
        EQ(fmt2(&f->params[0], 0xfffffffe00000001, 0xdead000000000003, 2), "{a={1, -2, 3}}");
        f = func(d, bin, "g_uif", "g_uif", 2);
        EQ(fmt1(&f->params[0], 1), "{...}");
        f = func(d, bin, "g_cdbl", "g_cdbl", 2);
        param(&f->params[0], "x", "complex", TOOL_DW_OTHER, 16, TOOL_DW_SSE, 0, TOOL_DW_SSE, 1);
        EQ(fmt2(&f->params[0], 1, 2, 2), "?");
        /* returned: {double, long} in xmm0 and rax; three floats in xmm0 and xmm1 */
        f = func(d, bin, "r_dl", "r_dl", 1);
        param(&f->ret, "", "struct dl", TOOL_DW_STRUCT, 16, TOOL_DW_SSE, 0, TOOL_DW_IREG, 0);
        EQ(fmt2(&f->ret, 0x3ff8000000000000, 0xffffffffffffffff, 2), "{a=1.5, b=-1}");
        f = func(d, bin, "r_fff", "r_fff", 1);
        param(&f->ret, "", "struct fff", TOOL_DW_STRUCT, 12, TOOL_DW_SSE, 0, TOOL_DW_SSE, 1);
        EQ(fmt2(&f->ret, 0x3fc000003f800000, 0x40000000, 2), "{a=1, b=1.5, c=2}");
        tool_dw_close(d);
    }
}

/* clang -O2 drops f_dead's unused first argument without a word in DWARF; only `used`'s location
 * (rdi, where the ABI has rsi) gives it away. */
Test(dwarf, optimised_away_arguments)
{
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(c_bins[b]);
        struct tool_dw *d = open_ok(bin);
        const struct tool_dw_func *f = tool_dw_func_at(d, sym(bin, "f_dead"));
        cr_assert(f);
        cr_assert_eq(f->nparams, 2);
        if (b == 0) {
            cr_assert_not(f->abi_changed);
            param(&f->params[0], "unused", "long", TOOL_DW_INT, 8, IREG(1));
            param(&f->params[1], "used", "long", TOOL_DW_INT, 8, IREG(2));
            EQ(fmt1(&f->params[1], 4), "4");
        } else {
            cr_assert(f->abi_changed);
            param(&f->params[0], "unused", "long", TOOL_DW_INT, 8, TOOL_DW_NONE, 0, TOOL_DW_NONE,
                  0);
            param(&f->params[1], "used", "long", TOOL_DW_INT, 8, TOOL_DW_NONE, 0, TOOL_DW_NONE, 0);
            param(&f->ret, "", "long", TOOL_DW_INT, 8, TOOL_DW_NONE, 0, TOOL_DW_NONE, 0);
            EQ(fmt1(&f->params[1], 4), "?");
            EQ(fmt1(&f->ret, 12), "?");
        }
        tool_dw_close(d);
    }
}

Test(dwarf, cxx)
{
    for (int b = 0; b < NBINS; b++) {
        const char *bin = env(cxx_bins[b]);
        struct tool_dw *d = open_ok(bin);
        cr_assert_null(tool_dw_why(d));
        /* a member function: `this` first */
        const struct tool_dw_func *f = func(d, bin, "_ZN7Counter3addEl", "Counter::add", 2);
        param(&f->params[0], "this", "Counter *", TOOL_DW_PTR, 8, IREG(1));
        param(&f->params[1], "k", "long", TOOL_DW_INT, 8, IREG(2));
        param(&f->ret, "", "long", TOOL_DW_INT, 8, IREG(0));
        EQ(fmt1(&f->params[0], 0x7ffe0040), "0x7ffe0040");
        /* sret before `this`: rdi the result, rsi this, rdx x */
        f = func(d, bin, "_ZN5Maker4makeEl", "Maker::make", 2);
        cr_assert(f->sret);
        param(&f->params[0], "this", "Maker *", TOOL_DW_PTR, 8, IREG(2));
        param(&f->params[1], "x", "long", TOOL_DW_INT, 8, IREG(3));
        param(&f->ret, "", "Big", TOOL_DW_STRUCT, 24, MEM);
        /* not trivially copyable: by invisible reference, its address in rdi */
        f = func(d, bin, "_Z4take6Handlel", "take", 2);
        param(&f->params[0], "h", "Handle", TOOL_DW_STRUCT, 8, IREG(1));
        cr_assert(f->params[0].byref);
        param(&f->params[1], "y", "long", TOOL_DW_INT, 8, IREG(2));
        EQ(fmt1(&f->params[0], 0x7ffc0010), "0x7ffc0010");
        /* a scoped enum of two bytes, references, bool */
        f = func(d, bin, "_Z5modes4ModeRKlOlb", "modes", 4);
        param(&f->params[0], "m", "Mode", TOOL_DW_ENUM, 2, IREG(1));
        param(&f->params[1], "r", "const long &", TOOL_DW_PTR, 8, IREG(2));
        param(&f->params[2], "rr", "long &&", TOOL_DW_PTR, 8, IREG(3));
        param(&f->params[3], "b", "bool", TOOL_DW_BOOL, 1, IREG(4));
        EQ(fmt1(&f->params[0], 7), "On");
        EQ(fmt1(&f->params[0], 0xffff0000), "Off");
        EQ(fmt1(&f->params[0], 0xffff), "-1");
        EQ(fmt1(&f->params[3], 1), "true");
        /* names with their namespaces and classes */
        f = func(d, bin, "_ZN3geo5Shape4areaENS0_4KindEPKNS_5PointENS_12_GLOBAL__N_14SideES2_",
                 "geo::Shape::area", 5);
        param(&f->params[0], "this", "geo::Shape *", TOOL_DW_PTR, 8, IREG(1));
        param(&f->params[1], "k", "geo::Shape::Kind", TOOL_DW_ENUM, 4, IREG(2));
        param(&f->params[2], "p", "const geo::Point *", TOOL_DW_PTR, 8, IREG(3));
        param(&f->params[3], "s", "geo::(anonymous namespace)::Side", TOOL_DW_ENUM, 1, IREG(4));
        param(&f->params[4], "by_value", "geo::Point", TOOL_DW_STRUCT, 8, IREG(5));
        EQ(fmt1(&f->params[1], 1), "Square");
        EQ(fmt1(&f->params[3], 'R'), "Right");
        EQ(fmt1(&f->params[4], 0x0000000200000001), "{x=1, y=2}");
        /* double in, double out */
        f = func(d, bin, "_Z4halfd", "half", 1);
        param(&f->params[0], "x", "double", TOOL_DW_DOUBLE, 8, SSE(0));
        param(&f->ret, "", "double", TOOL_DW_DOUBLE, 8, SSE(0));
        EQ(fmt1(&f->ret, 0x3fe0000000000000), "0.5");
        tool_dw_close(d);
    }
}

Test(dwarf, no_debug_info)
{
    const char *bin = env("DW_NODEBUG");
    struct tool_dw *d = open_ok(bin);
    const char *why = tool_dw_why(d);
    cr_assert(why);
    cr_assert(strstr(why, "no DWARF"), "%s", why);
    cr_assert_null(tool_dw_func_at(d, sym(bin, "f_scalars")));
    cr_assert_null(tool_dw_func_at(d, sym(bin, "main")));
    cr_assert_null(tool_dw_func_at(d, 0));
    tool_dw_close(d);
}

Test(dwarf, separate_debug_file_by_debuglink)
{
    const char *bin = env("DW_STRIPPED");
    struct tool_dw *d = open_ok(bin);
    cr_assert_null(tool_dw_why(d), "%s", tool_dw_why(d));
    /* stripped: the addresses from the program it was made of */
    const char *full = env("DW_C_O2");
    const struct tool_dw_func *f = func(d, full, "f_scalars", "f_scalars", 6);
    param(&f->params[5], "e", "enum color", TOOL_DW_ENUM, 4, IREG(6));
    EQ(fmt1(&f->params[5], 0xfffffffe), "BLUE");
    f = func(d, full, "f_sret", "f_sret", 2);
    cr_assert(f->sret);
    tool_dw_close(d);
}

Test(dwarf, lookups_and_errors)
{
    const char *bin = env("DW_C_O0");
    struct tool_dw *d = open_ok(bin);
    uint64_t a = sym(bin, "f_scalars");
    cr_assert_null(tool_dw_func_at(d, a + 1)); /* inside, not the entry */
    cr_assert_null(tool_dw_func_at(d, 0));
    cr_assert_eq(tool_dw_func_at(d, a), tool_dw_func_at(d, a)); /* built once */
    /* a buffer too small: cut, NUL-terminated, the whole length returned */
    const struct tool_dw_func *f = tool_dw_func_at(d, a);
    uint64_t v = (uint64_t)-123456;
    char small[4];
    cr_assert_eq(tool_dw_format(&f->params[2], &v, 1, NULL, 0, false, false, small, sizeof small),
                 7);
    cr_assert_str_eq(small, "-12");
    tool_dw_close(d);

    char err[256];
    d = (struct tool_dw *)1;
    cr_assert_eq(tool_dw_open(&d, "/nonexistent/prog", err, sizeof err), -1);
    cr_assert_null(d);
    cr_assert_str_eq(err, "/nonexistent/prog: cannot open: No such file or directory");
    cr_assert_eq(tool_dw_open(&d, "/", err, sizeof err), -1);
    cr_assert_str_eq(err, "/: cannot read: Is a directory");
    char tmp[] = "/tmp/dwarf-test-XXXXXX";
    int fd = mkstemp(tmp);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "#!/bin/sh\n", 10), 10);
    close(fd);
    cr_assert_eq(tool_dw_open(&d, tmp, err, sizeof err), -1);
    char want[300];
    snprintf(want, sizeof want, "%s: not an ELF file", tmp);
    cr_assert_str_eq(err, want);
    /* ELF magic, then nothing */
    fd = open(tmp, O_WRONLY | O_TRUNC);
    cr_assert_eq(write(fd, "\177ELF\2\1\1", 7), 7);
    close(fd);
    cr_assert_eq(tool_dw_open(&d, tmp, err, sizeof err), -1);
    cr_assert(strncmp(err, tmp, strlen(tmp)) == 0, "%s", err);
    cr_assert_null(strchr(err, '\n'));
    unlink(tmp);
}
