#!/usr/bin/env bash
# Issue 28.9's row: the chunk switch (switch.c's common one, or the slow path; recorded as the
# pseudo-function '[sledtrace] buffer switch') on a machine with more busy recording threads than cores.
# fib_mt.c with SWITCH_THREADS threads (default 6) each computing fib(SWITCH_FIB) (default 30),
# on however many CPUs the machine has (the row is meant for 2). Interleaved rounds (untraced,
# then traced, BENCH_ROUNDS times; default 7), medians over rounds of:
#   wall      the whole process's wall time (start-up, patching and the final flush included),
#             untraced and traced, and their ratio
#   switch    account's row of '[sledtrace] buffer switch' in each traced run: count, median,
#             p99, max (ns) and share (% of all threads' summed wall time); the max is also
#             given as the largest over all rounds
#   wait      the same row's count and total for '[sledtrace] buffer wait', when there is one
# Every traced run's fib calls are counted with `sledtrace account` (exact, or the row says so).
# Then one more traced run under `perf stat -e syscalls:sys_enter_*` (SWITCH_SYSCALLS=0 skips
# it): the runtime's system calls on that path (rt_sigprocmask, getpid, futex, madvise), less
# an untraced run's, per switch or wait (a switch that waited is recorded as a wait).
# Usage: scripts/bench/switch.sh [ROOT]   (ROOT: the repository, built; default: this one's)
# Environment: BENCH_ROUNDS, SWITCH_THREADS, SWITCH_FIB, SWITCH_SYSCALLS, SWITCH_BASE (another
# build's libsledtrace.so, run as a second traced variant in the same rounds), CLANG.
# Traces go to a tmpfs directory, removed.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
rounds=${BENCH_ROUNDS:-7}
threads=${SWITCH_THREADS:-6}
n=${SWITCH_FIB:-30}
clang=${CLANG:-clang}
preload=$root/build/preload/libsledtrace.so
tool=$root/build/tools/sledtrace
[[ -e $preload && -x $tool ]] || { echo "switch: build the project first (meson compile -C build)" >&2; exit 2; }
work=$(mktemp -d)
out=$(mktemp -d /dev/shm/sledtrace-switch.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$work" "$out"' EXIT
here=$root/scripts/bench
"$clang" -O2 -pthread "$here/fib_mt.c" -o "$work/fib_mt_plain"
"$clang" -O2 -pthread -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps \
    "$here/fib_mt.c" -o "$work/fib_mt"
calls=$(awk -v n="$n" -v t="$threads" 'BEGIN { a = 0; b = 1; for (i = 0; i < n + 1; i++) { c = a + b; a = b; b = c } print t * (2 * a - 1) }')

med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -1; }
now() { date +%s%N; }
# account's csv row for function $2 of trace $1, as "count median p99 max share total" (ns)
row() {
    "$tool" account "$1" --format csv 2>/dev/null | awk -F, -v f="$2" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $1 == f { print $col["count"], $col["median_ns"], $col["p99_ns"], $col["max_ns"], $col["share_pct"], $col["total_ns"]; found = 1 }
        END { if (!found) print "0 0 0 0 0 0" }'
}

