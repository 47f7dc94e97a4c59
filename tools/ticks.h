/* Ticks to nanoseconds in integers, for the converters' inner loops: the value
 * tool_ticks_to_ns (common.c) gives, without its long double arithmetic, which costs more than
 * the rest of a chrome event (the conversion back to an integer switches the x87 rounding
 * mode). Header-only so that a test can hold it against that formula.
 *
 * tool_ticks_to_ns rounds ticks * 1e9 / freq + 0.5 down, in long double (64-bit mantissa).
 * With exact q = floor(ticks * 1e9 / freq) and remainder r, the exact answer is q, plus 1 when
 * 2r > freq. The long double result has a relative error below 2^-62 (three roundings of at
 * most 2^-64 each), so it rounds down to the same integer unless the exact value plus 0.5 lies
 * within (q + 2) * 2^-62 of an integer, i.e. |2r - freq| <= freq * (q + 2) * 2^-61. In that
 * case, and for values near 2^64 (where it saturates), the answer is left to tool_ticks_to_ns:
 * tool_ticks_to_ns_int returns false. When ticks * 1e9 and the frequency fit 64 and 32 bits
 * (ticks below 1.8e10), it all stays in 64-bit integers. */
#ifndef SLEDTRACE_TOOLS_TICKS_H
#define SLEDTRACE_TOOLS_TICKS_H

#include <stdbool.h>
#include <stdint.h>

static inline bool tool_ticks_to_ns_int(uint64_t ticks, uint64_t freq, uint64_t *ns)
{
    if (freq == 0 || freq == 1000000000) {
        *ns = ticks;
        return true;
    }
    if (freq <= UINT32_MAX && ticks <= UINT64_MAX / 1000000000u) {
        /* the common case in 64 bits; the error bound taken generously:
         * ((freq >> 30) + 1) * (((q + 2) >> 31) + 1) > freq * (q + 2) * 2^-61 */
        uint64_t num = ticks * 1000000000u, q = num / freq, r2 = 2 * (num - q * freq);
        uint64_t gap = r2 > freq ? r2 - freq : freq - r2;
        uint64_t err = ((freq >> 30) + 1) * (((q + 2) >> 31) + 1) + 1;
        if (gap <= err)
            return false;
        *ns = q + (r2 > freq);
        return true;
    }
    __extension__ typedef unsigned __int128 u128;
    u128 num = (u128)ticks * 1000000000u;
    u128 q = num / freq;
    u128 r2 = 2 * (num - q * freq);
    if (q >= ((u128)1 << 62))
        return false;
    u128 gap = r2 > freq ? r2 - freq : freq - r2;
    u128 err = (((u128)freq * (q + 2)) >> 61) + 1;
    if (gap <= err)
        return false;
    *ns = (uint64_t)q + (r2 > freq);
    return true;
}

/* tool_ticks_to_ns's value, mostly without its long double arithmetic (common.h declares it). */
uint64_t tool_ticks_to_ns(uint64_t ticks, uint64_t freq);
static inline uint64_t tool_ticks_ns(uint64_t ticks, uint64_t freq)
{
    uint64_t ns;
    return tool_ticks_to_ns_int(ticks, freq, &ns) ? ns : tool_ticks_to_ns(ticks, freq);
}

#endif
