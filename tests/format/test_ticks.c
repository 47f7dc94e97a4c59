/* tools/ticks.h: tool_ticks_to_ns_int gives tool_ticks_to_ns's value whenever it gives one
 * (the test links common.c's tool_ticks_to_ns, long double and all). Inputs: frequencies of
 * real machines and awkward ones, ticks from a fixed pseudo-random sequence over every
 * magnitude, and ticks placed where ticks * 1e9 / freq is a half-integer or just beside one
 * (the rounding boundary). */
#include "common.h"
#include "ticks.h"

#include <criterion/criterion.h>
#include <stdint.h>

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static const uint64_t freqs[] = {2596130150ull, 3000000000ull,        1ull,          7ull,
                                 999999999ull,  1000000001ull,        2000000000ull, 33333333ull,
                                 19200000ull,   (1ull << 63) + 12345, UINT64_MAX,    0ull,
                                 1000000000ull};

static void check(uint64_t ticks, uint64_t freq, uint64_t *decided)
{
    uint64_t ns = 0;
    if (!tool_ticks_to_ns_int(ticks, freq, &ns))
        return;
    (*decided)++;
    cr_assert_eq(ns, tool_ticks_to_ns(ticks, freq), "ticks %llu at %llu Hz: %llu, not %llu",
                 (unsigned long long)ticks, (unsigned long long)freq, (unsigned long long)ns,
                 (unsigned long long)tool_ticks_to_ns(ticks, freq));
}

Test(ticks, agrees_with_tool_ticks_to_ns)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull, decided = 0, tried = 0;
    for (size_t f = 0; f < sizeof freqs / sizeof freqs[0]; f++) {
        uint64_t freq = freqs[f];
        for (int i = 0; i < 200000; i++, tried++) {
            uint64_t t = next(&seed) >> (next(&seed) % 64); /* every magnitude */
            check(t, freq, &decided);
        }
        /* near the boundary: ticks * 1e9 = (k + 1/2) * freq, give or take a few ticks */
        for (uint64_t k = 1; k < 100000 && freq && freq != 1000000000; k += 1 + k / 7) {
            __extension__ unsigned __int128 half = (unsigned __int128)freq * (2 * k + 1) / 2;
            uint64_t t = (uint64_t)(half / 1000000000u);
            for (uint64_t d = 0; d < 5; d++, tried++)
                check(t + d - 2, freq, &decided);
        }
    }
    /* the rest: values past 2^62 ns (saturation) and boundary cases, left to the formula */
    cr_assert_gt(decided, tried * 3 / 4, "only %llu of %llu decided", (unsigned long long)decided,
                 (unsigned long long)tried);
    uint64_t ns;
    cr_assert(tool_ticks_to_ns_int(2596130150ull, 2596130150ull, &ns));
    cr_assert_eq(ns, 1000000000u);
    cr_assert(tool_ticks_to_ns_int(123, 1000000000u, &ns) && ns == 123);
}