# Variants: "this" (ROOT's runtime) and, with SWITCH_BASE=/path/to/other/libsledtrace.so, "base"
# (an earlier build, for a before/after comparison in the same interleaved rounds).
variants=(this)
declare -A lib=([this]=$preload)
if [[ -n ${SWITCH_BASE:-} ]]; then variants+=(base); lib[base]=$SWITCH_BASE; fi
declare -A wt cnt md p99 mx sh wc wtot
wu=()
bad=
for ((r = 0; r < rounds; r++)); do
    t0=$(now)
    "$work/fib_mt_plain" "$n" "$threads" >/dev/null
    t1=$(now)
    wu+=($((t1 - t0)))
    # the traced variants, in an order rotated each round
    for ((k = 0; k < ${#variants[@]}; k++)); do
        v=${variants[(k + r) % ${#variants[@]}]}
        rm -rf "${out:?}"/*
        t0=$(now)
        LD_PRELOAD=${lib[$v]} SLEDTRACE_OUTPUT=$out "$work/fib_mt" "$n" "$threads" >/dev/null
        t1=$(now)
        wt[$v]+=" $((t1 - t0))"
        trace=$(ls "$out"/*.fdr)
        read -r c _ < <(row "$trace" fib)
        [[ $c == "$calls" ]] || bad+=" $v round $r: $c of $calls calls;"
        read -r c m p x s _ < <(row "$trace" "[sledtrace] buffer switch")
        cnt[$v]+=" $c" md[$v]+=" $m" p99[$v]+=" $p" mx[$v]+=" $x" sh[$v]+=" $s"
        read -r c _ _ _ _ tot < <(row "$trace" "[sledtrace] buffer wait")
        wc[$v]+=" $c" wtot[$v]+=" $tot"
    done
done

us() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1000 }'; }
u=$(med "${wu[@]}")
echo "chunk switch, $threads threads x fib($n) on $(nproc) CPUs (scripts/bench/switch.sh; medians of $rounds interleaved rounds):"
printf '  %-34s %8.3f s\n' "whole run, wall, untraced" "$(awk -v v="$u" 'BEGIN { print v / 1e9 }')"
for v in "${variants[@]}"; do
    t=$(med ${wt[$v]})
    printf '  %-34s %8.3f s traced: %sx\n' "[$v] whole run, wall" "$(awk -v v="$t" 'BEGIN { print v / 1e9 }')" \
        "$(awk -v a="$u" -v b="$t" 'BEGIN { printf "%.2f", b / a }')"
    printf '  %-34s %6d calls, median %s us, p99 %s us, max %s us (largest of all rounds %s us), share %s%%\n' \
        "[$v] [sledtrace] buffer switch" "$(med ${cnt[$v]})" "$(us "$(med ${md[$v]})")" "$(us "$(med ${p99[$v]})")" \
        "$(us "$(med ${mx[$v]})")" "$(us "$(maxof ${mx[$v]})")" "$(med ${sh[$v]})"
    printf '  %-34s %6d calls, total %s us\n' "[$v] [sledtrace] buffer wait" "$(med ${wc[$v]})" "$(us "$(med ${wtot[$v]})")"
    read -ra a <<<"${p99[$v]}"
    read -ra b <<<"${mx[$v]}"
    printf '  %-34s' "[$v] per round, switch p99/max us"
    for ((r = 0; r < rounds; r++)); do printf ' %s/%s' "$(us "${a[r]}")" "$(us "${b[r]}")"; done
    echo
done
[[ -z $bad ]] || echo "  NOT EXACT:$bad"

if [[ ${SWITCH_SYSCALLS:-1} != 0 ]] && command -v perf >/dev/null; then
    ev=syscalls:sys_enter_rt_sigprocmask,syscalls:sys_enter_getpid,syscalls:sys_enter_futex,syscalls:sys_enter_madvise
    count() { awk -v e="$2" '$2 == e { gsub(/,/, "", $1); print $1 }' "$1"; }
    perf stat -x' ' -e "$ev" -o "$work/plain.stat" "$work/fib_mt_plain" "$n" "$threads" >/dev/null 2>&1 || true
    for v in "${variants[@]}"; do
        rm -rf "${out:?}"/*
        LD_PRELOAD=${lib[$v]} SLEDTRACE_OUTPUT=$out perf stat -x' ' -e "$ev" -o "$work/traced.stat" \
            "$work/fib_mt" "$n" "$threads" >/dev/null 2>&1 || true
        read -r c _ < <(row "$(ls "$out"/*.fdr)" "[sledtrace] buffer switch")
        read -r w _ < <(row "$(ls "$out"/*.fdr)" "[sledtrace] buffer wait")
        # a switch that waited is recorded as a wait instead of a switch: both count
        c=$((c + w))
        printf '  %-34s' "[$v] system calls per switch or wait ($c)"
        for e in rt_sigprocmask getpid futex madvise; do
            a=$(count "$work/plain.stat" "syscalls:sys_enter_$e") b=$(count "$work/traced.stat" "syscalls:sys_enter_$e")
            printf ' %s %s' "$e" "$(awk -v a="${a:-0}" -v b="${b:-0}" -v c="$c" 'BEGIN { printf "%.2f", c ? (b - a) / c : 0 }')"
        done
        echo
    done
fi
