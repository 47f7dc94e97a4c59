/* The trampolines must preserve every argument and return register. Each instrumented function
 * here records what it received (6 integer + 8 double arguments, 128-bit vectors, varargs that
 * depend on %al) or returns values in rax:rdx, xmm0:xmm1 and st0; main compares every bit.
 * Values change on every iteration so nothing is constant-folded; ITER iterations also cross
 * many chunk boundaries (slow path) when the test uses small buffers. Exit 0 = all exact. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "progs.h"

enum { ITER = 3000 };

typedef long long v2di __attribute__((vector_size(16)));
struct pair {
    long a, b;
};
struct dpair {
    double x, y;
};

static volatile long got_i[6];
static volatile double got_d[8];
static volatile long got_va_i[5];
static volatile double got_va_d[8];

KEEP void args14(long a, long b, long c, long d, long e, long f, double d0, double d1, double d2,
                 double d3, double d4, double d5, double d6, double d7)
{
    got_i[0] = a, got_i[1] = b, got_i[2] = c, got_i[3] = d, got_i[4] = e, got_i[5] = f;
    got_d[0] = d0, got_d[1] = d1, got_d[2] = d2, got_d[3] = d3;
    got_d[4] = d4, got_d[5] = d5, got_d[6] = d6, got_d[7] = d7;
}

/* n pairs (long, double) passed as varargs: the caller sets %al to the number of vector
 * registers used, and the callee's prologue saves xmm0-7 only if %al is non-zero. */
KEEP void vargs(int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        got_va_i[i] = va_arg(ap, long);
        got_va_d[i] = va_arg(ap, double);
    }
    va_end(ap);
}

KEEP double ret_double(double x)
{
    return x * 2.0;
}
KEEP long double ret_ldouble(long double x)
{
    return x * 3.0L;
}
KEEP struct pair ret_pair(long a, long b)
{
    return (struct pair){a ^ 0x5a5a5a5a5a5a5a5aL, ~b};
}
KEEP struct dpair ret_dpair(double x, double y)
{
    return (struct dpair){y - 0.5, x + 0.25};
}
KEEP v2di ret_vec(v2di a, v2di b)
{
    return a ^ b;
}
KEEP __int128 ret_i128(__int128 a)
{
    return a * 3;
}

void (*volatile args14p)(long, long, long, long, long, long, double, double, double, double, double,
                         double, double, double) = args14;
void (*volatile vargsp)(int, ...) = vargs;
double (*volatile ret_doublep)(double) = ret_double;
long double (*volatile ret_ldoublep)(long double) = ret_ldouble;
struct pair (*volatile ret_pairp)(long, long) = ret_pair;
struct dpair (*volatile ret_dpairp)(double, double) = ret_dpair;
v2di (*volatile ret_vecp)(v2di, v2di) = ret_vec;
__int128 (*volatile ret_i128p)(__int128) = ret_i128;

static int bad;

static void check_long(const char *what, int i, long got, long want)
{
    if (got != want && bad++ < 10)
        printf("%s[%d]: got %#lx, expected %#lx\n", what, i, got, want);
}

static void check_bits(const char *what, int i, const void *got, const void *want, size_t n)
{
    if (memcmp(got, want, n) != 0 && bad++ < 10)
        printf("%s[%d]: bits differ\n", what, i);
}

int main(void)
{
    for (int it = 0; it < ITER; it++) {
        long L[6];
        double D[8];
        for (int k = 0; k < 6; k++)
            L[k] = (long)(0x0101010101010101ULL * (unsigned)(k + 1)) ^ ((long)it << (8 * k % 48));
        for (int k = 0; k < 8; k++)
            D[k] = (k + 1) / 7.0 + it * 1e-3 - (k & 1) * 1e10;
        args14p(L[0], L[1], L[2], L[3], L[4], L[5], D[0], D[1], D[2], D[3], D[4], D[5], D[6], D[7]);
        for (int k = 0; k < 6; k++)
            check_long("int arg", k, got_i[k], L[k]);
        for (int k = 0; k < 8; k++) {
            double g = got_d[k];
            check_bits("double arg", k, &g, &D[k], sizeof g);
        }

        vargsp(5, L[0], D[0], L[1], D[1], L[2], D[2], L[3], D[3], L[4], D[4]);
        for (int k = 0; k < 5; k++) {
            double g = got_va_d[k];
            check_long("vararg long", k, got_va_i[k], L[k]);
            check_bits("vararg double", k, &g, &D[k], sizeof g);
        }

        double x = D[3] + it, r = ret_doublep(x), wr = x * 2.0;
        check_bits("double ret", it, &r, &wr, sizeof r);

        long double lx = (long double)D[5] / 3.0L + it, lr = ret_ldoublep(lx), wlr = lx * 3.0L;
        check_bits("long double ret", it, &lr, &wlr, 10);

        struct pair p = ret_pairp(L[2], L[4]);
        check_long("pair.a", it, p.a, L[2] ^ 0x5a5a5a5a5a5a5a5aL);
        check_long("pair.b", it, p.b, ~L[4]);

        struct dpair q = ret_dpairp(D[6], D[7]);
        double wx = D[7] - 0.5, wy = D[6] + 0.25;
        check_bits("dpair.x", it, &q.x, &wx, sizeof wx);
        check_bits("dpair.y", it, &q.y, &wy, sizeof wy);

        v2di a = {L[0], L[1]}, b = {L[5], (long long)it * 0x1000001};
        v2di v = ret_vecp(a, b), wv = a ^ b;
        check_bits("vector ret", it, &v, &wv, sizeof v);

        __int128 w = ((__int128)L[3] << 64) | (unsigned long)L[1];
        __int128 wi = ret_i128p(w), wwi = w * 3;
        check_bits("int128 ret", it, &wi, &wwi, sizeof wi);
    }
    if (bad) {
        printf("%d mismatches\n", bad);
        return 1;
    }
    printf("all registers preserved\n");
    const char *fns[] = {"args14",   "vargs",     "ret_double", "ret_ldouble",
                         "ret_pair", "ret_dpair", "ret_vec",    "ret_i128"};
    for (int k = 0; k < 8; k++)
        printf("count %s %d\n", fns[k], ITER);
    printf("count main 1\nthreads 1\nthreadwork %d\n", 8 * ITER + 1);
    return 0;
}
