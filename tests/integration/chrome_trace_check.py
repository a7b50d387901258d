#!/usr/bin/env python3
"""chrome_trace_check.py FILE.json[.gz]: checks a Trace Event Format file
as the viewers read it, and prints what it holds as JSON on stdout.

Checked (each breach is a line in "problems"):
  - it parses as JSON, an object with a traceEvents list;
  - per track (pid, tid), B/E/s/f events in time order, every E closing a
    B of that track, a slice never ending after its parent, none left open;
  - every flow start ("s") has exactly one end ("f") and the other way;
  - per counter (pid, name), points in time order;
  - every sample names a stack frame that exists.
Printed, a fact a line: "problem TEXT", "flows N", "samples N",
"counters N", "frames N", and "slices PID TID COUNT NAME" per track and
slice name.
"""
import collections
import gzip
import json
import sys


def main():
    path = sys.argv[1]
    opener = gzip.open if path.endswith(".gz") else open
    problems = []
    with opener(path, "rt") as f:
        trace = json.load(f)
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        print("problem no traceEvents list")
        return
    last_ts = {}
    stacks = collections.defaultdict(list)
    slices = collections.defaultdict(collections.Counter)
    starts, ends = collections.Counter(), collections.Counter()
    counter_ts = {}
    counters = 0
    for e in events:
        ph = e.get("ph")
        if ph == "M":
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)):
            problems.append("an event without a time: %r" % e)
            continue
        if ph == "C":
            key = (e["pid"], e["name"])
            if ts < counter_ts.get(key, -1):
                problems.append("counter %r goes back in time at %s" % (key, ts))
            counter_ts[key] = ts
            counters += 1
            continue
        track = (e.get("pid"), e.get("tid"))
        if ts < last_ts.get(track, float("-inf")):
            problems.append("track %r goes back in time at %s (%s)" % (track, ts, ph))
        last_ts[track] = ts
        if ph == "B":
            stacks[track].append((e.get("name"), ts))
            slices[track][e.get("name")] += 1
        elif ph == "E":
            if not stacks[track]:
                problems.append("track %r: an E without its B at %s" % (track, ts))
            else:
                name, begin = stacks[track].pop()
                if ts < begin:
                    problems.append("track %r: %s ends before it begins" % (track, name))
        elif ph == "s":
            starts[e["id"]] += 1
        elif ph == "f":
            ends[e["id"]] += 1
        elif ph == "X":
            problems.append("track %r: an X event (slices are B/E pairs here)" % (track,))
    for track, stack in stacks.items():
        if stack:
            problems.append("track %r: %d slices left open (%s)" % (track, len(stack), stack[-1][0]))
    for flow in set(starts) | set(ends):
        if starts[flow] != 1 or ends[flow] != 1:
            problems.append("flow %s: %d starts, %d ends" % (flow, starts[flow], ends[flow]))
    frames = trace.get("stackFrames", {})
    samples = trace.get("samples", [])
    for s in samples:
        if str(s.get("sf")) not in frames:
            problems.append("a sample names no stack frame: %r" % s)
            break
    for key, frame in frames.items():
        if "parent" in frame and str(frame["parent"]) not in frames:
            problems.append("frame %s has no parent %s" % (key, frame["parent"]))
            break
    for p in problems[:20]:
        print("problem", p.replace("\n", " "))
    print("flows", len(starts))
    print("samples", len(samples))
    print("counters", counters)
    print("frames", len(frames))
    for (pid, tid), names in sorted(slices.items()):
        for name, n in sorted(names.items()):
            print("slices", pid, tid, n, name)


if __name__ == "__main__":
    main()
