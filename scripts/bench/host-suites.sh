#!/usr/bin/env bash
# shellcheck disable=SC2317 # the run_ functions are called as "run_$s"
# Real programs' own test suites under the preload (issue 27): zstd 1.5.4, sqlite3 3.40.1 and
# redis 7.0.15 from Debian 12's source packages, built with clang and sleds on every function
# (-fxray-instrument -fxray-instruction-threshold=1, no XRay runtime), each suite run twice:
# untraced (the same build, its sleds left as nops) and with EVERY process of the suite traced
# (LD_PRELOAD=build/preload/libsledtrace.so and SLEDTRACE_OUTPUT exported for the whole suite,
# so every instrumented program the suite starts writes a trace: servers, forks, clients).
# Not CI, not scripts/bench.sh: it fetches, builds and runs for half an hour or more.
#
# Usage: scripts/bench/host-suites.sh [WORKDIR]       (default build/bench/host-suites)
# Environment:
#   SUITES        which suites, in this order (default "zstd sqlite3 redis"); names:
#                 zstd-play zstd-cli zstd-fuzzer zstd-zstream (or zstd: all four),
#                 sqlite3, redis
#   SUITE_TIMEOUT seconds one run of one suite may take before `timeout` ends it (default 1200)
#   HS_MAX_SIZE   SLEDTRACE_MAX_SIZE of every traced process (default: unset). Unset, the
#                 runtime's own limit holds: no trace is written past the point where the
#                 disk's free space falls to half of what it was when the process started,
#                 checked before every block, so processes started together stop together
#                 (issue 27.6), quietly. A process that reaches an HS_MAX_SIZE goes on
#                 untraced and says so on stderr (the user asked for the cap): counted apart
#                 from the other stderr lines below.
#   SQLITE_STRIDE which of veryquick's files sqlite3 runs: every Nth (default 1: all)
#   HS_BUILD_ONLY=1  fetch and build only
#   HS_KEEP=1     keep the traces (WORKDIR/traces/SUITE), else removed once checked
#   CLANG         (default clang: Debian 12's clang 14)
# Needs root for apt-get (it installs what is missing: tcl, tcl-dev, dpkg-dev, make,
# pkg-config, python3); the sources are fetched once with `apt-get source` through a deb-src
# list of its own (the machine's bookworm suites) with package lists under WORKDIR/apt,
# removed afterwards. Sources and builds stay in WORKDIR/src, so later runs only run.
#
# Per suite it prints: tests passed/failed untraced and traced, the tests that failed only
# when traced (by name, with what they printed, in WORKDIR/logs), wall time each way and the
# ratio, the processes traced (.fdr files), the trace bytes (.fdr and .syms), header-only
# traces (32 bytes: a process killed before its first flush, issue 27.7), empty files, the
# traces that `sledtrace dump --verify` or `sledtrace account` reject (counted, a few named),
# and the lines containing "sledtrace" in the suite's output and logs beyond the untraced
# run's (any stderr the runtime adds is a finding, issue 27.3).
#
# The subsets (each about ten minutes or less on 2 cores untraced):
#   zstd-play    tests/playTests.sh (set -e: one pass or fail, the sections it got through)
#   zstd-cli     tests/cli-tests/run.py, every case
#   zstd-fuzzer  tests/fuzzer -s 5 -i 600 (fixed seed and count: the same work each way)
#   zstd-zstream tests/zstreamtest -s 5 -i 300
#   sqlite3      testfixture on every file (SQLITE_STRIDE: every Nth) of the 1110
#                of the veryquick suite (test/permutations.test, sorted), one
#                testfixture process per file, each in a fresh directory
#   redis        ./runtest --clients 2 on the units in REDIS_UNITS below (server processes,
#                BGSAVE and AOF rewrite forks, replication, SIGTERM/SIGKILL, DEBUG SEGFAULT)
set -uo pipefail
# one brace group: bash reads it whole before running it, so editing the script while it runs is safe
{
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$root/build/bench/host-suites}
mkdir -p "$work" || exit 2
work=$(cd "$work" && pwd)
tool=$root/build/tools/sledtrace
preload=$root/build/preload/libsledtrace.so
for f in "$tool" "$preload"; do
    [[ -e $f ]] || { echo "host-suites: build the project first (meson compile -C build): no $f" >&2; exit 2; }
