#!/usr/bin/env bash
# Build sledtrace (installing missing packages first, see setup.sh) and run the
# whole meson test suite. The exit status is meson test's.
set -euo pipefail

cd "$(dirname "$0")/.."

./scripts/setup.sh
exec meson test -C build --print-errorlogs </dev/null
