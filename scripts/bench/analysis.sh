#!/usr/bin/env bash
# Analysis speed: how fast `sledtrace account`, `stack` and `convert --format chrome` read a
# big trace from the page cache.
#
#   scripts/bench/analysis.sh [MB]      (default 500)
#
# Builds scripts/bench/fib_mt.c (2 threads) and fib.c (1 thread) with sleds, traces each with
# fib(N) for the smallest N whose trace is at least MB megabytes (lossless policy, so the trace
# is complete), reads each trace once to put it in the page cache, then runs every command
# BENCH_ROUNDS times (default 3) and prints per command: the median wall time, the trace's MB
# per second and records per second at that time, the median CPU time (user + system, all
# threads) and the largest peak RSS (GNU time); for chrome also the size of its output and the
# output MB/s (the JSON goes to /dev/null, so the number is the converter's, not a disk's).
# With ANALYSIS_LLVM=1, llvm-xray account -k is timed once on the same trace rewritten by
# `sledtrace convert --format fdr` (the form llvm-xray 14 reads), for comparison: it holds the
# whole trace in memory (about 26 bytes of RSS per trace byte), so it is off by default.
#
# Environment: BENCH_ROUNDS, CLANG (default clang), SLEDTRACE (the command to time, default
# build/tools/sledtrace), ANALYSIS_DIR (keep the traces there and reuse them when present;
# default: a temporary directory removed at the end), ANALYSIS_LLVM.
# Not a test: it never fails on a slow number.
set -euo pipefail

cd "$(dirname "$0")/../.."
source scripts/lib.sh

MB=${1:-500}
ROUNDS=${BENCH_ROUNDS:-3}
CLANG=${CLANG:-clang}
tool=${SLEDTRACE:-$PWD/build/tools/sledtrace}
preload=$PWD/build/preload/libsledtrace.so
log() { printf 'analysis: %s\n' "$*" >&2; }

if ! [[ "$MB" =~ ^[0-9]+$ ]] || ((MB < 1)); then
    log "MB must be a positive integer"
    exit 2
fi
if ! [[ "$ROUNDS" =~ ^[0-9]+$ ]] || ((ROUNDS < 1)); then
    log "BENCH_ROUNDS must be a positive integer"
    exit 2
fi
if [[ ! -x "$tool" || ! -e "$preload" ]]; then
    log "build sledtrace first (meson setup build && ninja -C build)"
    exit 2
fi
if [[ ! -x /usr/bin/time ]]; then
    log "needs /usr/bin/time (GNU time) for the peak RSS"
    exit 2
fi

if [[ -n "${ANALYSIS_DIR:-}" ]]; then
    dir=$ANALYSIS_DIR
    mkdir -p "$dir"
else
    dir=$(mktemp -d "${TMPDIR:-/tmp}/sledtrace-analysis.XXXXXX")
    trap 'rm -rf "$dir"' EXIT
fi

# The smallest N whose fib(N) trace with T threads is at least MB megabytes: 2 function records
# (16 bytes) per call, 2*F(N+1)-1 calls per thread.
pick_n() {
    local threads=$1 n k t f0 f1
    for ((n = 20; n < 40; n++)); do
        f0=0 f1=1
        for ((k = 0; k < n + 1; k++)); do t=$((f0 + f1)) f0=$f1 f1=$t; done
        if ((threads * 16 * (2 * f0 - 1) >= MB * 1000000)); then
            echo "$n"
            return
        fi
    done
    echo 40
}

nodeps=$(xray_no_link_deps_flag)
bin=$dir/bin
mkdir -p "$bin"
# One trace per shape: "mt" (2 threads, fib_mt.c) and "st" (1 thread, fib.c).
make_trace() {
    local shape=$1 n out
    out=$dir/$shape-$MB.fdr
    if [[ -s "$out" ]]; then
        echo "$out"
        return
    fi
    rm -rf "$dir/run-$shape"
    mkdir -p "$dir/run-$shape"
    if [[ $shape == mt ]]; then
        n=$(pick_n 2)
        "$CLANG" -O2 -pthread "${XRAY_CFLAGS[@]}" "$nodeps" scripts/bench/fib_mt.c -o "$bin/fib-mt"
        log "tracing 2 threads x fib($n)"
        LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$dir/run-$shape SLEDTRACE_POLICY=lossless \
            "$bin/fib-mt" "$n" 2 >/dev/null
    else
        n=$(pick_n 1)
        "$CLANG" -O2 "${XRAY_CFLAGS[@]}" "$nodeps" scripts/bench/fib.c -o "$bin/fib"
        log "tracing 1 thread x fib($n)"
        LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$dir/run-$shape SLEDTRACE_POLICY=lossless \
            "$bin/fib" "$n" >/dev/null
    fi
    mv "$(find "$dir/run-$shape" -name '*.fdr' | head -n 1)" "$out"
    mv "$(find "$dir/run-$shape" -name '*.syms' | head -n 1)" "${out%.fdr}.syms"
    rm -rf "$dir/run-$shape"
    echo "$out"
}

