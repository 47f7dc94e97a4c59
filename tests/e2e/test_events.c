/* Custom and typed events: events.c raises 50 of each ("event 0" .. "event 49", typed ones with
 * type 7); the trace holds exactly those records, in order, with their payloads, besides the
 * runtime's calibration (one typed event of its own type, first), in a program that defines the
 * event symbols itself and in one that links compiler-rt's; llvm-xray's verifier accepts the
 * file. */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "e2e.h"
#include "stf.h"

#define BIN(name) E2E_DIR "/" name

static void check_events(const char *bin)
{
    char work[PATH_MAX], out[PATH_MAX], trace[PATH_MAX], cmd[PATH_MAX * 2];
    e2e_workdir(work, sizeof work);
    snprintf(out, sizeof out, "%s/out", work);
    struct e2e_spec s = {.prog = bin, .preload = 1, .outdir = out};
    struct e2e_run t;
    e2e_run(work, &s, &t);
    cr_assert(WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0, "status %#x", t.status);
    e2e_trace_path(trace, sizeof trace, out, bin, t.pid, "fdr");
    struct e2e_expect e;
    e2e_parse_expect(t.out, &e);
    struct e2e_trace tr;
    e2e_read_trace(trace, &tr);
    e2e_check_trace(&tr, &e, bin);

    struct stf_reader *r;
    cr_assert_eq(stf_reader_open(&r, trace, STF_READ_STRICT), STF_OK);
    struct stf_item it;
    int custom = 0, typed = 0, calib = 0;
    char want[32];
    struct stf_calib c;
    while (stf_reader_next(r, &it) == STF_OK) {
        if (it.kind == STF_M_TYPED_EVENT &&
            stf_decode_calib(it.event_type, it.payload, it.payload_len, &c)) {
            cr_assert_eq(custom + typed, 0, "the calibration comes after an event");
            calib++;
        } else if (it.kind == STF_M_CUSTOM_EVENT) {
            snprintf(want, sizeof want, "event %d", custom++);
            cr_assert(it.payload_len == strlen(want) && !memcmp(it.payload, want, it.payload_len),
                      "custom event %d: '%.*s'", custom - 1, (int)it.payload_len, it.payload);
        } else if (it.kind == STF_M_TYPED_EVENT) {
            snprintf(want, sizeof want, "event %d", typed++);
            cr_assert_eq(it.event_type, 7);
            cr_assert(it.payload_len == strlen(want) && !memcmp(it.payload, want, it.payload_len),
                      "typed event %d: '%.*s'", typed - 1, (int)it.payload_len, it.payload);
        }
    }
    stf_reader_close(r);
    cr_assert_eq(custom, 50);
    cr_assert_eq(typed, 50);
    cr_assert_eq(calib, 1);
    snprintf(cmd, sizeof cmd, "%s fdr-dump --verify '%s' >/dev/null 2>&1", E2E_LLVM_XRAY, trace);
    cr_assert_eq(system(cmd), 0, "llvm-xray fdr-dump --verify rejects %s", trace);
    e2e_run_free(&t);
    e2e_rmtree(work);
}

Test(events, own_symbols)
{
    check_events(BIN("events-pie-nort"));
}
Test(events, compiler_rt_linked)
{
    check_events(BIN("events-pie-rt"));
}
