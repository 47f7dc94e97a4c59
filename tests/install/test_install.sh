#!/usr/bin/env bash
# The installed sledtrace works: `meson install --destdir` from the build directory under test
# (no rebuild), then, from the staged tree only, with the configured prefix and libdir:
#   - `sledtrace --version`;
#   - `sledtrace run` finds the staged runtime (relative to its own executable: the configured
#     bindir -> libdir/sledtrace) and the trace it writes of an instrumented fib(12) has exactly
#     the calls the program counts, by the staged `sledtrace account`.
# Output: TAP, one line per check. Run by meson (tests/install/meson.build), which sets:
#   MESON BUILD_ROOT SOURCE_ROOT PREFIX BINDIR LIBDIR VERSION FIB
set -uo pipefail
# meson points LD_LIBRARY_PATH at the build tree's libraries: nothing here may use them.
unset LD_LIBRARY_PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sledtrace-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
failed=0
ok() {
    n=$((n + 1))
    printf 'ok %d - %s\n' "$n" "$1"
}
not_ok() {
    n=$((n + 1))
    failed=$((failed + 1))
    printf 'not ok %d - %s\n' "$n" "$1"
    shift
    local line
    for line in "$@"; do
        printf '%s\n' "$line" | sed 's/^/# /'
    done
}
# check DESCRIPTION COMMAND...: ok when COMMAND succeeds; else its output as diagnostics.
check() {
    local desc=$1 out
    shift
    if out=$("$@" 2>&1); then
        ok "$desc"
    else
        not_ok "$desc" "$out"
    fi
}
# same DESCRIPTION WANT GOT
same() {
    if [[ "$2" == "$3" ]]; then
        ok "$1"
    else
        not_ok "$1" "expected: $2" "got: $3"
    fi
}

# fib_count CSV: the count column of function fib in `sledtrace account --format csv`.
fib_count() {
    awk -F, 'NR > 1 && $1 == "fib" { print $3 }' "$1"
}

# check_tree NAME ROOT BINDIR LIBDIR: the checks above on the tree staged in ROOT, whose files
# were configured for the absolute directories BINDIR and LIBDIR.
check_tree() {
    local name=$1 root=$2 bindir=$3 libdir=$4
    local tool=$root$bindir/sledtrace out
    local work=$tmp/$name
    mkdir -p "$work"

    same "$name: sledtrace --version" "sledtrace $VERSION" "$("$tool" --version 2>&1)"

    # The runtime `run` preloads is the staged one (not a build tree's, nor one installed on this
    # machine at the configured path): env prints the LD_PRELOAD it was given.
    out=$("$tool" run -o "$work/env" -- env 2>&1)
    same "$name: run preloads the staged runtime" \
        "LD_PRELOAD=$(realpath "$root$libdir/sledtrace/libsledtrace.so")" \
        "$(printf '%s\n' "$out" | grep '^LD_PRELOAD=')"

    if ! out=$("$tool" run -o "$work/traces" -- "$FIB" 12 2>&1); then
        not_ok "$name: run -- fib 12" "$out"
        return
    fi
    local want trace
    want=$(printf '%s\n' "$out" | awk '$1 == "count" && $2 == "fib" { print $3 }')
    trace=$(find "$work/traces" -name '*.fdr' | head -n 1)
    if [[ -z "$trace" || -z "$want" ]]; then
        not_ok "$name: run -- fib 12 writes a trace" "$out"
        return
    fi
    ok "$name: run -- fib 12 writes a trace"
    "$tool" account --format csv "$trace" >"$work/account.csv" 2>"$work/account.err"
    same "$name: account counts every fib call" "$want" "$(fib_count "$work/account.csv")"
}

# ---- meson install --destdir from the build directory under test ------------------------------
stage=$tmp/stage
if ! out=$("$MESON" install -C "$BUILD_ROOT" --no-rebuild --destdir "$stage" 2>&1); then
    not_ok "meson install --destdir" "$out"
    echo "1..$n"
    exit 1
fi
ok "meson install --destdir"
check_tree meson "$stage" "$BINDIR" "$LIBDIR"

echo "1..$n"
((failed == 0))