med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }
max() { printf '%s\n' "$@" | sort -n | tail -n 1; }

# Times one command ROUNDS times: wall_ms and cpu_ms (medians), rss_kb (the largest).
time_cmd() {
    local walls=() cpus=() rsss=() i e u s m
    for ((i = 0; i < ROUNDS; i++)); do
        /usr/bin/time -o "$dir/time.out" -f '%e %U %S %M' "$@" >/dev/null 2>&1 || continue
        read -r e u s m <"$dir/time.out"
        walls+=("$(awk -v e="$e" 'BEGIN { printf "%d", e * 1000 }')")
        cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%d", (u + s) * 1000 }')")
        rsss+=("$m")
    done
    wall_ms=$(med "${walls[@]}")
    cpu_ms=$(med "${cpus[@]}")
    rss_kb=$(max "${rsss[@]}")
}

# One line of the table: what, then the command.
row() {
    local what=$1
    shift
    time_cmd "$@"
    if [[ "$wall_ms" == "-" ]]; then
        printf '  %-34s %9s\n' "$what" "failed"
        return
    fi
    awk -v w="$what" -v ms="$wall_ms" -v cpu="$cpu_ms" -v b="$bytes" -v r="$records" \
        -v rss="$rss_kb" 'BEGIN {
        s = (ms > 0 ? ms : 10) / 1000
        printf "  %-34s %9d %9.0f %12.3g %9d %9d\n", w, ms, b / 1e6 / s, r / s, cpu, rss }'
}

# GNU time's %e has 10 ms resolution, plenty at these sizes.
echo "analysis speed ($tool; traces of at least $MB MB in the page cache; medians of $ROUNDS"
echo "runs; MB = 10^6 bytes; records: all of the trace's, as sledtrace info counts them;"
echo "CPU: user + system time of all the command's threads; RSS: the largest peak)"
for shape in mt st; do
    trace=$(make_trace "$shape")
    bytes=$(stat -c %s "$trace")
    cat "$trace" >/dev/null
    records=$("$tool" info "$trace" 2>/dev/null | awk '/^records:/ { print $2 }')
    threads=$([[ $shape == mt ]] && echo 2 || echo 1)
    printf '\n%s: %s, %d bytes, %s records, %s thread(s) of fib\n' "$shape" "$(basename "$trace")" \
        "$bytes" "$records" "$threads"
    printf '  %-34s %9s %9s %12s %9s %9s\n' "command" "wall ms" "MB/s" "records/s" "CPU ms" "RSS KB"
    row "sledtrace account" "$tool" account "$trace"
    row "sledtrace stack" "$tool" stack "$trace"
    row "sledtrace convert --format chrome" "$tool" convert --format chrome -o /dev/null "$trace"
    out_bytes=$("$tool" convert --format chrome "$trace" 2>/dev/null | wc -c)
    awk -v ms="$wall_ms" -v o="$out_bytes" 'BEGIN {
        printf "  %-34s %9s %9.0f  (%.0f MB of JSON)\n", "  its output", "",
            o / 1e6 / ((ms > 0 ? ms : 10) / 1000), o / 1e6 }'
    if [[ "${ANALYSIS_LLVM:-0}" == 1 ]] && command -v llvm-xray >/dev/null; then
        llvm=$dir/$shape-$MB-llvm.fdr
        [[ -s "$llvm" ]] || "$tool" convert --format fdr -o "$llvm" "$trace" >/dev/null 2>&1 || true
        exe=$bin/fib
        [[ $shape == mt ]] && exe=$bin/fib-mt
        if [[ -s "$llvm" && -x "$exe" ]]; then
            saved=$ROUNDS
            ROUNDS=1
            row "llvm-xray account -k (1 run)" llvm-xray account -k -instr_map="$exe" "$llvm"
            ROUNDS=$saved
        fi
    fi
done
