#!/usr/bin/env bash
# Builds a Debian package of sledtrace from this tree: the whole `meson install` (the command,
# the runtime, sledtrace.h, libsledtrace-format, the pkg-config files, the manual pages and the
# bash completion) as one binary package, sledtrace_VERSION_ARCH.deb.
#
#   scripts/package-deb.sh [-b BUILD_DIR] [-o OUT_DIR] [--no-lintian]
#
# BUILD_DIR (default build-deb, relative to the repository root) is a meson build directory of
# its own, configured with --prefix=/usr (so the libdir is Debian's multiarch one) and without
# the tests; it is reused when it exists. The package is staged with `meson install --destdir`,
# then made as Debian expects: binaries stripped, manual pages compressed, /usr/share/doc/
# sledtrace with the copyright file and a compressed changelog, shared libraries not
# executable, an ldconfig trigger, shlibs and symbols files for libsledtrace-format.so.0,
# md5sums, and a control file whose Depends come from dpkg-shlibdeps when dpkg-dev is installed
# (else libc6, libelf1, libdw1 and libstdc++6 by hand), plus the Capstone and libelf libraries the
# runtime loads with dlopen (which dpkg-shlibdeps cannot see), unless already named. dpkg-deb --build --root-owner-group makes the
# .deb in OUT_DIR (default BUILD_DIR). Then lintian checks it, when installed and unless
# --no-lintian; the tags that remain, and why, are in the override file written below and in
# README.md ("Install").
#
# Maintainer: $DEBFULLNAME <$DEBEMAIL> when set, else git's user.name and user.email.
# Needs: meson, ninja, the build dependencies of sledtrace, dpkg-deb, gzip, binutils (strip,
# nm); optionally dpkg-dev (dpkg-shlibdeps) and lintian. No root needed. Prints the .deb's
# path on stdout (last line); everything else goes to stderr.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
build='build-deb'
out=
lintian=1
while (($#)); do
    case $1 in
    -b)
        build=${2:?-b needs a directory}
        shift
        ;;
    -o)
        out=${2:?-o needs a directory}
        shift
        ;;
    --no-lintian) lintian=0 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        printf 'usage: %s [-b BUILD_DIR] [-o OUT_DIR] [--no-lintian]\n' "$0" >&2
        exit 2
        ;;
    esac
    shift
