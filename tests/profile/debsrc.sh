#!/usr/bin/env bash
# Real programs for the perf comparison (tests/profile, scripts/bench/profile.sh), from Debian
# 12's source packages, each built twice with clang at -O2: PROG-xray with sleds on every
# function (-fxray-instrument -fxray-instruction-threshold=1 and no XRay runtime) and PROG-plain
# without XRay, the same flags otherwise.
#   sqlite3  sqlite3 3.40.1: the package ships the canonical sources, not the amalgamation, so
#            `configure && make sqlite3.c shell.c` (tclsh) makes it; the shell is built from
#            sqlite3.c and shell.c, single-threaded (SQLITE_THREADSAFE=0) without extension
#            loading.
#   ninja    ninja-build 1.11.1 (C++): its src/*.cc but the tests, the benchmarks, the Windows
#            files, the browse tool (which needs a generated header) and the re2c inputs.
#
# Usage: debsrc.sh sqlite3|ninja CACHE
# Builds CACHE/PROG-plain and CACHE/PROG-xray unless both are there, built with the same flags
# (CACHE/PROG.flags), so that only the first run fetches and compiles. The source is fetched with
# `apt-get source` through a deb-src list of its own (the bookworm suites of the machine's
# Debian sources, from `apt-get indextargets`; else DEBIAN_MIRROR, default
# http://deb.debian.org/debian) with package lists under CACHE/apt, removed afterwards; it stays
# in CACHE/src. Environment: CLANG (default clang), CLANGXX (default clang++), XRAY_NOLINK (the
# spelling of "no XRay runtime"; default: the one CLANG accepts).
# Needs apt-get and dpkg-source (dpkg-dev), and for sqlite3 make and tclsh (tcl).
# Exit status 0 when both builds are there; else 1 with one line "PROG: not built: WHY" on
# stdout and the details in CACHE/PROG.log.
set -uo pipefail

prog=${1:-}
cache=${2:-}
case $prog in
sqlite3) pkg=sqlite3 ;;
ninja) pkg=ninja-build ;;
*)
    echo "usage: debsrc.sh sqlite3|ninja CACHE" >&2
    exit 2
    ;;
esac
[[ -n $cache ]] || {
    echo "usage: debsrc.sh sqlite3|ninja CACHE" >&2
    exit 2
}
mkdir -p "$cache" || exit 1
cache=$(cd "$cache" && pwd)
log=$cache/$prog.log
CLANG=${CLANG:-clang}
CLANGXX=${CLANGXX:-clang++}
SUITE=bookworm

fail() {
    echo "$prog: not built: $1"
    exit 1
}

if [[ -z ${XRAY_NOLINK:-} ]]; then
    for f in -fnoxray-link-deps -fno-xray-link-deps; do
        if "$CLANG" -fxray-instrument "$f" -x c -c /dev/null -o /dev/null 2>/dev/null; then
            XRAY_NOLINK=$f
            break
        fi
    done
    [[ -n ${XRAY_NOLINK:-} ]] || fail "$CLANG accepts neither -fnoxray-link-deps nor -fno-xray-link-deps"
fi
xray_flags=(-fxray-instrument -fxray-instruction-threshold=1 "$XRAY_NOLINK")

case $prog in
sqlite3)
    cc=$CLANG
    flags=(-O2 -w -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION)
    ;;
ninja)
    cc=$CLANGXX
    flags=(-O2 -w -std=c++11 -fno-rtti -fno-exceptions -DUSE_PPOLL -D_FILE_OFFSET_BITS=64
        '-DNINJA_PYTHON="python3"')
    ;;
esac
stamp="$("$cc" --version | head -1) ${flags[*]} | ${xray_flags[*]}"
if [[ -x $cache/$prog-plain && -x $cache/$prog-xray && -f $cache/$prog.flags &&
    $(cat "$cache/$prog.flags") == "$stamp" ]]; then
    exit 0
