// C++ shapes for the patcher: virtual calls, two template instantiations, constructors and
// destructors, and an exception thrown through an instrumented frame (checked() throws for
// multiples of 7, caught in guarded()). Built at -O0, -O2 and -O3. Counts are fixed: see
// test_compilers.c.
#include <cstdio>
#include <stdexcept>
struct Shape { virtual ~Shape() {} virtual long area(long k) const = 0; };
struct Sq : Shape { long s; explicit Sq(long s) : s(s) {} long area(long k) const override { return s * s * k; } };
struct Rect : Shape { long w, h; Rect(long w, long h) : w(w), h(h) {} long area(long k) const override { return w * h * k; } };
template <typename T> __attribute__((noinline)) T twice(T x) { return x + x; }
__attribute__((noinline)) long checked(long x) { if (x % 7 == 0) throw std::runtime_error("seven"); return x; }
__attribute__((noinline)) long guarded(long x) { try { return checked(x); } catch (const std::exception &) { return -1; } }
int main() {
    Sq a(3); Rect b(2, 5); const Shape *sh[2] = {&a, &b};
    long s = 0;
    for (long i = 0; i < 20; i++) { s += sh[i & 1]->area(i); s += twice<long>(i); s += (long)twice<double>(i); s += guarded(i); }
    std::printf("%ld\n", s);
}
