"""What a traced call costs when Python made it: CALLS MPI_Barrier calls on
one rank (mpi4py) from DEPTH extra Python frames; prints the time per call.
Run it plain and under `hybridprof -F 1` (tracing, next to no sampling):
the difference is what capturing the calling context (native and Python
frames) and recording the call cost.

    python3 benchmarks/python_traced_calls.py DEPTH [CALLS]
    hybridprof -F 1 -o /tmp/x -- python3 benchmarks/python_traced_calls.py DEPTH [CALLS]

On the 2-core VM (Python 3.11, Open MPI 4.1): 0.06-0.14 us plain; traced,
+1.1 us at DEPTH 0 (about 10 frames in all) and +1.5 us at DEPTH 30
(2026-11-29; +2.2 us at DEPTH 30 before frames were read in place, +1.85
and +3.6 us before the pairs of native and Python stacks were
remembered).
"""
import sys
import time

from mpi4py import MPI


def deeper(n, call):
    return call() if n == 0 else deeper(n - 1, call)


def barriers(comm, calls):
    begin = time.perf_counter()
    for _ in range(calls):
        comm.Barrier()
    return time.perf_counter() - begin


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    depth, calls = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) == 3 else 50000
    seconds = deeper(depth, lambda: barriers(MPI.COMM_WORLD, calls))
    print("per call us %.3f" % (seconds / calls * 1e6))


if __name__ == "__main__":
    main()
