#!/usr/bin/env bash
# Start-up benchmark on a real program: xmllint, built from Debian 12's libxml2 source package.
#
# What it does:
#   1. Fetches the source of libxml2 from Debian 12 (bookworm) with `apt-get source`, using a
#      deb-src list, package lists and cache of its own under WORKDIR (/etc/apt is only read,
#      for the mirror's address), and builds xmllint with $CLANG -O2 and sleds. libxml2 is
#      linked in statically (--disable-shared), so every sled is in the executable. Three
#      builds: the one measured, with every function instrumented (-fxray-instruction-threshold=1,
#      as scripts/lib.sh's XRAY_CFLAGS) and no XRay runtime; the same linked with compiler-rt's
#      XRay runtime and scripts/bench/patch_timer.c (times __xray_patch()); and one with clang's
#      default threshold (200), only counted, to show what a user gets by default.
#      The programs are kept in WORKDIR/bin: a second run skips the fetch and the build.
#   2. Counts functions and sleds (the runtime's own info line, and `llvm-xray extract`) and the
#      instructions of the instrumented functions (objdump -d).
#   3. Runs `xmllint --noout tiny.xml` ROUNDS times in interleaved rounds: untraced, traced on a
#      "first run" (a fresh, empty XDG_CACHE_HOME each time) and traced on a "second run" (an
#      XDG_CACHE_HOME that a warm-up run has filled: ready for a per-user proof cache under
#      $XDG_CACHE_HOME/sledtrace). Reports medians of the runtime's "start-up took" line and its
#      phases, of the process's wall time (bash's EPOCHREALTIME around the run, fork and exec
#      included), of the peak RSS (/usr/bin/time -f %M, separate runs) and of compiler-rt's
#      __xray_patch(). Targets (issue 14.1): 15 ms on a first run, 5 ms on a second.
#
# Usage, from anywhere:  scripts/bench/realprog.sh [WORKDIR]   (default: build/bench-real in
# the repository). Environment: RUNTIME (default build/preload/libsledtrace.so of the
# repository), CLANG (default clang), ROUNDS (default 5).
#
# Needs: network access to a Debian mirror (the first time only), apt-get and dpkg-source
# (dpkg-dev), make, clang with XRay, llvm-xray and objdump for the counts, /usr/bin/time for
# the RSS. The mirror is the first bookworm one in /etc/apt/sources.list or
# /etc/apt/sources.list.d/*.{list,sources}, else DEBIAN_MIRROR (default http://deb.debian.org/debian).
#
# Takes about a minute the first time on 2 cores (the fetch a few seconds, configure and the
# three builds the rest), then about 5 s.
#
# It is a benchmark, not a test: a missed target is reported, never fatal. When it cannot
# measure (no network or no deb-src, a failed build, no runtime), it prints one line
# "real program start-up: not measured: WHY" on stdout, with details on stderr, and exits 0,
# so scripts/bench.sh carries on. Bad arguments exit 2.
set -euo pipefail

log() { printf 'realprog: %s\n' "$*" >&2; }
not_measured() {
    echo "real program start-up: not measured: $1"
    exit 0
}

PKG=libxml2
SUITE=bookworm
TARGET_FIRST_MS=15
TARGET_SECOND_MS=5
ROUNDS=${ROUNDS:-5}
if ! [[ "$ROUNDS" =~ ^[0-9]+$ ]] || ((ROUNDS < 1)); then
    log "ROUNDS must be a positive integer"
    exit 2
fi

# WORKDIR is taken relative to the caller's directory, the defaults to the repository's.
work=${1:-}
if [[ -n "$work" ]]; then
    mkdir -p "$work"
    work=$(cd "$work" && pwd)
fi
cd "$(dirname "$0")/../.."
root=$PWD
source scripts/lib.sh
work=${work:-$root/build/bench-real}
RUNTIME=${RUNTIME:-$root/build/preload/libsledtrace.so}
mkdir -p "$work/bin"
bin=$work/bin

