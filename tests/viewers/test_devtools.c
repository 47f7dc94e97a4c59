/* The Chrome JSON export as the Chrome DevTools trace engine reads it: every case of
 * chromecheck.h (crafted traces made to hit decimal rounding and calls of length 0, traces
 * spanning 30 days and 2^63 ticks, the checked-in real traces) converted by the built
 * `sledtrace` ($SLEDTRACE_BIN), then loaded by devtools-check.mjs ($DEVTOOLS_CHECK, run by $NODE
 * with the packages in $VIEWERS_MODULES). The engine must find, per thread, every call of the
 * trace at its depth, and take the trace's whole time range: from the first call's start to the
 * last call's end as written. */
#include "chromecheck.h"
#include "toolrun.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env(const char *name)
{
    const char *v = getenv(name);
    cr_assert(v && *v, "%s not set", name);
    return v;
}

/* devtools-check.mjs's output (see there) as a cc_result. */
static void parse(const char *what, const char *out, struct cc_result *r)
{
    memset(r, 0, sizeof *r);
    bool bounds = false;
    for (const char *l = out; *l;) {
        const char *end = strchr(l, '\n');
        if (!end)
            end = l + strlen(l);
        char *p;
        if (strncmp(l, "thread ", 7) == 0) {
            long pid = strtol(l + 7, &p, 10);
            long tid = strtol(p, &p, 10);
            struct cc_thread *t = cc_thread_of(r, (int32_t)pid, (int32_t)tid);
            t->calls = strtoull(p, &p, 10);
            for (int d = 0; p < end; d++) {
                cr_assert_lt(d, CC_DEPTHS, "%s: too deep: %.*s", what, (int)(end - l), l);
                t->depth[d] = strtoull(p, &p, 10);
            }
        } else if (strncmp(l, "bounds ", 7) == 0) {
            r->first = strtod(l + 7, &p);
            r->last = strtod(p, &p);
            bounds = true;
        } else {
            cr_assert_fail("%s: unexpected line from devtools-check.mjs: %.*s", what,
                           (int)(end - l), l);
        }
        l = *end ? end + 1 : end;
    }
    cr_assert(bounds, "%s: no bounds line in\n%s", what, out);
}

Test(devtools, every_call_at_its_depth_and_the_whole_range)
{
    for (int i = 0; i < CC_CASES; i++) {
        struct cc_result want, written, seen;
        const char *name;
        char *json = cc_case(i, &want, &name);
        cc_check(json, &written);
        const char *argv[] = {env("NODE"), env("DEVTOOLS_CHECK"), env("VIEWERS_MODULES"), json,
                              NULL};
        struct tr_out r = tr_run(argv);
        cr_assert_eq(r.code, 0, "%s: devtools-check.mjs failed:\n%s%s", name, r.o, r.e);
        cr_assert_str_eq(r.e, "", "%s: the engine complained:\n%s", name, r.e);
        parse(name, r.o, &seen);
        cc_expect(name, &seen, &want);
        cr_assert(seen.first == written.first && seen.last == written.last,
                  "%s: DevTools' time range is [%.17g, %.17g] us, the calls' [%.17g, %.17g]", name,
                  seen.first, seen.last, written.first, written.last);
        tr_out_free(&r);
        unlink(json);
        free(json);
    }
}
