#!/usr/bin/env bash
# How `sledtrace top` keeps up with a busy program (issue 28.7): refresh lateness and quit
# latency. Not a test: it measures and prints, and never fails on a figure.
#
#   scripts/bench/top.sh [SLEDTRACE...]     (default: build/tools/sledtrace; CLANG=clang)
#
# For each sledtrace binary given (e.g. a build before a change and one after), builds
# top_busy.c with sleds, runs it for 26 s under build/preload/libsledtrace.so with
# SLEDTRACE_FLUSH_MS=100 (2 threads, 100 rounds of fib(18) a second each: about 27 MB of trace
# a second, 700 MB at the end), and times `top` sessions on its growing trace in a
# pseudo-terminal (top_session.py):
#   follow  from 2 s, 1 s interval, 14 s after its first screen 'q': the first screen, gaps
#           between screens, lateness against the schedule, quit latency;
#   then, until the program ends, sessions started on the trace (400 MB and more by then)
#   asked to quit 1.5 s after their first screen, in turn with SIGINT, SIGTERM and 'q': quit
#   latency while top reads a long trace (a whole re-read, or one falling behind).
# The machine's load average is printed with each binary's runs: other work on the machine
# shows in every figure.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(build/tools/sledtrace)
preload=build/preload/libsledtrace.so
[[ -f $preload ]] || {
    echo "top.sh: $preload missing: build first (meson compile -C build)" >&2
    exit 1
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$CLANG" -O2 -pthread "${XRAY_CFLAGS[@]}" "$(xray_no_link_deps_flag)" scripts/bench/top_busy.c \
    -o "$work/top-busy"
session=scripts/bench/top_session.py

for tool in "${tools[@]}"; do
    out=$work/out
    rm -rf "$out"
    mkdir -p "$out"
    LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$out SLEDTRACE_FLUSH_MS=100 "$work/top-busy" 26 2 100 \
        >/dev/null &
    prog=$!
    sleep 2
    trace=$(find "$out" -name "*.fdr" | head -1)
    echo "== $tool (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "follow: $("$session" "$tool" "$trace" 1000 14 q)"
    while kill -0 "$prog" 2>/dev/null; do
        for how in int term q; do
            kill -0 "$prog" 2>/dev/null || break
            size=$(($(stat -c %s "$trace") / 1000000))
            echo "$how at $size MB: $("$session" "$tool" "$trace" 1000 1.5 "$how")"
        done
    done
    wait "$prog"
    echo "trace:  $(($(stat -c %s "$trace") / 1000000)) MB"
done
