#!/usr/bin/env bash
# Instructions per event on the recording path, counted by callgrind (exact and repeatable,
# unlike times): fib(20) and fib(23) (scripts/bench/fib.c: 43,782 and 185,470 events) run
# under valgrind --tool=callgrind with libsledtrace.so preloaded; the difference between the
# two runs, divided by the difference in events, leaves start-up and exit out. Rows:
#   stp_event        the handler (preload/hot.c)
#   trampolines      stp_tramp_entry + stp_tramp_exit (patcher/trampolines.S)
#   whole process    every instruction of the traced process (the flush thread's included)
#                    less the untraced build's, per event
# Issue 24.4: the event path's count must not grow (stp_event was 44.0 per event at issue 24).
# Usage: scripts/bench/callgrind.sh [ROOT]   (ROOT: the repository, built; default: this one's)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
clang=${CLANG:-clang}
preload=$root/build/preload/libsledtrace.so
[[ -e $preload ]] || { echo "callgrind: build the project first (meson compile -C build)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "callgrind: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$clang" -O2 -fxray-instrument -fxray-instruction-threshold=1 -fnoxray-link-deps \
    "$root/scripts/bench/fib.c" -o "$work/fibx"
"$clang" -O2 "$root/scripts/bench/fib.c" -o "$work/fibp"
# Ir of function $2 (a substring of callgrind_annotate's file:function column; "" for the total)
ir() {
    if [[ -z $2 ]]; then
        callgrind_annotate --auto=no "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
    else
        callgrind_annotate --auto=no "$1" 2>/dev/null | awk -v f=":$2 " '
            index($0, f) { gsub(",", "", $1); s += $1 } END { print s + 0 }'
    fi
}
run() { # $1: binary suffix, $2: n
    local env=()
    [[ $1 == x ]] && env=(LD_PRELOAD="$preload" SLEDTRACE_OUTPUT="$work/out")
    env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1.$2" \
        "$work/fib$1" "$2" >/dev/null 2>&1
}
for n in 20 23; do run p $n; run x $n; done
events=$(((92735 - 21891) * 2)) # fib(23) and fib(20) make 92,735 and 21,891 calls
per() { awk -v a="$1" -v b="$2" -v e="$events" 'BEGIN { printf "%.1f", (b - a) / e }'; }
ev=$(per "$(ir "$work/cg.x.20" stp_event)" "$(ir "$work/cg.x.23" stp_event)")
te=$(per "$(ir "$work/cg.x.20" stp_tramp_entry)" "$(ir "$work/cg.x.23" stp_tramp_entry)")
tx=$(per "$(ir "$work/cg.x.20" stp_tramp_exit)" "$(ir "$work/cg.x.23" stp_tramp_exit)")
tot=$(awk -v a="$(ir "$work/cg.x.20" "")" -v b="$(ir "$work/cg.x.23" "")" \
    -v c="$(ir "$work/cg.p.20" "")" -v d="$(ir "$work/cg.p.23" "")" -v e="$events" \
    'BEGIN { printf "%.1f", ((b - a) - (d - c)) / e }')
echo "instructions per event (scripts/bench/callgrind.sh; fib(23) - fib(20), $events events):"
printf '  %-16s %6s\n' "stp_event" "$ev" "trampolines" "$(awk -v a="$te" -v b="$tx" 'BEGIN { printf "%.1f", a + b }')" \
    "whole process" "$tot"
