#!/usr/bin/env python3
"""The Perfetto export (`sledtrace convert --format perfetto`) decoded by protoc against the
official perfetto_trace.proto, and checked against what the other commands say (TAP).

For each trace (pfprog recorded with the runtime, with its times corrected and as measured; the
checked-in real traces of tests/format/data, one of them with a loss marker):
  - `protoc --decode=perfetto.protos.Trace` reads the whole file (the bytes are a valid Trace);
  - the decoding follows the proto's rules: one sequence per track, its first packet with
    SEQ_INCREMENTAL_STATE_CLEARED and the defaults (the track and the incremental clock 64 of a
    ClockSnapshot), every TrackEvent packet SEQ_NEEDS_INCREMENTAL_STATE, every name_iid interned
    earlier on its sequence, timestamps never stepping back on a track;
  - slices: begin and end balanced per track, a child within its parent; per function name the
    number of slices is account's count, the slices closed at a gap or at the end its
    `unfinished`, and, for times as measured, the time on the stack (per track, a slice counted
    unless an enclosing slice of the same name was closed by its own exit or a repair, as
    account's rule) its total_ns within 1 ns per call (each end rounds on its own). Corrected
    times are not compared (differences are printed as diagnostics): a corrected time can step
    back behind the track's last one, and the export then writes it at that last time (as the
    Chrome export moves it a step after), where account keeps signed durations;
  - the process name is the executable's base name `sledtrace info` lists, each thread track's
    (pid, tid, name) a row of info's thread table, each coroutine context a child track of its
    thread's;
  - loss markers: an "events lost" instant each, their counts adding up to info's drops;
  - pfprog: the custom and typed events as instants, the logged argument as annotation, the
    calls per function the Chrome export's (and their summed durations, for times as
    measured), and the file at most a quarter of the Chrome JSON's size.
Names are compared as account shows them; functions sharing a name are summed by name.

pfcount (pfcount.c, which scripts/bench/realsize.sh runs on traces too large for protoc) must
count the same slices per name as protoc's decoding.

Environment (tests/perfetto/meson.build): SLEDTRACE, PROTOC (empty: not found), PROTO_DIR,
PFPROG, PFCOUNT, DATA. Without protoc the test is skipped, except under CI (CI set), where it fails.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

n_checks = 0
n_failed = 0


def ok(cond, what, diag=""):
    global n_checks, n_failed
    n_checks += 1
    if cond:
        print(f"ok {n_checks} - {what}")
    else:
        n_failed += 1
        print(f"not ok {n_checks} - {what}")
        for line in str(diag).splitlines()[:40]:
            print(f"# {line}")
    return cond


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, **kw)


# --- protoc's text format -------------------------------------------------------------------

ESC = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", "'": b"'", '"': b'"'}


def unquote(s):
    """A text-format string literal ("..." with C escapes, octal for other bytes) as str."""
    assert s[0] == '"' and s[-1] == '"', s
    body, out, i = s[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
        elif body[i + 1] in ESC:
            out += ESC[body[i + 1]]
            i += 2
        elif body[i + 1] == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        else:
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
    return out.decode("utf-8")


def parse_text(text):
    """protoc --decode output as nested dicts: field -> list of values (dicts or scalars)."""
    root = {}
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith("{"):
            d = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(d)
            stack.append(d)
        else:
            k, v = line.split(":", 1)
            v = v.strip()
            if v.startswith('"'):
                v = unquote(v)
            elif re.fullmatch(r"-?\d+", v):
                v = int(v)
            stack[-1].setdefault(k, []).append(v)
    assert len(stack) == 1, "unbalanced braces"
    return root


def one(d, k, default=None):
    v = d.get(k)
    return v[0] if v else default


# --- the Perfetto trace, decoded as the proto documents it ----------------------------------


class Decoded:
    def __init__(self):
        self.errors = []
        self.tracks = {}  # uuid -> descriptor dict
        self.slices = []  # (track, name, start, end, depth, closed, parent index or None)
        self.instants = []  # (track, name, ts, annotations dict)
        self.end_args = {}  # name -> list of annotation dicts on ends


def annotations(te):
    out = {}
    for a in te.get("debug_annotations", []):
        name = one(a, "name")
        if "uint_value" in a:
            out[name] = one(a, "uint_value")
        elif "string_value" in a:
            out[name] = one(a, "string_value")
    return out


def decode(trace):
    d = Decoded()
    err = d.errors.append
    seqs = {}  # seq id -> state
    open_ = {}  # track -> stack of slice indexes
    last_ts = {}  # track -> last timestamp
    for pi, p in enumerate(trace.get("packet", [])):
        sid = one(p, "trusted_packet_sequence_id")
        if not sid:
            err(f"packet {pi}: no trusted_packet_sequence_id")
            continue
        s = seqs.setdefault(sid, {"cleared": False, "names": {}, "track": None, "clock": None})
        flags = one(p, "sequence_flags", 0)
        if flags & 1:
            s.update(cleared=True, names={}, track=None, clock=None)
        defaults = one(p, "trace_packet_defaults")
        if defaults:
            s["track"] = one(one(defaults, "track_event_defaults", {}), "track_uuid")
            s["clock_id"] = one(defaults, "timestamp_clock_id")
        for c in one(p, "clock_snapshot", {}).get("clocks", []):
            if one(c, "clock_id") == 64:
                if one(c, "is_incremental") != "true":
                    err(f"packet {pi}: clock 64 not incremental")
                s["clock"] = one(c, "timestamp")
        td = one(p, "track_descriptor")
        if td:
            d.tracks[one(td, "uuid")] = td
        for en in one(p, "interned_data", {}).get("event_names", []):
            s["names"][one(en, "iid")] = one(en, "name")
        te = one(p, "track_event")
        if not te:
            continue
        if not s["cleared"]:
            err(f"packet {pi}: event on sequence {sid} before SEQ_INCREMENTAL_STATE_CLEARED")
            continue
        if not flags & 2:
            err(f"packet {pi}: event without SEQ_NEEDS_INCREMENTAL_STATE")
        if s.get("clock_id") != 64 or s["clock"] is None:
            err(f"packet {pi}: sequence {sid} has no incremental clock 64")
            continue
        s["clock"] += one(p, "timestamp", 0)
        ts = s["clock"]
        track = one(te, "track_uuid", s["track"])
        if track is None or track not in d.tracks:
            err(f"packet {pi}: event on undescribed track {track}")
            continue
        if ts < last_ts.get(track, 0):
            err(f"packet {pi}: time {ts} before the track's last {last_ts[track]}")
        last_ts[track] = ts
        kind = one(te, "type")
        name = None
        if "name_iid" in te:
            name = s["names"].get(one(te, "name_iid"))
            if name is None:
                err(f"packet {pi}: name_iid {one(te, 'name_iid')} not interned on sequence {sid}")
                continue
        stack = open_.setdefault(track, [])
        if kind == "TYPE_SLICE_BEGIN":
            parent = stack[-1] if stack else None
            d.slices.append([track, name, ts, None, len(stack), None, parent])
            stack.append(len(d.slices) - 1)
        elif kind == "TYPE_SLICE_END":
            if not stack:
                err(f"packet {pi}: end with no open slice on track {track}")
                continue
            sl = d.slices[stack.pop()]
            sl[3] = ts
            args = annotations(te)
            sl[5] = args.get("closed")
            if "arg" in args:
                d.end_args.setdefault(sl[1], []).append(args)
        elif kind == "TYPE_INSTANT":
            d.instants.append((track, name, ts, annotations(te)))
        else:
            err(f"packet {pi}: unexpected type {kind}")
    for track, stack in open_.items():
        if stack:
            err(f"track {track}: {len(stack)} slices never ended")
    return d


# --- what the other commands say --------------------------------------------------------------


def account(sled, trace, raw):
    """Per function name: count, total_ns, unfinished; and whether the times are corrected."""
    r = run([sled, "account", "--format", "csv"] + raw + [trace], text=True)
    corrected = "# times: corrected" in r.stderr
    rows = {}
    for row in csv.DictReader(io.StringIO(r.stdout)):
        a = rows.setdefault(row["function"], {"count": 0, "total": 0, "unfinished": 0})
        a["count"] += int(row["count"])
        a["total"] += int(row["total_ns"]) if row["total_ns"] not in ("", "-") else 0
        a["unfinished"] += int(row["unfinished"])
    return rows, corrected


def info(sled, trace):
    out = run([sled, "info", trace], text=True).stdout
    threads, objects, drops, gaps, in_threads, in_objects = [], [], 0, 0, False, False
    for line in out.splitlines():
        m = re.match(r"drops:\s+(\d+)", line)
        if m:
            drops = int(m.group(1))
        m = re.match(r"gaps:\s+(\d+)", line)
        if m:
            gaps = int(m.group(1))
        if line.startswith("threads:"):
            in_threads = True
            continue
        if line.startswith("objects:"):
            in_threads, in_objects = False, True
            continue
        if in_threads:
            f = line.split(None, 10)
            if len(f) == 11 and f[0].isdigit():
                threads.append((int(f[1]), int(f[0]), None if f[10] == "-" else f[10]))
        elif in_objects:
            m = re.match(r"\s*\d+\s+(\(none recorded\)|[0-9a-f]+)\s+(.*)$", line)
            if m:
                objects.append(m.group(2))
            else:
                in_objects = False
    return {"threads": threads, "objects": objects, "drops": drops, "gaps": gaps}


# --- the checks ------------------------------------------------------------------------------


def check(env, work, label, trace, raw, expect_loss=False, pfprog=False):
    sled, protoc = env["SLEDTRACE"], env["PROTOC"]
    out = os.path.join(work, label + ".pftrace")
    r = run([sled, "convert", trace, "--format", "perfetto", "-o", out] + raw)
    if not ok(r.returncode == 0, f"{label}: convert --format perfetto", r.stderr.decode()):
        return
    with open(out, "rb") as f:
        r = run([protoc, "--decode=perfetto.protos.Trace", "-I", env["PROTO_DIR"],
                 os.path.join(env["PROTO_DIR"], "perfetto_trace.proto")], stdin=f)
    if not ok(r.returncode == 0 and not r.stderr, f"{label}: protoc decodes it as a Trace",
              r.stderr.decode()):
        return
    d = decode(parse_text(r.stdout.decode()))
    ok(not d.errors, f"{label}: sequences, interning, clocks and begin/end as the proto says",
       "\n".join(d.errors))

    # Nesting: a child within its parent.
    bad = [s for s in d.slices if s[6] is not None and
           not (d.slices[s[6]][2] <= s[2] <= s[3] <= d.slices[s[6]][3])]
    ok(not bad, f"{label}: every slice within its parent ({len(d.slices)} slices)",
       "\n".join(map(str, bad[:10])))

    # Against account.
    acc, corrected = account(sled, trace, raw)
    got = {}
    for i, s in enumerate(d.slices):
        g = got.setdefault(s[1], {"count": 0, "total": 0, "unfinished": 0, "counted": 0})
        g["count"] += 1
        if s[5] in ("gap", "unfinished"):
            g["unfinished"] += 1
            continue
        p, outer = s[6], True
        while p is not None:
            ps = d.slices[p]
            if ps[1] == s[1] and ps[5] not in ("gap", "unfinished"):
                outer = False
                break
            p = ps[6]
        if outer:
            g["total"] += s[3] - s[2]
            g["counted"] += 1
    diffs = []
    for name in sorted(set(acc) | set(got)):
        a, g = acc.get(name), got.get(name)
        if not a or not g:
            diffs.append(f"{name}: account {a}, perfetto {g}")
            continue
        if a["count"] != g["count"] or a["unfinished"] != g["unfinished"]:
            diffs.append(f"{name}: count/unfinished account {a['count']}/{a['unfinished']},"
                         f" perfetto {g['count']}/{g['unfinished']}")
        if abs(a["total"] - g["total"]) > max(g["counted"], 1):
            note = (f"{name}: total_ns account {a['total']}, perfetto {g['total']}"
                    f" over {g['counted']} calls")
            if corrected:
                print(f"# {label}: {note} (corrected times: not compared)")
            else:
                diffs.append(note)
    what = "counts and unfinished" if corrected else "counts, unfinished and totals"
    ok(not diffs, f"{label}: {what} per function are account's ({len(acc)} functions)",
       "\n".join(diffs))

    # pfcount (the wire-format reader for traces too large for protoc) agrees with protoc.
    if env.get("PFCOUNT"):
        r = run([env["PFCOUNT"], out], text=True)
        counted = {}
        for line in r.stdout.splitlines():
            if not line.startswith("#"):
                name, n = line.rsplit("\t", 1)
                counted[name] = int(n)
        want = {}
        for s in d.slices:
            want[s[1]] = want.get(s[1], 0) + 1
        ok(r.returncode == 0 and counted == want,
           f"{label}: pfcount reads the slices protoc decodes ({sum(want.values())})",
           r.stderr + "".join(f"{k}: protoc {want.get(k)}, pfcount {counted.get(k)}\n"
                              for k in sorted(set(want) | set(counted))
                              if want.get(k) != counted.get(k)))

    # Names against info.
    inf = info(sled, trace)
    procs = [t for t in d.tracks.values() if "process" in t]
    exe = inf["objects"][0] if inf["objects"] else None
    want_proc = os.path.basename(exe) if exe and exe != "-" else None
    pnames = [one(one(t, "process"), "process_name") for t in procs]
    ok(len(procs) >= 1 and all(n == want_proc for n in pnames),
       f"{label}: process name {want_proc!r}", f"process tracks: {pnames}")
    threads = sorted((one(one(t, "thread"), "pid"), one(one(t, "thread"), "tid"),
                      one(one(t, "thread"), "thread_name")) for t in d.tracks.values()
                     if "thread" in t)
    ok(threads == sorted(inf["threads"], key=lambda x: (x[0], x[1])),
       f"{label}: thread tracks are info's threads ({len(threads)})",
       f"perfetto {threads}\ninfo {inf['threads']}")
    thread_uuids = {one(t, "uuid") for t in d.tracks.values() if "thread" in t}
    ctx = [t for t in d.tracks.values() if "thread" not in t and "process" not in t]
    ok(all(one(t, "parent_uuid") in thread_uuids and
           re.fullmatch(r"context (\d+|at 0x[0-9a-f]+)", one(t, "name", "")) for t in ctx),
       f"{label}: {len(ctx)} context tracks, each a child of its thread's", str(ctx))

    # Loss markers.
    lost = [i for i in d.instants if i[1] == "events lost"]
    if expect_loss:
        ok(len(lost) == inf["gaps"] > 0 and sum(i[3]["count"] for i in lost) == inf["drops"],
           f"{label}: {inf['gaps']} loss markers, {inf['drops']} events lost, as instants",
           str(lost))
    else:
        ok(not lost and inf["drops"] == 0, f"{label}: no loss marker", str(lost))

    if pfprog:
        custom = [i for i in d.instants if i[1] == "custom event"]
        typed = [i for i in d.instants if i[1] == "typed event"]
        switches = [i for i in d.instants if i[1] == "context switch"]
        ok([i[3].get("payload") for i in custom] == [f"round {k}" for k in range(5)] and
           [(i[3].get("type"), i[3].get("payload")) for i in typed] ==
           [(9, f"round {k}") for k in range(5)],
           f"{label}: custom and typed events as instants", f"{custom}\n{typed}")
        ok(len(ctx) == 1 and len(switches) >= 9,
           f"{label}: the coroutine on a track of its own, {len(switches)} switches",
           f"{ctx}\n{switches}")
        ok([a.get("arg") for a in d.end_args.get("logged", [])] == list(range(5)),
           f"{label}: logged's argument on its slices", str(d.end_args))
        chrome = os.path.join(work, label + ".json")
        r = run([sled, "convert", trace, "--format", "chrome", "-o", chrome] + raw)
        ps, cs = os.path.getsize(out), os.path.getsize(chrome) if r.returncode == 0 else 0
        ok(r.returncode == 0 and 4 * ps <= cs,
           f"{label}: {ps} bytes, {ps / cs if cs else 0:.3f} of the Chrome JSON's {cs}")
        # The Chrome export's calls: per name the same number and summed durations within
        # 1 ns per call (its times are on a 2^-12 us grid, each moved a step after a tie).
        if r.returncode == 0:
            with open(chrome) as f:
                events = json.load(f)["traceEvents"]
            want = {}
            for e in events:
                if e["ph"] == "X":
                    w = want.setdefault(e["name"], [0, 0.0])
                    w[0] += 1
                    w[1] += e["dur"] * 1000
            have = {}
            for sl in d.slices:
                h = have.setdefault(sl[1], [0, 0])
                h[0] += 1
                h[1] += sl[3] - sl[2]
            bad = []
            for k in sorted(set(want) | set(have)):
                w, h = want.get(k, [0, 0.0]), have.get(k, [0, 0])
                line = f"{k}: chrome {w}, perfetto {h}"
                if w[0] != h[0]:
                    bad.append(line)
                elif abs(w[1] - h[1]) > h[0]:
                    if corrected:  # both clamp a time the correction steps back, each its way
                        print(f"# {label}: {line} (corrected times: durations not compared)")
                    else:
                        bad.append(line)
            ok(not bad, f"{label}: calls per function and, as measured, their summed durations"
               " are the Chrome export's", "\n".join(bad))


def main():
    env = {k: os.environ.get(k, "") for k in ("SLEDTRACE", "PROTOC", "PROTO_DIR", "PFPROG",
                                              "PFCOUNT", "DATA")}
    if not env["PROTOC"] or not os.access(env["PROTOC"], os.X_OK):
        why = "protoc not found (Debian package protobuf-compiler; scripts/setup.sh installs it)"
        if os.environ.get("CI"):
            print(f"not ok 1 - {why}\n1..1")
            return 1
        print(f"1..0 # SKIP {why}")
        print(f"perfetto: SKIPPED: {why}", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as work:
        r = run([env["SLEDTRACE"], "run", "-o", work, "--", env["PFPROG"]], text=True)
        traces = [f for f in os.listdir(work) if f.endswith(".fdr")]
        if ok(r.returncode == 0 and r.stdout == "pfprog ok\n" and len(traces) == 1,
              "pfprog recorded", r.stdout + r.stderr):
            t = os.path.join(work, traces[0])
            check(env, work, "pfprog", t, [], pfprog=True)
            check(env, work, "pfprog-raw", t, ["--raw-times"], pfprog=True)
        data = env["DATA"]
        check(env, work, "real-events", os.path.join(data, "real-events.fdr"), [])
        check(env, work, "real-mt", os.path.join(data, "real-mt.fdr"), [])
        check(env, work, "real-lossy", os.path.join(data, "real-lossy.fdr"), [],
              expect_loss=True)
    print(f"1..{n_checks}")
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
