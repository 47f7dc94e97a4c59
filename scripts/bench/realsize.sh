#!/usr/bin/env bash
# A real-size trace through the exports (issue 25.5): Debian 12's sqlite3 3.40.1 shell, built with
# sleds by tests/profile/debsrc.sh, runs tests/profile/workload.sql (ROWS rows, LOOKUPS lookups)
# on an in-memory database, traced; then:
#   perfetto  `convert --format perfetto` of the whole trace: size, time, and pfcount
#             (tests/perfetto/pfcount.c, the wire-format reader that check.py holds to protoc)
#             must count exactly account's calls per function, every slice closed
#   chrome    the size `convert --format chrome` writes (to a pipe; REALSIZE_CHROME=0 skips it)
#   slowest   `sledtrace slowest sqlite3VdbeExec -n 3 -o slow.json`: its three calls must be
#             the ones `replay --order exit --min-duration D --filter sqlite3VdbeExec
#             --filter-only` shows (D: the third's duration; --filter-only: the function's own
#             calls, not its subtree), same starts and durations; and slow.json (bounded by
#             --max-calls) must load in the DevTools trace engine from npm
#             (tests/viewers/devtools-check.mjs, with tests/viewers' pinned node_modules, which
#             `meson test viewers-devtools` installs) with every call of the file in its tree
#   window    `convert --format chrome --from 100ms --to 110ms`: the DevTools engine must put
#             every call of the file in its tree, at the depth the file's own nesting gives it
#   args      SLEDTRACE_ARGS='sqlite3_prepare_v2@arg2/s,arg3,retval' on three statements: replay
#             must show each statement's SQL text as sqlite3_prepare_v2's second argument
#   seek      `account --from 300ms --to 300.5ms`: its time the first time (making the seek
#             index, tools/seek.h), the second time, and without the index (SLEDTRACE_CACHE=off,
#             reading each thread from its start up to the window); the outputs must be equal
# Each line says exact or NOT EXACT / the ratio. Not part of CI (it fetches and compiles sqlite3
# once, and writes and reads gigabytes); `scripts/bench.sh` does not call it either.
# Usage: scripts/bench/realsize.sh [WORKDIR]   (default build/bench/realsize; the sqlite3 builds
# stay there, the trace and exports go to a temporary directory, removed)
# Environment: ROWS (default 120000), LOOKUPS (50000), REALSIZE_CHROME (1), CLANG.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
work=${1:-build/bench/realsize}
mkdir -p "$work"
work=$(cd "$work" && pwd)
tool=$root/build/tools/sledtrace
preload=$root/build/preload/libsledtrace.so
pfcount=$root/build/tests/perfetto/pfcount
for f in "$tool" "$preload" "$pfcount"; do
    [[ -e $f ]] || { echo "realsize: build the project first (meson compile -C build): no $f" >&2; exit 2; }
done
clang=${CLANG:-clang}
nolink=-fnoxray-link-deps
"$clang" -fxray-instrument -fnoxray-link-deps -x c /dev/null -c -o /dev/null 2>/dev/null || nolink=-fno-xray-link-deps
if ! CLANG=$clang XRAY_NOLINK=$nolink tests/profile/debsrc.sh sqlite3 "$work" >/dev/null; then
    echo "realsize: sqlite3 not built (see $work/sqlite3.log)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SLEDTRACE_CACHE=$tmp/cache # the seek index of the trace (tools/seek.h) goes with it
