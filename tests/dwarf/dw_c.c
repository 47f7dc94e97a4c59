/* Functions whose DWARF test_dwarf.c reads: one of each kind of parameter the System V AMD64
 * ABI places differently. Built with -g -O0, -g -O2, without -g, and stripped with a separate
 * debug file (tests/dwarf/meson.build). External and noinline, so that every one keeps its
 * entry and its calling convention at -O2. */
#include <stdarg.h>
#include <stdbool.h>

#define KEEP __attribute__((noinline, used))

enum color { RED, GREEN = 5, BLUE = -2 };
struct pt {
    int x, y;
};
struct mix {
    int i;
    double d;
};
struct big {
    long a, b, c;
};
struct two {
    long a, b;
};
struct flags {
    unsigned ready : 1;
    int level : 4;
    char tag;
};

volatile long sink;

KEEP int f_scalars(int i, unsigned u, long l, char c, bool b, enum color e)
{
    sink = i + u + l + c + b + e;
    return i;
}

KEEP void *f_ptrs(void *p, const char *s, struct pt *pp, unsigned char *bytes)
{
    sink = (long)s + (long)pp + (long)bytes;
    return p;
}

KEEP double f_fp(float f, double d, int after)
{
    sink = after;
    return f * d;
}

KEEP long f_structs(struct pt p, struct mix m, long z)
{
    return p.x + m.i + z + (long)m.d;
}

KEEP long f_big(struct big b, int after)
{
    return b.a + after;
}

KEEP long f_eight(long a1, long a2, long a3, long a4, long a5, long a6, long a7, long a8)
{
    return a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8;
}

KEEP int f_var(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = va_arg(ap, int);
    va_end(ap);
    return n + fmt[0];
}

KEEP struct two f_two(long a)
{
    struct two t = {a, a + 1};
    return t;
}

KEEP struct big f_sret(long a, long b)
{
    struct big r = {a, b, a + b};
    return r;
}

KEEP __int128 f_i128(__int128 v, long x)
{
    return v + x;
}

KEEP long double f_ld(long double x, int y)
{
    return x + y;
}

/* Five longs leave one register: the two-register struct goes to memory, the long after it
 * takes that last register. */
KEEP long f_out(long a1, long a2, long a3, long a4, long a5, struct two t, long a6)
{
    return a1 + a2 + a3 + a4 + a5 + t.a + a6;
}

KEEP float f_half(float x)
{
    return x / 2;
}

KEEP void f_void(int x)
{
    sink = x;
}

KEEP short f_bits(struct flags fl, signed char sc, unsigned short us)
{
    return (short)(fl.level + sc + us);
}

/* The eightbyte classification, one struct shape a pair: g_N(x, long after) shows how many
 * integer registers x takes, h_N(x, double after) how many SSE ones, by where `after` lands
 * (checked against clang 14's code for each: `mov %rsi,%rax` in g_cd says x took rdi). */
struct fff {
    float a, b, c; /* SSE, SSE */
};
struct cd {
    char c;
    double d; /* INTEGER, SSE */
};
struct fi {
    float f;
    int i; /* one INTEGER eightbyte */
};
struct ia3 {
    int a[3]; /* INTEGER, INTEGER */
};
union uif {
    int i;
    float f; /* INTEGER */
};
struct dl {
    double a;
    long b; /* SSE, INTEGER */
};
struct __attribute__((packed)) pk {
    char c;
    long l; /* unaligned: memory */
};
struct nest {
    struct {
        float x, y;
    } p;
    int k; /* SSE, INTEGER */
};
struct ld1 {
    long double x; /* x87: memory */
};
struct f4 {
    float a, b, c, d; /* SSE, SSE */
};
#define SHAPE(X, N)                                                                                \
    KEEP long g_##N(X x, long after)                                                               \
    {                                                                                              \
        (void)x;                                                                                   \
        return after;                                                                              \
    }                                                                                              \
    KEEP double h_##N(X x, double after)                                                           \
    {                                                                                              \
        (void)x;                                                                                   \
        return after;                                                                              \
    }
SHAPE(struct fff, fff)
SHAPE(struct cd, cd)
SHAPE(struct fi, fi)
SHAPE(struct ia3, ia3)
SHAPE(union uif, uif)
SHAPE(struct dl, dl)
SHAPE(struct pk, pk)
SHAPE(struct nest, nest)
SHAPE(struct ld1, ld1)
SHAPE(struct f4, f4)
SHAPE(_Complex double, cdbl)
SHAPE(_Complex float, cflt)

KEEP struct dl r_dl(long v)
{
    struct dl r = {1.5, v};
    return r;
}

KEEP struct fff r_fff(float v)
{
    struct fff r = {v, v, v};
    return r;
}

/* Static, its first argument unused: clang -O2 removes that argument, and `used` arrives in rdi
 * (not marked `used`, which would keep its signature). */
static __attribute__((noinline)) long f_dead(long unused, long used)
{
    return used * 3;
}

int main(int argc, char **argv)
{
    struct pt p = {argc, 2};
    struct mix m = {1, 2.5};
    struct big b = {1, 2, 3};
    struct two t = {1, 2};
    struct flags fl = {1, -3, 'x'};
    sink = f_scalars(argc, 1, 2, 'a', true, BLUE);
    sink = (long)f_ptrs(argv, argv[0], &p, 0);
    sink = (long)f_fp(1.5f, 2.0, 3);
    sink = f_structs(p, m, 4);
    sink = f_big(b, 5);
    sink = f_eight(1, 2, 3, 4, 5, 6, 7, 8);
    sink = f_var("%d", 9);
    sink = f_two(argc).b;
    sink = f_sret(argc, 2).c;
    sink = (long)f_i128(argc, 1);
    sink = (long)f_ld(argc, 1);
    sink = f_out(1, 2, 3, 4, 5, t, 6);
    sink = f_bits(fl, -1, 2);
    sink = (long)f_half(3.0f);
    f_void(argc);
    sink = f_dead((long)argv, argc);
    return 0;
}
