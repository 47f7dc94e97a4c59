#!/usr/bin/env python3
"""One `sledtrace top` session in a pseudo-terminal, timed (scripts/bench/top.sh).

usage: top_session.py SLEDTRACE TRACE INTERVAL_MS SECONDS q|int|term

Starts `SLEDTRACE top --interval INTERVAL_MS TRACE` on a 120x40 pseudo-terminal, notes the
time of every screen (each starts with the clear-screen sequence), SECONDS after its first
screen asks it to quit ('q' typed, SIGINT or SIGTERM; after the first read, so that top has
set up its terminal and handlers) and notes how long it takes to exit. Prints one line:
  screens=N first_ms=F gaps_ms=min/median/max late_ms=median/max quit_ms=Q exit=S
  canonical=yes|no last=TEXT
first: the first screen after the start; gaps: between consecutive screens; late: screen k
(k >= 1) against the schedule start + k * interval (a tool that drifts falls further behind
each time); last: what the last screen says the "(last)" columns cover. It is a measurement,
not a test: nothing fails.
"""
import fcntl
import os
import pty
import re
import select
import signal
import statistics
import struct
import sys
import termios
import time

CLEAR = b"\x1b[H\x1b[2J"


def main():
    tool, trace, interval_ms, seconds, how = sys.argv[1:6]
    interval = int(interval_ms) / 1000.0
    seconds = float(seconds)
    start = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        # a background job of a script starts with SIGINT ignored: top would keep it so
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(tool, [tool, "top", "--interval", interval_ms, trace])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screens, buf, tail = [], b"", b""
    quit_at = None
    status = None
    while True:
        now = time.monotonic()
        if quit_at is None and (screens and now - screens[0] >= seconds or now - start > 60):
            quit_at = time.monotonic()
            if how == "q":
                os.write(fd, b"q")
            else:
                os.kill(pid, signal.SIGINT if how == "int" else signal.SIGTERM)
        r, _, _ = select.select([fd], [], [], 0.005)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            t = time.monotonic()
            if data:
                joined = tail + data
                screens.extend([t] * joined.count(CLEAR))
                tail = joined[-(len(CLEAR) - 1):]
                buf = (buf + data)[-20000:]
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            end = time.monotonic()
            break
        if quit_at is not None and time.monotonic() - quit_at > 30:
            os.kill(pid, signal.SIGKILL)
    attrs = termios.tcgetattr(fd)
    canonical = bool(attrs[3] & termios.ICANON) and bool(attrs[3] & termios.ECHO)
    gaps = [(b - a) * 1000 for a, b in zip(screens, screens[1:])]
    late = [(t - (start + k * interval)) * 1000 for k, t in enumerate(screens)][1:]
    text = buf.decode("utf-8", "replace")
    m = re.findall(r"\(last\) = ([^\r\n]*)", text)
    code = os.waitstatus_to_exitcode(status) if status is not None else None

    def mmm(v):
        if not v:
            return "-"
        return "%.0f/%.0f/%.0f" % (min(v), statistics.median(v), max(v))

    print("screens=%d first_ms=%s gaps_ms=%s late_ms=%s quit_ms=%.0f exit=%s canonical=%s "
          "last=%s" % (
        len(screens), "%.0f" % ((screens[0] - start) * 1000) if screens else "-", mmm(gaps),
        "-" if not late else "%.0f/%.0f" % (statistics.median(late), max(late)),
        (end - quit_at) * 1000 if quit_at else -1, code, "yes" if canonical else "no",
        (m[-1] if m else "-").strip().replace(" ", "_")))


if __name__ == "__main__":
    main()
