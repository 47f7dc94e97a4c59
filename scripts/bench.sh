#!/usr/bin/env bash
# Benchmark (not a test: it never fails on a missed target). Compares, per traced
# call of fib(30) (2*F(31)-1 = 2692537 calls):
#   plain       fib built with plain clang -O2 (no sleds)
#   sledtrace   fib built with sleds and no XRay runtime, under LD_PRELOAD=libsledtrace.so
#   sledtrace-args  the same with SLEDTRACE_ARGS=fib@arg1,retval: every call records its
#               argument and return value (issue 26: at most twice a plain traced call)
#   xray-fdr    fib built with compiler-rt's XRay runtime, FDR mode on (scripts/bench/fdr_helper.c)
#   floor       two rdtsc + two 8-byte stores per call, no function calls (scripts/bench/floor.c)
#   mt-plain    2 threads each computing fib(30) at once, plain clang -O2 (scripts/bench/fib_mt.c)
#   mt-sledtrace  the same with sleds, under LD_PRELOAD=libsledtrace.so (default lossless policy)
# Every program times itself in-process with clock_gettime(CLOCK_MONOTONIC) around
# the measured loop/call only (in the 2-thread programs each thread times its own
# fib call); process start, sled patching and the final flush at exit are excluded.
# Rounds are interleaved (each round runs every variant once, in an order rotated by
# one each round) and the median of the rounds (for 2 threads: of all threads of all
# rounds) is reported.
# Every mt-sledtrace run is checked for lost events: the trace must hold exactly
# 2 x 2692537 fib calls and the runtime must print no "trace incomplete" on stderr.
# The 2-thread programs print their peak RSS (VmHWM, read just before main returns);
# the traced figure is compared with the untraced one plus the configured buffers
# (SLEDTRACE_BUFFER_KB x SLEDTRACE_BUFFERS per thread that records events).
#
# Also: start-up with many functions, the per-process cost of the preload for a program with
# nothing to trace (/bin/true), self times against perf (scripts/bench/profile.sh), threads
# and processes (scripts/bench/threads.sh: churn, live threads, a small traced program), and
# analysis speed.
#
# Environment: BENCH_ROUNDS (default 7), BENCH_FIB_N (default 30), BENCH_MANY (functions in
# the start-up programs, space-separated; default "20000 100000"), BENCH_PROFILE (0 skips the
# comparison with perf), CLANG (default clang).
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/lib.sh

ROUNDS=${BENCH_ROUNDS:-7}
N=${BENCH_FIB_N:-30}
TARGET_FLOOR=1.35
TARGET_FDR=0.25
MT_THREADS=2
TARGET_MT_FLOOR=1.6 # 2-thread sledtrace, per thread, / single-thread floor
TARGET_MT_RSS_MIB=8 # traced peak RSS - untraced peak RSS - configured buffers
# Big buffers, so FDR never drops records: fib(30) writes ~43 MB. At most 16 blocks
# per thread keep llvm-xray 14's block sort from reordering the trace.
FDR_OPTIONS="func_duration_threshold_us=0:buffer_size=8388608:buffer_max=16"

log() { printf 'bench: %s\n' "$*" >&2; }

if ! [[ "$ROUNDS" =~ ^[0-9]+$ ]] || ((ROUNDS < 1)); then
    log "BENCH_ROUNDS must be a positive integer"
    exit 2
fi
if ! [[ "$N" =~ ^[0-9]+$ ]] || ((N < 1 || N > 40)); then
    log "BENCH_FIB_N must be in 1..40"
    exit 2
fi

if ! ./scripts/setup.sh >&2; then
    log "warning: building sledtrace failed; the sledtrace variant may be skipped"
fi

root=$PWD
bench_dir=$root/build/bench
preload=$root/build/preload/libsledtrace.so
tool=$root/build/tools/sledtrace
mkdir -p "$bench_dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sledtrace-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/sledtrace" "$tmp/xray-fdr"
: >"$tmp/mt-checks"

# Expected fib(N) and number of fib calls, 2*F(N+1)-1.
f0=0 f1=1
for ((i = 0; i < N; i++)); do
    t=$((f0 + f1)) f0=$f1 f1=$t
done
expect_result=$f0
expect_calls=$((2 * f1 - 1))

# ---- build -----------------------------------------------------------------
nodeps=$(xray_no_link_deps_flag)
src=scripts/bench
log "building into build/bench/ ($CLANG, sled flag $nodeps)"
"$CLANG" -O2 "$src/fib.c" -o "$bench_dir/fib-plain"
"$CLANG" -O2 "${XRAY_CFLAGS[@]}" "$nodeps" "$src/fib.c" -o "$bench_dir/fib-sleds"
"$CLANG" -O2 "${XRAY_CFLAGS[@]}" "$src/fib.c" "$src/fdr_helper.c" -o "$bench_dir/fib-xray-fdr"
"$CLANG" -O2 "$src/floor.c" -o "$bench_dir/floor"
"$CLANG" -O2 -pthread "$src/fib_mt.c" -o "$bench_dir/fib-mt-plain"
"$CLANG" -O2 -pthread "${XRAY_CFLAGS[@]}" "$nodeps" "$src/fib_mt.c" -o "$bench_dir/fib-mt-sleds"

