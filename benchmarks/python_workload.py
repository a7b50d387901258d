# A fixed amount of pure-Python CPU work (about 2 s on the reference VM)
# under a ~12-frame Python stack, for benchmarks/python_overhead.sh.
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def layer(depth, n):
    return fib(n) if depth == 0 else layer(depth - 1, n)


def main(rounds):
    total = 0
    for _ in range(rounds):
        total += layer(8, 20)
    return total


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
