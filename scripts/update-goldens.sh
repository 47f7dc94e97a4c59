#!/usr/bin/env bash
# Rewrites tests/format/data/golden/*.out from the built tool (default build/tools/sledtrace).
# Run it only after checking by hand that a change in output is intended; the goldens are what
# tests/format/test_golden.c compares byte for byte. The command list must match the test's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:-$root/build/tools/sledtrace}
data=$root/tests/format/data
cd "$data" # the tools print the trace path as given: keep it relative

while IFS='|' read -r name args; do
    # shellcheck disable=SC2086 # args are split on purpose
    "$tool" $args >"golden/$name.out" 2>/dev/null
done <golden/commands.txt
# convert --format fdr writes a binary trace: its golden is the dump of the rewritten file
# (test_golden.c, convert_fdr_rewrites).
tmp=$(mktemp "${TMPDIR:-/tmp}/sledtrace-golden.XXXXXX")
trap 'rm -f "$tmp"' EXIT
for pair in real-mt:convert-fdr real-events:ev-convert-fdr; do
    "$tool" convert "${pair%%:*}.fdr" --format fdr -o "$tmp"
    "$tool" dump "$tmp" --syms "${pair%%:*}.syms" >"golden/${pair#*:}.out"
done
echo "updated $(($(wc -l <golden/commands.txt) + 2)) goldens in $data/golden"
