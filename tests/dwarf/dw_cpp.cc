/* C++ functions whose DWARF test_dwarf.c reads: member functions (`this`), a class passed by
 * invisible reference, an sret member function, references, a scoped enum. Built with -g -O0
 * and -g -O2 (tests/dwarf/meson.build). */
#define KEEP __attribute__((noinline, used))

volatile long sink;

struct Counter {
    long n;
    long add(long k);
};

KEEP long Counter::add(long k)
{
    n += k;
    return n;
}

struct Big {
    long a, b, c;
};

struct Maker {
    long base;
    Big make(long x);
};

KEEP Big Maker::make(long x)
{
    Big r = {base, x, base + x};
    return r;
}

/* Not trivially copyable: passed by invisible reference, returned through sret. */
struct Handle {
    long v;
    Handle(long x) : v(x) {}
    Handle(const Handle &o) : v(o.v) { sink = 1; }
    ~Handle() { sink = 2; }
};

KEEP long take(Handle h, long y)
{
    return h.v + y;
}

enum class Mode : short { Off, On = 7 };

KEEP int modes(Mode m, const long &r, long &&rr, bool b)
{
    return (int)m + (int)r + (int)rr + b;
}

KEEP double half(double x)
{
    return x / 2;
}

/* Names qualified by their namespaces and classes. */
namespace geo
{
struct Point {
    int x, y;
};
namespace
{
enum class Side : char { Left = 'L', Right = 'R' };
}
struct Shape {
    enum Kind { Circle, Square };
    long area(Kind k, const Point *p, Side s, Point by_value);
};

KEEP long Shape::area(Kind k, const Point *p, Side s, Point by_value)
{
    return k + p->x + (long)s + by_value.y;
}
} // namespace geo

int main(int argc, char **)
{
    Counter c = {1};
    Maker mk = {2};
    Handle h(argc);
    long r = argc;
    sink = c.add(argc);
    sink = mk.make(argc).c;
    sink = take(h, 3);
    sink = modes(Mode::On, r, 4, true);
    sink = (long)half(argc);
    geo::Shape sh;
    geo::Point pt = {1, 2};
    sink = sh.area(geo::Shape::Square, &pt, geo::Side::Right, pt);
    return 0;
}
