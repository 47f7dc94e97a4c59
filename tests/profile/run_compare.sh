#!/usr/bin/env bash
# One program's comparison of sledtrace's self times with perf's (issue 22's independent
# reference), shared by the `profile` tests and scripts/bench/profile.sh:
#   1. picks perf's event: cycles:u where `perf stat` counts it, else cpu-clock:u (a timer, for
#      machines without hardware counters, such as most VMs), user samples only; PROFILE_EVENT
#      overrides (e.g. cpu-clock, to sample the kernel too, which account's wall-clock self
#      times include);
#   2. records the untraced build with `perf record --call-graph dwarf` at PROFILE_FREQ samples
#      a second (default 20000, at most the kernel's perf_event_max_sample_rate) and reads the
#      samples with `perf script`;
#   3. runs the XRay build under `sledtrace run`, reads `sledtrace account --format csv` of its
#      trace (mangled names, and again with the names account shows), PROFILE_RAW=1 adding
#      --raw-times, and once more with --raw-times (the raw column, and --better); both
#      programs' output must be the same;
#   4. compares with compare.py, which prints the table (function, perf %, sledtrace %, diff,
#      tolerance, ok) and decides.
#
# Usage: run_compare.sh --name NAME --plain BIN --xray BIN --work DIR [--stdin FILE]
#                       [--chdir DIR] -- COMPARE-CHECK-ARGS... -- PROGRAM-ARGS...
# COMPARE-CHECK-ARGS are compare.py's checks (--every 5, or --min-share 2 --abs 3 --rel 30).
# Environment: PERF (default perf), SLEDTRACE (required), PYTHON (default python3), TRACE_DIR
# (where a directory for the trace is made and removed again: default /dev/shm when it is
# writable, else DIR), PROFILE_TIMES=1 prints how long each step took (the bench's),
# PROFILE_PRELOAD=LIB traces with that runtime (sledtrace run --preload) instead of the one
# beside SLEDTRACE.
# Everything but the table and the summary lines goes to DIR (perf.data, the perf script text,
# the account CSVs, logs); the trace is removed once read.
#
# Exit status: 0 every checked function within tolerance, 1 some outside, 2 a step failed (the
# reason on stdout), 77 perf cannot sample here (the reason on stdout, starting "perf cannot
# sample:").
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
PERF=${PERF:-perf}
PYTHON=${PYTHON:-python3}
: "${SLEDTRACE:?SLEDTRACE must name the sledtrace command}"

name='' plain='' xray='' work='' stdin=/dev/null chdir=.
while (($#)); do
    case $1 in
    --name)
        name=$2
        shift 2
        ;;
    --plain)
        plain=$2
        shift 2
        ;;
    --xray)
        xray=$2
        shift 2
        ;;
    --work)
        work=$2
        shift 2
        ;;
    --stdin)
        stdin=$2
        shift 2
        ;;
    --chdir)
        chdir=$2
        shift 2
        ;;
    --)
        shift
        break
        ;;
    *)
        echo "run_compare.sh: unknown option $1" >&2
        exit 2
        ;;
    esac
