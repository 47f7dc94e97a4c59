#!/usr/bin/env bash
# The installed sledtrace works: `meson install --destdir` from the build directory under test
# (no rebuild), then, from the staged tree only, with the configured prefix and libdir:
#   - `sledtrace --version`;
#   - `sledtrace run` finds the staged runtime (relative to its own executable: the configured
#     bindir -> libdir/sledtrace) and the trace it writes of an instrumented fib(12) has exactly
#     the calls the program counts, by the staged `sledtrace account`;
#   - pkg-config (PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR into the tree): sledtrace.pc names
#     the runtime's directory for the linker and the run path, and ctl.c, built with its flags
#     and with sleds, links the staged runtime, switches tracing off and on with
#     sledtrace_unpatch() and sledtrace_patch() and traces exactly the calls made while on;
#   - the trace reading library: libsledtrace-format.so.0 (its soname) exports exactly the
#     functions the installed sledtrace/stf.h declares, and readtrace.c, built with `cc` and
#     `pkg-config --cflags --libs sledtrace-format`, reads the fib trace: the fib calls the
#     program counted, and as many records as `sledtrace info` finds;
#   - the manual pages: `man -l` renders sledtrace(1) and libsledtrace(3) without a warning
#     (man --warnings, and groff -man -ww), sledtrace(1) names every command and every option
#     that each command's --help lists, and libsledtrace(3) every SLEDTRACE_ variable the
#     runtime reads (preload/*.c);
#   - the bash completion, installed where bash-completion looks: bash -n accepts it, and
#     sourced alone it completes the commands, every option of each command's --help, the
#     values of a few options, traces (*.fdr) as TRACE and any file after --syms;
#   - the Python module (when it is built, PYTHON set): the staged package, and not the build
#     tree's, imports with that Python and its calls() finds the fib calls the program counted.
# Then the same checks on the Debian package: scripts/package-deb.sh (its own build directory,
# DEB_BUILD, kept between runs; without lintian) makes the .deb, whose control file must name
# its dependencies and whose md5sums must match, and which is unpacked with dpkg-deb -x into a
# scratch root: the files are where Debian puts them (/usr, the multiarch libdir, compressed
# manual pages, copyright and changelog.gz) and everything above works from there.
# Output: TAP, one line per check. Run by meson (tests/install/meson.build), which sets:
#   MESON BUILD_ROOT SOURCE_ROOT BINDIR LIBDIR INCLUDEDIR MANDIR DATADIR BASE_VERSION FIB CC CLANG
#   XRAY_NOLINK DEB_BUILD, and PYTHON (empty when the Python module is not built)
set -uo pipefail
# meson points LD_LIBRARY_PATH at the build tree's libraries: nothing here may use them.
unset LD_LIBRARY_PATH
: "${MESON:?}" "${BUILD_ROOT:?}" "${SOURCE_ROOT:?}" "${BINDIR:?}" "${LIBDIR:?}" "${INCLUDEDIR:?}" \
    "${MANDIR:?}" "${DATADIR:?}" "${BASE_VERSION:?}" "${FIB:?}" "${CC:?}" "${CLANG:?}" "${XRAY_NOLINK:?}" \
    "${DEB_BUILD:?}"

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

# func_count NAME CSV: the count column of function NAME in `sledtrace account --format csv`.
func_count() {
    awk -F, -v f="$1" 'NR > 1 && $1 == f { print $3 }' "$2"
}

# pc ROOT LIBDIR ARGS...: pkg-config on the .pc files of the tree staged in ROOT.
pc() {
    local root=$1 libdir=$2
    shift 2
    PKG_CONFIG_PATH=$root$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root pkg-config "$@"
}

