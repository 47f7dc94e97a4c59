#!/usr/bin/env bash
# Build sledtrace (only the runtime and the sledtrace command, into build-demo/: see
# setup.sh --demo), compile the bundled sample with XRay sleds (and no XRay runtime),
# run it under the preloaded tracer and print the per-function account of the trace
# it wrote. Re-runnable: each run replaces the previous demo trace.
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/lib.sh

./scripts/setup.sh --demo

root=$PWD
demo_dir=$root/build-demo/demo
trace_dir=$demo_dir/traces
preload=$root/build-demo/preload/libsledtrace.so
tool=$root/build-demo/tools/sledtrace

for f in "$preload" "$tool"; do
    if [[ ! -e "$f" ]]; then
        echo "demo: $f was not built" >&2
        exit 1
    fi
done

nodeps=$(xray_no_link_deps_flag)
mkdir -p "$trace_dir"
# Only this run's trace should be left in the directory.
rm -f "$trace_dir"/sledtrace.sample.*.fdr "$trace_dir"/sledtrace.sample.*.syms

echo "demo: $CLANG -O2 ${XRAY_CFLAGS[*]} $nodeps -pthread scripts/sample/sample.c"
"$CLANG" -O2 "${XRAY_CFLAGS[@]}" "$nodeps" -pthread scripts/sample/sample.c \
    -o "$demo_dir/sample"

echo "demo: running build-demo/demo/sample under LD_PRELOAD=build-demo/preload/libsledtrace.so"
LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$trace_dir "$demo_dir/sample"

trace=$(find "$trace_dir" -maxdepth 1 -type f -name 'sledtrace.sample.*.fdr' \
    -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
if [[ -z "$trace" ]]; then
    echo "demo: no trace was written to $trace_dir" >&2
    exit 1
fi

echo "demo: trace ${trace#"$root"/}"
echo
"$tool" account "$trace"
