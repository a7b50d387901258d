"""A PyTorch training loop fed by a real DataLoader, for the step verdict
of hybridprof-report --step (benchmarks/gpu/check.sh).

    python3 input_bound.py slow|fast [--steps N] [--device cuda|cpu]

"slow": the dataset's __getitem__ sleeps 40 ms an image (a slow reader
and decoder), 8 images a batch, 2 workers: the step waits for batches
most of its time. "fast": images ready at once (an in-memory dataset) and a step that
computes at least 20 ms whatever the device (its model run over the batch
as many times as that takes, as gradient accumulation does): fetching a
batch is a small part of it. (On an H200 a single pass took 4 ms a step,
of which 27% went to receiving the batch from the workers: "fast" was
input-bound there.) --delay sets the seconds an image. Run by benchmarks/gpu/check.sh on a GPU
node, and by tests/integration/os_waits_test.cc on the CPU where PyTorch
is installed. train_step fetches its batch itself (next(batches)) and times the
fetch: prints "input_share P" (percent of the time in train_step spent in
next) and "steps N".
"""
import argparse
import math
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowImages(Dataset):
    def __init__(self, items, delay):
        self.items, self.delay = items, delay

    def __len__(self):
        return self.items

    def __getitem__(self, i):
        if self.delay > 0:
            time.sleep(self.delay)
        return torch.randn(3, 64, 64), i % 10


waited = 0.0
stepped = 0.0


passes = 1  # forward and backward passes a step makes over its batch


def learn(model, optimizer, images, labels, device):
    x, y = images.to(device), labels.to(device)
    optimizer.zero_grad(set_to_none=True)
    for _ in range(passes):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
    optimizer.step()
    loss.item()


def train_step(model, optimizer, batches, device):
    global waited, stepped
    begin = time.monotonic()
    images, labels = next(batches)
    got = time.monotonic()
    learn(model, optimizer, images, labels, device)
    waited += got - begin
    stepped += time.monotonic() - begin


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["slow", "fast"])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--delay", type=float, help="seconds an image takes (default: 0.04 slow, 0 fast)")
    args = parser.parse_args()
    # The fast loop's heavier model: sized for a GPU, or for a CPU's few cores.
    delay, width = (0.04, 16) if args.mode == "slow" else (0.0, 256 if args.device == "cuda" else 48)
    if args.delay is not None:
        delay = args.delay
    model = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10)).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(SlowImages(8 * (args.steps + 1), delay), batch_size=8, num_workers=2)
    batches = iter(loader)
    # Warm-up outside the step (the workers start, kernels load), as in a
    # training loop; neither the report's step time nor the share has it.
    global passes
    warm_up = next(batches)
    learn(model, optimizer, *warm_up, args.device)
    if args.mode == "fast":  # sized on the device at hand: a step of 20 ms at least
        begin = time.monotonic()
        learn(model, optimizer, *warm_up, args.device)
        passes = max(1, math.ceil(0.02 / max(time.monotonic() - begin, 1e-4)))
    for _ in range(args.steps):
        train_step(model, optimizer, batches, args.device)
    print("input_share %.1f" % (100.0 * waited / stepped))
    print("steps %d" % args.steps)
    print("passes %d" % passes, flush=True)


if __name__ == "__main__":
    main()
