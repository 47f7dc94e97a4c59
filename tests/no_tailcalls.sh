#!/bin/sh
# The runtime's calls to the functions it exports itself (read, write, pthread_mutex_lock,
# syscall...) come back to its own wrappers, which tell the runtime's calls from the program's by
# their return address (preload/waits.c). A tail call (a jmp to the PLT) would hand them its
# caller's return address instead: libsledtrace.so must have none. Usage: no_tailcalls.sh LIB
set -eu
lib=$1
own=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" || $2 == "i" { print $3 }' | sort -u)
bad=$(objdump -d --no-show-raw-insn "$lib" |
    sed -n 's/^ *[0-9a-f]*:[[:space:]]*jmp[[:space:]].*<\([^@>]*\)@plt>.*/\1/p' | sort -u |
    while read -r f; do
        if printf '%s\n' "$own" | grep -qx "$f"; then echo "$f"; fi
    done)
if [ -n "$bad" ]; then
    echo "libsledtrace.so tail-calls functions it exports: $(echo $bad)" >&2
    exit 1
fi
echo "no tail call to the runtime's own exports ($(printf '%s\n' "$own" | wc -l) checked)"
