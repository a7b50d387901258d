#!/usr/bin/env python3
"""flamegraph_check.py FILE.svg: reads a flame graph as an XML parser and a
viewer would, and prints a fact a line: "problem TEXT" for what is wrong
(not XML, a reference to anything outside the file, a frame wider than its
parent or children wider than it), "frames N", "script yes|no",
"root_top yes|no" (the widest frame at the top: an icicle), and
"self PERCENT NAME" per frame name: the share of the width its frames
hold that none of their children cover, as a flat profile counts self time.
"""
import collections
import sys
import xml.etree.ElementTree as ET

NS = {"s": "http://www.w3.org/2000/svg"}


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    problems = []
    for outside in ("http://", "https://"):
        for line in text.splitlines():
            if outside in line and "www.w3.org" not in line:
                problems.append("refers outside the file: " + line.strip()[:80])
    root = ET.fromstring(text)
    frames = []
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        if g.get("class") != "frame":
            continue
        title = g.find("s:title", NS).text
        name = title[: title.rfind(" (")]
        rect = g.find("s:rect", NS)
        frames.append((int(g.get("data-depth")), float(g.get("data-x")), float(g.get("data-w")), name,
                       float(rect.get("y"))))
    by_depth = collections.defaultdict(list)
    for f in frames:
        by_depth[f[0]].append(f)
    total = max(f[2] for f in frames) if frames else 1
    self_width = collections.Counter()
    for depth, x, w, name, y in frames:
        children = [c for c in by_depth[depth + 1] if c[1] >= x - 1e-6 and c[1] + c[2] <= x + w + 1e-3]
        covered = sum(c[2] for c in children)
        if covered > w + 1e-3:
            problems.append("children of %s cover %.3f of its %.3f" % (name, covered, w))
        if depth > 0:
            self_width[name] += w - covered
    for p in problems[:10]:
        print("problem", p)
    print("frames", len(frames))
    print("script", "yes" if root.find("s:script", NS) is not None else "no")
    if frames:
        top = min(frames, key=lambda f: f[4])
        print("root_top", "yes" if top[0] == 0 else "no")
    for name, w in self_width.most_common():
        print("self %.2f %s" % (100.0 * w / total, name))


if __name__ == "__main__":
    main()
