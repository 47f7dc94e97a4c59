"""Checks a `sledtrace convert --format speedscope` file against `sledtrace account` of the same
trace (tests/format/test_exports.c): every profile's events in time order and nested (each C
closes the innermost open frame, none left open), frame names the function names alone, and per
name as many opens as account counts calls. Prints "ok PROFILES OPENS", else what differs.
Usage: speedscope_check.py FILE.json ACCOUNT.csv"""
import csv
import json
import sys

d = json.load(open(sys.argv[1]))
assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
frames = [f["name"] for f in d["shared"]["frames"]]
opens = {}
for p in d["profiles"]:
    assert p["type"] == "evented" and p["unit"] == "nanoseconds", p["name"]
    stack, last = [], p["startValue"]
    for e in p["events"]:
        assert e["at"] >= last, (p["name"], e)
        last = e["at"]
        if e["type"] == "O":
            stack.append(e["frame"])
            opens[frames[e["frame"]]] = opens.get(frames[e["frame"]], 0) + 1
        else:
            assert e["type"] == "C" and stack and stack[-1] == e["frame"], (p["name"], e)
            stack.pop()
    assert not stack, (p["name"], "left open", stack)
    assert last <= p["endValue"], p["name"]
counts = {}
for row in csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith("#")):
    counts[row["function"]] = counts.get(row["function"], 0) + int(row["count"])
assert all(" {" not in n for n in frames), "a frame name with args"
assert opens == counts, {k: (opens.get(k), counts.get(k)) for k in set(opens) | set(counts)
                         if opens.get(k) != counts.get(k)}
print("ok", len(d["profiles"]), sum(opens.values()))
