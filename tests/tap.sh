# TAP output for the shell test suites (order, top): source it, call ok / not_ok per check and
# tap_end last (prints the plan, exits 1 after any failure). not_ok's further arguments are
# shown as '# ' diagnostic lines, each of their lines.
# shellcheck shell=bash
tap_n=0
tap_failed=0
ok() {
    tap_n=$((tap_n + 1))
    echo "ok $tap_n - $1"
}
not_ok() {
    tap_n=$((tap_n + 1))
    tap_failed=$((tap_failed + 1))
    echo "not ok $tap_n - $1"
    shift
    local arg
    for arg in "$@"; do
        printf '%s\n' "$arg" | sed 's/^/# /'
    done
}
tap_end() {
    echo "1..$tap_n"
    exit $((tap_failed > 0))
}
