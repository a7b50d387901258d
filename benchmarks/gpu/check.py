"""The GPU node check's runs and verdict (benchmarks/gpu/check.sh runs it
once it has found a GPU).

Runs train_step.py under Kineto (torch.profiler) once, then plain and
under the bundle's hybridprof in interleaved pairs, reads the first
profiled run's archive with gpu_archive_facts, measures CUPTI's cost per
GPU operation with benchmarks/cuda_overhead.sh, and prints one line per
fact: PASS or FAIL and the figure. Exit status 0 when every fact passes,
else 1.

    python3 check.py BUNDLE [--work DIR] [--pairs N] [--steps N] [--run-timeout S] [--device cuda|cpu]
                     [--split]

--split adds a third run to each pair, profiled with -F 1 (tracing, next
to no sampling): where the loop's added time goes, tracing or sampling.
"""
import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import stack_scan

HERE = Path(__file__).resolve().parent
TRAIN = HERE / "train_step.py"
CUDA_OVERHEAD = HERE.parent / "cuda_overhead.sh"
INPUT_BOUND = HERE / "input_bound.py"
STEP_VERDICT_POINTS = 10  # the report's input share against the program's own
MAX_OS_WAITS_RATIO = 1.01  # the OS-runtime adapter on against off, whole training loop

# Targets. Counts are of the same deterministic steps, so they should
# agree closely; times differ from run to run.
KERNEL_COUNT_TOLERANCE = 0.05
KERNEL_TIME_TOLERANCE = 0.10
MAX_WALL_RATIO = 1.20          # profiled / plain training loop, median of pairs
MAX_ADDED_NS_PER_OP = 3000     # CUPTI + tracing per traced CUDA call (its activity record included)


class Verdict:
    def __init__(self):
        self.rows = []
        self.notes = []

    def add(self, fact, ok, figure):
        self.rows.append((fact, bool(ok), figure))

    def print(self, out=sys.stdout):
        width = max(len(f) for f, _, _ in self.rows)
        for fact, ok, figure in self.rows:
            print(f"  {fact:<{width}}  {'PASS' if ok else 'FAIL'}  {figure}", file=out)
        passed = sum(ok for _, ok, _ in self.rows)
        print(f"verdict: {passed}/{len(self.rows)} facts pass", file=out)
        for text in self.notes:
            print(f"  {text}", file=out)

    def note(self, text):
        self.notes.append(text)

    def ok(self):
        return all(ok for _, ok, _ in self.rows)


def run(argv, log, env=None, timeout=600):
    """Runs argv in a process group of its own, its output appended to log;
    returns (exit code, stdout). A run that outlives `timeout` has the state
    of its every process and thread written to the log (what a hang was
    waiting for), then its whole group is killed: the program under the
    launcher too."""
    with open(log, "a") as err:
        err.write("$ " + " ".join(map(str, argv)) + "\n")
        err.flush()
        started = time.monotonic()
        p = subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            err.write(f"timed out after {timeout} s; its processes:\n")
            err.flush()
            describe_group(p.pid, err)
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            err.write(out or "")
            return 124, ""
        err.write(out)
        err.write(f"(exit {p.returncode}, {time.monotonic() - started:.1f} s)\n")
        return p.returncode, out


def describe_group(pgid, out):
    """Every thread of the process group: its state, the kernel function it
    waits in, its system call and a scan of its stack (stack_scan.py); then
    a debugger's backtraces where one is installed (gdb, or the CUDA
    toolkit's cuda-gdb, which may not answer in time)."""
    debugger = shutil.which("gdb") or shutil.which("cuda-gdb")
    for pid in stack_scan.group_members(pgid):
        stack_scan.describe_process(pid, out)
        if debugger:
            try:
                subprocess.run([debugger, "-batch", "-nx", "-p", str(pid), "-ex", "set pagination off",
                                "-ex", "thread apply all bt 40"], stdout=out, stderr=subprocess.STDOUT, timeout=45)
            except subprocess.TimeoutExpired:
                out.write(f"({debugger} gave no backtrace within 45 s)\n")
        out.flush()


