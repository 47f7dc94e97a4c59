// Arguments of C++ functions (SLEDTRACE_ARGS, issue 26.5): a member function's `this`, a
// namespace, patterns on demangled names, a class returned in rax. Built with -g: replay names
// them from DWARF. Prints "addr box 0x..." for the test.
#include <cstdio>

namespace geo {
struct Box {
    long w, h;
    __attribute__((noinline)) long area(long scale) const
    {
        __asm__ volatile("" ::: "memory");
        return w * h * scale;
    }
};
__attribute__((noinline)) Box grow(const Box &b, long by)
{
    __asm__ volatile("" ::: "memory");
    return Box{b.w + by, b.h + by};
}
} // namespace geo

__attribute__((xray_never_instrument)) int main()
{
    geo::Box b{3, 4};
    long a = b.area(2);
    geo::Box c = geo::grow(b, 1);
    std::printf("addr box %p\nsum %ld %ld %ld\n", (void *)&b, a, c.w, c.h);
    return a == 24 && c.w == 4 && c.h == 5 ? 0 : 1;
}
