"""Runs a program many times at once under a bundle's hybridprof, half of
the runs with --no-os-waits, and describes every run still going after
the limit: each thread's state, wait channel and stack scan
(stack_scan.py), then kills it. For hangs too rare for one check run
(this found a 1-in-24 deadlock on an H200).

    python3 hang_hunt.py BUNDLE [--rounds N] [--width N] [--limit S] -- PROGRAM [ARGS...]

Exits 1 when a run hung or failed, else 0.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

import stack_scan


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--width", type=int, default=12, help="runs at once")
    parser.add_argument("--limit", type=float, default=100, help="seconds a round may take")
    argv = sys.argv[1:]
    if "--" not in argv:
        parser.error("no program: put it after --")
    split = argv.index("--")
    args, program = parser.parse_args(argv[:split]), argv[split + 1:]
    if not program:
        parser.error("no program after --")
    launcher = os.path.join(args.bundle, "bin", "hybridprof")
    work = tempfile.mkdtemp(prefix="hybridprof-hang-hunt.")
    bad = 0
    for r in range(args.rounds):
        runs = []
        for i in range(args.width):
            flags = ["--no-os-waits"] if i % 2 else []
            log = open(os.path.join(work, f"{r}.{i}.log"), "w")
            p = subprocess.Popen([launcher] + flags + ["-o", os.path.join(work, f"{r}.{i}"), "--"] + program,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            runs.append((p, flags, log.name))
        start = time.monotonic()
        for p, flags, log in runs:
            try:
                p.wait(timeout=max(1.0, args.limit - (time.monotonic() - start)))
            except subprocess.TimeoutExpired:
                bad += 1
                print(f"HANG: round {r}, flags {flags}, launcher {p.pid} (log {log})", flush=True)
                for pid in stack_scan.group_members(p.pid):
                    stack_scan.describe_process(pid, sys.stdout)
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                continue
            if p.returncode != 0:
                bad += 1
                print(f"round {r}, flags {flags}: exit {p.returncode} (log {log})")
        print(f"round {r}: {time.monotonic() - start:.0f} s", flush=True)
    print(f"hang hunt: {bad} of {args.rounds * args.width} runs hung or failed (logs and archives in {work})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