# ---- fetch and build (skipped when the programs are already in WORKDIR/bin) -------------------

# Prints deb-src lines for every bookworm suite of the machine's Debian sources (one-line and
# deb822 formats), keeping the mirror address and keyring.
deb_src_lines() {
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$f" ]] || continue
        awk -v s="$SUITE" '$1 == "deb" {
            opt = ""; i = 2
            if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opt = opt " " $i; i++ } opt = opt " " $i; i++ }
            if ($(i + 1) ~ "^" s "(-|$)") print "deb-src" opt, $i, $(i + 1), "main"
        }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$f" ]] || continue
        # deb822: stanzas separated by blank lines; emit one line per URI and bookworm suite.
        awk -v s="$SUITE" '
            function flush(   i, j, nu, ns, u, su, opt) {
                if (types ~ /(^| )deb( |$)/ && uris != "") {
                    opt = (key != "") ? " [signed-by=" key "]" : ""
                    nu = split(uris, u, " "); ns = split(suites, su, " ")
                    for (i = 1; i <= nu; i++)
                        for (j = 1; j <= ns; j++)
                            if (su[j] ~ "^" s "(-|$)") print "deb-src" opt, u[i], su[j], "main"
                }
                types = uris = suites = key = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            { v = $0; sub(/^[^:]*:[ \t]*/, "", v) }
            /^Types:/ { types = v } /^URIs:/ { uris = v } /^Suites:/ { suites = v }
            /^Signed-By:/ { key = v }
            END { flush() }' "$f"
    done
}

fetch_source() {
    local opts lines
    lines=$(deb_src_lines | sort -u)
    if [[ -z "$lines" ]]; then
        lines="deb-src ${DEBIAN_MIRROR:-http://deb.debian.org/debian} $SUITE main"
    fi
    printf '%s\n' "$lines" >"$work/sources.list"
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
    rm -rf "$work/src"
    mkdir -p "$work/src"
    opts=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
    # as root, apt would download as _apt, which may not be able to write into WORKDIR
    (($(id -u) == 0)) && opts+=(-o APT::Sandbox::User=root)
    apt-get "${opts[@]}" update || return 1
    (cd "$work/src" && apt-get "${opts[@]}" source "$PKG") || return 1
}

# Configure libxml2 once, then build xmllint with the flags given after the output name.
# Automake's regeneration rules are neutralised by touching the generated files (the Debian
# patches touch Makefile.am only for tests and documentation).
build_xmllint() {
    local out=$1
    shift
    (cd "$srcdir" && make clean >/dev/null && make -j"$(nproc)" xmllint CFLAGS="-O2 $*") || return 1
    cp "$srcdir/xmllint" "$out"
}

build_all() {
    local nodeps
    srcdir=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name "$PKG-*" | head -1)
    [[ -n "$srcdir" ]] || return 1
    nodeps=$(xray_no_link_deps_flag) || return 1
    (cd "$srcdir" && touch aclocal.m4 && sleep 1 && find . -name Makefile.in -exec touch {} + &&
        touch configure config.h.in) || return 1
    # static libxml2, no optional dependencies (zlib, lzma, ICU, Python)
    (cd "$srcdir" && ./configure -q CC="$CLANG" CFLAGS="-O2" --disable-shared --enable-static \
        --without-python --without-lzma --without-zlib --without-icu) || return 1
    build_xmllint "$bin/xmllint-default" -fxray-instrument "$nodeps" || return 1
    build_xmllint "$bin/xmllint" "${XRAY_CFLAGS[@]}" "$nodeps" || return 1
    # the same objects, relinked with compiler-rt's XRay runtime and the __xray_patch() timer
    (cd "$srcdir" && "$CLANG" -O2 "${XRAY_CFLAGS[@]}" xmllint.o "$root/scripts/bench/patch_timer.c" \
        .libs/libxml2.a -lm -o "$bin/xmllint-xray") || return 1
}