fi
rm -f "$cache/$prog-plain" "$cache/$prog-xray" "$cache/$prog.flags"
: >"$log"

# ---- fetch (once: the source stays in CACHE/src/PROG) ------------------------------------------
srcdir=$cache/src/$prog
if [[ ! -f $srcdir/.fetched ]]; then
    if ! command -v apt-get >/dev/null || ! command -v dpkg-source >/dev/null; then
        fail "apt-get and dpkg-source (dpkg-dev) are needed to fetch the source"
    fi
    apt=$cache/apt
    rm -rf "$apt" "$cache/src/$prog" "$cache/src/$prog.dl"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$cache/src/$prog.dl"
    # shellcheck disable=SC2016 # apt's own $(FIELD) syntax
    apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
        awk -v s="$SUITE" '$2 ~ "^" s "(-|$)" { print "deb-src", $1, $2, "main" }' |
        sort -u >"$apt/sources.list"
    [[ -s $apt/sources.list ]] ||
        echo "deb-src ${DEBIAN_MIRROR:-http://deb.debian.org/debian} $SUITE main" >"$apt/sources.list"
    opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache")
    # as root, apt would download as _apt, which may not be able to write here
    (($(id -u) == 0)) && opts+=(-o APT::Sandbox::User=root)
    ok=1
    apt-get "${opts[@]}" update >>"$log" 2>&1 || ok=0
    if ((ok)); then
        (cd "$cache/src/$prog.dl" && apt-get "${opts[@]}" source --download-only "$pkg") \
            >>"$log" 2>&1 || ok=0
    fi
    rm -rf "$apt"
    ((ok)) || fail "apt-get source $pkg failed (no network, or no Debian mirror?): see $log"
    dsc=("$cache/src/$prog.dl"/*.dsc)
    dpkg-source -x "${dsc[0]}" "$srcdir" >>"$log" 2>&1 || fail "dpkg-source -x failed: see $log"
    basename "${dsc[0]}" >"$srcdir/.fetched"
    # dpkg-source leaves a link to the upstream tarball beside the tree
    rm -rf "$cache/src/$prog.dl" "$cache/src"/*.orig*.tar.*
fi

# ---- build -------------------------------------------------------------------------------------
case $prog in
sqlite3)
    command -v tclsh >/dev/null || fail "tclsh (Debian package tcl) is needed to make sqlite3.c"
    grep -qx '3.40.1' "$srcdir/VERSION" ||
        echo "debsrc: note: sqlite3 is $(cat "$srcdir/VERSION"), not 3.40.1" >&2
    bld=$srcdir/bld
    if [[ ! -f $bld/sqlite3.c || ! -f $bld/shell.c ]]; then
        mkdir -p "$bld"
        (cd "$bld" && CC=$CLANG ../configure --disable-tcl && make sqlite3.c shell.c) \
            >>"$log" 2>&1 || fail "making the amalgamation failed: see $log"
    fi
    srcs=("$bld/sqlite3.c" "$bld/shell.c")
    libs=(-lm)
    ;;
ninja)
    srcs=()
    for f in "$srcdir"/src/*.cc; do
        case ${f##*/} in
        *_test.cc | *_perftest.cc | *-win32.cc | browse.cc | hash_collision_bench.cc | test.cc | *.in.cc) ;;
        *) srcs+=("$f") ;;
        esac
    done
    libs=()
    ;;
esac
# the two builds side by side (two processors)
"$cc" "${flags[@]}" "${srcs[@]}" -o "$cache/$prog-plain" "${libs[@]}" >>"$log" 2>&1 &
p1=$!
"$cc" "${flags[@]}" "${xray_flags[@]}" "${srcs[@]}" -o "$cache/$prog-xray" "${libs[@]}" >>"$log" 2>&1 &
p2=$!
ok=1
wait $p1 || ok=0
wait $p2 || ok=0
((ok)) || fail "$cc failed: see $log"
echo "$stamp" >"$cache/$prog.flags"
