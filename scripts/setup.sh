#!/usr/bin/env bash
# Install what sledtrace needs on Debian 12 (only the missing packages), then
# configure and build it with meson. Safe to run any number of times, with no stdin
# and with CI=true. Installing packages needs root; when everything is already
# installed, no root is needed.
#
#   setup.sh          everything the tests need (three compilers, compiler-rt, llvm-xray,
#                     Criterion, Chromium, Graphviz and protoc), built into build/ with the test
#                     programs, and, where node and npm are installed, the npm packages of
#                     tests/viewers (npm ci, pinned by its package-lock.json) into
#                     build/tests/viewers
#   setup.sh --demo   only what the runtime, the sledtrace command and the demo need (clang,
#                     libelf, Capstone, meson), built into build-demo/ without tests
set -euo pipefail

cd "$(dirname "$0")/.."

MODE=all
case "${1:-}" in
"") ;;
--demo) MODE=demo ;;
*)
    printf 'usage: %s [--demo]\n' "$0" >&2
    exit 2
    ;;
esac

# libdw-dev (elfutils, as libelf-dev): the sledtrace command reads parameters' types from DWARF.
# libclang-rt-14-dev holds compiler-rt's XRay runtime; clang only recommends it, and recommends
# are not installed here.
# clang-19 and clang-22 build the end-to-end tests' programs a second and third way.
# libclang-rt-22-dev: clang-22 -fxray-shared links libclang_rt.xray-dso.a from it (tests/e2e/libxs.so).
# clang-format runs as the `style` test.
# man-db (with groff-base): the `install` test renders the installed manual pages with `man -l`.
# tmux: the top test runs `sledtrace top` in a real terminal and reads the screen back.
# lld: the order test relinks a program with sledtrace's symbol ordering file (-fuse-ld=lld).
# chromium and graphviz: the viewers-chromium test opens the flame graph and the call graph (laid
# out by graphviz's dot) in headless Chromium and reads back what a person would see there.
# linux-perf: the profile test compares sledtrace's self times with perf's sampling of the same
# program built without XRay (scripts/bench/profile.sh installs what its Debian-source builds
# need besides).
# protobuf-compiler: the perfetto test decodes the Perfetto export with protoc against Perfetto's
# own perfetto_trace.proto.
# python3-dev: the headers the Python module (tools/python) is built with, for Debian's python3;
# python3-pytest runs its tests, and python3-numpy and python3-pandas, optional for the module's
# users, are what its columnar exports are tested with.
# binutils: tests/no_tailcalls.sh and runtime_needed.sh read the runtime with objdump, nm and
# readelf (clang pulls it in too; named so that the tests do not rest on that).
PACKAGES=(meson ninja-build pkg-config libelf-dev libdw-dev libcapstone-dev libcriterion-dev clang llvm
    libclang-rt-14-dev clang-19 clang-22 libclang-rt-22-dev clang-format man-db chromium graphviz lld tmux
    linux-perf protobuf-compiler python3-dev python3-pytest python3-numpy python3-pandas binutils)
BUILD_DIR=build
MESON_OPTIONS=()
if [[ $MODE == demo ]]; then
    # clang brings libstdc++-12-dev, which the sledtrace command links for C++ demangling.
    PACKAGES=(meson ninja-build pkg-config libelf-dev libdw-dev libcapstone-dev clang)
    BUILD_DIR=build-demo
    MESON_OPTIONS=(-Dtests=disabled)
fi

log() { printf 'setup: %s\n' "$*" >&2; }

missing_packages() {
    local pkg status
    for pkg in "${PACKAGES[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        if [[ "$status" != "install ok installed" ]]; then
            printf '%s\n' "$pkg"
        fi
    done
}

# True when apt has no package lists yet (fresh container) or they are older than a day.
apt_lists_stale() {
    local lists=/var/lib/apt/lists
    if ! compgen -G "$lists/*_Packages*" >/dev/null; then
        return 0
    fi
    [[ -n "$(find "$lists" -maxdepth 1 -name '*_Packages*' -mmin +1440 -print -quit)" ]]
}

install_packages() {
    local -a missing
    mapfile -t missing < <(missing_packages)
    if ((${#missing[@]} == 0)); then
        log "all packages present"
        return 0
    fi
    log "missing packages: ${missing[*]}"
    if ((EUID != 0)); then
        log "error: installing packages needs root (run as root, or install: ${missing[*]})"
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    local updated=0
    if apt_lists_stale; then
        apt-get update </dev/null
        updated=1
    fi
    if ! apt-get install -y --no-install-recommends "${missing[@]}" </dev/null; then
        if ((updated)); then
            exit 1
        fi
        # The package lists may be outdated: refresh them once and retry.
        apt-get update </dev/null
        apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
    fi
}

configure_and_build() {
    if [[ -f "$BUILD_DIR/meson-private/coredata.dat" ]]; then
        # Already configured: meson compile regenerates by itself when a meson.build
        # changed. Only reconfigure when the configuration is no longer usable.
        if ! meson introspect --buildoptions "$BUILD_DIR" >/dev/null 2>&1; then
            log "reconfiguring $BUILD_DIR"
            meson setup --reconfigure "$BUILD_DIR" ||
                meson setup --wipe "$BUILD_DIR"
        fi
    else
        log "configuring $BUILD_DIR"
        meson setup "${MESON_OPTIONS[@]}" "$BUILD_DIR"
    fi
    meson compile -C "$BUILD_DIR"
}

# The viewers tests use npm packages: viewers-devtools loads the Chrome JSON export with the
# Chrome DevTools trace engine, viewers-chromium drives Chromium with playwright-core. Installed
# here, while the registry is reachable, so that the tests need no network (they run npm ci
# themselves when this did not). node and npm are not Debian packages here (node 20 comes with
# the machine); without them the tests are not built.
install_viewers() {
    local npm
    if ! command -v node >/dev/null || ! npm=$(command -v npm); then
        log "node or npm not found: no viewers tests"
        return 0
    fi
    if ! tests/viewers/install.sh tests/viewers "$BUILD_DIR/tests/viewers" "$npm"; then
        log "warning: npm ci failed; the viewers tests will try again (and fail without" \
            "the npm registry)"
    fi
}

install_packages
configure_and_build
if [[ $MODE == all ]]; then
    install_viewers
fi
