/* Corrected times: reading the calibration and the virtual clock's slower half (vclock.h says
 * what the clock is and why). */
#include "vclock.h"

#include "common.h"

#include <string.h>

bool tool_raw_times;

int vclock_find(const char *path, struct stf_calib *c, uint64_t *block)
{
    struct stf_reader *r;
    if (stf_reader_open(&r, path, STF_READ_LENIENT) != STF_OK)
        return -1;
    stf_reader_set_warn(r, NULL, NULL);
    struct stf_item it;
    int found = 0;
    /* The runtime writes it in the trace's first block; a rewritten trace (convert --format
     * fdr) keeps it before its thread's first function record. Only the head is read. */
    for (int n = 0; n < 4096 && stf_reader_next(r, &it) == STF_OK; n++) {
        if (it.kind == STF_K_FUNCTION)
            break;
        if (it.kind == STF_M_TYPED_EVENT &&
            stf_decode_calib(it.event_type, it.payload, it.payload_len, c)) {
            *block = it.block;
            found = 1;
            /* skipped only if it holds nothing else: the runtime's block holds only this */
            while (stf_reader_next(r, &it) == STF_OK && it.block == *block)
                if (it.kind == STF_K_FUNCTION || it.kind == STF_M_CUSTOM_EVENT ||
                    it.kind == STF_M_TYPED_EVENT)
                    *block = UINT64_MAX;
            break;
        }
    }
    stf_reader_close(r);
    return found;
}

static uint32_t clamp_gap(int64_t v)
{
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void vclock_init(struct vclock *v, const struct stf_calib *c)
{
    memset(v, 0, sizeof *v);
    v->prev = VC_NONE;
    if (!c)
        return;
    v->on = true;
    const int64_t ee = c->gap[STF_GAP_EE], ex = c->gap[STF_GAP_EX], xe = c->gap[STF_GAP_XE],
                  xx = c->gap[STF_GAP_XX], et = c->gap[STF_GAP_ET], te = c->gap[STF_GAP_TE];
    /* gap[a][b] = post(a) + pre(b). The six measured pairs fix the other three: pre(T) - pre(E)
     * = ET - EE and post(T) - post(E) = TE - EE. */
    v->g[VC_E * 3 + VC_E] = clamp_gap(ee);
    v->g[VC_E * 3 + VC_X] = clamp_gap(ex);
    v->g[VC_X * 3 + VC_E] = clamp_gap(xe);
    v->g[VC_X * 3 + VC_X] = clamp_gap(xx);
    v->g[VC_E * 3 + VC_T] = clamp_gap(et);
    v->g[VC_T * 3 + VC_E] = clamp_gap(te);
    v->g[VC_X * 3 + VC_T] = clamp_gap(xe - ee + et);
    v->g[VC_T * 3 + VC_X] = clamp_gap(te - ee + ex);
    v->g[VC_T * 3 + VC_T] = clamp_gap(te - ee + et);
}

void vclock_item(struct vclock *v, struct stf_item *it)
{
    if (!v->on)
        return;
    uint64_t lost;
    switch (it->kind) {
    case STF_K_FUNCTION:
        it->tsc = vclock_func(v, it->tsc, it->func_id, it->action);
        break;
    case STF_M_CUSTOM_EVENT:
        if (stf_decode_loss(it->payload, it->payload_len, &lost))
            v->prev = VC_NONE;
        it->tsc = vclock_other(v, it->tsc);
        break;
    case STF_M_NEW_CPU:
    case STF_M_TSC_WRAP:
    case STF_M_TYPED_EVENT:
        it->tsc = vclock_other(v, it->tsc);
        break;
    default:
        break;
    }
}

void vclock_funcs(struct vclock *v, struct stf_func *f, size_t n)
{
    if (!v->on)
        return;
    for (size_t i = 0; i < n; i++)
        f[i].tsc = vclock_func(v, f[i].tsc, f[i].id, f[i].action);
}

double vclock_leaf_cost(const struct stf_calib *c)
{
    return (c->gap[STF_GAP_EX] + (double)c->gap[STF_GAP_XE]) / 256.0;
}

double vclock_leaf_spread(const struct stf_calib *c)
{
    uint32_t a = c->spread[STF_GAP_EX], b = c->spread[STF_GAP_XE];
    return (a > b ? a : b) / 256.0;
}

struct vtimes tool_trace_times(const struct tool_trace *t)
{
    return (struct vtimes){.set = true,
                           .has_calib = t->has_calib,
                           .corrected = tool_trace_corrected(t),
                           .calib = t->calib,
                           .removed = tool_trace_removed(t),
                           .freq = t->freq};
}

void tool_times_note(FILE *out, const char *pre, const struct vtimes *v, uint64_t wall)
{
    char a[32], b[32], c[32];
    if (!v->set)
        return;
    if (!v->has_calib) {
        fprintf(out,
                "%stimes: as measured; this trace records no tracer cost (compiler-rt's, or an "
                "older sledtrace's), so each call's figures include the tracer's own\n",
                pre);
        return;
    }
    double ns_per_tick = v->freq ? 1e9 / (double)v->freq : 1.0;
    snprintf(b, sizeof b, "%.1fns", vclock_leaf_cost(&v->calib) * ns_per_tick);
    snprintf(c, sizeof c, "%.1fns", vclock_leaf_spread(&v->calib) * ns_per_tick);
    if (!v->corrected) {
        fprintf(out,
                "%stimes: as measured (--raw-times): they include the tracer's own cost, "
                "about %s per call (+-%s)\n",
                pre, b, c);
        return;
    }
    tool_fmt_ns(a, sizeof a, tool_ticks_to_ns(v->removed, v->freq));
    fprintf(out, "%stimes: corrected: %s of tracer time taken out", pre, a);
    if (wall) {
        char w[32];
        tool_fmt_ns(w, sizeof w, tool_ticks_to_ns(wall + v->removed, v->freq));
        fprintf(out, " (%.1f%% of the %s measured)",
                100.0 * (double)v->removed / (double)(wall + v->removed), w);
    }
    fprintf(out,
            ", about %s per call (+-%s); ~ marks a figure within that error or the clock's "
            "step; --raw-times shows them as measured\n",
            b, c);
}
