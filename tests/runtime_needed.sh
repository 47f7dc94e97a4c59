#!/bin/sh
# The runtime is loaded into every traced process: each library it needs is one more for every
# one of them to load, relocate and have its instrumentation map read. libc.so.6 only (the
# waits' cancellation cleanup once pulled libgcc_s.so.1 in, about 0.3 ms a process).
# Usage: runtime_needed.sh LIB
set -eu
needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
if [ "$needed" != "libc.so.6 " ]; then
    echo "libsledtrace.so needs: $needed(expected libc.so.6 alone)" >&2
    exit 1
fi
echo "libsledtrace.so needs libc.so.6 alone"
