#!/bin/sh
# Style check: every C source and header of the project must be as .clang-format says.
# Usage: style.sh CLANG_FORMAT SOURCE_ROOT. Lists tracked files with git when the tree is a
# clone, else every .c/.h under the project's directories. Exit status: clang-format's.
set -eu
cf=$1
cd "$2"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.c' '*.h')
else
    files=$(find format patcher preload tools tests scripts -name '*.c' -o -name '*.h')
fi
# shellcheck disable=SC2086 # one file name per word
"$cf" --dry-run --Werror $files
echo "style: $(echo "$files" | wc -l) files match .clang-format"
