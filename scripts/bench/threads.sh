#!/usr/bin/env bash
# Issue 24's rows: cost in proportion to what is recorded, not to how many threads or processes
# exist. Interleaved rounds (untraced, then traced, BENCH_ROUNDS times; default 5), medians:
#   churn     20000 threads created and joined 8 at a time, 10 calls each: wall time, and the
#             traced runs' thread set-up (account's median of '[sledtrace] thread set-up')
#             targets: set-up <= 20 us, wall <= 1.5x untraced
#   live      4000 threads (64 KiB stacks) alive at once, 100 calls each: wall time and peak RSS
#             targets: wall <= 2x untraced, peak RSS <= untraced + 256 MB
#   process   a 10-call instrumented program (small.c) spawned and waited for 300 times
#             target: <= untraced + 1 ms per process
# Every traced run's calls are counted with `sledtrace account` (exact, or the row says so).
# Usage: scripts/bench/threads.sh [ROOT]   (ROOT: the repository, built; default: this one's)
# Environment: BENCH_ROUNDS, CLANG (default clang). Traces go to a tmpfs directory, removed.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
rounds=${BENCH_ROUNDS:-5}
clang=${CLANG:-clang}
preload=$root/build/preload/libsledtrace.so
tool=$root/build/tools/sledtrace
[[ -e $preload && -x $tool ]] || { echo "threads: build the project first (meson compile -C build)" >&2; exit 2; }
work=$(mktemp -d)
out=$(mktemp -d /dev/shm/sledtrace-threads.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$work" "$out"' EXIT
xray=(-O2 -pthread -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps)
here=$root/scripts/bench
"$clang" "${xray[@]}" "$here/threads.c" -o "$work/threads"
"$clang" "${xray[@]}" "$here/small.c" -o "$work/small"
"$clang" -O2 "$here/spawn.c" -o "$work/spawn"
med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }
field() { sed -n "s/.*$1=\([0-9-]*\).*/\1/p" <<<"$2"; }
# the count (csv column 3) and median (column 8) of account's row for a function
row() { "$tool" account "$1" --raw-times --format csv 2>/dev/null | awk -F, -v f="$2" '$1 == f { print $3, $8 }'; }

declare -A wall hwm setup bad
for kind in churn live; do
    n=20000 calls=200000
    [[ $kind == live ]] && n=4000 calls=400000
    for ((r = 0; r < rounds; r++)); do
        o=$("$work/threads" "$kind" "$n")
        wall[$kind-u]+=" $(field ns "$o")" hwm[$kind-u]+=" $(field hwm "$o")"
        rm -rf "${out:?}"/*
        o=$(LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$out "$work/threads" "$kind" "$n")
        wall[$kind-t]+=" $(field ns "$o")" hwm[$kind-t]+=" $(field hwm "$o")"
        trace=$(ls "$out"/*.fdr)
        read -r count _ < <(row "$trace" work)
        [[ $count == "$calls" ]] || bad[$kind]+=" round $r: $count of $calls calls"
        read -r _ su < <(row "$trace" "[sledtrace] thread set-up")
        setup[$kind]+=" $su"
    done
done
sp_u=() sp_t=()
for ((r = 0; r < rounds; r++)); do
    sp_u+=("$(SPAWN_PRELOAD= "$work/spawn" 300 "$work/small" | sed 's/ns=//')")
    rm -rf "${out:?}"/*
    sp_t+=("$(SPAWN_PRELOAD=$preload SPAWN_OUTPUT=$out "$work/spawn" 300 "$work/small" | sed 's/ns=//')")
    ntr=$(ls "$out"/*.fdr | wc -l)
    [[ $ntr == 300 ]] || bad[process]+=" round $r: $ntr traces of 300"
done
rm -rf "${out:?}"/*

verdict() { awk -v v="$1" -v l="$2" 'BEGIN { print (v <= l) ? "met" : "MISSED" }'; }
echo "threads and processes (scripts/bench/threads.sh; medians of $rounds interleaved rounds):"
cu=$(med ${wall[churn-u]}) ct=$(med ${wall[churn-t]}) cs=$(med ${setup[churn]})
cr=$(awk -v a="$cu" -v b="$ct" 'BEGIN { printf "%.2f", b / a }')
printf '  %-44s %9.3f s untraced, %9.3f s traced: %5sx (target <= 1.5x) %s\n' "churn, 20000 threads 8 at a time" \
    "$(awk -v v="$cu" 'BEGIN { print v / 1e9 }')" "$(awk -v v="$ct" 'BEGIN { print v / 1e9 }')" "$cr" "$(verdict "$cr" 1.5)"
printf '  %-44s %9.1f us (target <= 20 us) %s\n' "thread set-up, median" \
    "$(awk -v v="$cs" 'BEGIN { print v / 1000 }')" "$(verdict "$(awk -v v="$cs" 'BEGIN { print v / 1000 }')" 20)"
lu=$(med ${wall[live-u]}) lt=$(med ${wall[live-t]}) hu=$(med ${hwm[live-u]}) ht=$(med ${hwm[live-t]})
lr=$(awk -v a="$lu" -v b="$lt" 'BEGIN { printf "%.2f", b / a }')
lm=$(awk -v a="$hu" -v b="$ht" 'BEGIN { printf "%.0f", (b - a) / 1024 }')
printf '  %-44s %9.3f s untraced, %9.3f s traced: %5sx (target <= 2x) %s\n' "live, 4000 threads at once" \
    "$(awk -v v="$lu" 'BEGIN { print v / 1e9 }')" "$(awk -v v="$lt" 'BEGIN { print v / 1e9 }')" "$lr" "$(verdict "$lr" 2)"
printf '  %-44s %6d MB untraced, +%d MB traced (target <= +256 MB) %s\n' "live, peak RSS" \
    "$((hu / 1024))" "$lm" "$(verdict "$lm" 256)"
pu=$(med "${sp_u[@]}") pt=$(med "${sp_t[@]}")
pd=$(awk -v a="$pu" -v b="$pt" 'BEGIN { printf "%.2f", (b - a) / 1e6 }')
printf '  %-44s %9.2f ms untraced, %9.2f ms traced: +%s ms (target <= +1 ms) %s\n' \
    "process, a 10-call program spawned 300 times" "$(awk -v v="$pu" 'BEGIN { print v / 1e6 }')" \
    "$(awk -v v="$pt" 'BEGIN { print v / 1e6 }')" "$pd" "$(verdict "$pd" 1)"
for k in churn live process; do
    [[ -z ${bad[$k]:-} ]] || echo "  $k: NOT EXACT:${bad[$k]}"
done
