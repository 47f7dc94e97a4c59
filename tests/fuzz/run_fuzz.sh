#!/bin/sh
# Runs the reader fuzzer for a bounded time on a copy of the seed corpus (so the checked-in
# corpus never changes). Usage: run_fuzz.sh FUZZER SEED_DIR SECONDS. Exit status: libFuzzer's
# (non-zero on any crash, leak, timeout or out-of-memory).
set -eu
work=$(mktemp -d "${TMPDIR:-/tmp}/sledtrace-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$2"/* "$work"/
"$1" -max_total_time="$3" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$work" 2>&1 |
    grep -E 'Done|stat::number_of_executed_units|ERROR|SUMMARY|crash|leak' || true
# grep masks libFuzzer's status; run once more over the corpus to get it (fast, no mutation).
"$1" -runs=0 "$work" >/dev/null 2>&1
