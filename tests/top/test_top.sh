#!/usr/bin/env bash
# sledtrace top (issues 16.3, 28.7), TAP: --once on a finished trace (exact calls, top function
# first); the incremental reading against the whole one: a trace of three threads written with
# a 50 ms flush period, read by --test-stages N (copied into a file that grows in N steps cut
# anywhere, a read after each) must give --once's table byte for byte (exact calls and self of
# every function), with reads that met a torn block and no warning (a torn block's are not
# the trace's); then the live screen in a real terminal
# (tmux, read back with capture-pane) while topprog is traced with a 100 ms flush period: it
# shows the program running, busy() on top and what its "(last)" columns cover, then the
# program's end with every call counted, and exits; 'q', SIGINT and SIGTERM quit it early,
# the terminal restored. Environment (tests/top/meson.build): SLEDTRACE, PROG, TMUX_BIN.
set -uo pipefail

# shellcheck source=../tap.sh
. "$(dirname "$0")/../tap.sh"

tmp=$(mktemp -d)
sock=$tmp/tmux.sock
tm() { "$TMUX_BIN" -S "$sock" "$@"; }
cleanup() {
    tm kill-server 2>/dev/null
    [[ -n ${prog_pid-} ]] && kill "$prog_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1

# waits up to $2 tenths of a second for the file $1
wait_file() {
    local i
    for ((i = 0; i < $2; i++)); do
        [[ -s $1 ]] && return 0
        sleep 0.1
    done
    return 1
}

# the first trace in directory $1, waiting up to 5 s for the runtime to create it
first_trace() {
    local i t
    for ((i = 0; i < 50; i++)); do
        t=$(ls "$1"/*.fdr 2>/dev/null | head -1)
        [[ -n $t ]] && break
        sleep 0.1
    done
    echo "$t"
}

# 1. --once on a finished trace
"$SLEDTRACE" run -o once -- "$PROG" 300 >once.out 2>/dev/null
rounds=$(sed -n 's/^rounds //p' once.out)
trace=$(ls once/*.fdr 2>/dev/null | head -1)
out=$("$SLEDTRACE" top --once "$trace" 2>&1)
first=$(awk '/^ +self +calls +function$/ { getline; print $NF; exit }' <<<"$out")
busy=$(awk '$NF == "busy" { print $(NF - 1) }' <<<"$out")
rest=$(awk '$NF == "rest" { print $(NF - 1) }' <<<"$out")
if [[ -n $rounds && $busy == "$rounds" && $rest == "$rounds" && $first == busy ]]; then
    ok "--once: busy and rest called $rounds times each, busy on top"
else
    not_ok "--once: exact calls, busy on top" "rounds $rounds" "$out"
fi

# 1b. incremental reads == one whole read
"$SLEDTRACE" run -o stages --flush-ms 50 -- "$PROG" 1500 3 >stages.out 2>/dev/null
rounds=$(sed -n 's/^rounds //p' stages.out)
trace=$(ls stages/*.fdr 2>/dev/null | head -1)
for opts in "" "--raw-times" "--filter nest"; do
    # shellcheck disable=SC2086 # opts: words
    "$SLEDTRACE" top --once $opts "$trace" >whole.txt 2>&1
    busy=$(awk '$NF == "busy" { print $(NF - 1) }' whole.txt)
    nest=$(awk '$NF == "nest" { print $(NF - 1) }' whole.txt)
    want_busy=$rounds
    [[ $opts == --filter* ]] && want_busy=
    for n in 7 500; do
        # shellcheck disable=SC2086
        "$SLEDTRACE" top --test-stages "$n" $opts "$trace" >inc.txt 2>inc.err
        torn=$(sed -n 's/.* stages, \([0-9]*\) reads stopped at a torn block, 0 warnings$/\1/p' inc.err)
        if [[ -n $rounds && $busy == "$want_busy" && $nest == $((4 * rounds)) ]] &&
            cmp -s whole.txt inc.txt && [[ -n $torn && $torn -gt 0 ]]; then
            ok "incremental ${opts:-(default)}: $n reads ($torn at a torn block, no warning) == one whole read, nest $nest calls"
        else
            not_ok "incremental ${opts:-(default)}: $n reads == one whole read" \
                "rounds $rounds busy $busy nest $nest torn $torn" "$(diff whole.txt inc.txt)" \
                "$(cat inc.err)"
        fi
    done
done

# 2. live, in a terminal
"$SLEDTRACE" run -o live --flush-ms 100 -- "$PROG" 2500 >live.out 2>/dev/null &
prog_pid=$!
trace=$(first_trace live)
tm new-session -d -s top -x 120 -y 30 \
    "'$SLEDTRACE' top --interval 200 '$trace'; echo exit=\$? >'$tmp/done'; sleep 30"
sleep 1.2
screen=$(tm capture-pane -p -t top)
if grep -q '(running)' <<<"$screen" &&
    awk '$NF == "busy" && $3 + 0 > 0 { found = 1 } END { exit !found }' <<<"$screen" &&
    awk '/calls \(last\)/ { getline; exit $NF != "busy" }' <<<"$screen" &&
    grep -Eq '\(last\) = the last [0-9]+\.[0-9]{2} s$' <<<"$screen"; then
    ok "live: the running program, busy() on top with calls in the last interval, its length"
else
    not_ok "live: the running program, busy() on top" "$screen"
fi
wait "$prog_pid"
prog_pid=
rounds=$(sed -n 's/^rounds //p' live.out)
if wait_file "$tmp/done" 50 && [[ $(cat "$tmp/done") == exit=0 ]]; then
    ok "live: top exits 0 once the program has ended"
else
    not_ok "live: top exits 0 once the program has ended" "$(cat "$tmp/done" 2>&1)"
fi
screen=$(tm capture-pane -p -t top)
busy=$(awk '$NF == "busy" { print $(NF - 1) }' <<<"$screen")
if grep -q '(ended)' <<<"$screen" && [[ -n $rounds && $busy == "$rounds" ]]; then
    ok "live: its last screen says ended and counts all $rounds calls of busy"
else
    not_ok "live: the last screen counts every call" "rounds $rounds" "$screen"
fi
tm kill-session -t top 2>/dev/null

# 3. q quits
rm -f "$tmp/done"
"$SLEDTRACE" run -o q --flush-ms 100 -- "$PROG" 20000 >/dev/null 2>&1 &
prog_pid=$!
trace=$(first_trace q)
tm new-session -d -s q -x 120 -y 30 \
    "'$SLEDTRACE' top --interval 200 '$trace'; echo exit=\$? >'$tmp/done'; stty -a >'$tmp/stty'; sleep 30"
sleep 0.8
tm send-keys -t q q
if wait_file "$tmp/done" 30 && [[ $(cat "$tmp/done") == exit=0 ]]; then
    ok "q quits, exit status 0, while the program still runs"
else
    not_ok "q quits" "$(tm capture-pane -p -t q)"
fi
if wait_file "$tmp/stty" 20 && grep -qw icanon "$tmp/stty" && grep -qw echo "$tmp/stty"; then
    ok "the terminal is left in canonical mode with echo"
else
    not_ok "the terminal is restored" "$(cat "$tmp/stty" 2>&1)"
fi
kill "$prog_pid" 2>/dev/null
wait "$prog_pid" 2>/dev/null
prog_pid=

# 3b. SIGINT and SIGTERM quit, the terminal restored: top's pid is the pane shell's child
for sig in INT TERM; do
    rm -f "$tmp/done" "$tmp/stty"
    "$SLEDTRACE" run -o "sig$sig" --flush-ms 100 -- "$PROG" 20000 2 >/dev/null 2>&1 &
    prog_pid=$!
    trace=$(first_trace "sig$sig")
    tm new-session -d -s "s$sig" -x 120 -y 30 \
        "'$SLEDTRACE' top --interval 200 '$trace'; echo exit=\$? >'$tmp/done'; stty -a >'$tmp/stty'; sleep 30"
    sleep 0.8
    shell=$(tm display-message -p -t "s$sig" '#{pane_pid}')
    top_pid=$(ps -o pid= --ppid "$shell" | head -1 | tr -d ' ')
    [[ -n $top_pid ]] && kill -s "$sig" "$top_pid"
    want=$((128 + $(kill -l "$sig")))
    if [[ -n $top_pid ]] && wait_file "$tmp/done" 30 && [[ $(cat "$tmp/done") == "exit=$want" ]] &&
        wait_file "$tmp/stty" 20 && grep -qw icanon "$tmp/stty" && grep -qw echo "$tmp/stty"; then
        ok "SIG$sig quits (exit $want) while the program runs, the terminal restored"
    else
        not_ok "SIG$sig quits" "top pid '$top_pid'" "$(cat "$tmp/done" 2>&1)" \
            "$(tm capture-pane -p -t "s$sig")"
    fi
    tm kill-session -t "s$sig" 2>/dev/null
    kill "$prog_pid" 2>/dev/null
    wait "$prog_pid" 2>/dev/null
    prog_pid=
done

# 4. errors: one line, non-zero
if ! "$SLEDTRACE" top --once nosuch.fdr 2>err && [[ $(wc -l <err) == 1 ]] &&
    grep -q '^sledtrace: .*nosuch.fdr' err; then
    ok "a missing trace: one line, non-zero"
else
    not_ok "a missing trace: one line, non-zero" "$(cat err)"
fi

tap_end