# check_format NAME ROOT LIBDIR INCLUDEDIR TOOL TRACE FIB_CALLS: the trace reading library.
check_format() {
    local name=$1 root=$2 libdir=$3 includedir=$4 tool=$5 trace=$6 want=$7 work=$tmp/$1 out
    local lib=$root$libdir/libsledtrace-format.so.0
    out=$(readelf -d "$lib" 2>&1 | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    same "$name: libsledtrace-format's soname" libsledtrace-format.so.0 "$out"
    local declared exported
    declared=$(grep -E '^[a-z]' "$root$includedir/sledtrace/stf.h" | grep -v '^static' |
        grep -oE '\bstf_[a-z0-9_]+\(' | tr -d '(' | sort -u)
    exported=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | sort -u)
    if [[ -n "$declared" && "$declared" == "$exported" ]]; then
        ok "$name: libsledtrace-format exports the $(wc -l <<<"$declared") functions of stf.h, only"
    else
        not_ok "$name: libsledtrace-format exports the functions of stf.h, only" \
            "$(diff <(echo "$declared") <(echo "$exported"))"
    fi
    local flags
    if ! flags=$(pc "$root" "$libdir" --cflags --libs sledtrace-format 2>&1); then
        not_ok "$name: pkg-config --cflags --libs sledtrace-format" "$flags"
        return
    fi
    # shellcheck disable=SC2086 # flags are split on purpose
    if ! out=$($CC -std=c11 -Wall -Wextra -Werror "$SOURCE_ROOT/tests/install/readtrace.c" \
        $flags -o "$work/readtrace" 2>&1); then
        not_ok "$name: a trace reader builds with pkg-config's flags" "$out"
        return
    fi
    ok "$name: a trace reader builds with pkg-config's flags"
    local records
    records=$("$tool" info "$trace" | awk '$1 == "records:" { print $2 }')
    out=$(LD_LIBRARY_PATH=$root$libdir "$work/readtrace" "$trace" fib 2>&1)
    same "$name: the trace reader, on the shared library, reads the fib trace" \
        "calls fib $want records $records " "$(tr '\n' ' ' <<<"$out")"
}

