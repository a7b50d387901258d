"""A small PyTorch training job for benchmarks/gpu/check.sh.

A convolutional net trained on random data: each step copies a batch
from host to device, runs forward, backward and an SGD step, and reads the
loss back (a device-to-host copy and a synchronization). Each step is an
NVTX range "step N" (torch.cuda.nvtx); one step runs under
torch.autograd.profiler.emit_nvtx(), whose op ranges nest inside it.

    python3 train_step.py [--steps N] [--warmup N] [--kineto FILE] [--device cuda|cpu]

Prints "loop_seconds=S steps=N" (the timed steps, warm-up left out). With
--kineto FILE the timed steps run under torch.profiler (Kineto) instead of
NVTX and FILE gets {"kernels": count, "kernel_us": summed time} of the CUDA
kernels it recorded. --device cpu runs the same code on the CPU (a dry run
of the check's plumbing; no GPU fact can pass then).
"""
import argparse
import json
import time

import torch
from torch import nn


def make_model():
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def train_step(model, optimizer, images, labels, device):
    x = images.to(device, non_blocking=False)
    y = labels.to(device, non_blocking=False)
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def nvtx_push(name, device):
    if device == "cuda":
        torch.cuda.nvtx.range_push(name)


def nvtx_pop(device):
    if device == "cuda":
        torch.cuda.nvtx.range_pop()


def run_steps(first, count, model, optimizer, batches, device, nvtx, emit_nvtx_step):
    for i in range(first, first + count):
        images, labels = batches[i % len(batches)]
        if nvtx:
            nvtx_push(f"step {i}", device)
        if nvtx and i == emit_nvtx_step and device == "cuda":
            with torch.autograd.profiler.emit_nvtx():
                train_step(model, optimizer, images, labels, device)
        else:
            train_step(model, optimizer, images, labels, device)
        if nvtx:
            nvtx_pop(device)


def kernel_totals(prof, path):
    """Kineto's CUDA kernels: count and summed duration (us)."""
    prof.export_chrome_trace(path + ".trace.json")
    with open(path + ".trace.json") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace  # older PyTorch: a bare list
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return {"kernels": len(kernels), "kernel_us": sum(float(e.get("dur", 0)) for e in kernels)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--kineto", metavar="FILE")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("train_step.py: no CUDA device")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False  # the same kernels in every run
    model = make_model().to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    # Pageable host batches: every step copies its own.
    batches = [(torch.randn(args.batch, 3, args.size, args.size), torch.randint(0, 10, (args.batch,)))
               for _ in range(4)]
    run_steps(-args.warmup, args.warmup, model, optimizer, batches, args.device, False, None)
    if args.device == "cuda":
        torch.cuda.synchronize()

    start = time.perf_counter()
    if args.kineto:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if args.device == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as prof:
            run_steps(0, args.steps, model, optimizer, batches, args.device, False, None)
            if args.device == "cuda":
                torch.cuda.synchronize()
    else:
        run_steps(0, args.steps, model, optimizer, batches, args.device, True, args.steps // 2)
        if args.device == "cuda":
            torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if args.kineto:
        with open(args.kineto, "w") as f:
            json.dump(kernel_totals(prof, args.kineto), f)
    print(f"loop_seconds={seconds:.6f} steps={args.steps}", flush=True)


if __name__ == "__main__":
    main()