def loop_seconds(stdout):
    for line in stdout.splitlines():
        if line.startswith("loop_seconds="):
            return float(line.split()[0].split("=")[1])
    return None


def read_facts(text):
    facts, notices, threads, devices = {}, [], {}, []
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "notice":
            notices.append(value)
        elif key == "device":
            devices.append(value)
        elif key == "kernels_in_steps_from_thread":
            n, _, name = value.partition(" ")
            threads[name] = int(n)
        elif key:
            facts[key] = int(value) if value.lstrip("-").isdigit() else value
    return facts, notices, threads, devices


def static_window_fact(code, report, expected):
    """(ok, figure) from cuda_static_window's exit status and report: one
    capture window opened by cudaProfilerStart() and closed by
    cudaProfilerStop(), `expected` memsets in the GPU activities, and no
    call that changed nothing."""
    lines = report.splitlines()
    windows = [l for l in lines if "cudaProfilerStart()" in l and "cudaProfilerStop()" in l]
    memsets = None
    for l in lines:
        m = re.match(r"\s*\S+%\s+\S+ \S+\s+(\d+)\s.*\[CUDA memset\]\s*$", l)
        if m:
            memsets = int(m.group(1))
    nothing = "changed nothing" in report
    ok = code == 0 and len(windows) == 1 and memsets == expected and not nothing
    return ok, (f"exit {code}; {len(windows)} window(s) by the profiler API; "
                f"{memsets if memsets is not None else 'no'} memsets recorded of {expected}"
                + ("; a call changed nothing" if nothing else ""))


def percent(a, b):
    return 100.0 * (a - b) / b if b else float("inf")


