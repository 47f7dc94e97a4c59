// C++ names in SLEDTRACE_FILTER (test_filter.c): patterns are written on demangled names
// (app::risky*), on demangled names without their parameter list (app::safe), or mangled.
// Prints each function's exact call count under its demangled name without parameters.
#include <cstdio>

namespace app {
__attribute__((noinline)) long risky(long x)
{
    return x * 3 + 1;
}
__attribute__((noinline)) long risky(double x)
{
    return (long)(x * 2);
}
__attribute__((noinline)) long safe(long x)
{
    return x + 2;
}
struct Widget {
    long v;
    __attribute__((noinline)) long risky_method(long x)
    {
        return v + x;
    }
};
} // namespace app

__attribute__((noinline)) long helper(long x)
{
    return x - 1;
}

__attribute__((xray_never_instrument)) int main()
{
    long (*volatile r1)(long) = app::risky;
    long (*volatile r2)(double) = app::risky;
    long (*volatile s)(long) = app::safe;
    long (*volatile h)(long) = helper;
    app::Widget w{4};
    long sum = 0;
    for (int i = 0; i < 3; i++)
        sum += r1(i);
    for (int i = 0; i < 2; i++)
        sum += r2(i);
    for (int i = 0; i < 5; i++)
        sum += s(i);
    for (int i = 0; i < 7; i++)
        sum += h(i);
    for (int i = 0; i < 4; i++)
        sum += w.risky_method(i);
    std::printf("app::risky 5\napp::safe 5\nhelper 7\napp::Widget::risky_method 4\nsum %ld\n", sum);
    return 0;
}
