# torch_deep_stack.py [STEPS=30]: the deep native stacks of a PyTorch
# training loop without JIT code. resnet18's building blocks (conv, batch
# norm, relu, pooling, linear) on 3x64x64 images, with oneDNN turned off
# (torch.backends.mkldnn.enabled = False), so convolutions run ATen's own
# C++ kernels and every sample's native stack goes 100-190 frames through
# libtorch, none of it generated at run time. One intra-op thread: the
# work per step is the same however busy the machine is.
# Prints the loss, and "loop_ns N": the wall time of the steps after the
# first (the training loop in its steady state, without the import, the
# model's construction and the first step's one-time work), which
# benchmarks/timing.sh collects beside the whole run's time.
import sys
import time

import torch
from torch import nn


def block(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
        nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


def train_step(model, optimizer, loss_fn, x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def main(steps):
    torch.backends.mkldnn.enabled = False
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
        block(32, 32, 1), block(32, 64, 2), block(64, 128, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(16, 3, 64, 64)
    y = torch.randint(0, 10, (16,))
    loss = train_step(model, optimizer, loss_fn, x, y)
    start = time.perf_counter_ns()
    for _ in range(steps - 1):
        loss = train_step(model, optimizer, loss_fn, x, y)
    loop_ns = time.perf_counter_ns() - start
    print("loss %.4f" % loss)
    if steps > 1:
        print("loop_ns %d" % loop_ns)


if __name__ == "__main__":
    main(max(1, int(sys.argv[1])) if len(sys.argv) > 1 else 30)