done
CLANG=${CLANG:-clang}
SUITES=${SUITES:-zstd sqlite3 redis}
SUITES=${SUITES//zstd-all/zstd}
# shellcheck disable=SC2001 # a word boundary
SUITES=$(echo "$SUITES" | sed 's/\bzstd\b\([^-]\|$\)/zstd-play zstd-cli zstd-fuzzer zstd-zstream\1/')
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1200}
HS_MAX_SIZE=${HS_MAX_SIZE:-}
SQLITE_STRIDE=${SQLITE_STRIDE:-1}
src=$work/src
logs=$work/logs
mkdir -p "$src" "$logs"
nolink=-fnoxray-link-deps
"$CLANG" -fxray-instrument -fnoxray-link-deps -x c /dev/null -c -o /dev/null 2>/dev/null || nolink=-fno-xray-link-deps
XRAY="-fxray-instrument -fxray-instruction-threshold=1 $nolink"

say() { echo "host-suites: $*" >&2; }

# ---- what the suites need ----------------------------------------------------------------------
need=()
command -v tclsh >/dev/null || need+=(tcl)
[[ -e /usr/lib/tcl8.6/tclConfig.sh || -e /usr/lib/x86_64-linux-gnu/tcl8.6/tclConfig.sh ]] || need+=(tcl-dev)
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v python3 >/dev/null || need+=(python3)
if ((${#need[@]})); then
    say "installing ${need[*]}"
    if (($(id -u) != 0)) || ! apt-get install -y "${need[@]}" >"$logs/apt-install.log" 2>&1; then
        say "could not install ${need[*]} (see $logs/apt-install.log)"
        exit 1
    fi
fi

# ---- fetch (once) ------------------------------------------------------------------------------
fetch() { # PKG DIR: the Debian 12 source package PKG, unpacked in DIR (patches applied)
    local pkg=$1 dir=$2 apt=$work/apt ok=1
    [[ -f $dir/.fetched ]] && return 0
    rm -rf "$apt" "$dir" "$dir.dl"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir.dl"
    # shellcheck disable=SC2016 # apt's own $(FIELD) syntax
    apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
        awk '$2 ~ /^bookworm(-|$)/ { print "deb-src", $1, $2, "main" }' | sort -u >"$apt/sources.list"
    [[ -s $apt/sources.list ]] ||
        echo "deb-src ${DEBIAN_MIRROR:-http://deb.debian.org/debian} bookworm main" >"$apt/sources.list"
    local opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache")
    (($(id -u) == 0)) && opts+=(-o APT::Sandbox::User=root)
    {
        apt-get "${opts[@]}" update &&
            (cd "$dir.dl" && apt-get "${opts[@]}" source --download-only "$pkg") &&
            dpkg-source -x "$dir.dl"/*.dsc "$dir"
    } >>"$logs/fetch-$pkg.log" 2>&1 || ok=0
    rm -rf "$apt" "$dir.dl" "$(dirname "$dir")"/*.orig*.tar.*
    ((ok)) || { say "apt-get source $pkg failed (see $logs/fetch-$pkg.log)"; return 1; }
    touch "$dir/.fetched"
}

# ---- builds (once each; a .built stamp holds the flags) ----------------------------------------
built() { [[ -f $1/.built && $(cat "$1/.built") == "$XRAY" ]]; }

build_zstd() {
    local d=$src/zstd
    fetch libzstd "$d" || return 1
    built "$d" && return 0
    say "building zstd (zstd, datagen, fuzzer, zstreamtest)"
    make -C "$d/tests" -j2 CC="$CLANG" MOREFLAGS="$XRAY -w" zstd datagen fuzzer zstreamtest \
        >"$logs/build-zstd.log" 2>&1 || { say "zstd build failed (see $logs/build-zstd.log)"; return 1; }
    echo "$XRAY" >"$d/.built"
}

build_sqlite3() {
    local d=$src/sqlite3 tcldir=/usr/lib/tcl8.6
    fetch sqlite3 "$d" || return 1
    built "$d" && return 0
    say "building sqlite3's testfixture"
    [[ -e $tcldir/tclConfig.sh ]] || tcldir=/usr/lib/x86_64-linux-gnu/tcl8.6
    rm -rf "$d/bld-hs"
    mkdir -p "$d/bld-hs"
    (cd "$d/bld-hs" && CC=$CLANG CFLAGS="-O2 -w $XRAY" ../configure --with-tcl="$tcldir" &&
        make -j2 testfixture) >"$logs/build-sqlite3.log" 2>&1 ||
        { say "sqlite3 build failed (see $logs/build-sqlite3.log)"; return 1; }
    echo "$XRAY" >"$d/.built"
}

sqlite3_list() { # the files of testfixture's veryquick suite (permutations.test), one a line
    local d=$src/sqlite3
    [[ -s $d/veryquick.list ]] && return 0
    # shellcheck disable=SC2016 # Tcl's $
    printf '%s\n' 'source [file join [file dirname $argv0] permutations.test]' \
        'array set o $::testspec(veryquick)' 'set l {}' \
        'foreach f $o(-files) { if {[file pathtype $f] eq "relative"} { set f [file join $::testdir $f] }; lappend l $f }' \
        'puts [join [lsort $l] \n]' 'exit 0' >"$d/test/hs_list.tcl"
    mkdir -p "$work/run-sqlite3"
    (cd "$work/run-sqlite3" && env -u LD_PRELOAD "$d/bld-hs/testfixture" "$d/test/hs_list.tcl") |
        grep '\.test$' >"$d/veryquick.list"
    rm -rf "$d/test/hs_list.tcl" "$work/run-sqlite3"
    [[ -s $d/veryquick.list ]] || { say "no veryquick list from testfixture"; return 1; }
}

build_redis() {
    local d=$src/redis
    fetch redis "$d" || return 1
    built "$d" && return 0
    say "building redis"
    # no LTO (clang's needs a linker plugin), libc malloc, no TLS, no systemd
    make -C "$d" -j2 CC="$CLANG" OPTIMIZATION=-O2 MALLOC=libc BUILD_TLS=no USE_SYSTEMD=no \
        CFLAGS="$XRAY -w" >"$logs/build-redis.log" 2>&1 ||
        { say "redis build failed (see $logs/build-redis.log)"; return 1; }
    echo "$XRAY" >"$d/.built"
}

# ---- the suites: run_SUITE MODE LOG, in the suite's own directory; RESULTS gets lines ------
# "ok NAME" and "fail NAME"; extra logs (servers' own) to grep go to EXTRA
REDIS_UNITS="unit/printver unit/dump unit/auth unit/protocol unit/keyspace unit/scan unit/info
unit/type/string unit/type/incr unit/type/hash unit/type/set unit/type/list-3 unit/expire
unit/other unit/multi unit/quit unit/pubsub unit/introspection unit/introspection-2
unit/limits unit/bitops unit/shutdown unit/networking unit/latency-monitor unit/oom-score-adj
integration/rdb integration/aof integration/logging integration/redis-cli
integration/redis-benchmark integration/replication-4 integration/shutdown
unit/type/zset unit/type/stream-cgroups unit/scripting unit/acl unit/maxmemory unit/aofrw
unit/lazyfree unit/tracking unit/wait unit/hyperloglog integration/replication-2
integration/replication-3 integration/psync2 integration/block-repl integration/aof-multi-part
integration/corrupt-dump integration/failover integration/dismiss-mem"

run_zstd-play() {
    local t=$src/zstd/tests rc
    (cd "$t" && ZSTD_BIN=$src/zstd/programs/zstd DATAGEN_BIN=$t/datagen timeout "$SUITE_TIMEOUT" ./playTests.sh) >"$2" 2>&1
    rc=$?
    local n
    n=$(grep -c '^===> ' "$2")
    if ((rc == 0)); then echo "ok playTests.sh ($n sections)"; else echo "fail playTests.sh (exit $rc after $n sections: $(grep '^===> ' "$2" | tail -1))"; fi
}

run_zstd-cli() {
    local t=$src/zstd/tests
    (cd "$t/cli-tests" && timeout "$SUITE_TIMEOUT" python3 ./run.py --timeout 300 --zstd "$src/zstd/programs/zstd" \
        --datagen "$t/datagen") >"$2" 2>&1
    awk '/^PASS: /{ print "ok", $2 } /^FAIL: /{ print "fail", $2 }' "$2"
}

run_zstd-fuzzer() {
    if (cd "$src/zstd/tests" && timeout "$SUITE_TIMEOUT" ./fuzzer -s5 -i600) >"$2" 2>&1; then
        echo "ok fuzzer"
    else
        echo "fail fuzzer"
    fi
}

run_zstd-zstream() {
    if (cd "$src/zstd/tests" && timeout "$SUITE_TIMEOUT" ./zstreamtest -s5 -i300) >"$2" 2>&1; then
        echo "ok zstreamtest"
    else
        echo "fail zstreamtest"
    fi
}

run_sqlite3() {
    local d=$src/sqlite3 f rc dir=$work/run-sqlite3 end=$((SECONDS + SUITE_TIMEOUT)) i=0 path t0
    : >"$2"
    while read -r path; do
        i=$((i + 1))
        (((i - 1) % SQLITE_STRIDE == 0)) || continue
        f=$(basename "$path" .test)
        rm -rf "$dir"
        mkdir -p "$dir"
        if ((SECONDS >= end)); then
            echo "fail $f.test (not run: suite timeout)"
            continue
        fi
        t0=$(now)
        (cd "$dir" && timeout $((end - SECONDS)) "$d/bld-hs/testfixture" "$path") >"$dir.out" 2>&1
        rc=$?
        { echo "==== $f.test (exit $rc, $(secs "$t0" "$(now)") s)"; cat "$dir.out"; } >>"$2"
        # the summary counts the tests; "!Failures on these tests: A B" names the failed ones
        awk -v f="$f" -v rc="$rc" '
            /^!Failures on these tests:/ { for (i = 5; i <= NF; i++) { print "fail", $i; nf++ } }
            /^[0-9]+ errors out of [0-9]+ tests/ { total = $5; errs = $1; seen = 1 }
            END {
                # exit 0 without a summary: a file that skips itself (win32*.test on Linux)
                if (!seen) { print (rc == 0 ? "skip " : "fail ") f ".test (exit " rc ", no summary)"; exit }
                for (i = nf; i < errs; i++) print "fail " f ".test#" i
                for (i = errs; i < total; i++) print "ok " f ".test#" i
            }' "$dir.out"
    done <"$d/veryquick.list"
    rm -rf "$dir" "$dir.out"
}

run_redis() {
    local d=$src/redis
    rm -rf "$d/tests/tmp"
    mkdir -p "$d/tests/tmp"
    local single=()
    for u in $REDIS_UNITS; do single+=(--single "$u"); done
    (cd "$d" && timeout "$SUITE_TIMEOUT" ./runtest --clients 2 --timeout 600 --dont-clean "${single[@]}") >"$2" 2>&1
    # the servers' own stdout and stderr
    cat "$d"/tests/tmp/*/stdout "$d"/tests/tmp/*/stderr >"$2.servers" 2>/dev/null
    rm -rf "$d/tests/tmp"
    sed 's/\x1b\[[0-9;]*m//g' "$2" | awk '
        /^\[ok\]: / { sub(/^\[ok\]: /, ""); sub(/ \([0-9]+ ms\)$/, ""); print "ok", $0 }
        /^\[err\]: / { sub(/^\[err\]: /, ""); print "fail", $0 }
        /^\[exception\]: / { sub(/^\[exception\]: /, ""); print "fail exception:", $0 }'
}

# ---- one suite, both ways ----------------------------------------------------------------------
now() { date +%s%N; }
rtlines='sledtrace: (error|warning|info|debug): '
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

check_traces() { # DIR: sets the trace figures
    local f
    n_fdr=0 bytes=0 headeronly=0 empty=0 vfail=0 afail=0 vnames="" anames=""
    bytes=$(find "$1" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }')
    empty=$(find "$1" -type f -size 0 2>/dev/null | wc -l)
    for f in "$1"/*.fdr; do
        [[ -e $f ]] || continue
        n_fdr=$((n_fdr + 1))
        if [[ $(stat -c %s "$f") == 32 ]]; then headeronly=$((headeronly + 1)); fi
        if ! "$tool" dump --verify "$f" >/dev/null 2>"$work/v.err"; then
            vfail=$((vfail + 1))
            ((vfail <= 3)) && vnames+=" ${f##*/} ($(head -1 "$work/v.err"))"
        fi
        if ! "$tool" account "$f" >/dev/null 2>"$work/a.err"; then
            afail=$((afail + 1))
            ((afail <= 3)) && anames+=" ${f##*/} ($(head -1 "$work/a.err"))"
        fi
    done
    rm -f "$work/v.err" "$work/a.err"
}

run_suite() {
    local s=$1 mode t0 t1 res
    case $s in
    zstd-*) build_zstd || return 1 ;;
    sqlite3) build_sqlite3 && sqlite3_list || return 1 ;;
    redis) build_redis || return 1 ;;
    *) say "no suite $s"; return 1 ;;
    esac
    local traces=$work/traces/$s
    for mode in untraced traced; do
        res=$logs/$s.$mode.results
        say "$s: running $mode"
        rm -rf "$traces"
        t0=$(now)
        if [[ $mode == traced ]]; then
            mkdir -p "$traces"
            (
                export LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$traces
                [[ -z $HS_MAX_SIZE ]] || export SLEDTRACE_MAX_SIZE=$HS_MAX_SIZE
                export SLEDTRACE_CACHE=$work/proof-cache
                "run_$s" "$mode" "$logs/$s.$mode.log" >"$res"
            )
        else
            "run_$s" "$mode" "$logs/$s.$mode.log" >"$res"
        fi
        t1=$(now)
        eval "load_$mode=\$(cut -d' ' -f1-3 /proc/loadavg)"
        eval "wall_$mode=\$(secs $t0 $t1)"
        eval "pass_$mode=\$(grep -c '^ok ' \"\$res\")"
        eval "fail_$mode=\$(grep -c '^fail ' \"\$res\")"
        # the runtime's own lines ("sledtrace: LEVEL: ", perhaps after a progress line's text),
        # and any other line naming sledtrace (a path of libsledtrace.so in a crash report)
        eval "sled_$mode=\$(cat \"\$logs/\$s.\$mode.log\"* 2>/dev/null | grep -Ec \"\$rtlines\")"
        eval "other_$mode=\$(cat \"\$logs/\$s.\$mode.log\"* 2>/dev/null | grep -v -E \"\$rtlines\" | grep -c sledtrace)"
    done
    check_traces "$traces"
    # shellcheck disable=SC2154 # set by eval above
    {
        printf '%s\n' "== $s"
        printf '  tests       untraced %s passed, %s failed; traced %s passed, %s failed\n' \
            "$pass_untraced" "$fail_untraced" "$pass_traced" "$fail_traced"
        printf '  wall        untraced %s s, traced %s s, ratio %s (load average at the end of each: %s; %s)\n' "$wall_untraced" "$wall_traced" \
            "$(awk -v a="$wall_untraced" -v b="$wall_traced" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')" \
            "$load_untraced" "$load_traced"
        printf '  traces      %s processes, %s bytes (%s MB), %s header-only, %s empty files\n' "$n_fdr" "$bytes" \
            "$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')" "$headeronly" "$empty"
        printf '  verify      %s rejected by dump --verify%s\n' "$vfail" "${vnames:+:$vnames}"
        printf '  account     %s rejected by account%s\n' "$afail" "${anames:+:$anames}"
        printf '  stderr      %s runtime lines traced (%s of them about SLEDTRACE_MAX_SIZE), %s untraced; other lines naming sledtrace: %s traced, %s untraced (suite output and server logs)\n' \
            "$sled_traced" "$(cat "$logs/$s.traced.log"* 2>/dev/null | grep -E "$rtlines" | grep -c SLEDTRACE_MAX_SIZE)" \
            "$sled_untraced" "$other_traced" "$other_untraced"
        local only
        only=$(comm -13 <(grep '^fail ' "$logs/$s.untraced.results" | sort -u) \
            <(grep '^fail ' "$logs/$s.traced.results" | sort -u) | sed 's/^fail //')
        if [[ -n $only ]]; then
            printf '  TRACED-ONLY failures (%s; output in %s):\n' "$(echo "$only" | wc -l)" "$logs/$s.traced.log"
            while read -r l; do printf "    %s\n" "$l"; done <<<"$only"
        else
            printf '  traced-only failures: none\n'
        fi
        if ((sled_traced + other_traced > sled_untraced + other_untraced)); then
            printf '  lines naming sledtrace, traced (the most frequent 5; numbers made alike):\n'
            cat "$logs/$s.traced.log"* | grep -a sledtrace | sed -E 's/.*(sledtrace: )/\1/; s/0x[0-9a-f]+/0x_/g; s/[0-9]+/N/g' |
                sort | uniq -c | sort -rn | head -5 | sed 's/^/    /'
        fi
    } | tee -a "$logs/summary.txt"
    [[ ${HS_KEEP:-0} == 1 ]] || rm -rf "$traces"
}

echo "host-suites $(date -u +%FT%TZ) $(git -C "$root" rev-parse --short HEAD 2>/dev/null) MAX_SIZE=${HS_MAX_SIZE:-unset}" >>"$logs/summary.txt"
status=0
if [[ ${HS_BUILD_ONLY:-0} == 1 ]]; then # fetch and build, run nothing
    for b in $(echo "$SUITES" | sed 's/zstd-[a-z]*/zstd/g' | tr ' ' '\n' | sort -u); do "build_$b" || status=1; done
    exit $status
fi
for s in $SUITES; do
    run_suite "$s" || status=1
done
rm -rf "$work/proof-cache"
rmdir "$work/traces" 2>/dev/null
exit $status
}
