# shellcheck shell=bash
# Shared helpers for the scripts in this directory. Source it; do not run it.
# Expects the caller to have set -euo pipefail and cd'd to the repository root.

CLANG=${CLANG:-clang}

# Print the spelling of "sleds but no XRay runtime" that $CLANG accepts:
# -fno-xray-link-deps (clang 19 and later) or -fnoxray-link-deps (clang 14).
# The probe links a tiny program, because the flag only matters at link time.
xray_no_link_deps_flag() {
    local dir flag
    dir=$(mktemp -d)
    printf 'int main(void) { return 0; }\n' >"$dir/probe.c"
    for flag in -fno-xray-link-deps -fnoxray-link-deps; do
        if "$CLANG" -fxray-instrument "$flag" "$dir/probe.c" -o "$dir/probe" \
            >/dev/null 2>&1; then
            rm -rf "$dir"
            printf '%s\n' "$flag"
            return 0
        fi
    done
    rm -rf "$dir"
    printf '%s: accepts neither -fno-xray-link-deps nor -fnoxray-link-deps\n' "$CLANG" >&2
    return 1
}

# The flags sledtrace expects a traced program to be compiled with
# (minus the link-deps flag, which the caller adds).
# shellcheck disable=SC2034  # used by the scripts that source this file
XRAY_CFLAGS=(-fxray-instrument -fxray-instruction-threshold=1)