def node_description(python):
    parts = []
    smi = shutil.which("nvidia-smi")
    if smi:
        q = subprocess.run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if q.returncode == 0 and q.stdout.strip():
            name, _, driver = q.stdout.splitlines()[0].partition(",")
            parts.append(f"{name.strip()}, driver {driver.strip()}")
    v = subprocess.run([python, "-c", "import sys, torch; print(sys.version.split()[0], torch.__version__, "
                                      "torch.version.cuda)"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True)
    if v.returncode == 0 and v.stdout.split():
        py, torch_version, cuda = (v.stdout.split() + ["?", "?", "?"])[:3]
        parts.append(f"Python {py}, PyTorch {torch_version} (CUDA {cuda})")
    parts.append(f"{platform.system()} {platform.release()}")
    return "; ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundle")
    parser.add_argument("--work", help="keep the runs' files here (default: a temporary directory, removed)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200,
                        help="timed training steps a run (enough for the loop to outweigh first-time costs)")
    parser.add_argument("--run-timeout", type=int, default=180,
                        help="seconds one training run may take; a hung one is described in the log, then killed")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                        help="cpu: a dry run of the plumbing on a machine without a GPU (GPU facts fail)")
    parser.add_argument("--split", action="store_true",
                        help="also time the loop profiled with -F 1: tracing's share of the added time")
    parser.add_argument("--python", default=os.environ.get("PYTHON", sys.executable))
    args = parser.parse_args()
    bundle = Path(args.bundle).resolve()
    bin_dir = bundle / "bin"
    for tool in ("hybridprof", "hybridprof-report", "gpu_archive_facts"):
        if not os.access(bin_dir / tool, os.X_OK):
            sys.exit(f"check.py: {bin_dir / tool} is missing: is {bundle} a bundle (tools/make-bundle.sh)?")
    work = Path(args.work).resolve() if args.work else Path(tempfile.mkdtemp(prefix="hybridprof-gpu-check."))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "check.log"
    started = time.monotonic()
    python = args.python
    train = [python, TRAIN, "--steps", args.steps, "--device", args.device]
    print(f"hybridprof GPU check: {node_description(python)}", flush=True)

    verdict = Verdict()
    kineto = {}

    def kineto_run():
        """Kineto's view of the same steps, in a run of its own."""
        code, _ = run(train + ["--kineto", work / "kineto.json"], log, timeout=args.run_timeout)
        if code == 0 and (work / "kineto.json").exists():
            kineto.update(json.loads((work / "kineto.json").read_text()))
        else:
            print(f"  (the Kineto run failed, exit {code}: see {log})", flush=True)

    # Plain and profiled, interleaved; the first profiled run's archive is
    # read as soon as it is written (what a cut-short check still tells).
    plain, profiled, profiled_codes, traced_only, without_os = [], [], [], [], []
    facts_text, facts_from = "", None
    for i in range(args.pairs):
        code, out = run(train, log, timeout=args.run_timeout)
        plain.append(loop_seconds(out) if code == 0 else None)
        archive = work / f"profiled.{i}"
        code, out = run([bin_dir / "hybridprof", "-o", archive, "--"] + train, log, timeout=args.run_timeout)
        profiled_codes.append(code)
        profiled.append(loop_seconds(out) if code == 0 else None)
        if args.split:
            code, out = run([bin_dir / "hybridprof", "-F", "1", "-o", work / f"traced.{i}", "--"] + train, log,
                            timeout=args.run_timeout)
            traced_only.append(loop_seconds(out) if code == 0 else None)
        # The OS-runtime adapter's whole-run cost: profiled with it off.
        code, out = run([bin_dir / "hybridprof", "--no-os-waits", "-o", work / f"no-os-waits.{i}", "--"] + train,
                        log, timeout=args.run_timeout)
        without_os.append(loop_seconds(out) if code == 0 else None)
        if i == 0:
            kineto_run()  # after a first run: the GPU's clocks are up, as in the runs it is compared with
        if facts_from is None and profiled_codes[-1] == 0:  # the first profiled run that ended well
            facts_from = archive
            code, facts_text = run([bin_dir / "gpu_archive_facts", archive, "train_step", "step "], log)
            (work / "facts.txt").write_text(facts_text)
            run([bin_dir / "hybridprof-report", archive], log)  # in the log, for a reader
    verdict.add("the job runs under hybridprof (exit status)", all(c == 0 for c in profiled_codes),
                " ".join(map(str, profiled_codes)))
    facts, notices, threads, devices = read_facts(facts_text)
    f = lambda key: facts.get(key, 0) if isinstance(facts.get(key, 0), int) else 0

    verdict.add("GPU locations in the archive", f("devices") >= 1 and f("streams") >= 1,
                f"{f('devices')} device(s) ({'; '.join(devices) or '-'}), {f('streams')} stream(s)")
    kernels, k_kineto = f("kernels_in_steps"), kineto.get("kernels", 0)
    verdict.add("kernels in the steps vs Kineto (within 5%)",
                k_kineto > 0 and abs(kernels - k_kineto) <= KERNEL_COUNT_TOLERANCE * k_kineto,
                f"{kernels} vs {k_kineto} ({percent(kernels, k_kineto):+.1f}%); {f('kernels')} in the whole run")
    verdict.add("memcpy host to device and device to host", f("memcpy_htod") > 0 and f("memcpy_dtoh") > 0,
                f"{f('memcpy_htod')} HtoD, {f('memcpy_dtoh')} DtoH, {f('memcpy_other')} other, "
                f"{f('memsets')} memsets")
    verdict.add("synchronizations", f("syncs") > 0, f"{f('syncs')}")
    verdict.add("every kernel has its launching CUDA call", f("kernels") > 0 and f("kernels_with_call") == f("kernels"),
                f"{f('kernels_with_call')}/{f('kernels')}")
    others = ", ".join(f"{n} from '{t}'" for t, n in sorted(threads.items())) or "none from other threads"
    verdict.add("launching call's context has train_step",
                f("kernels_in_steps_from_step_thread") > 0 and
                f("kernels_call_in_function") == f("kernels_in_steps_from_step_thread"),
                f"{f('kernels_call_in_function')}/{f('kernels_in_steps_from_step_thread')} launched by the stepping "
                f"thread; {others}")
    ranges_ok = (f("step_ranges") == args.steps and f("nested_step_ranges") == 0 and f("misnested_ranges") == 0
                 and (f("ranges_in_steps") > 0 or args.device != "cuda"))
    verdict.add("NVTX: one range per step, nested as pushed", ranges_ok,
                f"{f('step_ranges')} step ranges for {args.steps} steps, {f('ranges_in_steps')} emit_nvtx ranges "
                f"inside, {f('misnested_ranges')} misnested")
    dropped = [n for n in notices if "dropped" in n and "CUPTI" in n]
    not_traced = [n for n in notices if "not traced" in n]
    verdict.add("CUPTI dropped records (0, or counted and reported)", not not_traced,
                "; ".join(dropped) or ("0" if not not_traced else not_traced[0]))
    verdict.add("kernels start after their launch call began",
                f("kernels_with_call") > 0 and f("kernels_started_after_call") == f("kernels_with_call"),
                f"{f('kernels_started_after_call')}/{f('kernels_with_call')}")
    ours_us, kineto_us = f("kernel_ns_in_steps") / 1000.0, kineto.get("kernel_us", 0.0)
    verdict.add("kernel time in the steps vs Kineto (within 10%)",
                kineto_us > 0 and abs(ours_us - kineto_us) <= KERNEL_TIME_TOLERANCE * kineto_us,
                f"{ours_us / 1000:.2f} ms vs {kineto_us / 1000:.2f} ms ({percent(ours_us, kineto_us):+.1f}%)")
    ratios = [p / q for p, q in zip(profiled, plain) if p and q]
    ratio = statistics.median(ratios) if ratios else float("inf")
    verdict.add(f"training loop wall time, profiled / plain ({args.pairs} pairs, median)",
                ratio <= MAX_WALL_RATIO,
                f"{ratio:.3f}x (plain {', '.join(f'{s:.3f}' if s else '-' for s in plain)} s; "
                f"profiled {', '.join(f'{s:.3f}' if s else '-' for s in profiled)} s)")
    os_ratios = [p / q for p, q in zip(profiled, without_os) if p and q]
    os_ratio = statistics.median(os_ratios) if os_ratios else float("inf")
    verdict.add(f"OS-runtime waits' cost: profiled / profiled --no-os-waits ({args.pairs} pairs, median)",
                os_ratio <= MAX_OS_WAITS_RATIO,
                f"{os_ratio:.3f}x (--no-os-waits {', '.join(f'{s:.3f}' if s else '-' for s in without_os)} s)")
    if args.split:
        split = [t / q for t, q in zip(traced_only, plain) if t and q]
        verdict.note(f"split: tracing only (-F 1) {statistics.median(split) if split else float('nan'):.3f}x "
                     f"(profiled -F 1 {', '.join(f'{s:.3f}' if s else '-' for s in traced_only)} s); the rest of "
                     f"the {ratio:.3f}x is sampling's")
    cuda_bench = bin_dir / "cuda_bench"
    if args.device == "cuda" and os.access(cuda_bench, os.X_OK):
        code, out = run(["bash", CUDA_OVERHEAD, bundle, "3", "20000"], log, timeout=300)
        # Per traced call: a queued memset is one, a round trip two (the
        # memset and the synchronize).
        calls = {"async_op": 1, "round_trip": 2}
        added = {}
        for line in out.splitlines():
            words = line.split()
            # "  async_op  plain X ns  traced Y ns (+D ns)  profiled Z ns (+E ns)"
            if words and words[0] in calls and "profiled" in words:
                added[words[0]] = float(line.rsplit("(", 1)[1].split()[0]) / calls[words[0]]
        lost = next((line.split(":")[1].split()[0] for line in out.splitlines() if "events lost" in line), "?")
        verdict.add("CUPTI cost per traced CUDA call (cuda_overhead.sh)",
                    code == 0 and added and max(added.values()) <= MAX_ADDED_NS_PER_OP and lost == "0",
                    ", ".join(f"{k} {v:+.0f} ns a call" for k, v in added.items()) + f"; events lost {lost}"
                    if added else f"cuda_overhead.sh exit {code}")
    else:
        verdict.add("CUPTI cost per traced CUDA call (cuda_overhead.sh)", False,
                    "no bin/cuda_bench in the bundle (built without the CUDA toolkit)"
                    if args.device == "cuda" else "not measured on the CPU")
    # A static CUDA runtime's cudaProfilerStart/Stop (no interposer reaches
    # them) open and close the window through CUPTI: only the memsets of
    # the middle phase are recorded, the window once, no call "changed
    # nothing".
    static_window = bin_dir / "cuda_static_window"
    if args.device == "cuda" and os.access(static_window, os.X_OK):
        archive = work / "static_window"
        code, out = run([bin_dir / "hybridprof", "--paused", "-o", archive, "--", static_window, "100"], log,
                        timeout=args.run_timeout)
        _, report = run([bin_dir / "hybridprof-report", archive], log)
        verdict.add("static CUDA runtime: cudaProfilerStart/Stop open one window, its 100 memsets recorded",
                    *static_window_fact(code, report, 100))
    else:
        verdict.add("static CUDA runtime: cudaProfilerStart/Stop open one window, its 100 memsets recorded", False,
                    "no bin/cuda_static_window in the bundle" if args.device == "cuda" else "not run on the CPU")
    # The step verdict on a real DataLoader: a slow dataset makes the step
    # input-bound, a fast one with a heavier model does not; each within
    # STEP_VERDICT_POINTS of the share the program measures itself.
    for mode, bound in (("slow", True), ("fast", False)):
        archive = work / f"input_{mode}"
        code, out = run([bin_dir / "hybridprof", "-o", archive, "--", python, INPUT_BOUND, mode,
                         "--device", args.device], log, timeout=args.run_timeout)
        measured = next((float(l.split()[1]) for l in out.splitlines() if l.startswith("input_share ")), None)
        _, report = run([bin_dir / "hybridprof-report", "--step", "train_step", archive], log)
        said = next((l.strip() for l in report.splitlines() if "input-bound: " in l), "")
        share = float(said.split(": ")[1].split("%")[0]) if said else None
        ok = (code == 0 and measured is not None and share is not None and said.startswith("input-bound") == bound
              and abs(share - measured) <= STEP_VERDICT_POINTS)
        verdict.add(f"step verdict, {mode} DataLoader: {'' if bound else 'not '}input-bound, share within "
                    f"{STEP_VERDICT_POINTS} points", ok,
                    f"report '{said or '-'}'; the program measured {measured if measured is not None else '-'}%")
    # A process that ends without its final flush lost its last interval
    # (PyTorch's DataLoader workers did, forked from a process using CUDA).
    unflushed = [l for l in log.read_text(errors="replace").splitlines() if "without a final flush" in l]
    verdict.add("every profiled process ends with its final flush", not unflushed,
                f"{len(unflushed)} warnings" + (f": {unflushed[0].strip()}" if unflushed else ""))
    version = f"{sys.version_info.major}.{sys.version_info.minor}" if python == sys.executable else "?"
    verdict.add(f"Python {facts.get('python', '-')} frames in samples",
                f("python_samples") > 0 and facts.get("python") not in (None, "-"),
                f"{f('python_samples')} of {f('samples')} samples (interpreter {version})")

    print(f"({time.monotonic() - started:.0f} s; runs logged in {log}; archive facts from "
          f"{facts_from.name if facts_from else 'no profiled run: none ended well'})")
    verdict.print()
    for n in notices:
        print(f"  notice: {n}")
    if not args.work:
        if verdict.ok():
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept for a look: {work}")
    return 0 if verdict.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