variants=(plain sledtrace sledtrace-min sledtrace-args xray-fdr floor mt-plain mt-sledtrace)
declare -A label=(
    [plain]="fib, uninstrumented"
    [sledtrace]="fib, sledtrace"
    [sledtrace-min]="fib, sledtrace, 1us threshold"
    [sledtrace-args]="fib, sledtrace, arg1 + retval"
    [xray-fdr]="fib, compiler-rt FDR"
    [floor]="floor (2x rdtsc+store)"
    [mt-plain]="2 thr, uninstrumented"
    [mt-sledtrace]="2 thr, sledtrace"
)
declare -A skip=()
if [[ ! -e "$preload" ]]; then
    skip[sledtrace]="build/preload/libsledtrace.so not built"
    skip[mt-sledtrace]=${skip[sledtrace]}
    skip[sledtrace-min]=${skip[sledtrace]}
    skip[sledtrace-args]=${skip[sledtrace]}
    log "warning: ${skip[sledtrace]}; skipping the sledtrace variants"
fi

# Extra environment for the sledtrace runs (empty: the runtime's defaults).
sledtrace_env=()

# Run one variant once. Prints the elapsed ns on stdout (for the 2-thread variants: one
# figure per thread, then hwm=<peak RSS in KiB> file=<RssFile in KiB>); returns non-zero on
# failure.
run_variant() {
    local v=$1 out rc=0
    case $v in
    mt-*)
        run_mt "$v"
        return
        ;;
    plain) out=$("$bench_dir/fib-plain" "$N") || rc=$? ;;
    sledtrace)
        out=$(env "${sledtrace_env[@]}" LD_PRELOAD="$preload" SLEDTRACE_OUTPUT="$tmp/sledtrace" \
            "$bench_dir/fib-sleds" "$N") || rc=$?
        ;;
    xray-fdr)
        out=$(XRAY_OPTIONS="patch_premain=false xray_logfile_base=$tmp/xray-fdr/" \
            XRAY_FDR_OPTIONS=$FDR_OPTIONS "$bench_dir/fib-xray-fdr" "$N" 2>"$tmp/stderr") || rc=$?
        # compiler-rt reports "Unable to determine CPU frequency" on these VMs; show
        # anything else.
        grep -v 'Unable to determine CPU frequency' "$tmp/stderr" >&2 || true
        ;;
    sledtrace-min)
        # SLEDTRACE_MIN_DURATION: most fib calls are taken back at their exit, counted
        out=$(env "${sledtrace_env[@]}" SLEDTRACE_MIN_DURATION=1us LD_PRELOAD="$preload" \
            SLEDTRACE_OUTPUT="$tmp/sledtrace-min" "$bench_dir/fib-sleds" "$N") || rc=$?
        ;;
    sledtrace-args)
        out=$(env "${sledtrace_env[@]}" SLEDTRACE_ARGS='fib@arg1,retval' LD_PRELOAD="$preload" \
            SLEDTRACE_OUTPUT="$tmp/sledtrace-args" "$bench_dir/fib-sleds" "$N") || rc=$?
        ;;
    floor) out=$("$bench_dir/floor" "$N") || rc=$? ;;
    esac
    if ((rc != 0)); then
        log "$v: exit status $rc"
        return 1
    fi
    if [[ ! "$out" =~ ^ns=([0-9]+)\ calls=([0-9]+)\ result=([0-9]+)$ ]]; then
        log "$v: unexpected output: $out"
        return 1
    fi
    if [[ "${BASH_REMATCH[2]}" != "$expect_calls" ]]; then
        log "$v: calls=${BASH_REMATCH[2]}, expected $expect_calls"
        return 1
    fi
    if [[ "$v" != floor && "${BASH_REMATCH[3]}" != "$expect_result" ]]; then
        log "$v: fib($N)=${BASH_REMATCH[3]}, expected $expect_result"
        return 1
    fi
    printf '%s\n' "${BASH_REMATCH[1]}"
}

# The 2-thread variants: mt-plain, mt-sledtrace, and mt-untraced (fib-mt-sleds without the
# runtime; only for its peak RSS). Each mt-sledtrace run also checks its trace for lost events
# and appends "count=<fib count> loss=<loss lines> warn=<other runtime warnings>" to
# $tmp/mt-checks; with check=1 it also writes `sledtrace info` of the trace to $tmp/mt-info.
run_mt() {
    local v=$1 check=${2:-0} out rc=0 line i=0 kb="" file="" tns=() trace count loss warn
    case $v in
    mt-plain) out=$("$bench_dir/fib-mt-plain" "$N" "$MT_THREADS") || rc=$? ;;
    mt-untraced) out=$("$bench_dir/fib-mt-sleds" "$N" "$MT_THREADS") || rc=$? ;;
    mt-sledtrace)
        out=$(env "${sledtrace_env[@]}" LD_PRELOAD="$preload" SLEDTRACE_OUTPUT="$tmp/sledtrace" \
            "$bench_dir/fib-mt-sleds" "$N" "$MT_THREADS" 2>"$tmp/mt-stderr") || rc=$?
        sed 's/^/bench: mt-sledtrace stderr: /' "$tmp/mt-stderr" >&2
        loss=$(grep -c 'trace incomplete' "$tmp/mt-stderr" || true)
        warn=$(grep -v 'trace incomplete' "$tmp/mt-stderr" | grep -cE '(warning|error):' || true)
        count=""
        trace=$(find "$tmp/sledtrace" -type f -name '*.fdr' | head -n 1)
        if [[ -n "$trace" && -x "$tool" ]]; then
            count=$("$tool" account --format csv "$trace" 2>/dev/null | csv_fib_count || true)
            ((check)) && { "$tool" info "$trace" >"$tmp/mt-info" 2>&1 || true; }
        fi
        printf 'count=%s loss=%s warn=%s\n' "${count:-?}" "$loss" "$warn" >>"$tmp/mt-checks"
        ;;
    esac
    if ((rc != 0)); then
        log "$v: exit status $rc"
        return 1
    fi
    while IFS= read -r line; do
        if [[ "$line" =~ ^thread=([0-9]+)\ ns=([0-9]+)\ calls=([0-9]+)\ result=([0-9]+)$ ]]; then
            if [[ "${BASH_REMATCH[3]}" != "$expect_calls" ||
                "${BASH_REMATCH[4]}" != "$expect_result" ]]; then
                log "$v: thread ${BASH_REMATCH[1]}: calls=${BASH_REMATCH[3]}" \
                    "fib($N)=${BASH_REMATCH[4]}, expected $expect_calls, $expect_result"
                return 1
            fi
            tns+=("${BASH_REMATCH[2]}")
            i=$((i + 1))
        elif [[ "$line" =~ ^hwm_kb=([0-9]+)\ rss_file_kb=([0-9]+)$ ]]; then
            kb=${BASH_REMATCH[1]} file=${BASH_REMATCH[2]}
        else
            log "$v: unexpected output: $line"
            return 1
        fi
    done <<<"$out"
    if ((i != MT_THREADS)) || [[ -z "$kb" ]]; then
        log "$v: expected $MT_THREADS thread lines and hwm_kb, got: $out"
        return 1
    fi
    printf '%s hwm=%s file=%s\n' "${tns[*]}" "$kb" "$file"
}

