#!/usr/bin/env bash
# Build sledtrace (installing missing packages first, see setup.sh) and run the
# whole meson test suite. Prints each suite's Criterion synthesis and a closing
# "N passed, M failed" line. The exit status is meson test's.
set -euo pipefail

cd "$(dirname "$0")/.."

./scripts/setup.sh
status=0
meson test -C build --print-errorlogs </dev/null || status=$?

log=build/meson-logs/testlog.txt
if [[ -f "$log" ]]; then
    echo
    echo "Criterion, per suite:"
    grep -h 'Synthesis:' "$log" || true
    # Tested = Passing + Failing + Crashing; a crash counts as a failure.
    grep -h 'Synthesis:' "$log" | awk -F'[:|]' '
        { for (i = 1; i < NF; i++) {
              if ($i ~ /Passing/) p += $(i + 1)
              if ($i ~ /Failing/ || $i ~ /Crashing/) f += $(i + 1)
          } }
        END { printf "\ntests: %d passed, %d failed\n", p, f }'
fi
exit "$status"
