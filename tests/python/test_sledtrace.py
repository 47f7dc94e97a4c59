"""The Python module on the checked-in golden traces (tests/format/data), checked against the
sledtrace command itself: `dump` for the items, `account --format csv` for the calls."""

import csv
import io
import os
import re
import shutil
import subprocess
import sys

import pytest

import sledtrace

TRACES = ["real-events", "real-lossy", "real-mt"]


def run(sledtrace_bin, *args):
    return subprocess.run([sledtrace_bin, *args], check=True, capture_output=True,
                          text=True).stdout


def sidecar_names(path):
    """id -> name from a sidecar's f lines (id = objid << 24 | fid)."""
    names = {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "f":
            names[int(f[1]) << 24 | int(f[2])] = f[4]
    return names


DUMP_KINDS = {"NewBuffer": "new-buffer", "Walltime": "walltime", "Pid": "pid",
              "NewCPUId": "cpu-change", "TSCWrap": "tsc-wrap", "CallArgument": "call-arg",
              "TypedEvent": "typed-event", "EndOfBuffer": "end-of-buffer"}


def dump_items(sledtrace_bin, path):
    """(tid, offset, kind, tsc, func_id) per record as `sledtrace dump` prints them, without
    the BufferExtents framing (which the cursor does not hand out)."""
    out = []
    for line in run(sledtrace_bin, "dump", str(path)).splitlines():
        f = line.split()
        fields = dict(x.split("=", 1) for x in f[2:] if "=" in x)
        kind = f[1]
        if kind == "BufferExtents":
            continue
        if kind == "Function":
            kind = fields["action"]
        elif kind == "CustomEvent":
            kind = "loss" if "LOST" in fields else "custom-event"
        else:
            kind = DUMP_KINDS[kind]
        fid = int(fields["id"]) if "id" in fields else None
        out.append((int(fields["tid"]), int(f[0]), kind, int(fields["tsc"]), fid))
    return out


def walk(cursor):
    return list(cursor)


@pytest.mark.parametrize("name", TRACES)
def test_items_equal_dump(sledtrace_bin, data, name):
    """Every thread's walk is the dump's records of that thread, in file order, with the same
    kind, timestamp, function id and the sidecar's name."""
    path = data / (name + ".fdr")
    names = sidecar_names(data / (name + ".syms"))
    expect = dump_items(sledtrace_bin, path)
    with sledtrace.open(path) as t:
        got = []
        for th in t.threads:
            for it in th.cursor():
                assert (it.pid, it.tid) == (th.pid, th.tid)
                got.append((it.tid, it.offset, it.kind, it.tsc, it.func_id))
                if it.func_id is not None:
                    assert it.name == names[it.func_id]
                    assert it.name == t.name(it.func_id)
                else:
                    assert it.name is None
                if it.tsc:
                    assert it.ns == t.ticks_to_ns(it.tsc - t.base_tsc)
                else:
                    assert it.ns is None
        assert t.warnings == []
    assert sorted(got, key=lambda x: x[1]) == expect
    assert len(got) == len(expect)


def test_threads(data):
    with sledtrace.open(data / "real-mt.fdr") as t:
        assert [(th.pid, th.tid) for th in t.threads] == [
            (14223, 14223), (14223, 14226), (14223, 14225)]
        assert [th.name for th in t.threads] == [None, None, None]
        assert t.freq == 2596127653
        assert t.version == 5
    with sledtrace.open(data / "real-events.fdr") as t:
        # the main thread first, though the file starts with the other
        assert [th.tid for th in t.threads] == [31981, 31983]


def test_thread_names_from_sidecar(data, tmp_path):
    shutil.copy(data / "real-mt.fdr", tmp_path / "mt.fdr")
    syms = (data / "real-mt.syms").read_text()
    syms += "cmd\t./mt 3\nthread\t14223\t14226\tworker-b\nthread\t14223\t14223\tmain\n"
    (tmp_path / "mt.syms").write_text(syms)
    with sledtrace.open(tmp_path / "mt.fdr") as t:
        assert [th.name for th in t.threads] == ["main", "worker-b", None]
        assert t.command == "./mt 3"
    # an explicit sidecar elsewhere, and a trace without one (names are then '#id')
    shutil.copy(data / "real-mt.fdr", tmp_path / "bare.fdr")
    with sledtrace.open(tmp_path / "bare.fdr") as t:
        assert t.name(1) == "#1"
        assert t.threads[0].name is None
    with sledtrace.open(tmp_path / "bare.fdr", syms=tmp_path / "mt.syms") as t:
        assert t.name(1) == "fib"
        assert t.threads[0].name == "main"


@pytest.mark.parametrize("name", TRACES)
def test_backward_walk_is_forward_reversed(data, name):
    with sledtrace.open(data / (name + ".fdr")) as t:
        for th in t.threads:
            c = th.cursor()
            fwd = walk(c)
            assert c.next() is None
            back = []
            while (it := c.prev()) is not None:
                back.append(it)
            assert back == fwd[::-1]
            assert len(fwd) > 3
            # a next after a prev gives the same item again; rewind(to_end) then prev: the last
            assert c.next() == fwd[0]
            assert c.prev() == fwd[0]
            c.rewind(to_end=True)
            assert c.prev() == fwd[-1]
            c.rewind()
            assert c.next() == fwd[0]


@pytest.mark.parametrize("name", TRACES)
def test_seek_lands_on_first_item_at_or_after(data, name):
    """seek(ns): the next item is the first whose time (the largest timestamp of its thread up
    to it) is >= ns."""
    with sledtrace.open(data / (name + ".fdr")) as t:
        for th in t.threads:
            c = th.cursor()
            items = walk(c)
            times, hi = [], None
            for it in items:
                if it.ns is not None and (hi is None or it.ns > hi):
                    hi = it.ns
                times.append(hi)
            stamps = sorted({x for x in times if x is not None})
            targets = set(stamps[:: max(1, len(stamps) // 40)]) | {stamps[-1]}
            targets |= {x + 1 for x in targets} | {x - 1 for x in targets}
            for ns in sorted(targets):
                pos = c.seek(ns)
                k = next(i for i, x in enumerate(times + [float("inf")])
                         if x is not None and x >= ns)
                assert pos == k
                assert c.next() == (items[k] if k < len(items) else None)
            c.seek(stamps[-1] + 1)
            assert c.next() is None
            c.seek(-(10**15))
            assert c.next() == items[0]


def test_event_and_loss_items(data):
    with sledtrace.open(data / "real-events.fdr") as t:
        ev = [it for th in t.threads for it in th.cursor()
              if it.kind in ("custom-event", "typed-event")]
    assert len(ev) == 8
    assert [(it.kind, it.payload, it.event_type) for it in ev[:2]] == [
        ("custom-event", b"realev 0", None), ("typed-event", b"realev 0", 7)]
    assert {it.tid for it in ev} == {31981, 31983}
    with sledtrace.open(data / "real-lossy.fdr") as t:
        items = list(t.threads[0].cursor())
        loss = [it for it in items if it.kind == "loss"]
        assert len(loss) == 1
        assert loss[0].lost == 4999 and loss[0].offset == 8304
        assert loss[0].payload.startswith(b"sledtrace:lost")
        assert all(it.lost is None for it in items if it.kind != "loss")
        kinds = {}
        for it in items:
            kinds[it.kind] = kinds.get(it.kind, 0) + 1
        assert kinds == {"new-buffer": 3, "walltime": 3, "pid": 3, "cpu-change": 3, "loss": 1,
                         "enter": 508, "exit": 507}
        assert [it.walltime for it in items if it.kind == "walltime"][0] == (1795245563, 520578)
        assert {it.cpu for it in items} == {0}
    with sledtrace.open(data / "real-events.fdr") as t:
        kinds = {it.kind for th in t.threads for it in th.cursor()}
        assert {"tail-exit", "cpu-change", "enter", "exit"} <= kinds


def div_nearest(a, n):
    """a / n rounded to the nearest, halves up (0 for no calls), as account's mean is."""
    return (2 * a + n) // (2 * n) if n else 0


def account_rows(sledtrace_bin, path):
    out = run(sledtrace_bin, "account", "--format", "csv", str(path))
    return {int(r["id"]): r for r in csv.DictReader(io.StringIO(out))}


@pytest.mark.parametrize("name", TRACES)
def test_calls_match_account(sledtrace_bin, data, name):
    """Per function: closed calls = account's count - unfinished; account's total = the union
    of the calls, i.e. the ticks of the calls not nested in one of their own function; self,
    min and max likewise; mean = every closed call's ticks (nested ones too) / the calls and
    self/call = self / the calls, rounded to the nearest tick - all to the nanosecond."""
    path = data / (name + ".fdr")
    rows = account_rows(sledtrace_bin, path)
    with sledtrace.open(path) as t:
        calls = list(t.calls())
        per = {}
        for c in calls:
            p = per.setdefault(c.func_id, {"n": 0, "total": 0, "sum": 0, "self": 0, "min": None,
                                           "max": 0})
            p["n"] += 1
            p["total"] += 0 if c.nested else c.ticks
            p["sum"] += c.ticks
            p["self"] += c.self_ticks
            p["min"] = c.ticks if p["min"] is None else min(p["min"], c.ticks)
            p["max"] = max(p["max"], c.ticks)
            assert c.name == t.name(c.func_id)
            assert c.duration == t.ticks_to_ns(c.ticks)
            assert c.self == t.ticks_to_ns(c.self_ticks)
            assert c.start == t.ticks_to_ns(c.start_tsc - t.base_tsc)
        for fid, r in rows.items():
            p = per.get(fid, {"n": 0, "total": 0, "sum": 0, "self": 0, "min": 0, "max": 0})
            assert p["n"] == int(r["count"]) - int(r["unfinished"]), r
            assert t.ticks_to_ns(p["total"]) == int(r["total_ns"]), r
            assert t.ticks_to_ns(p["self"]) == int(r["self_ns"]), r
            assert t.ticks_to_ns(div_nearest(p["sum"], p["n"])) == int(r["mean_ns"]), r
            assert t.ticks_to_ns(div_nearest(p["self"], p["n"])) == int(r["selfcall_ns"]), r
            assert t.ticks_to_ns(p["min"]) == int(r["min_ns"]), r
            assert t.ticks_to_ns(p["max"]) == int(r["max_ns"]), r
        assert set(per) <= set(rows)
        assert len(calls) == sum(p["n"] for p in per.values())


def test_calls_depth_and_order(data):
    with sledtrace.open(data / "real-mt.fdr") as t:
        calls = list(t.calls())
    assert len(calls) == 55
    # a thread's calls close in order; main's thread comes first
    assert calls[0].tid == 14223
    main = [c for c in calls if c.name == "main"]
    assert len(main) == 1 and main[0].depth == 0 and main[0].start == 0
    assert main[0].duration == 1486209
    fib = [c for c in calls if c.name == "fib"]
    assert len(fib) == 50 and max(c.depth for c in fib) >= 2
    # callees end inside their callers
    for c in calls:
        assert c.self <= c.duration


def test_calls_of_one_thread(data):
    with sledtrace.open(data / "real-mt.fdr") as t:
        every = list(t.calls())
        for th in t.threads:
            mine = list(t.calls(tid=th.tid))
            assert mine == [c for c in every if c.tid == th.tid]
            assert mine
        assert list(t.calls(tid=1)) == []


def test_calls_in_a_window(data):
    """calls(start=, end=) (issue 25.1): the calls inside [start, end] as they are, those that
    cross an edge clipped to it and marked, none other; the window here is the middle third of
    real-mt.fdr's main (so main itself and its open callees cross both edges)."""
    with sledtrace.open(data / "real-mt.fdr") as t:
        every = list(t.calls())
        main = next(c for c in every if c.name == "main")
        lo = main.start + main.duration // 3
        hi = main.start + 2 * main.duration // 3
        inside = [c for c in every if lo <= c.start and c.start + c.duration <= hi]
        crossing = [c for c in every
                    if c.start < hi and c.start + c.duration > lo and c not in inside]
        got = list(t.calls(start=lo, end=hi))
        assert [c for c in every if c.clipped is not None] == []
    whole = [c for c in got if c.clipped is None]
    assert [(c.tid, c.name, c.start, c.duration) for c in whole] == \
        [(c.tid, c.name, c.start, c.duration) for c in inside]
    clipped = [c for c in got if c.clipped is not None]
    assert sorted((c.tid, c.name) for c in clipped) == sorted((c.tid, c.name) for c in crossing)
    assert crossing and any(c.name == "main" for c in clipped)
    for c in clipped:
        want = next(w for w in crossing if (w.tid, w.name, w.depth) == (c.tid, c.name, c.depth))
        cut_start, cut_end = want.start < lo, want.start + want.duration > hi
        assert c.clipped == ("both" if cut_start and cut_end else
                             "start" if cut_start else "end"), (c, want)
        # the window's part of the call, each edge rounded on its own
        assert abs(c.start - max(want.start, lo)) <= 1
        assert abs(c.start + c.duration - min(want.start + want.duration, hi)) <= 2
    with sledtrace.open(data / "real-mt.fdr") as t:
        with pytest.raises(ValueError):
            t.calls(start=-1)
        assert list(t.calls(start=main.start + main.duration + 1)) == []


def test_calls_in_a_window_seek(tmp_path, monkeypatch):
    """calls(start=, end=) starts each thread at its checkpoint (tools/seek.h) when the trace has
    an index: the same calls, clipped the same, as reading every thread from its start. The
    trace is the seek tests' (tests/format/seekgen.c: two threads, ~6 MiB each, main and long
    open across checkpoints), raw, and corrected (an iteration then lasts 55 ns, not 100)."""
    for calib, lo in ((False, 5_000_000), (True, 2_800_000)):
        trace = tmp_path / ("seek-%d.fdr" % calib)
        subprocess.run([os.environ["SEEK_TRACE"], str(trace)] + (["calib"] if calib else []),
                       check=True)
        monkeypatch.setenv("SLEDTRACE_SEEK_MIN", "0")
        got = {}
        for cache in ("off", str(tmp_path / "cache")):
            monkeypatch.setenv("SLEDTRACE_CACHE", cache)
            with sledtrace.open(trace) as t:
                got[cache] = [(c.tid, c.name, c.depth, c.start, c.duration, c.clipped)
                              for c in t.calls(start=lo, end=lo + 30_000)]
        assert got["off"] == got[str(tmp_path / "cache")]
        assert len(list((tmp_path / "cache").glob("*.seek"))) == 1 + calib
        names = [c[1] for c in got["off"]]
        assert [c[5] for c in got["off"] if c[1] == "main"] == ["both", "both"]
        assert names.count("leaf") > 500, names.count("leaf")


def test_call_args_and_retval(tmp_path):
    """Call.args and Call.retval (SLEDTRACE_ARGS, issue 26.4): tests/e2e/argvals.c run with its
    functions' arguments recorded; fib's argument and value, parse's strings (NULL as None, an
    unmapped pointer as its address, a cut string as its recorded part), a function not chosen
    with () and None."""
    env = dict(os.environ, LD_PRELOAD=os.environ["PRELOAD"], SLEDTRACE_OUTPUT=str(tmp_path),
               SLEDTRACE_ARGS="fib@arg1,retval;parse@arg1/s,arg2,retval")
    out = subprocess.run([os.environ["ARGVALS"]], env=env, check=True, capture_output=True,
                         text=True).stdout
    gone = int(re.search(r"addr gone (0x[0-9a-f]+)", out).group(1), 16)
    trace = next(tmp_path.glob("*.fdr"))
    with sledtrace.open(trace) as t:
        calls = list(t.calls())
    fibs = [(c.args, c.retval) for c in calls if c.name == "fib"]
    assert len(fibs) == 25
    want = {6: 8, 5: 5, 4: 3, 3: 2, 2: 1, 1: 1, 0: 0}
    assert all(len(a) == 1 and r == want[a[0]] for a, r in fibs), fibs
    parses = [(c.args, c.retval) for c in calls if c.name == "parse"]
    assert parses == [(("GET /", 5), 11), ((None, 0), 0), ((gone, 1), 3),
                      (("A" * 10, 2), 5), (("x" * 64, 3), 7), (("a\tb\n\"q\"\x01", 4), 9)]
    assert [(c.args, c.retval) for c in calls if c.name == "plain"] == [((), None)]
    # the same raw in the columns: registers recorded, the first six, rax
    with sledtrace.open(trace) as t:
        cols = t.call_columns()
        ids = {c.func_id: c.name for c in calls}
    rows = [(ids[cols["func_id"][i]], cols["nargs"][i], cols["arg1"][i], cols["arg2"][i],
             cols["retval"][i], bool(cols["has_retval"][i])) for i in range(len(cols["func_id"]))]
    assert ("fib", 1, 6, 0, 8, True) in rows
    assert [r for r in rows if r[0] == "parse"][1] == ("parse", 2, 0, 0, 0, True)
    assert [r for r in rows if r[0] == "plain"] == [("plain", 0, 0, 0, 0, False)]


def test_calls_stats(data):
    with sledtrace.open(data / "real-lossy.fdr") as t:
        it = t.calls()
        n = sum(1 for _ in it)
        assert n == 506
        assert it.stats == {"calls": 506, "repairs": 0, "unmatched": 1, "gaps": 1,
                            "gap_events": 4999, "open_frames": 0}


@pytest.mark.parametrize("name", TRACES)
def test_numpy_columns_equal_walk(data, name):
    np = pytest.importorskip("numpy")
    with sledtrace.open(data / (name + ".fdr")) as t:
        cols = t.item_columns()
        items = [it for th in t.threads for it in th.cursor()]
        assert set(cols) == {"kind", "ns", "tsc", "func_id", "pid", "tid", "cpu"}
        assert all(isinstance(v, np.ndarray) and len(v) == len(items) for v in cols.values())
        assert cols["tsc"].dtype == np.uint64 and cols["ns"].dtype == np.int64
        assert [sledtrace.KINDS[k] for k in cols["kind"]] == [it.kind for it in items]
        assert cols["tsc"].tolist() == [it.tsc for it in items]
        assert cols["ns"].tolist() == [sledtrace.NO_TIME if it.ns is None else it.ns
                                       for it in items]
        assert cols["func_id"].tolist() == [it.func_id or 0 for it in items]
        assert cols["tid"].tolist() == [it.tid for it in items]
        assert cols["pid"].tolist() == [it.pid for it in items]
        assert cols["cpu"].tolist() == [it.cpu for it in items]
        one = t.threads[-1].item_columns()
        assert one["tsc"].tolist() == [it.tsc for it in t.threads[-1].cursor()]

        calls = list(t.calls())
        cc = t.call_columns()
        for k in ("pid", "tid", "depth", "func_id", "start", "duration", "self", "start_tsc",
                  "ticks", "self_ticks", "nested"):
            assert cc[k].tolist() == [getattr(c, k) for c in calls], k
        assert cc["nested"].dtype == np.bool_


def test_pandas_frames(sledtrace_bin, data):
    pd = pytest.importorskip("pandas")
    path = data / "real-events.fdr"
    rows = account_rows(sledtrace_bin, path)
    with sledtrace.open(path) as t:
        calls = t.calls_frame()
        assert len(calls) == 64
        assert calls["name"].tolist() == [c.name for c in t.calls()]
        counts = calls.groupby("func_id").size().to_dict()
        assert counts == {fid: int(r["count"]) for fid, r in rows.items()}
        outer = calls[~calls["nested"]].groupby("func_id")["ticks"].sum()
        assert {fid: t.ticks_to_ns(int(v)) for fid, v in outer.items()} == {
            fid: int(r["total_ns"]) for fid, r in rows.items()}
        items = t.items_frame()
        walked = [it for th in t.threads for it in th.cursor()]
        assert items["kind"].astype(str).tolist() == [it.kind for it in walked]
        assert [None if pd.isna(x) else x for x in items["name"]] == [it.name for it in walked]
        assert items.columns.tolist() == ["kind", "ns", "tsc", "func_id", "name", "pid", "tid",
                                          "cpu"]


def with_calibration(src, dst):
    """A copy of the trace at src with a calibration block (format/stf.h, STF_TYPED_CALIB) after
    its header, as the runtime writes it: gaps E->E 3, E->X 4, X->E 5, X->X 6, E->T 2, T->E 7
    ticks (in 1/256 tick), spread 0.25 tick, clock step 1. The block reuses the first block's
    NewBuffer, Walltime, Pid and NewCPUId records."""
    import struct
    data = open(src, "rb").read()
    head = data[32 + 16:32 + 80]
    payload = struct.pack("<4I", 1, 9, 64, 1) + struct.pack("<6I", *(g * 256 for g in (3, 4, 5, 6, 2, 7))) \
        + struct.pack("<6I", *[64] * 6)
    marker = bytes([(8 << 1) | 1]) + struct.pack("<iiH", len(payload), 0, 0x5E1C) + bytes(5)
    body = head + marker + payload
    extents = bytes([(7 << 1) | 1]) + struct.pack("<Q", len(body)) + bytes(7)
    open(dst, "wb").write(data[:32] + extents + body + data[32:])
    shutil.copy(str(src)[:-4] + ".syms", str(dst)[:-4] + ".syms")


@pytest.mark.parametrize("raw", [False, True])
def test_corrected_calls_match_account(sledtrace_bin, data, tmp_path, raw):
    """With a calibration, calls() corrects as account does (and as account --raw-times does not
    with raw_times=True): per function the union of the calls and the self times agree with
    account's to the nanosecond, and its per-call figures are the calls' clamped at 0."""
    path = tmp_path / "cal.fdr"
    with_calibration(data / "real-mt.fdr", path)
    out = run(sledtrace_bin, "account", "--format", "csv", str(path), *(["--raw-times"] if raw else []))
    rows = {int(r["id"]): r for r in csv.DictReader(io.StringIO(out))}
    with sledtrace.open(path, raw_times=raw) as t:
        assert t.corrected == (not raw)
        cal = t.calibration
        assert cal["enter_exit"][0] == pytest.approx(4e9 / t.freq)
        assert (cal["rounds"], cal["calls"], cal["step_ticks"]) == (9, 64, 1)
        per = {}
        for c in t.calls():
            p = per.setdefault(c.func_id, {"n": 0, "total": 0, "sum": 0, "self": 0, "max": 0})
            p["n"] += 1
            p["total"] += 0 if c.nested else c.ticks
            p["sum"] += max(c.ticks, 0)  # each call's figure clamped at 0, as min..max are
            p["self"] += c.self_ticks
            p["max"] = max(p["max"], max(c.ticks, 0))
            assert c.duration == t.ticks_to_ns(max(c.ticks, 0))
        for fid, r in rows.items():
            p = per[fid]
            assert t.ticks_to_ns(max(p["total"], 0)) == int(r["total_ns"]), r
            assert t.ticks_to_ns(max(p["self"], 0)) == int(r["self_ns"]), r
            assert t.ticks_to_ns(p["max"]) == int(r["max_ns"]), r
            assert t.ticks_to_ns(div_nearest(p["sum"], p["n"])) == int(r["mean_ns"]), r
            assert t.ticks_to_ns(div_nearest(max(p["self"], 0), p["n"])) == int(r["selfcall_ns"]), r
    raw_rows = account_rows(sledtrace_bin, data / "real-mt.fdr")
    assert any(int(rows[f]["self_ns"]) != int(raw_rows[f]["self_ns"]) for f in rows) != raw


def test_columns_without_numpy(data, monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy fails
    with sledtrace.open(data / "real-mt.fdr") as t:
        cols = t.call_columns()
        assert isinstance(cols["ticks"], memoryview) and cols["ticks"].format == "q"
        assert cols["ticks"].tolist() == [c.ticks for c in t.calls()]
        items = t.item_columns()
        assert items["kind"].tolist()[:5] == [sledtrace.KINDS.index(k) for k in (
            "new-buffer", "walltime", "pid", "cpu-change", "enter")]


def test_missing_file(tmp_path):
    path = tmp_path / "nothere.fdr"
    with pytest.raises(sledtrace.TraceError) as e:
        sledtrace.open(path)
    assert isinstance(e.value, OSError)
    assert str(e.value) == "%s: No such file or directory" % path
    assert e.value.path == str(path) and e.value.offset is None
    # a file name that is not UTF-8 comes back as Python spells it (surrogate escapes)
    odd = os.fsdecode(bytes(tmp_path) + b"/cut\xff.fdr")
    with open(odd, "wb") as f:
        f.write(b"\x05\x00")
    with pytest.raises(sledtrace.TraceError) as e:
        sledtrace.open(odd)
    assert str(e.value).startswith(odd + ": offset 0: ") and e.value.path == odd


def test_corrupt_header(data, tmp_path):
    path = tmp_path / "bad.fdr"
    raw = bytearray((data / "real-mt.fdr").read_bytes())
    raw[0:2] = b"\x07\x00"  # version 7
    path.write_bytes(bytes(raw))
    with pytest.raises(sledtrace.TraceError) as e:
        sledtrace.open(path)
    assert e.value.offset == 0
    assert str(e.value).startswith("%s: offset 0: " % path)
    assert "version" in str(e.value)


def test_truncated_strict_and_lenient(data, tmp_path):
    path = tmp_path / "cut.fdr"
    raw = (data / "real-lossy.fdr").read_bytes()
    path.write_bytes(raw[:6000])  # inside the second block
    with pytest.raises(sledtrace.TraceError) as e:
        with sledtrace.open(path, strict=True) as t:
            for th in t.threads:
                list(th.cursor())
    assert e.value.offset == 4128
    assert re.match(re.escape(str(path)) + r": offset 4128: .*", str(e.value))
    # lenient (the default): the torn tail is skipped, with a warning naming its offset
    with sledtrace.open(path) as t:
        items = list(t.threads[0].cursor())
        assert items[-1].offset < 6000
        assert len(t.warnings) == 1
        assert t.warnings[0].startswith("%s: offset 4128: " % path)


def test_bad_sidecar(data, tmp_path):
    (tmp_path / "x.syms").write_text("not a sidecar\n")
    with pytest.raises(sledtrace.TraceError) as e:
        sledtrace.open(data / "real-mt.fdr", syms=tmp_path / "x.syms")
    assert str(tmp_path / "x.syms") in str(e.value)
    with pytest.raises(sledtrace.TraceError):
        sledtrace.open(data / "real-mt.fdr", syms=tmp_path / "none.syms")


def test_closed_trace(data):
    t = sledtrace.open(data / "real-mt.fdr")
    th = t.threads[0]
    c = th.cursor()
    t.close()
    assert t.closed
    with pytest.raises(ValueError):
        th.cursor()
    with pytest.raises(ValueError):
        t.calls()
    assert c.next().kind == "new-buffer"  # a cursor made before keeps working


def test_demangle():
    assert sledtrace.demangle("_ZN2rt5chainEl") == "rt::chain(long)"
    assert sledtrace.demangle("_ZN2rt5chainEl", short=True) == "rt::chain"
    assert sledtrace.demangle("main") == "main"


def test_readme_example(sledtrace_bin, data):
    """The README's Python example runs and prints what account says of the trace."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    section = readme.split("\n## Python\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 10
    out = subprocess.run([sys.executable, "-c", code, str(data / "real-mt.fdr")], check=True,
                         capture_output=True, text=True).stdout
    lines = out.splitlines()
    assert [l.split() for l in lines] == [["worker", "2", "1.927ms"], ["main", "1", "1.486ms"],
                                          ["status_kb", "2", "0.051ms"], ["fib", "50", "0.002ms"]]
