#!/bin/sh
# Installs the node packages package-lock.json pins (the trace importer the viewers-devtools test
# loads the Chrome JSON with, the browser driver of the viewers-chromium and viewers-graph-size
# tests) into DEST/node_modules with `npm ci`, unless DEST already holds exactly that lockfile's
# install. Needs the npm registry the first time, then nothing. The tests call this at once: a
# lock on DEST/.npm-ci.lock (flock, util-linux) lets one install while the others wait.
# Usage: install.sh SRC_DIR DEST_DIR [NPM]   (SRC_DIR: this directory, tests/viewers)
set -eu
src=$1
dest=$2
npm=${3:-npm}
mkdir -p "$dest"
exec 9>"$dest/.npm-ci.lock"
flock 9
stamp=$dest/node_modules/.sledtrace-package-lock.json
if [ -f "$stamp" ] && cmp -s "$src/package-lock.json" "$stamp"; then
    exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dest/"
(cd "$dest" && "$npm" ci --no-audit --no-fund --ignore-scripts --loglevel=error </dev/null)
cp "$src/package-lock.json" "$stamp"