clean_traces() {
    rm -rf "$tmp/sledtrace"/* "$tmp/xray-fdr"/* "$tmp/sledtrace-min" "$tmp/sledtrace-args"
}

# Print the count of function "fib" from a CSV account (a header line naming a
# "count" column and a "function"/"name" column, or llvm-xray's layout).
csv_fib_count() {
    awk -F',' '
        NR == 1 {
            for (i = 1; i <= NF; i++) {
                h = tolower($i); gsub(/"/, "", h)
                if (h == "count" || h == "calls") c = i
                if (h == "function" || h == "name") f = i
            }
            next
        }
        c && f { name = $f; gsub(/"/, "", name); if (name == "fib") { print $c; exit } }
    '
}

# ---- correctness check (also a warm-up): every tracer must see every call ----
declare -A check=()
log "check run: fib($N) must show $expect_calls calls in each trace"
clean_traces
if run_variant xray-fdr >/dev/null; then
    fdr_log=$(find "$tmp/xray-fdr" -type f | head -n 1)
    if [[ -n "$fdr_log" ]]; then
        count=$(llvm-xray account -format=csv -m "$bench_dir/fib-xray-fdr" "$fdr_log" \
            2>/dev/null | csv_fib_count || true)
        check[xray-fdr]="llvm-xray account: fib count ${count:-?}"
        [[ "$count" == "$expect_calls" ]] && check[xray-fdr]+=" (ok)" ||
            check[xray-fdr]+=" (MISMATCH, expected $expect_calls)"
    else
        check[xray-fdr]="no xray-fdr log written"
    fi
else
    check[xray-fdr]="run failed"
fi
# llvm-xray 14 reorders a thread's blocks when it has more than 16 of them (see README), and a
# fib(30) trace with the default 64 KiB chunks has ~660; so llvm-xray gets its own check run
# with 4 MiB chunks (~11 blocks). The timed runs use the defaults.
if [[ -z "${skip[sledtrace]:-}" ]]; then
    msg=""
    if [[ -x "$tool" ]]; then
        if run_variant sledtrace >/dev/null; then
            trace=$(find "$tmp/sledtrace" -type f -name '*.fdr' | head -n 1)
            count=""
            [[ -n "$trace" ]] &&
                count=$("$tool" account --format csv "$trace" 2>/dev/null | csv_fib_count || true)
            msg="sledtrace account: fib count ${count:-?}"
            [[ "$count" == "$expect_calls" ]] && msg+=" (ok)" || msg+=" (MISMATCH)"
        else
            msg="run failed"
        fi
        clean_traces
    fi
    sledtrace_env=(SLEDTRACE_BUFFER_KB=4096)
    if run_variant sledtrace >/dev/null; then
        trace=$(find "$tmp/sledtrace" -type f -name '*.fdr' | head -n 1)
        count=""
        [[ -n "$trace" ]] &&
            count=$(llvm-xray account -format=csv -m "$bench_dir/fib-sleds" "$trace" \
                2>/dev/null | csv_fib_count || true)
        msg+="${msg:+; }llvm-xray account (4 MiB chunks): fib count ${count:-?}"
        [[ "$count" == "$expect_calls" ]] && msg+=" (ok)" || msg+=" (MISMATCH)"
    else
        msg+="${msg:+; }run with SLEDTRACE_BUFFER_KB=4096 failed"
    fi
    sledtrace_env=()
    check[sledtrace]=$msg
fi
clean_traces

# 2 threads: one traced run whose trace `sledtrace info` describes (threads that recorded events,
# drops), and the untraced peak RSS of the same binary (no LD_PRELOAD), once per round.
mt_threads_traced="" mt_drops="" untraced_hwm="" untraced_file=""
if [[ -z "${skip[mt-sledtrace]:-}" ]]; then
    log "check run: $MT_THREADS threads x fib($N) under sledtrace"
    # A trace that lost events may lack whole threads: count them only in a complete one.
    if run_mt mt-sledtrace 1 >/dev/null && [[ -s "$tmp/mt-info" ]] &&
        [[ "$(tail -n 1 "$tmp/mt-checks")" == "count=$((MT_THREADS * expect_calls)) loss=0 "* ]]; then
        mt_threads_traced=$(awk '$1 == "threads:" { print $2 }' "$tmp/mt-info")
        mt_drops=$(awk '$1 == "drops:" { print $2 }' "$tmp/mt-info")
        # Kept for the analysis-speed section at the end.
        cp "$(find "$tmp/sledtrace" -type f -name '*.fdr' | head -n 1)" "$tmp/account.fdr" || true
    fi
    clean_traces
fi
for ((r = 0; r < ROUNDS; r++)); do
    if out=$(run_mt mt-untraced); then
        out=${out##*hwm=}
        untraced_hwm+="${out% file=*} "
        untraced_file+="${out##*file=} "
    fi
done

# ---- timed rounds ------------------------------------------------------------
declare -A samples=() failures=() hwm=() rssfile=()
active=()
for v in "${variants[@]}"; do
    [[ -z "${skip[$v]:-}" ]] && active+=("$v")
done
log "running $ROUNDS interleaved rounds of: ${active[*]}"
for ((r = 0; r < ROUNDS; r++)); do
    k=${#active[@]}
    for ((j = 0; j < k; j++)); do
        v=${active[$(((j + r) % k))]}
        if ns=$(run_variant "$v"); then
            if [[ "$ns" =~ ^(.*)\ hwm=([0-9]+)\ file=([0-9]+)$ ]]; then
                ns=${BASH_REMATCH[1]}
                hwm[$v]+="${BASH_REMATCH[2]} "
                rssfile[$v]+="${BASH_REMATCH[3]} "
            fi
            samples[$v]+="$ns "
        else
            failures[$v]=$((${failures[$v]:-0} + 1))
        fi
        clean_traces
    done
    printf '.' >&2
done
printf '\n' >&2

# Median, min and max of the samples, in ns per call.
stats() {
    tr ' ' '\n' <<<"$1" | awk -v calls="$expect_calls" 'NF { print $1 / calls }' | sort -g |
        awk '{ a[NR] = $1 }
             END {
                 if (NR == 0) exit 1
                 m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
                 printf "%.2f %.2f %.2f\n", m, a[1], a[NR]
             }'
}

declare -A median=() spread=()
for v in "${variants[@]}"; do
    if [[ -n "${samples[$v]:-}" ]]; then
        read -r med lo hi < <(stats "${samples[$v]}")
        median[$v]=$med
        spread[$v]="$lo..$hi"
    fi
done

median_of() { # whitespace-separated numbers -> their median, or nothing
    tr ' ' '\n' <<<"$1" | awk 'NF' | sort -g |
        awk '{ a[NR] = $1 }
             END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

ratio() { # a b -> a/b, or "-" when either is missing
    if [[ -n "${1:-}" && -n "${2:-}" ]]; then
        awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'
    else
        printf '%s' "-"
    fi
}

echo
echo "fib($N): $expect_calls calls per run; $ROUNDS interleaved rounds; in-process timing"
echo "(clock_gettime(CLOCK_MONOTONIC) around the fib($N) call / the floor loop)."
echo
printf '%-24s %14s %18s %10s %14s\n' "variant" "median ns/call" "min..max" "x floor" "x compiler-rt"
printf '%-24s %14s %18s %10s %14s\n' "------------------------" "--------------" "------------------" \
    "--------" "-------------"
for v in "${variants[@]}"; do
    if [[ -n "${median[$v]:-}" ]]; then
        printf '%-24s %14s %18s %10s %14s\n' "${label[$v]}" "${median[$v]}" "${spread[$v]}" \
            "$(ratio "${median[$v]}" "${median[floor]:-}")" \
            "$(ratio "${median[$v]}" "${median[xray-fdr]:-}")"
    else
        printf '%-24s %14s   %s\n' "${label[$v]}" "-" "${skip[$v]:-all runs failed}"
    fi
    if [[ -n "${failures[$v]:-}" ]]; then
        printf '%-24s   (%d of %d runs failed)\n' "" "${failures[$v]}" "$ROUNDS"
    fi
done
echo "(2 thr: $MT_THREADS threads each run fib($N) at once; ns per call as each thread measures"
echo " its own fib($N); median over all threads of all rounds.)"

# ---- 2 threads: lost events and memory -----------------------------------------
mt_total=$((MT_THREADS * expect_calls))
mt_runs=0 mt_ok=0 mt_loss=0 mt_warn=0 mt_counts=""
while read -r c l w; do
    c=${c#count=} l=${l#loss=} w=${w#warn=}
    mt_runs=$((mt_runs + 1))
    mt_loss=$((mt_loss + l))
    mt_warn=$((mt_warn + w))
    [[ "$c" == "$mt_total" && "$l" == 0 ]] && mt_ok=$((mt_ok + 1))
    [[ " $mt_counts " == *" $c "* ]] || mt_counts+="${mt_counts:+ }$c"
done <"$tmp/mt-checks"
if [[ -n "${skip[mt-sledtrace]:-}" ]]; then
    check[mt-sledtrace]=${skip[mt-sledtrace]}
elif ((mt_runs == 0)); then
    check[mt-sledtrace]="no traced run completed"
else
    check[mt-sledtrace]="$mt_ok of $mt_runs traced runs lossless (sledtrace account: fib count"
    check[mt-sledtrace]+=" ${mt_counts}, expected $mt_total = $MT_THREADS x $expect_calls;"
    check[mt-sledtrace]+=" 'trace incomplete' on stderr: $mt_loss"
    ((mt_warn)) && check[mt-sledtrace]+="; other runtime warnings: $mt_warn"
    check[mt-sledtrace]+=")"
    ((mt_ok == mt_runs)) && check[mt-sledtrace]+=" (ok)" || check[mt-sledtrace]+=" (LOST EVENTS)"
    [[ -n "$mt_threads_traced" ]] &&
        check[mt-sledtrace]+="; sledtrace info: $mt_threads_traced threads, drops ${mt_drops:-?}"
fi

# Configured buffer memory: SLEDTRACE_BUFFER_KB x SLEDTRACE_BUFFERS (the runtime's defaults unless
# set in the environment, which the runs inherit) per thread that recorded events.
buf_kb=${SLEDTRACE_BUFFER_KB:-64} nbuf=${SLEDTRACE_BUFFERS:-16}
[[ "$buf_kb" =~ ^[0-9]+$ ]] && ((buf_kb >= 4 && buf_kb <= 16384)) || buf_kb=64
[[ "$nbuf" =~ ^[0-9]+$ ]] && ((nbuf >= 2 && nbuf <= 4096)) || nbuf=16
buf_threads=${mt_threads_traced:-$((MT_THREADS + 1))}
buffers_kb=$((buf_threads * buf_kb * nbuf))
rss_untraced=$(median_of "$untraced_hwm")
rss_traced=$(median_of "${hwm[mt-sledtrace]:-}")
rss_beyond=""
mib() { awk -v k="$1" 'BEGIN { printf "%.2f MiB", k / 1024 }'; }
echo
echo "peak RSS, $MT_THREADS threads x fib($N) (VmHWM read by the program just before main returns;"
echo "medians of $ROUNDS runs):"
printf '  %-58s %s\n' "untraced (fib-mt-sleds without LD_PRELOAD)" \
    "$([[ -n "$rss_untraced" ]] && mib "$rss_untraced" || echo -)"
printf '  %-58s %s\n' "traced (mt-sledtrace)" "$([[ -n "$rss_traced" ]] && mib "$rss_traced" || echo -)"
printf '  %-58s %s\n' "configured buffers ($buf_threads threads x $nbuf x $buf_kb KiB)" \
    "$(mib "$buffers_kb")"
if [[ -n "$rss_untraced" && -n "$rss_traced" ]]; then
    rss_beyond=$(awk -v t="$rss_traced" -v u="$rss_untraced" -v b="$buffers_kb" \
        'BEGIN { printf "%.2f", (t - u - b) / 1024 }')
    printf '  %-58s %s MiB\n' "beyond buffers (traced - untraced - buffers)" "$rss_beyond"
    file_u=$(median_of "$untraced_file") file_t=$(median_of "${rssfile[mt-sledtrace]:-}")
    if [[ -n "$file_u" && -n "$file_t" ]]; then
        printf '  %-58s %s\n' "  of which file-backed (RssFile at exit, traced-untraced)" \
            "$(mib $((file_t - file_u)))"
    fi
fi
[[ -z "$mt_threads_traced" ]] &&
    echo "  (threads that recorded events unknown (no complete check trace); assumed $buf_threads:" \
        "main + $MT_THREADS workers)"

echo
echo "checks:"
for v in xray-fdr sledtrace mt-sledtrace; do
    printf '  %-12s %s\n' "$v" "${check[$v]:-${skip[$v]:-not run}}"
done

echo
echo "targets (reported, never enforced):"
target_line() { # name value limit
    local verdict
    if [[ -z "$2" || "$2" == "-" ]]; then
        verdict="n/a"
    else
        verdict=$(awk -v v="${2%x}" -v l="$3" 'BEGIN { print (v <= l) ? "met" : "MISSED" }')
    fi
    printf '  %-36s %8s  (target <= %sx)  %s\n' "$1" "$2" "$3" "$verdict"
}
target_line "sledtrace / floor" "$(ratio "${median[sledtrace]:-}" "${median[floor]:-}")" "$TARGET_FLOOR"
target_line "sledtrace / compiler-rt FDR" \
    "$(ratio "${median[sledtrace]:-}" "${median[xray-fdr]:-}")" "$TARGET_FDR"
target_line "sledtrace, arguments / sledtrace" \
    "$(ratio "${median[sledtrace-args]:-}" "${median[sledtrace]:-}")" 2
target_line "2 thr sledtrace (per thread) / floor" \
    "$(ratio "${median[mt-sledtrace]:-}" "${median[floor]:-}")" "$TARGET_MT_FLOOR"
if [[ -n "$rss_beyond" ]]; then
    verdict=$(awk -v v="$rss_beyond" -v l="$TARGET_MT_RSS_MIB" 'BEGIN { print (v <= l) ? "met" : "MISSED" }')
else
    verdict="n/a"
fi
printf '  %-36s %8s  (target <= %s MiB)  %s\n' "2 thr peak RSS beyond buffers" \
    "${rss_beyond:--}${rss_beyond:+ MiB}" "$TARGET_MT_RSS_MIB" "$verdict"
if ((mt_runs)); then
    ((mt_ok == mt_runs)) && verdict=met || verdict=MISSED
    printf '  %-36s %8s  (target 0)  %s\n' "2 thr runs with lost events" "$((mt_runs - mt_ok))" "$verdict"
fi

# ---- start-up at scale ------------------------------------------------------
# A generated program with $MANY instrumented functions: sledtrace's whole start-up (map
# reading, Capstone proof of every sled, files, flush thread, patching; from its own info
# line) beside compiler-rt's __xray_patch() for the same program (scripts/bench/patch_timer.c;
# compiler-rt reads its map earlier, in .preinit_array, and proves nothing). Three ways, 5
# runs each, interleaved: a first run (an empty proof cache of its own each time), a second
# run (a cache one earlier run filled), and SLEDTRACE_FILTER=main without a cache (what is
# left out is not proven). Peak RSS (/usr/bin/time) of the first and second runs beyond the
# untraced program's and the one thread's buffers.
TARGET_FIRST_MS=100   # issue 14.1: 100,000 functions, empty cache
TARGET_SECOND_MS=25   # and with the cache of an earlier run
med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }
startup_ms() { # env... -> "MS RSS_KB": the runtime's "start-up took MS ms" and main's VmRSS
    local err ms="" rss=""
    err=$(env "$@" SLEDTRACE_LOG=info SLEDTRACE_OUTPUT="$tmp/many" LD_PRELOAD="$preload" \
        "$bench_dir/many-sleds" 2>&1 >/dev/null || true)
    rm -rf "$tmp/many"
    [[ $err =~ start-up\ took\ ([0-9.]+)\ ms ]] && ms=${BASH_REMATCH[1]}
    [[ $err =~ vmrss_kb=([0-9]+) ]] && rss=${BASH_REMATCH[1]}
    [[ -n $ms && -n $rss ]] && echo "$ms $rss"
    return 0
}
peak_kb() { # env... -> peak RSS in KiB of one run of many-sleds
    /usr/bin/time -f '%M' -o "$tmp/rss" env "$@" "$bench_dir/many-sleds" >/dev/null 2>&1 || true
    rm -rf "$tmp/many"
    tail -n 1 "$tmp/rss"
}
# BENCH_MANY: the sizes, space-separated (default: 20000 and 100000 functions).
for MANY in ${BENCH_MANY:-20000 100000}; do
    echo
    scripts/bench/many.sh "$MANY" >"$bench_dir/many.c.new"
    if cmp -s "$bench_dir/many.c.new" "$bench_dir/many-$MANY.c" &&
        [[ -x "$bench_dir/many-$MANY-sleds" && -x "$bench_dir/many-$MANY-xray" ]]; then
        log "start-up: the program with $MANY functions is built already"
    else
        log "start-up: building a program with $MANY functions (up to a few minutes for 100000)"
        mv "$bench_dir/many.c.new" "$bench_dir/many-$MANY.c"
        "$CLANG" -O2 "${XRAY_CFLAGS[@]}" "$nodeps" "$bench_dir/many-$MANY.c" -o "$bench_dir/many-$MANY-sleds"
        "$CLANG" -O2 "${XRAY_CFLAGS[@]}" "$bench_dir/many-$MANY.c" scripts/bench/patch_timer.c \
            -o "$bench_dir/many-$MANY-xray"
    fi
    rm -f "$bench_dir/many.c.new"
    ln -sf "many-$MANY-sleds" "$bench_dir/many-sleds"
    first_ms=() second_ms=() cr_ms=() fl_ms=() rss_u=() rss_first=() rss_second=()
    end_u=() end_first=() end_second=()
    warm=$tmp/cache-warm-$MANY
    if [[ -e "$preload" ]]; then
        startup_ms SLEDTRACE_CACHE="$warm" >/dev/null # fills the warm cache
    fi
    for ((i = 0; i < 5; i++)); do
        if [[ -e "$preload" ]]; then
            rm -rf "$tmp/cache-first"
            read -r ms kb < <(startup_ms SLEDTRACE_CACHE="$tmp/cache-first") &&
                first_ms+=("$ms") end_first+=("$kb")
            read -r ms kb < <(startup_ms SLEDTRACE_CACHE="$warm") &&
                second_ms+=("$ms") end_second+=("$kb")
            read -r ms kb < <(startup_ms SLEDTRACE_CACHE=off SLEDTRACE_FILTER=main) && fl_ms+=("$ms")
            err=$("$bench_dir/many-sleds" 2>&1 >/dev/null || true)
            [[ $err =~ vmrss_kb=([0-9]+) ]] && end_u+=("${BASH_REMATCH[1]}")
            rss_u+=("$(peak_kb)")
            rm -rf "$tmp/cache-first"
            rss_first+=("$(peak_kb SLEDTRACE_CACHE="$tmp/cache-first" SLEDTRACE_OUTPUT="$tmp/many" \
                LD_PRELOAD="$preload")")
            rss_second+=("$(peak_kb SLEDTRACE_CACHE="$warm" SLEDTRACE_OUTPUT="$tmp/many" \
                LD_PRELOAD="$preload")")
        fi
        line=$("$bench_dir/many-$MANY-xray" 2>&1 >/dev/null | grep 'xray_patch:' || true)
        [[ $line =~ xray_patch:\ ([0-9.]+)\ ms ]] && cr_ms+=("${BASH_REMATCH[1]}")
    done
    first_med=$(med "${first_ms[@]}") second_med=$(med "${second_ms[@]}")
    fl_med=$(med "${fl_ms[@]}") cr_med=$(med "${cr_ms[@]}")
    sleds=$(llvm-xray extract "$bench_dir/many-sleds" 2>/dev/null | grep -c 'kind:' || true)
    echo "start-up with $MANY instrumented functions ($sleds sleds), medians of 5 runs:"
    printf '  %-52s %8s ms\n' "sledtrace, first run (empty proof cache)" "$first_med"
    printf '  %-52s %8s ms\n' "sledtrace, second run (proof cache of a first run)" "$second_med"
    printf '  %-52s %8s ms\n' "sledtrace with SLEDTRACE_FILTER=main, no cache" "$fl_med"
    printf '  %-52s %8s ms\n' "compiler-rt: __xray_patch() alone" "$cr_med"
    u=$(med "${rss_u[@]}") f=$(med "${rss_first[@]}") w=$(med "${rss_second[@]}")
    buf_kb=$((64 * 16)) # one thread: SLEDTRACE_BUFFERS x SLEDTRACE_BUFFER_KB (defaults)
    if [[ "$u" != "-" && "$f" != "-" && "$w" != "-" ]]; then
        printf '  %-52s %s, traced %s (first run) / %s (second run)\n' "peak RSS: untraced" \
            "$(mib "$u")" "$(mib "$f")" "$(mib "$w")"
        printf '  %-52s %s / %s\n' "peak RSS beyond untraced and buffers (first / second)" \
            "$(mib $((f - u - buf_kb)))" "$(mib $((w - u - buf_kb)))"
    fi
    u=$(med "${end_u[@]}") f=$(med "${end_first[@]}") w=$(med "${end_second[@]}")
    if [[ "$u" != "-" && "$f" != "-" && "$w" != "-" ]]; then
        # at the end of main: Capstone is unloaded; what stays is the patched text pages, the
        # object's map and names, the flush thread's stack and the buffers
        printf '  %-52s %s / %s\n' "RSS at main's end beyond untraced and buffers (1st/2nd)" \
            "$(mib $((f - u - buf_kb)))" "$(mib $((w - u - buf_kb)))"
    fi
    if [[ $MANY == 100000 ]]; then
        for t in first second; do
            val=$([[ $t == first ]] && echo "$first_med" || echo "$second_med")
            lim=$([[ $t == first ]] && echo "$TARGET_FIRST_MS" || echo "$TARGET_SECOND_MS")
            verdict=n/a
            [[ "$val" != "-" ]] && verdict=$(awk -v v="$val" -v l="$lim" 'BEGIN { print (v <= l) ? "met" : "MISSED" }')
            printf '  %-36s %8s  (target <= %s ms)  %s\n' "start-up, $t run" "$val" "$lim" "$verdict"
        done
    fi
done

# ---- start-up of a real program ---------------------------------------------
# xmllint from Debian's libxml2 source package, built once into build/bench-real (fetched with
# apt-get source; see the script): first run, second run, phases, RSS, compiler-rt's figure.
echo
RUNTIME=$preload CLANG=$CLANG scripts/bench/realprog.sh "$root/build/bench-real" || true

# ---- self times against perf -------------------------------------------------------------------
# mixleaf, sqlite3 and ninja built with and without sleds; each function's share of self time
# from sledtrace account beside perf's sampling of the untraced build (scripts/bench/profile.sh,
# sources and builds kept in build/bench/profile). BENCH_PROFILE=0 skips it.
if [[ "${BENCH_PROFILE:-1}" != 0 ]]; then
    echo
    CLANG=$CLANG scripts/bench/profile.sh "$root/build/bench/profile" ||
        echo "profile: not measured (scripts/bench/profile.sh failed)"
fi

# ---- per-process cost of the preload -------------------------------------------
# LD_PRELOAD reaches every program a traced one starts; one with nothing to trace (here
# /bin/true) should cost close to nothing. scripts/bench/spawn.c spawns it 300 times per run,
# with LD_PRELOAD empty or naming the runtime (its environment holds nothing else); the two are
# interleaved, $ROUNDS rounds, medians of the per-process wall time.
TARGET_SPAWN_US=200
"$CLANG" -O2 scripts/bench/spawn.c -o "$bench_dir/spawn"
sp_plain=() sp_pre=()
if [[ -e "$preload" ]]; then
    for ((i = 0; i < ROUNDS; i++)); do
        out=$(SPAWN_PRELOAD= "$bench_dir/spawn" 300 /bin/true) && sp_plain+=("${out#ns=}")
        out=$(SPAWN_PRELOAD=$preload "$bench_dir/spawn" 300 /bin/true) && sp_pre+=("${out#ns=}")
    done
fi
sp_a=$(med "${sp_plain[@]}") sp_b=$(med "${sp_pre[@]}")
echo
echo "per-process cost, /bin/true spawned and waited for (medians of $ROUNDS rounds of 300):"
if [[ "$sp_a" != "-" && "$sp_b" != "-" ]]; then
    printf '  %-52s %8.1f us\n' "without LD_PRELOAD" "$(awk -v v="$sp_a" 'BEGIN { print v / 1000 }')"
    printf '  %-52s %8.1f us\n' "with LD_PRELOAD=libsledtrace.so" \
        "$(awk -v v="$sp_b" 'BEGIN { print v / 1000 }')"
    sp_d=$(awk -v a="$sp_a" -v b="$sp_b" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
    verdict=$(awk -v v="$sp_d" -v l="$TARGET_SPAWN_US" 'BEGIN { print (v <= l) ? "met" : "MISSED" }')
    printf '  %-36s %8s  (target <= %s us)  %s\n' "cost of the preload per process" "$sp_d us" \
        "$TARGET_SPAWN_US" "$verdict"
else
    echo "  not measured (no runtime built, or a spawn failed)"
fi

# ---- threads and processes (issue 24) -------------------------------------------
# Thread churn and set-up, thousands of live threads (time and peak RSS), and a small
# instrumented program's per-process cost, each against untraced: scripts/bench/threads.sh.
if [[ -e "$preload" && -x "$tool" ]]; then
    echo
    BENCH_ROUNDS=$ROUNDS CLANG=$CLANG scripts/bench/threads.sh "$root" ||
        echo "threads: not measured (scripts/bench/threads.sh failed)"
fi

# ---- analysis speed ----------------------------------------------------------
# account, stack and convert --format chrome on a 2-thread and a 1-thread trace of at least
# BENCH_ANALYSIS_MB megabytes (default 500; 0 skips it): scripts/bench/analysis.sh builds the
# traces and prints wall time, MB/s, records/s, CPU time and peak RSS (medians of 3 runs).
now_ns() { date +%s%N; }
if [[ "${BENCH_ANALYSIS_MB:-500}" != 0 && -x "$tool" ]]; then
    echo
    BENCH_ROUNDS=3 CLANG=${CLANG:-clang} scripts/bench/analysis.sh "${BENCH_ANALYSIS_MB:-500}" ||
        echo "analysis speed: not measured (scripts/bench/analysis.sh failed)"
fi

# ---- many threads ------------------------------------------------------------
# 64 threads each computing fib($MANY_N) at once on this machine's cores, untraced and traced
# (lossless, default buffers), interleaved, $ROUNDS rounds: wall time of the whole process
# (start-up and the final flush included), the traced/untraced ratio, whether every traced run
# kept every call (sledtrace account's fib count) with nothing reported lost, the flush thread's
# CPU time (the runtime's info line) as a share of the traced process's CPU time (user + sys,
# /usr/bin/time), and the traced peak RSS per thread beyond the untraced one.
MANY_T=64
MANY_N=${BENCH_MANY_THREADS_FIB:-25}
if [[ -e "$preload" && -x /usr/bin/time ]]; then
    fa=0 fb=1
    for ((k = 0; k < MANY_N + 1; k++)); do fc=$((fa + fb)) fa=$fb fb=$fc; done
    mt_expect=$((MANY_T * (2 * fa - 1)))
    w_plain=() w_traced=() shares=() rss_plain=() rss_traced=()
    many_bad=0
    for ((i = 0; i < ROUNDS; i++)); do
        t0=$(now_ns)
        out=$("$bench_dir/fib-mt-sleds" "$MANY_N" "$MANY_T") || true
        w_plain+=($((($(now_ns) - t0) / 1000)))
        [[ $out =~ hwm_kb=([0-9]+) ]] && rss_plain+=("${BASH_REMATCH[1]}")
        rm -rf "$tmp/many-thr"
        t0=$(now_ns)
        out=$(SLEDTRACE_LOG=info SLEDTRACE_OUTPUT="$tmp/many-thr" LD_PRELOAD=$preload \
            /usr/bin/time -f 'cpu_s=%U %S' "$bench_dir/fib-mt-sleds" "$MANY_N" "$MANY_T" \
            2>"$tmp/many-thr.err") || true
        w_traced+=($((($(now_ns) - t0) / 1000)))
        [[ $out =~ hwm_kb=([0-9]+) ]] && rss_traced+=("${BASH_REMATCH[1]}")
        fl=$(sed -n 's/.*flush thread used \([0-9.]*\) ms of CPU.*/\1/p' "$tmp/many-thr.err")
        cpu=$(sed -n 's/^cpu_s=\([0-9.]*\) \([0-9.]*\)$/\1 \2/p' "$tmp/many-thr.err")
        if [[ -n "$fl" && -n "$cpu" ]]; then
            shares+=("$(awk -v f="$fl" -v c="$cpu" 'BEGIN { split(c, a, " ");
                printf "%.1f", 100 * f / 1000 / (a[1] + a[2]) }')")
        fi
        got=$("$tool" account --format csv "$tmp/many-thr"/*.fdr 2>/dev/null |
            awk -F, '$1 == "fib" { print $3 }')
        if [[ "$got" != "$mt_expect" ]] || grep -q 'trace incomplete' "$tmp/many-thr.err"; then
            many_bad=$((many_bad + 1))
        fi
    done
    wp=$(med "${w_plain[@]}") wt=$(med "${w_traced[@]}")
    echo
    echo "many threads: $MANY_T threads x fib($MANY_N) at once, lossless (medians of $ROUNDS rounds):"
    printf '  %-52s %8s ms\n' "untraced wall time" "$(awk -v v="$wp" 'BEGIN { printf "%.1f", v / 1000 }')"
    printf '  %-52s %8s ms\n' "traced wall time" "$(awk -v v="$wt" 'BEGIN { printf "%.1f", v / 1000 }')"
    printf '  %-52s %8s\n' "traced / untraced" "$(ratio "$wt" "$wp")"
    printf '  %-52s %8s %%\n' "flush thread's share of the traced process's CPU" "$(med "${shares[@]}")"
    printf '  %-52s %8s KiB\n' "peak RSS per thread beyond untraced" \
        "$(awk -v t="$(med "${rss_traced[@]}")" -v p="$(med "${rss_plain[@]}")" -v n="$MANY_T" \
            'BEGIN { printf "%.0f", (t - p) / n }')"
    printf '  %-52s %8s\n' "traced runs with a wrong fib count or a loss" "$many_bad of $ROUNDS"
fi

echo
echo "note: when compiler-rt cannot find the TSC frequency (no tsc_freq_khz, cpufreq or CPUID"
echo "      0x15/0x16, as on KVM guests) it prints 'Unable to determine CPU frequency' and FDR"
echo "      mode timestamps with clock_gettime (its trace header then says 1000000000 Hz);"
echo "      that cost is part of the compiler-rt FDR figure above."
