#!/usr/bin/env bash
# Build sledtrace (installing missing packages first, see setup.sh) and run the
# whole meson test suite. Prints each suite's Criterion synthesis, the checks of the TAP
# suites (install, viewers-chromium, order, top, profile, and python, whose
# pytest tests are listed as TAP lines by tests/python/conftest.py), and a closing "N passed, M
# failed" line over both. The exit status is meson test's.
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
    tap=$(grep -cE '^ok [0-9]+' "$log" || true)
    tap_failed=$(grep -cE '^not ok [0-9]+' "$log" || true)
    echo "TAP (install, viewers-chromium, order, top, profile, python):" \
        "$tap ok, $tap_failed not ok"
    # Tested = Passing + Failing + Crashing; a crash counts as a failure. Each check of a TAP
    # test (ok / not ok line) counts as one test.
    { grep -h 'Synthesis:' "$log"; grep -hE '^(not )?ok [0-9]+' "$log" || true; } | awk -F'[:|]' '
        /^ok [0-9]/ { p++; next }
        /^not ok [0-9]/ { f++; next }
        { for (i = 1; i < NF; i++) {
              if ($i ~ /Passing/) p += $(i + 1)
              if ($i ~ /Failing/ || $i ~ /Crashing/) f += $(i + 1)
          } }
        END { printf "\ntests: %d passed, %d failed\n", p, f }'
fi
exit "$status"
