"""Read sledtrace's XRay FDR traces from Python.

    import sledtrace
    with sledtrace.open("sledtrace.1234.fdr") as t:
        for th in t.threads:                     # pid, tid, name (from the sidecar)
            for item in th.cursor():             # kind, ns, tsc, func_id, name, ...
                ...
        for call in t.calls():                   # closed calls, account's stack rule
            print(call.name, call.depth, call.start, call.duration)
        for call in t.calls(start=10**6, end=2 * 10**6):  # a window in ns: call.clipped marks
            ...                                          # the calls cut at its edges
        frame = t.calls_frame()                  # pandas, one row per closed call

The work is done in C (sledtrace._sledtrace, linked with sledtrace's own reader, cursor and
call-stack walker): a cursor holds one block of its thread in memory, calls() streams, and the
columnar exports fill typed buffers without a Python object per record. numpy and pandas are
optional: item_columns() and call_columns() give memoryviews without numpy, numpy arrays with
it; items_frame() and calls_frame() need pandas.

Corrected times: a call's `duration`, `self`, `ticks` and `self_ticks` have the tracer's own
cost taken out, as every sledtrace command shows them, when the trace records that cost
(Trace.corrected, Trace.calibration); open(..., raw_times=True) gives them as measured. A
corrected `ticks` can be below zero for a call shorter than the correction (sums stay exact);
`duration` and `self` are then 0. Items are the records as recorded.

Times: `tsc` is the counter as recorded; `ns` (items), `start`, `duration` and `self` (calls)
are nanoseconds, times since the trace's time base (Trace.base_tsc: the earliest first
timestamp of any thread, the zero of the tools' displays), converted at the header's cycle
frequency and rounded to the nearest as `sledtrace account` rounds. A sum of per-call
nanoseconds can differ from account's figure by the rounding; Trace.ticks_to_ns(sum of
`ticks`) is account's figure exactly.
"""

from ._sledtrace import (KINDS, Call, Calls, Cursor, Item, TraceError, _Trace,
                         demangle)

NO_TIME = -(2**63)  # item_columns()["ns"] of items with no timestamp yet (Item.ns None)

__all__ = ["open", "NO_TIME", "Trace", "Thread", "Cursor", "Item", "Call", "Calls", "TraceError", "KINDS",
           "demangle"]


class Thread:
    """A thread of the trace: pid, tid, name (the sidecar's, else None) and index (its number in
    the trace's first-seen order). cursor() opens a new cursor on it."""

    __slots__ = ("_trace", "index", "pid", "tid", "name")

    def __init__(self, trace, index, pid, tid, name):
        self._trace = trace
        self.index = index
        self.pid = pid
        self.tid = tid
        self.name = name

    def cursor(self):
        """A new Cursor before the thread's first item (each cursor reads on its own: one
        block in memory)."""
        return self._trace._cursor(self.index)

    def item_columns(self):
        """The thread's items as columns (see Trace.item_columns)."""
        return self._trace._columns(self._trace._item_columns(self.index))

    def __repr__(self):
        return "Thread(pid=%d, tid=%d, name=%r)" % (self.pid, self.tid, self.name)


class Trace(_Trace):
    """An opened trace (sledtrace.open). A context manager; close() releases the file (cursors
    and iterators already made keep their own)."""

    @property
    def threads(self):
        """The threads, main threads (tid == pid) first, then in the order the trace first
        shows them - the order of the sledtrace commands."""
        return [Thread(self, *row) for row in self._threads()]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<sledtrace.Trace %r%s>" % (self.path, " closed" if self.closed else "")

    @staticmethod
    def _columns(cols):
        try:
            import numpy
        except ImportError:
            return {k: memoryview(v) for k, v in cols.items()}
        return {k: numpy.frombuffer(v, dtype=memoryview(v).format) for k, v in cols.items()}

    def item_columns(self):
        """Every item of every thread (in the order of threads) as columns, a dict of numpy
        arrays (memoryviews without numpy), all of one length: kind (index into
        sledtrace.KINDS), ns, tsc, func_id (0 for items that are not function records), pid,
        tid, cpu. ns is NO_TIME (the smallest int64) where Item.ns is None. Memory: 31
        bytes per item; no Python object per item."""
        return self._columns(self._item_columns())

    def call_columns(self, tid=None):
        """The closed calls that calls(tid) yields, in the same order, as columns: pid, tid,
        depth, func_id, start, duration, self (ns), start_tsc, ticks, self_ticks, nested."""
        return self._columns(self._call_columns(tid=tid))

    def _names(self, ids):
        import numpy
        uniq, codes = numpy.unique(ids, return_inverse=True)
        return codes, [self.name(int(i)) for i in uniq]

    def items_frame(self):
        """item_columns() as a pandas DataFrame; kind and name are categoricals (name is None
        for items that are not function records)."""
        import pandas
        cols = self.item_columns()
        kind = pandas.Categorical.from_codes(cols.pop("kind"), categories=list(KINDS))
        frame = pandas.DataFrame(cols)
        frame.insert(0, "kind", kind)
        fn = kind.codes <= KINDS.index("enter-args")
        codes, names = self._names(frame["func_id"].to_numpy())
        codes = codes.astype("int64")
        codes[~fn] = -1
        frame.insert(4, "name", pandas.Categorical.from_codes(codes, categories=names)
                     if names else pandas.Categorical([None] * len(frame)))
        return frame

    def calls_frame(self, tid=None):
        """call_columns(tid) as a pandas DataFrame, with a categorical name column (pandas
        copies the columns into its own blocks)."""
        import pandas
        frame = pandas.DataFrame(self.call_columns(tid=tid))
        codes, names = self._names(frame["func_id"].to_numpy())
        frame.insert(4, "name", pandas.Categorical.from_codes(codes, categories=names)
                     if names else pandas.Categorical([]))
        return frame


def open(path, syms=None, strict=False, raw_times=False):
    """Open the trace at path with the function names of its sidecar (syms: another sidecar
    file; default the .syms file beside the trace, which may be missing: names are then '#id').
    Lenient by default, as the sledtrace commands read: damaged parts are skipped and listed in
    Trace.warnings; strict=True raises TraceError at the first violation instead. Raises
    TraceError (an OSError) naming the file and, for bad bytes, their offset. Calls' times are
    corrected (the tracer's own cost taken out, as `sledtrace account` shows them) when the
    trace records that cost (Trace.calibration); raw_times=True gives them as measured."""
    return Trace(path, syms, strict, raw_times)