done
[[ $build == /* ]] || build=$root/$build
out=${out:-$build}
[[ $out == /* ]] || out=$root/$out

log() { printf 'package-deb: %s\n' "$*" >&2; }

# ---- build and stage ----------------------------------------------------------------------
# Linked with -z relro -z now, as Debian's build flags ask (the runtime already is). The compile
# flags are the project's own, those the test suite checks: no _FORTIFY_SOURCE (README.md,
# "Install", says what lintian reports about it).
options=(-Dprefix=/usr -Dtests=disabled "-Dc_link_args=-Wl,-z,relro -Wl,-z,now")
if [[ -f "$build/meson-private/coredata.dat" ]]; then
    meson configure "$build" "${options[@]}" >&2
else
    log "configuring $build"
    meson setup "$build" "${options[@]}" >&2
fi
meson compile -C "$build" >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/sledtrace-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
pkg=$work/root
meson install -C "$build" --no-rebuild --destdir "$pkg" >&2

base=$(meson introspect --projectinfo "$build" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
# with the commit count and hash, so that a later build's package orders after an earlier one's
version=$("$root/scripts/version.sh" "$root" "$base")
libdir=$(meson introspect --buildoptions "$build" |
    python3 -c 'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"][0])')
arch=$(dpkg --print-architecture)
doc=$pkg/usr/share/doc/sledtrace
runtime=$pkg/usr/$libdir/sledtrace/libsledtrace.so
fmtlib=$pkg/usr/$libdir/libsledtrace-format.so.0
for f in "$pkg/usr/bin/sledtrace" "$runtime" "$fmtlib"; do
    [[ -e $f ]] || { log "error: $f was not installed"; exit 1; }
done

# ---- what Debian expects of the files -------------------------------------------------------
# Binaries stripped as dh_strip does (policy 10.1), shared libraries not executable (8.1),
# manual pages and changelogs compressed with gzip -9n (12.1, 12.7).
mapfile -t elves < <(find "$pkg/usr" -type f | while read -r f; do
    [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] && echo "$f"; done)
for f in "${elves[@]}"; do
    case $f in
    *.so*) strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f" ;;
    *) strip --remove-section=.comment --remove-section=.note "$f" ;;
    esac
done
find "$pkg/usr/lib" -type f -name '*.so*' -exec chmod 0644 {} +
find "$pkg/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} +
mkdir -p "$doc"
gzip -9n <README.md >"$doc/README.md.gz"

if [[ -n ${DEBFULLNAME:-} && -n ${DEBEMAIL:-} ]]; then
    maintainer="$DEBFULLNAME <$DEBEMAIL>"
elif name=$(git config user.name) && email=$(git config user.email); then
    maintainer="$name <$email>"
else
    log "error: set DEBFULLNAME and DEBEMAIL (or git's user.name and user.email)"
    exit 1
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The changelog's date: SOURCE_DATE_EPOCH, else the commit's, so that the package is reproducible.
if [[ -n ${SOURCE_DATE_EPOCH:-} ]]; then
    date=$(date -R -u -d "@$SOURCE_DATE_EPOCH")
else
    date=$(git log -1 --format=%cD 2>/dev/null || date -R)
fi
# A native package (no Debian revision): its changelog is changelog.gz.
gzip -9n >"$doc/changelog.gz" <<EOF
sledtrace ($version) unstable; urgency=medium

  * Built from the sledtrace sources, commit $commit, by scripts/package-deb.sh.

 -- $maintainer  $date
EOF

cat >"$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sledtrace

Files: *
Copyright: 2026 The sledtrace authors
License: MIT

License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to deal
 in the Software without restriction, including without limitation the rights
 to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all
 copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 SOFTWARE.
EOF

# One package holds what Debian would split into sledtrace, libsledtrace-format0 and
# libsledtrace-format-dev: lintian's tags about that split are overridden, with the reason.
mkdir -p "$pkg/usr/share/lintian/overrides"
cat >"$pkg/usr/share/lintian/overrides/sledtrace" <<'EOF'
# One package of the whole install (scripts/package-deb.sh): the trace reading library, its
# development symlink and headers ship with the tool instead of libsledtrace-format0 and
# libsledtrace-format-dev.
sledtrace: package-name-doesnt-match-sonames libsledtrace-format0
sledtrace: link-to-shared-library-in-wrong-package *
EOF

# ---- control files --------------------------------------------------------------------------
mkdir -p "$pkg/DEBIAN"
depends=
if command -v dpkg-shlibdeps >/dev/null; then
    mkdir -p "$work/src/debian"
    printf 'Source: sledtrace\n\nPackage: sledtrace\nArchitecture: any\n' >"$work/src/debian/control"
    depends=$(cd "$work/src" && dpkg-shlibdeps -O "${elves[@]/#/-e}" 2>/dev/null |
        sed -n 's/^shlibs:Depends=//p') || depends=
fi
if [[ -z $depends ]]; then
    log "dpkg-shlibdeps unavailable or failed: Depends listed by hand"
    depends="libc6 (>= 2.34), libelf1, libdw1, libstdc++6"
fi
# The runtime loads Capstone (to prove sleds) with dlopen, so dpkg-shlibdeps cannot see it there:
# its package, found by soname, unless already named. (libelf is the tools', linked.)
for pat in 'libcapstone\.so\.[0-9]+'; do
    soname=$(grep -aoE "$pat" "$runtime" | head -n 1)
    [[ -n $soname ]] || continue
    sopkg=$(dpkg-query -S "*/$soname" 2>/dev/null | head -n 1 | cut -d: -f1) || sopkg=
    [[ -n $sopkg ]] || sopkg=${soname%%.so.*}${soname##*.so.}
    [[ ", $depends," == *", $sopkg"[\ ,]* ]] || depends="$depends, $sopkg"
done

size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<EOF
Package: sledtrace
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Recommends: bash-completion
Suggests: clang, llvm
Section: devel
Priority: optional
Description: function tracer for programs built with clang -fxray-instrument
 sledtrace records every call of the instrumented functions of a program
 built with clang -fxray-instrument, without linking anything into it: its
 runtime, preloaded into the program, patches the XRay sleds clang leaves in
 each function and writes the calls to a trace in LLVM's XRay FDR format,
 which llvm-xray reads too.
 .
 The sledtrace command runs programs under the runtime and analyses their
 traces: per-function statistics (account), call trees (replay), aggregated
 call stacks and flame graphs, call graphs, the slowest calls of a function,
 comparisons between traces or builds (diff), a live view (top, live), link
 order files (order), and exports to Chrome trace JSON, Perfetto and
 llvm-xray's YAML.
 .
 The package also holds the runtime's control API (sledtrace.h) and
 libsledtrace-format, a library for programs that read the traces, each with
 a pkg-config file.
EOF
# libsledtrace-format.so.0 is a public shared library: ldconfig trigger, shlibs and symbols.
echo 'activate-noawait ldconfig' >"$pkg/DEBIAN/triggers"
echo "libsledtrace-format 0 sledtrace (>= $version)" >"$pkg/DEBIAN/shlibs"
{
    echo "libsledtrace-format.so.0 sledtrace #MINVER#"
    echo "* Build-Depends-Package: sledtrace"
    nm -D --defined-only "$fmtlib" | awk -v v="$version" '{ printf " %s@Base %s\n", $3, v }' |
        sort
} >"$pkg/DEBIAN/symbols"
(cd "$pkg" && find usr -type f | sort | xargs md5sum) \
    >"$pkg/DEBIAN/md5sums"
chmod 0644 "$pkg/DEBIAN"/*

mkdir -p "$out"
deb=$out/sledtrace_${version}_$arch.deb
dpkg-deb --build --root-owner-group "$pkg" "$deb" >&2
log "Depends: $depends"

if ((lintian)) && command -v lintian >/dev/null; then
    log "lintian $deb"
    lintian --info --display-info --pedantic "$deb" >&2 || true
elif ((lintian)); then
    log "lintian is not installed: the package is not checked (apt-get install lintian)"
fi
printf '%s\n' "$deb"