if [[ ! -x "$bin/xmllint" || ! -x "$bin/xmllint-xray" || ! -x "$bin/xmllint-default" ]]; then
    for t in apt-get dpkg-source make "$CLANG"; do
        command -v "$t" >/dev/null || not_measured "$t is not installed"
    done
    log "fetching $PKG from Debian $SUITE into $work/src (log: $work/fetch.log)"
    t0=$EPOCHREALTIME
    if ! fetch_source >"$work/fetch.log" 2>&1; then
        tail -5 "$work/fetch.log" >&2
        not_measured "apt-get source $PKG failed (no network or no deb-src?), see $work/fetch.log"
    fi
    t1=$EPOCHREALTIME
    log "building xmllint three times with $CLANG (log: $work/build.log)"
    if ! build_all >"$work/build.log" 2>&1; then
        tail -5 "$work/build.log" >&2
        rm -f "$bin/xmllint" "$bin/xmllint-xray" "$bin/xmllint-default"
        not_measured "building xmllint failed, see $work/build.log"
    fi
    t2=$EPOCHREALTIME
    version=$(find "$work/src" -maxdepth 1 -name "${PKG}_*.dsc" | sed 's/.*_\(.*\)\.dsc$/\1/' | head -1)
    awk -v a="$t0" -v b="$t1" -v c="$t2" -v v="$version" \
        'BEGIN { printf "version=%s\nfetch_s=%.1f\nbuild_s=%.1f\n", v, b - a, c - b }' >"$bin/info"
fi
version=$(sed -n 's/^version=//p' "$bin/info" 2>/dev/null || true)
fetch_s=$(sed -n 's/^fetch_s=//p' "$bin/info" 2>/dev/null || true)
build_s=$(sed -n 's/^build_s=//p' "$bin/info" 2>/dev/null || true)

[[ -e "$RUNTIME" ]] || not_measured "no runtime at $RUNTIME (build it: meson setup build && ninja -C build)"

# ---- counts ------------------------------------------------------------------------------
# Prints "functions sleds" of a binary's instrumentation map, or "- -".
map_counts() {
    local m
    m=$(llvm-xray extract "$1" 2>/dev/null) || {
        echo "- -"
        return
    }
    printf '%s %s\n' "$(grep -c 'kind: function-enter' <<<"$m" || true)" "$(grep -c 'kind:' <<<"$m" || true)"
}
# Instructions in the functions that have sleds: objdump -d blocks whose start address is a
# function address of the map.
instr_count() {
    { llvm-xray extract "$1" 2>/dev/null | grep 'kind: function-enter' |
        sed 's/.*function: 0x\([0-9A-Fa-f]*\).*/F \1/'
      objdump -d --no-show-raw-insn "$1"; } | awk '
        function norm(a) { a = tolower(a); sub(/^0+/, "", a); return a }
        $1 == "F" { fn[norm($2)] = 1; next }
        /^[0-9a-f]+ <.*>:$/ { inside = (norm($1) in fn); next }
        /^ *[0-9a-f]+:\t/ { if (inside) n++; all++ }
        END { printf "%d %d\n", n, all }'
}
read -r map_fn map_sleds < <(map_counts "$bin/xmllint")
read -r def_fn def_sleds < <(map_counts "$bin/xmllint-default")
read -r instr instr_all < <(instr_count "$bin/xmllint" 2>/dev/null || echo "- -")
read -r def_instr _ < <(instr_count "$bin/xmllint-default" 2>/dev/null || echo "- -")

# ---- runs ----------------------------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sledtrace-realprog.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '<?xml version="1.0"?>\n<doc><item n="1">one</item><item n="2">two</item></doc>\n' >"$tmp/tiny.xml"
args=(--noout "$tmp/tiny.xml")
med() { printf '%s\n' "$@" | sort -g | awk 'NF { a[++n] = $1 } END { if (n) print a[int((n + 1) / 2)]; else print "-" }'; }
now_us() { local t=${EPOCHREALTIME/[.,]/}; echo "$t"; }

