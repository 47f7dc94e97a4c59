#!/bin/sh
# The version of a build: the project's (meson.build) when the source is not a git work tree (a
# tarball), else BASE+gitN.gHASH: N commits, HASH the commit's short hash, so that every build
# says which commit it is and a later commit's package orders after an earlier one's (issue 28.2:
# every build was 0.1.0, and apt kept an older one as "already the newest version").
# Usage: version.sh SOURCE_DIR BASE
src=$1
base=$2
if command -v git >/dev/null 2>&1 && git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    n=$(git -C "$src" rev-list --count HEAD 2>/dev/null)
    h=$(git -C "$src" rev-parse --short=9 HEAD 2>/dev/null)
    if [ -n "$n" ] && [ -n "$h" ]; then
        echo "$base+git$n.g$h"
        exit 0
    fi
fi
echo "$base"
