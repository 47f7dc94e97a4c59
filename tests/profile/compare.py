#!/usr/bin/env python3
"""Self time per function, sledtrace against perf (issue 22's independent reference).

Both sides are reduced to the same thing: the share of each of the program's instrumented
functions in the time spent in all of them.

- sledtrace: `account --format csv --names mangled` of the traced (XRay) build: self_ns per
  function, summed over rows of the same name (two static functions of one name are one row on
  both sides), leaving out the tracer's `[sledtrace] ...` pseudo-functions. account's self of F
  includes the time in F's uninstrumented callees (libc, libstdc++, the program's own functions
  without sleds), which have no records of their own.
- perf: `perf script -F pid,ip,sym,dso --no-inline --no-demangle` of `perf record --call-graph
  dwarf` of the same program built without XRay. Each sample goes to the nearest frame of its
  call chain, leaf first, that lies in the program's binary and is one of the instrumented
  functions (the `f 0 ...` lines of the trace's .syms sidecar, object 0 being the program):
  that is what account charges the same time to. A sample with no such frame (the dynamic
  loader, libc before main or after exit) is left out and counted. Frame pointers would lose
  the caller of a libc leaf (memcpy does not set up a frame, so the chain skips from memcpy to
  its caller's caller); DWARF unwinding from the copied user stack does not.

Share of F = F's time / time of all the program's functions, on each side. Checks:
  --every PTS                every function within PTS points (mixleaf: 5)
  --min-share S --abs A --rel R
                             every function perf puts at S% or more within max(A points,
                             R% of its perf share) (sqlite, ninja: 2, 3, 30); the functions
                             sledtrace alone puts at S% or more are shown, not checked.
Prints a table (function, perf %, sledtrace %, difference, tolerance, ok) and a summary on
stdout. Exit status: 0 all within tolerance, 1 some function outside, 2 unusable input (no
samples attributed, too few, a missing file).
"""
import argparse
import collections
import csv
import os
import re
import sys

FRAME = re.compile(r"^\s+([0-9a-fA-F]+)\s+(.*)\s+\((.*)\)$")


def die(msg):
    print(f"compare: {msg}", file=sys.stderr)
    sys.exit(2)


def read_syms(path):
    """Names of the program's instrumented functions (object 0 of the sidecar)."""
    names = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 5 and parts[0] == "f" and parts[1] == "0":
                    names.add(parts[4])
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if not names:
        die(f"{path}: no function of object 0")
    return names


def read_account(path):
    """self_ns per function name from account's CSV, pseudo-functions left out; the first id
    of each name."""
    self_ns = collections.Counter()
    ids = {}
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = csv.DictReader(f)
            if rows.fieldnames is None or "self_ns" not in rows.fieldnames:
                die(f"{path}: not account's CSV (no self_ns column)")
            for row in rows:
                name = row["function"]
                if name.startswith("[sledtrace]"):
                    continue
                ids.setdefault(name, row["id"])
                try:
                    self_ns[name] += int(row["self_ns"])
                except ValueError:
                    pass  # '-': no finished call
    except OSError as e:
        die(f"{path}: {e.strerror}")
    return self_ns, ids


def read_display(path):
    """id -> the name account shows by default (C++ names short), from its CSV."""
    names = {}
    try:
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                names[row.get("id")] = row.get("function")
    except OSError as e:
        die(f"{path}: {e.strerror}")
    return names


