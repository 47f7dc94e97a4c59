#!/bin/sh
# The viewers tests: installs the pinned packages if needed (install.sh), then runs the test
# program. Usage: run.sh SRC_DIR DEST_DIR NPM PROGRAM [ARGS...]
set -eu
src=$1
dest=$2
npm=$3
shift 3
if ! "$src/install.sh" "$src" "$dest" "$npm"; then
    echo "viewers: npm ci into $dest failed (scripts/setup.sh installs it; the npm" \
        "registry must be reachable once)" >&2
    exit 1
fi
exec "$@"