done
checks=()
while (($#)) && [[ $1 != -- ]]; do
    checks+=("$1")
    shift
done
(($#)) && shift
if [[ -z $name || -z $plain || -z $xray || -z $work ]]; then
    echo "usage: run_compare.sh --name NAME --plain BIN --xray BIN --work DIR [--stdin FILE]" \
        "[--chdir DIR] -- CHECKS... -- ARGS..." >&2
    exit 2
fi
mkdir -p "$work" || exit 2
work=$(cd "$work" && pwd)
# --chdir must not change what the paths name
plain=$(realpath "$plain") xray=$(realpath "$xray") stdin=$(realpath "$stdin") || exit 2

fail() {
    echo "$name: $1"
    [[ -n ${2:-} && -s $2 ]] && sed 's/^/  /' "$2" | head -20
    exit 2
}
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }
timing() { [[ ${PROFILE_TIMES:-} == 1 ]] && echo "$name: $*"; }

# ---- 1. the event ------------------------------------------------------------------------------
if ! command -v "$PERF" >/dev/null 2>&1; then
    echo "perf cannot sample: '$PERF' not found (Debian package linux-perf; scripts/setup.sh installs it)"
    exit 77
fi
event=${PROFILE_EVENT:-}
if [[ -z $event ]]; then
    why=''
    for ev in cycles:u cpu-clock:u; do
        out=$("$PERF" stat -x, -e "$ev" -- true 2>&1 >/dev/null)
        val=$(awk -F, -v e="$ev" '$3 == e { print $1; exit }' <<<"$out")
        if [[ $val =~ ^[0-9]+([.][0-9]+)?$ ]]; then
            event=$ev
            break
        fi
        why+="$ev: ${val:-$(head -1 <<<"$out")}; "
    done
    if [[ -z $event ]]; then
        echo "perf cannot sample: perf stat counts neither event (${why%; })" \
            "(kernel.perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown))"
        exit 77
    fi
fi
freq=${PROFILE_FREQ:-20000}
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo "$freq")
[[ $max =~ ^[0-9]+$ ]] && ((max < freq)) && freq=$max

# ---- 2. perf on the untraced build -------------------------------------------------------------
t0=$(now)
if ! (cd "$chdir" && "$PERF" record -q -e "$event" -F "$freq" --call-graph dwarf \
    -o "$work/perf.data" -- "$plain" "$@" <"$stdin" >"$work/plain.out" 2>"$work/perf-record.err"); then
    if grep -qiE 'permission|not supported|perf_event_paranoid|no such device' \
        "$work/perf-record.err"; then
        echo "perf cannot sample: perf record -e $event failed:" \
            "$(grep -v '^$' "$work/perf-record.err" | head -3 | tr '\n' ' ')"
        exit 77
    fi
    fail "perf record of $plain failed" "$work/perf-record.err"
fi
timing "untraced run under perf record: $(took "$t0")"
# the event perf did record: where a hardware event is missing, perf record falls back to
# cpu-clock without a word
recorded=$("$PERF" evlist -i "$work/perf.data" 2>/dev/null | head -1)
recorded=${recorded:-$event}
t0=$(now)
if ! "$PERF" script -i "$work/perf.data" -F pid,ip,sym,dso --no-inline --no-demangle \
    >"$work/perf.script" 2>"$work/perf-script.err"; then
    fail "perf script failed" "$work/perf-script.err"
fi
rm -f "$work/perf.data"
timing "perf script: $(took "$t0")"
if ! grep -q . "$work/perf.script"; then
    echo "perf cannot sample: perf record -e $event wrote no samples" \
        "($(head -2 "$work/perf-record.err" | tr '\n' ' '))"
    exit 77
fi

# ---- 3. sledtrace on the XRay build ------------------------------------------------------------
# tmpfs when there is one: on these VMs a trace written to disk slows the traced program
# (writeback competes with it for the two processors) far more than one written to memory
if [[ -n ${TRACE_DIR:-} ]]; then
    tdir=$(mktemp -d "$TRACE_DIR/sledtrace-profile.XXXXXX") || exit 2
elif [[ -d /dev/shm && -w /dev/shm ]]; then
    tdir=$(mktemp -d /dev/shm/sledtrace-profile.XXXXXX) || exit 2
else
    tdir=$(mktemp -d "$work/trace.XXXXXX") || exit 2
fi
trap 'rm -rf "$tdir"' EXIT
t0=$(now)
preload=()
[[ -n ${PROFILE_PRELOAD:-} ]] && preload=(--preload "$PROFILE_PRELOAD")
if ! (cd "$chdir" && "$SLEDTRACE" run "${preload[@]}" -o "$tdir" -- "$xray" "$@" <"$stdin" \
    >"$work/xray.out" 2>"$work/run.err"); then
    fail "sledtrace run of $xray failed" "$work/run.err"
fi
timing "traced run: $(took "$t0")"
if ! cmp -s "$work/plain.out" "$work/xray.out"; then
    fail "the two builds printed different output ($work/plain.out, $work/xray.out)"
fi
traces=("$tdir"/sledtrace.*.fdr)
trace=${traces[0]}
[[ -f $trace ]] || fail "sledtrace run wrote no trace" "$work/run.err"
timing "trace: $(($(stat -c %s "$trace") / 1000000)) MB"
raw=()
[[ ${PROFILE_RAW:-} == 1 ]] && raw=(--raw-times)
t0=$(now)
if ! "$SLEDTRACE" account "$trace" --format csv --names mangled "${raw[@]}" \
    >"$work/account.csv" 2>"$work/account.err" ||
    ! "$SLEDTRACE" account "$trace" --format csv "${raw[@]}" >"$work/account-names.csv" 2>/dev/null ||
    ! "$SLEDTRACE" account "$trace" --format csv --names mangled --raw-times \
        >"$work/account-raw.csv" 2>/dev/null; then
    fail "sledtrace account failed" "$work/account.err"
fi
timing "account (twice): $(took "$t0")"
cp "${trace%.fdr}.syms" "$work/trace.syms" || fail "no .syms beside $trace"
rm -rf "$tdir"

# ---- 4. the comparison -------------------------------------------------------------------------
shown=$recorded
[[ ${recorded%H} != "$event" ]] && shown="$recorded (asked for $event)"
echo "$name: perf event $shown at $freq Hz (call graphs: dwarf); sledtrace account${raw:+ ${raw[*]}}"
awk -v n="$name" 'sub(/^# times:/, "") { print n ": account'"'"'s times:" $0 }' "$work/account.err"
"$PYTHON" "$here/compare.py" --name "$name" --binary "$plain" --perf-script "$work/perf.script" \
    --syms "$work/trace.syms" --account "$work/account.csv" --display "$work/account-names.csv" \
    --raw-account "$work/account-raw.csv" \
    "${checks[@]}"
