"""pytest set-up for the Python module's tests (run by `meson test --suite python`).

The paths come from meson through the environment: SLEDTRACE (the built sledtrace command) and
the module itself on PYTHONPATH. At the end every test is listed again as a TAP line
(`ok N - test` / `not ok N - test`), each on a line of its own, so that scripts/test.sh counts
pytest's results with the other TAP suites' (pytest from Debian has no TAP plugin)."""

import os
import pathlib

import pytest

DATA = pathlib.Path(__file__).resolve().parent.parent / "format" / "data"

_results = {}


def pytest_runtest_logreport(report):
    # A test fails if any phase fails; it is skipped if its setup or call was skipped.
    prev = _results.get(report.nodeid)
    if report.failed:
        _results[report.nodeid] = "failed"
    elif report.skipped and prev != "failed":
        _results[report.nodeid] = "skipped"
    elif report.when == "call" and prev is None:
        _results[report.nodeid] = "passed"


def pytest_collectreport(report):
    # A test file that cannot be collected (e.g. the module does not import) is a failure too.
    if report.failed:
        _results[report.nodeid or "collection"] = "failed"


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line("")
    terminalreporter.write_line("1..%d" % len(_results))
    for n, (nodeid, outcome) in enumerate(_results.items(), 1):
        name = nodeid.split("::", 1)[-1]
        if outcome == "passed":
            terminalreporter.write_line("ok %d - %s" % (n, name))
        elif outcome == "skipped":
            terminalreporter.write_line("ok %d - %s # SKIP" % (n, name))
        else:
            terminalreporter.write_line("not ok %d - %s" % (n, name))


@pytest.fixture(scope="session")
def sledtrace_bin():
    path = os.environ.get("SLEDTRACE")
    assert path and os.access(path, os.X_OK), "SLEDTRACE must name the built sledtrace command"
    return path


@pytest.fixture(scope="session")
def data():
    return DATA
