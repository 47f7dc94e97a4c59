#!/usr/bin/env bash
# What `sledtrace account --suggest-exclude` buys (issue 22, item 4): two programs with many
# small functions, each traced once, the suggestion written as a pattern file, then timed with
# hyperfine untraced, traced, and traced with the file (SLEDTRACE_EXCLUDE_FILE); and the
# remaining functions' corrected shares (account's share: time on the stack over the wall
# time, the tracer's cost taken out) beside perf's (Children: samples with the function on the
# stack), for the run with the file.
#
# Programs: tests/e2e/manyprog.c (100 leaves of a few instructions, medium() and work(), loops
# of MANY_WORK steps; MANY_ROUNDS rounds) and scripts/bench/suggest_mix.cpp (C++: std::sort
# with a comparator, per-character hashing, small vector and accessor functions, a checksum
# loop; MIX_ROUNDS rounds). Each is built twice with $CLANG/$CLANGXX -O2
# -fno-omit-frame-pointer (perf's call chains): with sleds and no XRay runtime, and without.
#
# The tracer's cost per call: the runtime's calibration record, which every trace starts with.
# The script also measures it as scripts/bench.sh's fib does (fib(FIB_N), 2*F(N+1)-1 calls,
# timed in-process: sledtrace's ns per call minus the uninstrumented build's, the least of 7
# runs), prints it beside, and gives that record (tests/e2e/calibadd, every gap half the cost)
# only to a trace without one (a runtime built before the calibration).
#
# Usage: scripts/bench/suggest.sh   (after `meson setup build && meson compile -C build`)
# Environment: BUILD (default build/ of the repository), CLANG, CLANGXX, RUNS (hyperfine runs,
# default 10), MANY_ROUNDS (40000), MANY_WORK (2000), MIX_ROUNDS (500), FIB_N (30).
# Needs hyperfine (apt-get install hyperfine) and, for the comparison, perf. A benchmark, not a
# test: it reports, and fails only when something it needs is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
CLANG=${CLANG:-clang}
CLANGXX=${CLANGXX:-clang++}
RUNS=${RUNS:-10}
MANY_ROUNDS=${MANY_ROUNDS:-40000}
MANY_WORK=${MANY_WORK:-2000}
MIX_ROUNDS=${MIX_ROUNDS:-500}
FIB_N=${FIB_N:-30}
st=$build/tools/sledtrace
lib=$build/preload/libsledtrace.so
calibadd=$build/tests/e2e/calibadd
for f in "$st" "$lib" "$calibadd"; do
    [[ -e $f ]] || { echo "suggest.sh: $f missing: build first" >&2; exit 1; }
done
command -v hyperfine >/dev/null || { echo "suggest.sh: needs hyperfine" >&2; exit 1; }
have_perf=1
command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1 || have_perf=0

work=$(mktemp -d "${TMPDIR:-/tmp}/sledtrace-suggest-XXXXXX")
trap 'rm -rf "$work"' EXIT
xray=(-fxray-instrument -fxray-instruction-threshold=1)
nodeps=-fnoxray-link-deps
"$CLANG" -x c -fxray-instrument "$nodeps" -c /dev/null -o /dev/null 2>/dev/null ||
    nodeps=-fno-xray-link-deps
cflags=(-O2 -fno-omit-frame-pointer)
"$CLANG" "${cflags[@]}" "${xray[@]}" "$nodeps" -I"$root/tests/e2e" "$root/tests/e2e/manyprog.c" \
    -o "$work/many-sleds"
"$CLANG" "${cflags[@]}" -I"$root/tests/e2e" "$root/tests/e2e/manyprog.c" -o "$work/many-plain"
"$CLANGXX" "${cflags[@]}" "${xray[@]}" "$nodeps" "$root/scripts/bench/suggest_mix.cpp" \
    -o "$work/mix-sleds"
"$CLANGXX" "${cflags[@]}" "$root/scripts/bench/suggest_mix.cpp" -o "$work/mix-plain"
"$CLANG" -O2 "${xray[@]}" "$nodeps" "$root/scripts/bench/fib.c" -o "$work/fib-sleds"
"$CLANG" -O2 "$root/scripts/bench/fib.c" -o "$work/fib-plain"

# ---- the tracer's cost per call (ns) ----
ns_per_call() { # CMD...: the least over 7 runs of fib's ns / calls (the least disturbed)
    local _ out
    for _ in 1 2 3 4 5 6 7; do
        out=$("$@")
        awk -v l="$out" 'BEGIN { split(l, f, /[ =]/); printf "%.4f\n", f[2] / f[4] }'
    done | sort -g | head -1
}
mkdir -p "$work/fibout"
plain=$(ns_per_call "$work/fib-plain" "$FIB_N")
traced=$(SLEDTRACE_OUTPUT=$work/fibout ns_per_call env LD_PRELOAD="$lib" "$work/fib-sleds" "$FIB_N")
rm -rf "$work/fibout"
cost=$(awk -v a="$traced" -v b="$plain" 'BEGIN { printf "%.2f", a - b }')
echo "tracer cost per call: $cost ns (fib($FIB_N): $traced ns a call traced, $plain untraced)"

