/* Arguments and return values (SLEDTRACE_ARGS, issue 26): functions whose argument registers,
 * strings and return registers the test knows exactly. Run with
 *   SLEDTRACE_ARGS='fib@arg1,retval;parse@arg1/s,arg2,retval;many;vsum@args;half@retval;
 *                   pair@arg2,retval;flags@arg3'
 * parse() is called on hostile pointers: NULL, an unmapped page, a string without a NUL that
 * ends at the end of a mapping, one longer than the bound, one with control bytes. plain() is
 * not chosen: its records stay plain. Prints "count F N" lines (progs.h) and the addresses the
 * test needs ("addr NAME 0x..."). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "progs.h"

struct two {
    long a, b;
};
enum color { RED, GREEN, BLUE };

long (*volatile fibp)(long);

KEEP long fib(long n)
{
    return n < 2 ? n : fibp(n - 1) + fibp(n - 2);
}

KEEP long parse(const char *buf, long len)
{
    BARRIER();
    return len * 2 + (buf != NULL);
}

KEEP long many(long a, long b, long c, long d, long e, long f, long g, long h)
{
    BARRIER();
    return a + b + c + d + e + f + g + h;
}

KEEP long vsum(int n, ...)
{
    va_list ap;
    va_start(ap, n);
    long s = 0;
    for (int i = 0; i < n; i++)
        s += va_arg(ap, long);
    va_end(ap);
    return s;
}

KEEP double half(double x)
{
    BARRIER();
    return x / 2;
}

KEEP struct two pair(long a, long b)
{
    BARRIER();
    return (struct two){a + 1, b + 2};
}

KEEP int flags(bool on, enum color c, unsigned u)
{
    BARRIER();
    return on + (int)c + (int)u;
}

KEEP long plain(long x)
{
    BARRIER();
    return x + 1;
}

long (*volatile parsep)(const char *, long) = parse;

__attribute__((xray_never_instrument)) int main(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED)
        return 2;
    munmap(two + page, page);         /* two[page..] is unmapped */
    memset(two + page - 10, 'A', 10); /* 10 bytes, no NUL, up to the hole */
    char *gone = two + page;          /* unmapped */
    char longs[200];
    memset(longs, 'x', sizeof longs - 1);
    longs[sizeof longs - 1] = '\0';
    char ctl[] = "a\tb\n\"q\"\x01";

    fibp = fib;
    long s = fibp(6);
    s += parsep("GET /", 5);
    s += parsep(NULL, 0);
    s += parsep(gone, 1);
    s += parsep(two + page - 10, 2);
    s += parsep(longs, 3);
    s += parsep(ctl, 4);
    s += many(1, 2, 3, 4, 5, 6, 7, 8);
    s += vsum(3, 10L, 20L, 30L);
    double h = half(3.0);
    struct two p = pair(40, 50);
    s += flags(true, BLUE, 4000000000u);
    s += plain(9);
    printf("count fib %ld\ncount parse 6\ncount many 1\ncount vsum 1\ncount half 1\n"
           "count pair 1\ncount flags 1\ncount plain 1\nthreads 1\nthreadwork %ld\n",
           fib_calls(6), fib_calls(6) + 12);
    printf("addr gone %p\naddr tail %p\nsum %ld %g %ld %ld\n", (void *)gone,
           (void *)(two + page - 10), s, h, p.a, p.b);
    return 0;
}