# check_python NAME ROOT TRACE FIB_CALLS: the staged Python package (found under ROOT, in a
# dist-packages or site-packages directory) imports and counts the fib calls of TRACE.
check_python() {
    local name=$1 root=$2 trace=$3 want=$4 init dir out
    [[ -n "${PYTHON:-}" ]] || return 0
    init=$(find "$root" -path '*-packages/sledtrace/__init__.py' | head -n 1)
    if [[ -z "$init" ]]; then
        not_ok "$name: the Python module is installed" "no */*-packages/sledtrace/__init__.py"
        return
    fi
    dir=$(dirname "$(dirname "$init")")
    out=$(cd "$tmp" && PYTHONPATH=$dir "$PYTHON" -c '
import sys, sledtrace
assert sledtrace.__file__.startswith(sys.argv[1]), sledtrace.__file__
with sledtrace.open(sys.argv[2]) as t:
    print(sum(1 for c in t.calls() if c.name == "fib"))' "$dir/" "$trace" 2>&1)
    same "$name: the installed Python module (${dir#"$root"}) reads the fib trace" "$want" "$out"
}

# The commands of `sledtrace --help`; help_options TOOL COMMAND: the options the command's --help
# lists, one per line (those that begin its indented option lines: "  -o, --output DIR ...").
# The build's version as scripts/version.sh makes it now (the commit may have moved since meson
# configured the tests): what --version and the package say.
VERSION=$("$SOURCE_ROOT/scripts/version.sh" "$SOURCE_ROOT" "$BASE_VERSION")
COMMANDS=(run live info dump account convert replay stack flamegraph graph diff order slowest top)
help_options() {
    "$1" "$2" --help 2>&1 | grep -E '^ +-' |
        sed -E 's/^ +//; s/^((-[a-z], )?--?[a-z][a-z-]*).*/\1/' | tr ',' '\n' | tr -d ' ' | sort -u
}

# check_man NAME TOOL PAGE1 PAGE3: the two manual pages (plain or gzipped).
check_man() {
    local name=$1 tool=$2 page1=$3 page3=$4 work=$tmp/$1 page text warn
    for page in "$page1" "$page3"; do
        if [[ ! -f "$page" ]]; then
            not_ok "$name: $(basename "$page") is installed" "no $page"
            continue
        fi
        text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>"$work/man.err")
        warn=$(cat "$work/man.err"; zcat -f "$page" | groff -man -ww -z 2>&1)
        if [[ -n "$text" && -z "$warn" ]]; then
            ok "$name: man -l renders $(basename "$page") without warnings"
        else
            not_ok "$name: man -l renders $(basename "$page") without warnings" "$warn"
        fi
    done
    [[ -f "$page1" && -f "$page3" ]] || return
    # Rendered text, with any hyphen the formatter might print as U+2010 made plain.
    text=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$page1" 2>&1 | sed 's/\xe2\x80\x90/-/g')
    local missing=() cmd opt
    for cmd in "${COMMANDS[@]}"; do
        grep -qE "^   $cmd( |$)" <<<"$text" || missing+=("command $cmd")
        for opt in $(help_options "$tool" "$cmd"); do
            [[ $opt == --help ]] && continue
            grep -qE -- "(^|[^a-z-])$opt([^a-z-]|$)" <<<"$text" || missing+=("$cmd $opt")
        done
    done
    if ((${#missing[@]} == 0)); then
        ok "$name: sledtrace(1) describes every command and option of the --help texts"
    else
        not_ok "$name: sledtrace(1) describes every command and option of the --help texts" \
            "missing: ${missing[*]}"
    fi
    text=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$page3" 2>&1)
    missing=()
    for opt in $(grep -ohE '"SLEDTRACE_[A-Z_]+"' "$SOURCE_ROOT"/preload/*.c | tr -d '"' | sort -u); do
        grep -qE "^       $opt\$" <<<"$text" || missing+=("$opt")
    done
    if ((${#missing[@]} == 0)); then
        ok "$name: libsledtrace(3) describes every variable the runtime reads"
    else
        not_ok "$name: libsledtrace(3) describes every variable the runtime reads" \
            "missing: ${missing[*]}"
    fi
    # Every command `sledtrace --help` lists is in sledtrace(1)'s SYNOPSIS and the README's
    # Commands block, and COMMANDS (above) is that list (issue 28.5: diff, order, top were not).
    local listed synopsis readme
    listed=$("$tool" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' | sort -u | tr '\n' ' ')
    text=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$page1" 2>&1)
    synopsis=$(sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' <<<"$text")
    readme=$(sed -n '/^### Commands/,/^| command/p' "$SOURCE_ROOT/README.md")
    missing=()
    for cmd in $listed; do
        grep -qE "^ +sledtrace $cmd( |$)" <<<"$synopsis" || missing+=("SYNOPSIS:$cmd")
        grep -qE "^sledtrace $cmd( |$)" <<<"$readme" || missing+=("README:$cmd")
    done
    [[ "$listed" == "$(printf '%s\n' "${COMMANDS[@]}" | sort | tr '\n' ' ')" ]] ||
        missing+=("--help lists: $listed")
    if ((${#missing[@]} == 0)); then
        ok "$name: sledtrace(1)'s SYNOPSIS and README's Commands list every command of --help"
    else
        not_ok "$name: sledtrace(1)'s SYNOPSIS and README's Commands list every command of --help" \
            "missing: ${missing[*]}"
    fi
}

# completions SCRIPT DIR WORD...: what SCRIPT, sourced alone into bash in directory DIR, offers
# for the command line `WORD...` (the last word being the one completed), sorted, on one line.
completions() {
    local script=$1 dir=$2
    shift 2
    (cd "$dir" && bash --norc --noprofile -c '
        source "$1" || exit 1
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMPREPLY=()
        _sledtrace sledtrace "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' bash "$script" "$@")
}

# check_completion NAME TOOL SCRIPT: the bash completion.
check_completion() {
    local name=$1 tool=$2 script=$3 work=$tmp/$1/completion
    if [[ ! -f "$script" ]]; then
        not_ok "$name: the bash completion is installed" "no $script"
        return
    fi
    check "$name: bash -n accepts the completion script" bash -n "$script"
    mkdir -p "$work/sub"
    touch "$work/a.fdr" "$work/a.syms"
    same "$name: completion offers the commands" \
        "--help --version account convert diff dump flamegraph graph info live order replay run slowest stack top " \
        "$(completions "$script" "$work" sledtrace '')"
    local cmd opt offered missing=()
    for cmd in "${COMMANDS[@]}"; do
        offered=" $(completions "$script" "$work" sledtrace "$cmd" -) "
        for opt in $(help_options "$tool" "$cmd"); do
            [[ $offered == *" $opt "* ]] || missing+=("$cmd $opt")
        done
    done
    if ((${#missing[@]} == 0)); then
        ok "$name: completion offers every option of each command's --help"
    else
        not_ok "$name: completion offers every option of each command's --help" \
            "missing: ${missing[*]}"
    fi
    same "$name: completion of account --format" "csv json text " \
        "$(completions "$script" "$work" sledtrace account --format '')"
    same "$name: completion of run --policy=" "discard flight lossless " \
        "$(completions "$script" "$work" sledtrace run --policy = '')"
    same "$name: completion of a TRACE: traces and directories" "a.fdr sub " \
        "$(completions "$script" "$work" sledtrace replay --tid 1 '')"
    same "$name: completion of --syms: any file" "a.fdr a.syms sub " \
        "$(completions "$script" "$work" sledtrace dump a.fdr --syms '')"
    offered=" $(completions "$script" "$work" sledtrace run --log info -- bas) "
    if [[ $offered == *" bash "* ]]; then
        ok "$name: completion of run's program: commands"
    else
        not_ok "$name: completion of run's program: commands" "got:$offered"
    fi
}

# check_tree NAME ROOT BINDIR LIBDIR INCLUDEDIR MANDIR DATADIR: the checks above on the tree
# staged in ROOT, whose files were configured for these absolute directories.
check_tree() {
    local name=$1 root=$2 bindir=$3 libdir=$4 includedir=$5 mandir=$6 datadir=$7
    local tool=$root$bindir/sledtrace out
    local work=$tmp/$name
    mkdir -p "$work"

    same "$name: sledtrace --version" "sledtrace $VERSION" "$("$tool" --version 2>&1)"
    # The pages as meson installs them, or gzipped as in the package.
    local page1=$root$mandir/man1/sledtrace.1 page3=$root$mandir/man3/libsledtrace.3
    [[ -f $page1.gz ]] && page1+=.gz
    [[ -f $page3.gz ]] && page3+=.gz
    check_man "$name" "$tool" "$page1" "$page3"
    check_completion "$name" "$tool" "$root$datadir/bash-completion/completions/sledtrace"

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
    same "$name: account counts every fib call" "$want" "$(func_count fib "$work/account.csv")"
    check_format "$name" "$root" "$libdir" "$includedir" "$tool" "$trace" "$want"
    check_python "$name" "$root" "$trace" "$want"

    # The control API through pkg-config. Without a sysroot the flags are the installed ones.
    out=$(PKG_CONFIG_PATH=$root$libdir/pkgconfig pkg-config --libs sledtrace 2>&1)
    case " $out " in
    *" -L$libdir/sledtrace "*"-Wl,-rpath,$libdir/sledtrace "*"-lsledtrace "*)
        ok "$name: sledtrace.pc links the runtime's directory, with a run path" ;;
    *) not_ok "$name: sledtrace.pc links the runtime's directory, with a run path" "$out" ;;
    esac
    local flags
    if ! flags=$(pc "$root" "$libdir" --cflags --libs sledtrace 2>&1); then
        not_ok "$name: pkg-config --cflags --libs sledtrace" "$flags"
        return
    fi
    # shellcheck disable=SC2086 # flags are split on purpose
    if ! out=$("$CLANG" -O2 -fxray-instrument -fxray-instruction-threshold=1 "$XRAY_NOLINK" \
        "$SOURCE_ROOT/tests/install/ctl.c" $flags -o "$work/ctl" 2>&1); then
        not_ok "$name: a program using sledtrace.h builds with pkg-config's flags" "$out"
        return
    fi
    ok "$name: a program using sledtrace.h builds with pkg-config's flags"
    mkdir -p "$work/ctl-traces"
    out=$(LD_LIBRARY_PATH=$root$libdir/sledtrace SLEDTRACE_OUTPUT=$work/ctl-traces "$work/ctl" 2>&1)
    same "$name: sledtrace_unpatch() and sledtrace_patch() work in the linked program" 21 "$out"
    trace=$(find "$work/ctl-traces" -name '*.fdr' | head -n 1)
    "$tool" account --format csv "$trace" >"$work/ctl.csv" 2>&1
    same "$name: the linked program traced exactly the calls made while patched" 5 \
        "$(func_count f "$work/ctl.csv")"
}

# ---- meson install --destdir from the build directory under test ------------------------------
stage=$tmp/stage
if ! out=$("$MESON" install -C "$BUILD_ROOT" --no-rebuild --destdir "$stage" 2>&1); then
    not_ok "meson install --destdir" "$out"
    echo "1..$n"
    exit 1
fi
ok "meson install --destdir"
check_tree meson "$stage" "$BINDIR" "$LIBDIR" "$INCLUDEDIR" "$MANDIR" "$DATADIR"

# ---- the Debian package ---------------------------------------------------------------------
if ! deb=$(DEBFULLNAME="sledtrace tests" DEBEMAIL=tests@sledtrace.invalid \
    "$SOURCE_ROOT/scripts/package-deb.sh" -b "$DEB_BUILD" -o "$tmp/deb" --no-lintian \
    2>"$tmp/deb.log" | tail -n 1) || [[ ! -f "$deb" ]]; then
    not_ok "scripts/package-deb.sh builds a .deb" "$(tail -n 30 "$tmp/deb.log")"
    echo "1..$n"
    exit 1
fi
ok "scripts/package-deb.sh builds $(basename "$deb")"
droot=$tmp/debroot
dpkg-deb -x "$deb" "$droot"
dpkg-deb -e "$deb" "$tmp/DEBIAN"
same "deb: control names the package, version and architecture" \
    "sledtrace $VERSION $(dpkg --print-architecture)" \
    "$(dpkg-deb -f "$deb" Package Version Architecture | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//')"
depends=$(dpkg-deb -f "$deb" Depends)
missing=()
for p in libc6 libelf1 libstdc++6 libcapstone4; do
    [[ ", $depends," == *", $p "* || ", $depends," == *", $p,"* ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    ok "deb: Depends: $depends"
else
    not_ok "deb: Depends names libc6, libelf1, libstdc++6 and libcapstone4" "Depends: $depends"
fi
check "deb: md5sums match the files" bash -c "cd '$droot' && md5sum --quiet -c '$tmp/DEBIAN/md5sums'"
multiarch=/usr/lib/$($CC -print-multiarch)
missing=()
for f in usr/bin/sledtrace "${multiarch#/}/sledtrace/libsledtrace.so" \
    "${multiarch#/}/libsledtrace-format.so.0" "${multiarch#/}/pkgconfig/sledtrace.pc" \
    usr/share/man/man1/sledtrace.1.gz usr/share/man/man3/libsledtrace.3.gz \
    usr/share/doc/sledtrace/copyright usr/share/doc/sledtrace/changelog.gz; do
    [[ -e "$droot/$f" ]] || missing+=("$f")
done
if ((${#missing[@]} == 0)); then
    ok "deb: files in /usr and $multiarch, manual pages and changelog compressed, copyright"
else
    not_ok "deb: files where Debian puts them" "missing: ${missing[*]}" \
        "$(cd "$droot" && find . -type f)"
fi
check_tree deb "$droot" /usr/bin "$multiarch" /usr/include /usr/share/man /usr/share

echo "1..$n"
((failed == 0))
