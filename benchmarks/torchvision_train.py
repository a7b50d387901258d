"""A torchvision training job on the CPU, one of the real programs the
project is measured on: resnet18 (torchvision's, 10 classes) trained on
random 64x64 images from a Dataset whose __getitem__ takes 2 ms, through a
DataLoader with 2 worker processes; oneDNN's JIT kernels do the
convolutions. Debian: apt-get install python3-torchvision.

    python3 torchvision_train.py [IMAGES=256]
    hybridprof -o run -- python3 torchvision_train.py && hybridprof-report --step train_step run

Prints "steps N seconds S input_share P": the timed loop and the share of
it spent in next(batches), the program's own measure to hold the report's
step verdict against.
"""
import sys
import time

import torch
import torchvision
from torch.utils.data import DataLoader, Dataset


class RandomImages(Dataset):
    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.randn(3, 64, 64), i % 10


def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def main():
    images = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    torch.set_num_threads(2)
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(DataLoader(RandomImages(images), batch_size=16, num_workers=2))
    begin = time.monotonic()
    waited, steps = 0.0, 0
    while True:
        asked = time.monotonic()
        try:
            x, y = next(batches)
        except StopIteration:
            break
        waited += time.monotonic() - asked
        train_step(model, optimizer, x, y)
        steps += 1
    seconds = time.monotonic() - begin
    print("steps %d seconds %.2f input_share %.1f" % (steps, seconds, 100.0 * waited / seconds), flush=True)


if __name__ == "__main__":
    main()
