#!/usr/bin/env bash
# sledtrace's self times against perf's sampling (issue 22's independent reference), on three
# programs, each built twice with clang -O2 (with sleds on every function, and without XRay):
#   mixleaf  tests/profile/mixleaf.c: leaves of ~1 ns to ~3.5 us (every function within 5 points)
#   sqlite3  Debian 12's sqlite3 3.40.1 shell on an in-memory database,
#            tests/profile/workload.sql with 120000 rows and 50000 lookups (~0.3-0.5 s untraced)
#   ninja    Debian 12's ninja-build 1.11.1 (C++): `ninja -t commands all` on a generated
#            build.ninja of 100000 compile edges (tests/profile/gen_ninja.py; ~0.5 s untraced)
# sqlite3 and ninja: every function perf puts at 2% or more within max(3 points, 30% of its
# share). tests/profile/run_compare.sh records perf on the untraced build (cycles:u where perf
# can count it, else cpu-clock:u; --call-graph dwarf; each sample goes to the nearest frame of
# the program's own instrumented functions), traces the other with `sledtrace run` into tmpfs,
# and tests/profile/compare.py prints the table: function, perf %, sledtrace %, difference,
# tolerance, ok. Also printed: the event, the time each step took, the trace's size.
#
# Usage: scripts/bench/profile.sh [WORKDIR]   (default build/bench/profile in the repository)
# Environment: PROFILE_ONLY (programs to run, space-separated; default "mixleaf sqlite3
# ninja"), PROFILE_RAW=1 (account --raw-times: the times as measured), PROFILE_EVENT (perf's
# event instead of the automatic choice; "cpu-clock" also samples the kernel, where account's
# wall-clock self times also are), PROFILE_FREQ (default 20000), CLANG (default clang),
# CLANGXX (default clang++).
#
# Installs what is missing (as root): linux-perf, dpkg-dev, tcl, make. The sources and the
# builds stay in WORKDIR (tests/profile/debsrc.sh: apt-get source with package lists of its own,
# removed afterwards), so only the first run fetches and compiles (75 s in all on the 2-vCPU
# development VM: sqlite3 45 s, ninja 18 s); later runs take about half a minute. A benchmark, not a test: it reports functions
# outside tolerance and exits 0; a program it cannot measure prints one "profile: PROG: not
# measured: WHY" line. Bad arguments exit 2.
set -euo pipefail

work=${1:-}
if [[ -n $work ]]; then
    mkdir -p "$work"
    work=$(cd "$work" && pwd)
fi
cd "$(dirname "$0")/../.."
root=$PWD
source scripts/lib.sh
work=${work:-$root/build/bench/profile}
mkdir -p "$work"
export SLEDTRACE=$root/build/tools/sledtrace
export CLANGXX=${CLANGXX:-clang++}
only=${PROFILE_ONLY:-mixleaf sqlite3 ninja}

log() { printf 'profile: %s\n' "$*" >&2; }
for p in $only; do
    case $p in
    mixleaf | sqlite3 | ninja) ;;
    *)
        log "PROFILE_ONLY: unknown program $p (mixleaf, sqlite3, ninja)"
        exit 2
        ;;
    esac
done

# ---- what it needs -----------------------------------------------------------------------------
need=()
for pair in perf:linux-perf dpkg-source:dpkg-dev tclsh:tcl make:make; do
    command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if ((${#need[@]})); then
    if (($(id -u) == 0)); then
        log "installing ${need[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" \
            </dev/null >&2 || log "warning: apt-get install ${need[*]} failed"
    else
        log "warning: missing ${need[*]} (run as root to install them)"
    fi
fi
if [[ ! -x $SLEDTRACE || ! -e $root/build/preload/libsledtrace.so ]]; then
    ./scripts/setup.sh >&2
fi
nolink=$(xray_no_link_deps_flag)

now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# ---- the programs ------------------------------------------------------------------------------
build() {
    local p=$1 t0
    t0=$(now)
    case $p in
    mixleaf)
        "$CLANG" -O2 tests/profile/mixleaf.c -o "$work/mixleaf-plain" &&
            "$CLANG" -O2 "${XRAY_CFLAGS[@]}" "$nolink" tests/profile/mixleaf.c -o "$work/mixleaf-xray"
        ;;
    *) CLANG=$CLANG XRAY_NOLINK=$nolink tests/profile/debsrc.sh "$p" "$work" ;;
    esac || return 1
    echo "profile: $p: build (or cached build): $(took "$t0")"
}

run() {
    local p=$1 args=() checks=(--min-share 2 --abs 3 --rel 30) stdin=/dev/null chdir=. rc=0
    case $p in
    mixleaf)
        checks=(--every 5)
        args=(1)
        ;;
    sqlite3)
        sed -e 's/@ROWS@/120000/' -e 's/@LOOKUPS@/50000/' tests/profile/workload.sql \
            >"$work/sqlite3.sql"
        stdin=$work/sqlite3.sql
        args=(:memory:)
        ;;
    ninja)
        mkdir -p "$work/ninja-manifest"
        [[ -s $work/ninja-manifest/build.ninja ]] ||
            python3 tests/profile/gen_ninja.py 100000 >"$work/ninja-manifest/build.ninja"
        chdir=$work/ninja-manifest
        args=(-t commands all)
        ;;
    esac
    PROFILE_TIMES=1 tests/profile/run_compare.sh --name "$p" --plain "$work/$p-plain" \
        --xray "$work/$p-xray" --work "$work/run-$p" --stdin "$stdin" --chdir "$chdir" \
        -- "${checks[@]}" -- "${args[@]}" || rc=$?
    case $rc in
    0) echo "profile: $p: every checked function within tolerance" ;;
    1) echo "profile: $p: some functions outside tolerance" ;;
    77) echo "profile: $p: not measured: perf cannot sample here" ;;
    *) echo "profile: $p: not measured: the comparison failed (exit $rc)" ;;
    esac
}

echo "self-time shares, sledtrace vs perf (scripts/bench/profile.sh; $(nproc) CPUs," \
    "$("$CLANG" --version | head -1))"
for p in $only; do
    echo
    if ! out=$(build "$p"); then
        echo "profile: $p: not measured: ${out:-the build failed}"
        continue
    fi
    echo "$out"
    run "$p"
done
