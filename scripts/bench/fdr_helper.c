/*
 * fdr_helper.c - turns on compiler-rt's XRay FDR mode for the comparison build
 * in scripts/bench.sh. Link it into the same executable as the instrumented code
 * (the __xray_* entry points are hidden symbols of the static runtime), and build
 * WITHOUT -fnoxray-link-deps.
 *
 * compiler-rt (LLVM 14) details this relies on:
 *  - __xray_log_init_mode(mode, config) does not select a mode: it fails with
 *    XRAY_LOG_UNINITIALIZED (0) unless `mode` is already the selected one. The FDR
 *    runtime only registers "xray-fdr" at start-up (it selects it only when
 *    XRAY_OPTIONS contains xray_mode=xray-fdr), so select it explicitly first.
 *  - FDR options come from XRAY_FDR_OPTIONS, then from the config string (which
 *    wins). The config here is empty: bench.sh sets everything in XRAY_FDR_OPTIONS
 *    (func_duration_threshold_us=0, buffer_size, buffer_max).
 *  - FDR never writes anything by itself: finalize and flush at exit.
 *  - These functions carry xray_never_instrument: a constructor that patches the
 *    sleds would otherwise log an exit without an entry, which llvm-xray account
 *    rejects.
 * The registration of "xray-fdr" runs from the runtime's own initializer; clang
 * links the runtime archives before the user's objects, so it runs before this
 * constructor. If that ever changes, select_mode fails and we say so.
 */
#include <stdio.h>
#include <stdlib.h>

/* The compiler-rt headers are C++-only; these are the C-compatible signatures. */
int __xray_log_select_mode(const char *mode);
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);
int __xray_patch(void);

enum { REG_OK = 0, LOG_INITIALIZED = 2, LOG_FINALIZED = 4, LOG_FLUSHED = 2, PATCH_OK = 1 };

__attribute__((xray_never_instrument)) static void fdr_stop(void)
{
    int fin = __xray_log_finalize();
    int flush = __xray_log_flushLog();
    if (fin != LOG_FINALIZED || flush != LOG_FLUSHED)
        fprintf(stderr, "fdr_helper: finalize=%d flush=%d (want %d, %d)\n", fin, flush,
                LOG_FINALIZED, LOG_FLUSHED);
}

__attribute__((constructor, xray_never_instrument)) static void fdr_start(void)
{
    int sel = __xray_log_select_mode("xray-fdr");
    if (sel != REG_OK) {
        fprintf(stderr, "fdr_helper: __xray_log_select_mode(xray-fdr) = %d\n", sel);
        exit(3);
    }
    int init = __xray_log_init_mode("xray-fdr", "");
    if (init != LOG_INITIALIZED) {
        fprintf(stderr, "fdr_helper: __xray_log_init_mode = %d\n", init);
        exit(3);
    }
    int patch = __xray_patch();
    if (patch != PATCH_OK) {
        fprintf(stderr, "fdr_helper: __xray_patch = %d\n", patch);
        exit(3);
    }
    atexit(fdr_stop);
}