declare -A phase=() # "case|phase name" -> the values, space-separated
phase_names=()
info_line=""
wall_plain=() wall_first=() wall_second=() first=() second=() rss_plain=() rss_traced=() cr=()
failed=""

# Record the runtime's start-up line of one traced run, for case $1, from file $2.
take_startup() {
    local c=$1 line rest item name value
    line=$(grep -m1 'start-up took' "$2" || true)
    if ! [[ $line =~ took\ ([0-9.]+)\ ms(:\ (.*))? ]]; then
        failed="no start-up line from the runtime: $(head -c 300 "$2")"
        return
    fi
    if [[ $c == first ]]; then first+=("${BASH_REMATCH[1]}"); else second+=("${BASH_REMATCH[1]}"); fi
    rest=${BASH_REMATCH[3]}
    IFS=',' read -ra items <<<"$rest"
    for item in "${items[@]}"; do
        item=${item# }
        [[ $item =~ ^(.*[^ ])\ +([0-9.]+)$ ]] || continue
        name=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
        [[ -v "phase[first|$name]" || -v "phase[second|$name]" ]] || phase_names+=("$name")
        phase[$c|$name]+="$value "
    done
    [[ -n "$info_line" ]] || info_line=$(grep -m1 ' functions (' "$2" || true)
}

# One traced run: case $1 (first or second), XDG_CACHE_HOME $2.
run_traced() {
    local t0 t1
    rm -rf "$tmp/out"
    t0=$(now_us)
    XDG_CACHE_HOME=$2 SLEDTRACE_LOG=info SLEDTRACE_OUTPUT=$tmp/out LD_PRELOAD=$RUNTIME \
        "$bin/xmllint" "${args[@]}" >/dev/null 2>"$tmp/err" || failed="traced xmllint failed: $(head -c 300 "$tmp/err")"
    t1=$(now_us)
    if [[ $1 == first ]]; then wall_first+=("$((t1 - t0))"); else wall_second+=("$((t1 - t0))"); fi
    take_startup "$1" "$tmp/err"
}

run_plain() {
    local t0 t1
    t0=$(now_us)
    "$bin/xmllint" "${args[@]}" >/dev/null 2>&1 || failed="xmllint failed"
    t1=$(now_us)
    wall_plain+=("$((t1 - t0))")
}

# Peak RSS in KiB of one run, untraced ($1 = plain) or traced on a second run ($1 = traced).
run_rss() {
    local pre=()
    [[ $1 == traced ]] && pre=(LD_PRELOAD="$RUNTIME" XDG_CACHE_HOME="$tmp/warm" SLEDTRACE_OUTPUT="$tmp/out")
    rm -rf "$tmp/out"
    /usr/bin/time -f %M -o "$tmp/rss" env "${pre[@]}" "$bin/xmllint" "${args[@]}" >/dev/null 2>&1 || return 0
    if [[ $1 == traced ]]; then rss_traced+=("$(tail -1 "$tmp/rss")"); else rss_plain+=("$(tail -1 "$tmp/rss")"); fi
}

log "running xmllint ${args[*]}: $ROUNDS interleaved rounds"
# the warm-up run that fills the second runs' cache
mkdir -p "$tmp/warm"
XDG_CACHE_HOME=$tmp/warm SLEDTRACE_OUTPUT=$tmp/out LD_PRELOAD=$RUNTIME "$bin/xmllint" "${args[@]}" \
    >/dev/null 2>&1 || true
for ((i = 0; i < ROUNDS; i++)); do
    # rotate the order of the three runs by one each round
    order=(plain first second plain first)
    for ((k = i % 3; k < i % 3 + 3; k++)); do
        case ${order[k]} in
        plain) run_plain ;;
        first)
            rm -rf "$tmp/cold" && mkdir "$tmp/cold"
            run_traced first "$tmp/cold"
            ;;
        second) run_traced second "$tmp/warm" ;;
        esac
    done
    if [[ -x /usr/bin/time ]]; then
        run_rss plain
        run_rss traced
    fi
    line=$("$bin/xmllint-xray" "${args[@]}" 2>&1 >/dev/null | grep 'xray_patch:' || true)
    [[ $line =~ xray_patch:\ ([0-9.]+)\ ms ]] && cr+=("${BASH_REMATCH[1]}")
