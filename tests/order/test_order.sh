#!/usr/bin/env bash
# sledtrace order (issue 15.3), TAP. orderprog (built by meson with -ffunction-sections and lld)
# is traced; the order file must be exactly the first-call order the program makes; relinking
# with it must lay the functions out in that order (nm -n); and --pages must show the hot set
# on fewer text pages after than before. Environment (tests/order/meson.build): SLEDTRACE,
# PROG, SOURCE, CLANG, XRAY_NOLINK, INCLUDE.
set -uo pipefail

# shellcheck source=../tap.sh
. "$(dirname "$0")/../tap.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# the order the program makes: its hot set f490, f480, ..., f100, then the rest ascending
for k in $(seq 39 -1 0); do echo "f$((100 + 10 * k))"; done >expected
for i in $(seq 100 499); do ((i % 10)) && echo "f$i"; done >>expected

if out=$("$SLEDTRACE" run -o traces -- "$PROG" 2>run.err) && [[ $out == "calls 2400" ]]; then
    ok "orderprog runs traced"
else
    not_ok "orderprog runs traced" "$out" "$(cat run.err)"
fi
trace=$(ls traces/*.fdr 2>/dev/null | head -1)

if "$SLEDTRACE" order "$trace" -o order.txt 2>order.err && cmp -s expected order.txt; then
    ok "order: the first-call order, hot set first"
else
    not_ok "order: the first-call order, hot set first" "$(cat order.err)" \
        "$(diff expected order.txt 2>&1 | head -8)"
fi
if grep -qx '# 400 functions in first-call order from 1 trace' order.err; then
    ok "order: its summary counts the 400 functions"
else
    not_ok "order: its summary counts the 400 functions" "$(cat order.err)"
fi

# the same trace twice merges to the same order
if "$SLEDTRACE" order "$trace" "$trace" 2>/dev/null | cmp -s - expected; then
    ok "order: two traces merge"
else
    not_ok "order: two traces merge"
fi

# relink with the order: lld lays the functions out in it
# shellcheck disable=SC2086 # XRAY_NOLINK is one flag or none
if "$CLANG" -O2 -fxray-instrument -fxray-instruction-threshold=1 $XRAY_NOLINK -ffunction-sections \
    -fuse-ld=lld -Wl,--symbol-ordering-file=order.txt "$SOURCE" -o ordered 2>link.err; then
    ok "relinked with --symbol-ordering-file"
else
    not_ok "relinked with --symbol-ordering-file" "$(cat link.err)"
fi
if nm -n ordered | awk '$2 == "T" && $3 ~ /^f[0-9]+$/ { print $3 }' | cmp -s - expected; then
    ok "nm -n: the functions are laid out in the order"
else
    not_ok "nm -n: the functions are laid out in the order" \
        "$(nm -n ordered | awk '$3 ~ /^f[0-9]+$/ { print $3 }' | head -5)"
fi
if out=$(./ordered) && [[ $out == "calls 2400" ]]; then
    ok "the relinked program still runs"
else
    not_ok "the relinked program still runs" "$out"
fi

# the effect: distinct text pages the first calls touch, before and after
pages=$("$SLEDTRACE" order "$trace" -o /dev/null --pages "$PROG" --pages ordered 2>pages.err)
echo "$pages" | sed 's/^/# /'
before=$(sed -n 1p <<<"$pages" | sed -nE 's/.* ([0-9]+) by the first 1000 calls.*/\1/p')
after=$(sed -n 2p <<<"$pages" | sed -nE 's/.* ([0-9]+) by the first 1000 calls.*/\1/p')
# the hot set: 40 functions of 1 KiB, every tenth of 400 (one or two pages each) before, 40 KiB
# of neighbours after
if [[ -n $before && -n $after ]] && ((before >= 40 && after <= 12)); then
    ok "--pages: the first 1000 calls touch $before pages before, $after after"
else
    not_ok "--pages: fewer pages touched after" "$pages" "$(cat pages.err)"
fi
all_before=$(sed -n 1p <<<"$pages" | sed -nE 's/.* ([0-9]+) by all 2400 calls$/\1/p')
all_after=$(sed -n 2p <<<"$pages" | sed -nE 's/.* ([0-9]+) by all 2400 calls$/\1/p')
if [[ -n $all_before && $all_before == "$all_after" ]]; then
    ok "--pages: all calls touch the same $all_before pages either way"
else
    not_ok "--pages: all calls touch the same pages either way" "$pages"
fi

# errors: a binary that is not ELF, a missing trace
if ! "$SLEDTRACE" order "$trace" -o /dev/null --pages order.txt 2>err &&
    grep -q "^sledtrace: order: order.txt: offset 0: not an ELF file$" err; then
    ok "--pages: a file that is not ELF is refused in one line"
else
    not_ok "--pages: a file that is not ELF is refused in one line" "$(cat err)"
fi

tap_end