def read_perf(path, binary, instrumented):
    """Samples per instrumented function; the counts of samples left out, by their leaf."""
    real = os.path.realpath(binary)
    base = os.path.basename(binary)
    counts = collections.Counter()
    skipped = collections.Counter()
    passed = collections.Counter()  # program frames passed on the way (no sleds there)
    total = 0

    def own(dso):
        return dso == real or dso == binary or os.path.basename(dso) == base

    def finish(frames):
        nonlocal total
        if not frames:
            return
        total += 1
        for sym, dso in frames:
            if own(dso) and sym in instrumented:
                counts[sym] += 1
                return
            if own(dso):
                passed[sym] += 1
        leaf_sym, leaf_dso = frames[0]
        skipped[f"{leaf_sym} ({os.path.basename(leaf_dso)})"] += 1

    frames = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = FRAME.match(line)
                if m:
                    frames.append((m.group(2), m.group(3)))
                elif line.strip() == "":
                    finish(frames)
                    frames = []
                else:  # a sample's header line (pid)
                    finish(frames)
                    frames = []
            finish(frames)
    except OSError as e:
        die(f"{path}: {e.strerror}")
    return counts, total, skipped, passed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", required=True, help="the program's name, for the table's title")
    ap.add_argument("--binary", required=True, help="the untraced binary perf recorded")
    ap.add_argument("--perf-script", required=True)
    ap.add_argument("--syms", required=True, help="the trace's .syms sidecar")
    ap.add_argument("--account", required=True, help="account --format csv of the trace")
    ap.add_argument("--display", help="account --format csv with its default names, to show "
                    "C++ functions by their short names (joined on id)")
    ap.add_argument("--every", type=float, help="every function within this many points")
    ap.add_argument("--min-share", type=float, default=2.0)
    ap.add_argument("--abs", type=float, default=3.0)
    ap.add_argument("--rel", type=float, default=30.0)
    ap.add_argument("--min-samples", type=int, default=500)
    ap.add_argument("--raw-account", help="account --raw-times --format csv of the same trace: "
                    "its shares are shown beside, and their error summed the same way")
    ap.add_argument("--better", type=float, help="decide by this instead of the tolerances: the "
                    "summed |diff| of the checked functions at most this fraction of the raw "
                    "times' (needs --raw-account); the tolerances are then only shown")
    a = ap.parse_args()

    instrumented = read_syms(a.syms)
    st, ids = read_account(a.account)
    display = read_display(a.display) if a.display else {}
    pf, total, skipped, passed = read_perf(a.perf_script, a.binary, instrumented)
    attributed = sum(pf.values())
    st_sum = sum(st.values())
    if attributed < a.min_samples:
        die(f"{a.perf_script}: {attributed} samples in the program's functions "
            f"(of {total}), fewer than {a.min_samples}: too few to compare")
    if st_sum <= 0:
        die(f"{a.account}: no self time in the program's functions")

    perf_pct = {k: 100.0 * v / attributed for k, v in pf.items()}
    st_pct = {k: 100.0 * v / st_sum for k, v in st.items()}
    raw_pct = None
    if a.raw_account:
        raw, _ = read_account(a.raw_account)
        raw_sum = sum(raw.values())
        if raw_sum <= 0:
            die(f"{a.raw_account}: no self time in the program's functions")
        raw_pct = {k: 100.0 * v / raw_sum for k, v in raw.items()}
    if a.better is not None and raw_pct is None:
        die("--better needs --raw-account")
    names = set(perf_pct) | set(st_pct)

    rows = []
    for n in names:
        p = perf_pct.get(n, 0.0)
        s = st_pct.get(n, 0.0)
        if a.every is not None:
            checked, tol = True, a.every
        else:
            checked = p >= a.min_share
            tol = max(a.abs, a.rel / 100.0 * p)
            if not checked and s < a.min_share:
                continue
        if a.every is not None and p < 0.05 and s < 0.05:
            continue
        rows.append((n, p, s, s - p, tol, checked, abs(s - p) <= tol))
    rows.sort(key=lambda r: (-max(r[1], r[2]), r[0]))

    def shown(n):
        n = display.get(ids.get(n), n)
        return n if len(n) <= 48 else n[:45] + "..."

    width = max([len("function")] + [len(shown(r[0])) for r in rows])
    print(f"{a.name}: self-time shares of the program's functions, perf vs sledtrace")
    rawcol = f"  {'raw %':>7}" if raw_pct is not None else ""
    print(f"{'function':<{width}}  {'id':>5}  {'perf %':>7}  {'sledtrace %':>11}  {'diff':>7}  "
          f"{'tol':>5}  ok{rawcol}")
    bad = 0
    err = err_raw = 0.0
    for n, p, s, d, tol, checked, good in rows:
        verdict = ("ok" if good else "FAIL") if checked else "-"
        bad += checked and not good
        rawv = ""
        if raw_pct is not None:
            r = raw_pct.get(n, 0.0)
            rawv = f"  {r:7.2f}"
            if checked:
                err += abs(d)
                err_raw += abs(r - p)
        print(f"{shown(n):<{width}}  {ids.get(n, '-'):>5}  {p:7.2f}  {s:11.2f}  {d:+7.2f}  "
              f"{tol:5.2f}  {verdict}{rawv}")
    print(f"perf: {attributed} of {total} samples in the program's instrumented functions; "
          f"sledtrace: {st_sum / 1e6:.3f} ms of self time in {len(st)} functions")
    if skipped:
        top = ", ".join(f"{k} {v}" for k, v in skipped.most_common(4))
        print(f"perf: {total - attributed} samples outside them (by leaf: {top})")
    if passed:
        top = ", ".join(f"{k} {v}" for k, v in passed.most_common(4))
        print(f"perf: program frames without sleds passed on the way up: {top}")
    checked_n = sum(1 for r in rows if r[5])
    print(f"{checked_n - bad} of {checked_n} checked functions within tolerance")
    if raw_pct is not None:
        print(f"summed |diff| of the checked functions: {err:.2f} points corrected, "
              f"{err_raw:.2f} as measured (--raw-times)")
    if a.better is not None:
        good = err <= a.better * err_raw
        print(f"corrected times {'closer' if good else 'NOT closer'} to perf than "
              f"{a.better:g} x the raw times' error ({err:.2f} vs {a.better * err_raw:.2f})")
        return 0 if good else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