done
[[ -z "$failed" ]] || log "warning: $failed"
log "start-up, every run (ms): first ${first[*]}; second ${second[*]}"
((${#first[@]})) || not_measured "the traced runs gave no start-up figure ($failed)"

# ---- report --------------------------------------------------------------------------------
# scale() VALUE DIVISOR: VALUE / DIVISOR with one decimal, or "-"
scale() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "-") print "-"; else printf "%.1f\n", v / d }'; }
verdict() { awk -v v="$1" -v l="$2" 'BEGIN { print (v == "-") ? "n/a" : (v <= l) ? "met" : "MISSED" }'; }
first_med=$(med "${first[@]}")
second_med=$(med "${second[@]}")
echo
echo "start-up of a real program: xmllint ${args[0]} tiny.xml, $PKG ${version:-?} from Debian $SUITE,"
echo "libxml2 linked statically, -O2 -fxray-instruction-threshold=1 (medians of $ROUNDS runs):"
printf '  %-52s %8s\n' "functions / sleds (llvm-xray extract)" "$map_fn / $map_sleds"
[[ -n "$info_line" ]] && printf '  %-52s\n' "runtime: ${info_line#*: info: *: }"
printf '  %-52s %8s\n' "instructions in instrumented functions (objdump)" "$instr"
printf '  %-52s %8s\n' "instructions in the whole executable" "$instr_all"
printf '  %-52s %8s\n' "default threshold (200): functions / sleds" "$def_fn / $def_sleds"
printf '  %-52s %8s\n' "default threshold (200): their instructions" "$def_instr"
[[ -n "$build_s" ]] && printf '  %-52s %8s s\n' "fetch / three builds (first run of this script)" "$fetch_s / $build_s"
printf '  %-52s %8s ms\n' "sledtrace start-up, first run (empty cache)" "$first_med"
for name in "${phase_names[@]}"; do
    read -ra v <<<"${phase[first|$name]:-}"
    printf '  %-52s %8s ms\n' "  $name" "$(med "${v[@]}")"
done
printf '  %-52s %8s ms\n' "sledtrace start-up, second run (filled cache)" "$second_med"
for name in "${phase_names[@]}"; do
    read -ra v <<<"${phase[second|$name]:-}"
    printf '  %-52s %8s ms\n' "  $name" "$(med "${v[@]}")"
done
printf '  %-52s %8s ms\n' "compiler-rt: __xray_patch() alone" "$(med "${cr[@]}")"
printf '  %-52s %8s ms\n' "wall time, untraced" "$(scale "$(med "${wall_plain[@]}")" 1000)"
printf '  %-52s %8s ms\n' "wall time, traced, first run" "$(scale "$(med "${wall_first[@]}")" 1000)"
printf '  %-52s %8s ms\n' "wall time, traced, second run" "$(scale "$(med "${wall_second[@]}")" 1000)"
printf '  %-52s %8s MiB\n' "peak RSS, untraced" "$(scale "$(med "${rss_plain[@]}")" 1024)"
printf '  %-52s %8s MiB\n' "peak RSS, traced (second run)" "$(scale "$(med "${rss_traced[@]}")" 1024)"
printf '  %-36s %8s  (target <= %s ms)  %s\n' "real program start-up, first run" "$first_med" \
    "$TARGET_FIRST_MS" "$(verdict "$first_med" "$TARGET_FIRST_MS")"
printf '  %-36s %8s  (target <= %s ms)  %s\n' "real program start-up, second run" "$second_med" \
    "$TARGET_SECOND_MS" "$(verdict "$second_med" "$TARGET_SECOND_MS")"
