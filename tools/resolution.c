/* The clock's resolution as a trace's records show it: resolution.h says what and why. One
 * streaming pass over the records (format/stf.h's reader, lenient), memory constant. */
#include "resolution.h"

#include "common.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void tool_res_add(struct tool_res *r, uint64_t delta)
{
    if (delta == 0)
        return;
    r->gcd = gcd(r->gcd, delta);
    if (r->min == 0 || delta < r->min)
        r->min = delta;
}

int tool_trace_resolution(const char *path, bool want_min, struct tool_res *r, uint64_t *freq)
{
    r->gcd = r->min = 0;
    *freq = 0;
    struct stf_reader *rd = NULL;
    int rc = stf_reader_open(&rd, path, STF_READ_LENIENT);
    if (rc != STF_OK) {
        tool_reader_fail(rd, path, rc);
        stf_reader_close(rd);
        return EXIT_BAD_TRACE;
    }
    /* no warning callback: the command's own reading of the trace reports them */
    *freq = stf_reader_header(rd)->cycle_freq;
    struct stf_item it;
    while ((rc = stf_reader_next(rd, &it)) == STF_OK) {
        if (it.kind != STF_K_FUNCTION)
            continue;
        tool_res_add(r, it.delta);
        if (!want_min && r->gcd == 1)
            break;
    }
    int status = rc < 0 ? tool_reader_fail(rd, path, rc) : EXIT_OK;
    stf_reader_close(rd);
    return status;
}

double tool_res_ns(uint64_t ticks, uint64_t freq)
{
    return freq ? (double)ticks * 1e9 / (double)freq : (double)ticks;
}