sed -e "s/@ROWS@/${ROWS:-120000}/" -e "s/@LOOKUPS@/${LOOKUPS:-50000}/" tests/profile/workload.sql >"$tmp/w.sql"
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
now() { date +%s%N; }
t0=$(now)
LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$tmp/t "$work/sqlite3-xray" :memory: <"$tmp/w.sql" >/dev/null
t1=$(now)
trace=$(ls "$tmp"/t/*.fdr)
tsize=$(stat -c %s "$trace")
echo "real-size exports (scripts/bench/realsize.sh; sqlite3, ${ROWS:-120000} rows, ${LOOKUPS:-50000} lookups):"
printf '  %-10s %6.1f MB, recorded in %s s\n' trace "$(awk -v s="$tsize" 'BEGIN { print s / 1e6 }')" "$(secs "$t0" "$t1")"
"$tool" account "$trace" --format csv 2>/dev/null | awk -F, 'NR > 1 && !/^#/ { c[$1] += $3 } END { for (f in c) print f "\t" c[f] }' | sort >"$tmp/account.txt"
calls=$(awk -F'\t' '{ s += $2 } END { print s }' "$tmp/account.txt")
t0=$(now)
"$tool" convert "$trace" --format perfetto -o "$tmp/t.pftrace"
t1=$(now)
psize=$(stat -c %s "$tmp/t.pftrace")
if "$pfcount" "$tmp/t.pftrace" >"$tmp/pf.txt" 2>"$tmp/pf.err"; then
    grep -v '^#' "$tmp/pf.txt" | sort >"$tmp/pf.sorted"
    if cmp -s "$tmp/account.txt" "$tmp/pf.sorted"; then
        verdict="exact: $calls slices in $(wc -l <"$tmp/pf.sorted") functions, as account"
    else
        verdict="NOT EXACT: $(diff "$tmp/account.txt" "$tmp/pf.sorted" | grep -c '^[<>]') lines differ from account"
    fi
else
    verdict="NOT READ: $(cat "$tmp/pf.err")"
fi
printf '  %-10s %6.1f MB (%.1f bytes a call), %s s; %s\n' perfetto "$(awk -v s="$psize" 'BEGIN { print s / 1e6 }')" \
    "$(awk -v s="$psize" -v c="$calls" 'BEGIN { print s / c }')" "$(secs "$t0" "$t1")" "$verdict"
if [[ ${REALSIZE_CHROME:-1} != 0 ]]; then
    t0=$(now)
    csize=$("$tool" convert "$trace" --format chrome 2>/dev/null | wc -c)
    t1=$(now)
    printf '  %-10s %6.1f MB, %s s; perfetto is %s of it\n' chrome "$(awk -v s="$csize" 'BEGIN { print s / 1e6 }')" \
        "$(secs "$t0" "$t1")" "$(awk -v a="$psize" -v b="$csize" 'BEGIN { printf "%.3f", a / b }')"
fi
t0=$(now)
"$tool" slowest "$trace" sqlite3VdbeExec -n 3 -o "$tmp/slow.json" >"$tmp/slow.txt" 2>"$tmp/slow.err"
t1=$(now)
# rank, duration, start, tid: the same three rows as replay's start, duration (tid first there)
awk '$1 ~ /^[0-9]+$/ { print $4, $3, $2 }' "$tmp/slow.txt" | sort >"$tmp/slow.rows"
# the third's duration less one unit of its last shown digit (both round their own way)
third=$(awk '$1 == 3 { d = $2; match(d, /[a-z]+$/); printf "%.3f%s", substr(d, 1, RSTART - 1) - 0.001, substr(d, RSTART) }' "$tmp/slow.txt")
"$tool" replay "$trace" --order exit --min-duration "$third" --filter sqlite3VdbeExec --filter-only 2>/dev/null |
    awk '!/^#/ { print $1, $2, $3 }' | sort >"$tmp/replay.rows"
if [[ -s $tmp/slow.rows ]] && cmp -s "$tmp/slow.rows" "$tmp/replay.rows"; then
    confirm="replay shows the same $(wc -l <"$tmp/slow.rows") calls, starts and durations"
else
    confirm="NOT CONFIRMED by replay: $(paste -d'|' "$tmp/slow.rows" "$tmp/replay.rows" | tr '\n' ' ')"
fi
jsize=$(stat -c %s "$tmp/slow.json")
printf '  %-10s %s s; %s; slow.json %.1f MB\n' slowest "$(secs "$t0" "$t1")" "$confirm" \
    "$(awk -v s="$jsize" 'BEGIN { print s / 1e6 }')"
modules=$root/build/tests/viewers/node_modules
if [[ -d $modules/@paulirish/trace_engine ]] && command -v node >/dev/null; then
    want=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(sum(e.get("ph") == "X" for e in d["traceEvents"]))' "$tmp/slow.json")
    got=$(node tests/viewers/devtools-check.mjs "$modules" "$tmp/slow.json" | awk '$1 == "thread" { s += $4 } END { print s + 0 }')
    if [[ $want == "$got" ]]; then
        dv="all $got calls of slow.json in its call tree"
    else
        dv="NOT ALL: $got of $want calls in its call tree"
    fi
    printf '  %-10s %s\n' devtools "$dv"
else
    printf '  %-10s skipped: no %s (meson test -C build viewers-devtools installs it)\n' devtools "$modules"
fi
t0=$(now)
"$tool" convert "$trace" --format chrome --from 100ms --to 110ms -o "$tmp/window.json" 2>/dev/null
t1=$(now)
wsize=$(stat -c %s "$tmp/window.json")
if [[ -d $modules/@paulirish/trace_engine ]] && command -v node >/dev/null; then
    # the depth of every complete event from the file's own nesting, per thread: "calls d0 d1 ..."
    want=$(python3 - "$tmp/window.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = sorted((e for e in d["traceEvents"] if e.get("ph") == "X"),
            key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"]))
out = {}
for e in ev:
    st = out.setdefault((e["pid"], e["tid"]), ([], []))
    stack, depths = st
    while stack and stack[-1] <= e["ts"]:
        stack.pop()
    depth = len(stack)
    while len(depths) <= depth:
        depths.append(0)
    depths[depth] += 1
    stack.append(e["ts"] + e["dur"])
print(" ".join(f"{sum(dp)}:{','.join(map(str, dp))}" for _, dp in sorted(out.values(), key=lambda v: -sum(v[1]))))
PY
)
    got=$(node tests/viewers/devtools-check.mjs "$modules" "$tmp/window.json" |
        awk '$1 == "thread" { s = $4 ":"; for (i = 5; i <= NF; i++) s = s (i > 5 ? "," : "") $i; print s }' | sort -t: -k1,1nr | tr '\n' ' ' | sed 's/ $//')
    if [[ $want == "$got" ]]; then
        wv="every call at its depth in the DevTools engine ($got)"
    else
        wv="NOT AS NESTED: DevTools $got, the file $want"
    fi
else
    wv="DevTools check skipped (no node_modules)"
fi
printf '  %-10s %.1f MB, %s s; %s\n' window "$(awk -v s="$wsize" 'BEGIN { print s / 1e6 }')" "$(secs "$t0" "$t1")" "$wv"
w=(--from 300ms --to 300.5ms)
t0=$(now)
SLEDTRACE_CACHE=off "$tool" account "$trace" "${w[@]}" >"$tmp/seek0.txt" 2>&1
rm -rf "$SLEDTRACE_CACHE" # made by the window above: made again here, timed
t1=$(now)
"$tool" account "$trace" "${w[@]}" >"$tmp/seek1.txt" 2>&1
t2=$(now)
"$tool" account "$trace" "${w[@]}" >"$tmp/seek2.txt" 2>&1
t3=$(now)
if cmp -s "$tmp/seek0.txt" "$tmp/seek1.txt" && cmp -s "$tmp/seek0.txt" "$tmp/seek2.txt"; then
    sv="the same output each way"
else
    sv="NOT THE SAME output with the index"
fi
printf '  %-10s account %s: %s s from the threads\x27 starts, %s s making the index, %s s with it; %s\n' \
    seek "${w[*]}" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" "$(secs "$t2" "$t3")" "$sv"
printf 'CREATE TABLE t(a INTEGER, b TEXT);\nINSERT INTO t VALUES(1, "x");\nSELECT count(*) FROM t WHERE a > 0;\n' >"$tmp/q.sql"
SLEDTRACE_ARGS='sqlite3_prepare_v2@arg2/s,arg3,retval' LD_PRELOAD=$preload SLEDTRACE_OUTPUT=$tmp/args \
    "$work/sqlite3-xray" :memory: <"$tmp/q.sql" >/dev/null
"$tool" replay "$(ls "$tmp"/args/*.fdr)" --filter sqlite3_prepare_v2 --filter-only >"$tmp/args.txt" 2>&1
seen=0
for q in 'CREATE TABLE t(a INTEGER, b TEXT);' 'INSERT INTO t VALUES(1, \"x\");' 'SELECT count(*) FROM t WHERE a > 0;'; do
    grep -qF "sqlite3_prepare_v2(" "$tmp/args.txt" && grep -qF "\"$q" "$tmp/args.txt" && seen=$((seen + 1))
done
if ((seen == 3)); then
    av="replay shows the SQL text of all 3 statements as sqlite3_prepare_v2's argument"
else
    av="NOT SHOWN: $seen of 3 statements; replay said: $(head -3 "$tmp/args.txt" | tr '\n' ' ')"
fi
printf '  %-10s %s\n' args "$av"