# trace NAME BIN ARGS...: one traced run into $work/NAME.out; prints the trace's path
trace() {
    local name=$1 bin=$2
    shift 2
    rm -rf "$work/$name.out"
    mkdir -p "$work/$name.out"
    SLEDTRACE_OUTPUT=$work/$name.out LD_PRELOAD=$lib "$bin" "$@" >/dev/null
    local t
    t=$(ls "$work/$name.out"/*.fdr)
    if "$st" info "$t" | grep -q '^tracer cost: *not recorded'; then
        "$calibadd" "$t" "$cost"
    fi
    echo "$t"
}

# shares TRACE: "mangled-name<TAB>share" of account's corrected shares (csv)
shares() {
    "$st" account "$1" --format csv --names mangled 2>/dev/null |
        awk -F, 'NR > 1 && $1 !~ /^\[sledtrace\]/ { print $1 "\t" $5 }'
}

# compare NAME PLAIN ALL EXCL ARGS...: the corrected shares of the functions left in trace EXCL
# (the run with the file), beside trace ALL's (everything traced) and perf's Children share of
# PLAIN run with ARGS (mangled names everywhere).
compare() {
    local name=$1 plain=$2 all=$3 excl=$4
    shift 4
    ((have_perf)) || { echo "  (no perf: no comparison)"; return; }
    perf record -q -F 4999 -g -o "$work/$name.perf" -- "$plain" "$@" >/dev/null 2>&1
    perf report -i "$work/$name.perf" --stdio --children --no-demangle --sort symbol -q \
        2>/dev/null | awk '$3 == "[.]" { sub(/%/, "", $1); print $4 "\t" $1 }' >"$work/$name.perfc"
    shares "$all" >"$work/$name.all"
    shares "$excl" >"$work/$name.excl"
    printf "  %-40s %9s %9s %9s\n" "function (left in, share >= 1%)" "perf" "excluded" "all"
    local fn share p a
    while IFS=$'\t' read -r fn share; do
        p=$(awk -F'\t' -v f="$fn" '$1 == f { print $2; exit }' "$work/$name.perfc")
        a=$(awk -F'\t' -v f="$fn" '$1 == f { print $2; exit }' "$work/$name.all")
        awk -v s="$share" -v p="${p:-0}" 'BEGIN { exit !(s >= 1 || p >= 1) }' || continue
        printf "  %-40s %8.2f%% %8.2f%% %8.2f%%\n" "$(echo "$fn" | c++filt | cut -c1-40)" \
            "${p:-0}" "$share" "${a:-0}"
    done <"$work/$name.excl"
}

# bench NAME PLAIN SLEDS ARGS...
bench() {
    local name=$1 plain=$2 sleds=$3
    shift 3
    echo
    echo "== $name ($*)"
    local t excl=$work/$name.exclude
    t=$(trace "$name" "$sleds" "$@")
    "$st" account "$t" --suggest-exclude -o "$excl" >"$work/$name.suggest"
    echo "-- the suggestion (its first 12 rows and its summary):"
    awk 'NR <= 14 || /^# /' "$work/$name.suggest"
    echo "-- wall time (hyperfine, $RUNS runs each; traces removed before each run):"
    mkdir -p "$work/hf"
    hyperfine -N --runs "$RUNS" --warmup 1 --prepare "rm -rf $work/hf/out" \
        --export-markdown "$work/$name.md" \
        -n untraced "$plain $*" \
        -n traced "env SLEDTRACE_OUTPUT=$work/hf/out LD_PRELOAD=$lib $sleds $*" \
        -n "traced, suggestion excluded" \
        "env SLEDTRACE_OUTPUT=$work/hf/out LD_PRELOAD=$lib SLEDTRACE_EXCLUDE_FILE=$excl $sleds $*" \
        >/dev/null
    cat "$work/$name.md"
    echo "-- shares (account's, corrected) of the run with the file and of the run with"
    echo "   everything traced, beside perf's Children (untraced build, -g):"
    local t2
    t2=$(SLEDTRACE_EXCLUDE_FILE=$excl trace "$name-excl" "$sleds" "$@")
    compare "$name" "$plain" "$t" "$t2" "$@"
}

bench manyprog "$work/many-plain" "$work/many-sleds" "$MANY_ROUNDS" "$MANY_WORK"
bench suggest_mix "$work/mix-plain" "$work/mix-sleds" "$MIX_ROUNDS"
