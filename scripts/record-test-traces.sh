#!/usr/bin/env bash
# Records the two small real traces the format tests read, with the runtime itself (not
# crafted), and writes them to tests/format/data/:
#   real-events.fdr / .syms  tests/format/data/src/realev.cpp, default (lossless) policy: an
#                            exception and a longjmp through instrumented frames (entries
#                            without exits, repaired by the tools), tail calls, a signal
#                            handler, custom and typed events, C++ names, a second thread
#   real-lossy.fdr / .syms   tests/format/data/src/reallossy.c, SLEDTRACE_POLICY=discard with
#                            two 4 KiB chunks, pinned to one CPU so that the flush thread cannot
#                            free a chunk during the burst: the trace holds a loss marker
# Each program is compiled with ${CLANG:-clang} / ${CLANGXX:-clang++} -O2 -g0 and the XRay flags
# of scripts/lib.sh (no XRay runtime linked), run once under LD_PRELOAD, and its trace copied.
# The sidecar's object line ("o<TAB>0<TAB>0xbias<TAB>/abs/path") is rewritten to the
# program's base name, so the checked-in files do not name a temporary directory.
#
# Run by hand, once, when the traces must be re-recorded (then check and commit them, and
# rewrite any goldens made from them). CI does not run it: thread interleaving, timestamps,
# CPU numbers and the number of lost events differ from run to run, so every recording differs.
#
# Usage: scripts/record-test-traces.sh [BUILD_DIR]   (default: build; relative to the repository
# root). Needs the runtime and the tool built in BUILD_DIR, clang, clang++ and taskset.
set -euo pipefail

cd "$(dirname "$0")/.."
source scripts/lib.sh

CLANGXX=${CLANGXX:-clang++}
root=$PWD
build=${1:-build}
[[ $build == /* ]] || build=$root/$build
preload=$build/preload/libsledtrace.so
tool=$build/tools/sledtrace
src=$root/tests/format/data/src
data=$root/tests/format/data

for f in "$preload" "$tool"; do
    if [[ ! -e $f ]]; then
        echo "record: $f was not built" >&2
        exit 1
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

nodeps=$(xray_no_link_deps_flag)
nodepsxx=$(CLANG=$CLANGXX xray_no_link_deps_flag)

echo "record: $CLANGXX -O2 -g0 ${XRAY_CFLAGS[*]} $nodepsxx -pthread realev.cpp"
"$CLANGXX" -O2 -g0 "${XRAY_CFLAGS[@]}" "$nodepsxx" -pthread "$src/realev.cpp" -o "$work/realev"
echo "record: $CLANG -O2 -g0 ${XRAY_CFLAGS[*]} $nodeps reallossy.c"
"$CLANG" -O2 -g0 "${XRAY_CFLAGS[@]}" "$nodeps" "$src/reallossy.c" -o "$work/reallossy"

# run NAME OUTDIR [VAR=VALUE...] [-- PREFIX...]: runs $work/NAME under the runtime with the
# variables given (and an optional command prefix), and prints the path of the one trace.
run() {
    local name=$1 out=$2
    shift 2
    local -a vars=() prefix=()
    while (($#)) && [[ $1 != -- ]]; do
        vars+=("$1")
        shift
    done
    if (($#)); then
        shift
        prefix=("$@")
    fi
    rm -rf "$out"
    mkdir -p "$out"
    "${prefix[@]}" env LD_PRELOAD="$preload" SLEDTRACE_OUTPUT="$out" "${vars[@]}" \
        "$work/$name" >&2
    local -a traces=("$out"/sledtrace."$name".*.fdr)
    if [[ ${#traces[@]} -ne 1 || ! -f ${traces[0]} ]]; then
        echo "record: expected one trace in $out, found: ${traces[*]}" >&2
        return 1
    fi
    printf '%s\n' "${traces[0]}"
}

# install_trace TRACE NAME OBJNAME: copies TRACE and its sidecar to $data/NAME.fdr / .syms, with the
# object path of the sidecar's "o" lines replaced by OBJNAME, and checks the copy.
install_trace() {
    local trace=$1 name=$2 obj=$3
    cp "$trace" "$data/$name.fdr"
    awk -v obj="$obj" 'BEGIN { FS = OFS = "\t" } $1 == "o" && NF >= 4 { $4 = obj } { print }' \
        "${trace%.fdr}.syms" >"$data/$name.syms"
    "$tool" dump --verify "$data/$name.fdr" >/dev/null
    echo "record: tests/format/data/$name.fdr ($(stat -c %s "$data/$name.fdr") bytes) and .syms"
}

# drops TRACE: the events the trace's loss markers count (0 if none).
drops() {
    "$tool" info "$1" | awk '$1 == "drops:" { print $2; found = 1 } END { if (!found) print 0 }'
}

trace=$(run realev "$work/ev")
install_trace "$trace" real-events realev

# Losses depend on scheduling: pinned to one CPU, the flush thread runs only once the burst is
# over (main sleeps), so the burst overflows both chunks. Retry a few times in case it did not.
for attempt in 1 2 3 4 5; do
    trace=$(run reallossy "$work/lossy" SLEDTRACE_POLICY=discard SLEDTRACE_BUFFER_KB=4 \
        SLEDTRACE_BUFFERS=2 SLEDTRACE_FLUSH_MS=60000 -- taskset -c 0)
    n=$(drops "$trace")
    if [[ $n -gt 0 ]]; then
        break
    fi
    echo "record: attempt $attempt of reallossy dropped nothing" >&2
    if [[ $attempt -eq 5 ]]; then
        echo "record: reallossy never lost an event; real-lossy not written" >&2
        exit 1
    fi
done
install_trace "$trace" real-lossy reallossy
echo "record: real-lossy drops $n events"
