"""A hung thread's likely call chain, without a debugger: the words on its
stack that point into executable code, each named by module, offset and,
where binutils' addr2line is installed, function. A scan, not an unwind:
stale return addresses show up beside live ones, innermost first. Used by
check.py when a run hangs (a GPU node may have no gdb, and cuda-gdb may
not answer in time); needs permission to read /proc/PID/mem (root, or the
same user with ptrace allowed).

    python3 stack_scan.py PID      (every thread of PID, with its state)
"""
import os
import shutil
import subprocess
import sys

WINDOW = 256 * 1024  # bytes of stack read above the stack pointer
MAX_FRAMES = 48


def executable_maps(pid):
    """(start, end, file offset, path) of each executable file mapping."""
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or "x" not in parts[1] or not parts[5].startswith("/"):
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            maps.append((start, end, int(parts[2], 16), parts[5].strip()))
    return maps


def stack_pointer(pid, tid):
    """The stack and program pointers of a thread blocked in a system call,
    from /proc/PID/task/TID/syscall ("nr args... sp pc"); None if running."""
    words = open(f"/proc/{pid}/task/{tid}/syscall").read().split()
    if len(words) < 3 or words[0] in ("running", "-1"):
        return None
    return int(words[-2], 16), int(words[-1], 16)


def names(hits):
    """module+offset -> function, through addr2line (one call per module)."""
    named = {}
    tool = shutil.which("addr2line")
    if not tool:
        return named
    by_module = {}
    for _, path, offset in hits:
        by_module.setdefault(path, []).append(offset)
    for path, offsets in by_module.items():
        try:
            out = subprocess.run([tool, "-f", "-C", "-e", path] + [hex(o) for o in offsets],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = out.splitlines()
        for i, offset in enumerate(offsets):
            if 2 * i < len(lines) and lines[2 * i] != "??":
                named[(path, offset)] = lines[2 * i]
    return named


def scan(pid, tid, out):
    try:
        pointers = stack_pointer(pid, tid)
        maps = executable_maps(pid)
    except OSError as e:
        out.write(f"    (no stack scan: {e})\n")
        return
    if pointers is None:
        out.write("    (no stack scan: the thread is running, not in a system call)\n")
        return
    sp, pc = pointers

    def locate(address):
        for start, end, offset, path in maps:
            if start <= address < end:
                return path, address - start + offset
        return None

    hits = []
    where = locate(pc)
    if where:
        hits.append((pc, *where))
    try:
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(sp)
            data = mem.read(WINDOW)
    except OSError:
        data = b""
        try:  # the stack may end sooner than the window: read what there is
            with open(f"/proc/{pid}/mem", "rb") as mem:
                for size in (65536, 16384, 4096):
                    try:
                        mem.seek(sp)
                        data = mem.read(size)
                        break
                    except OSError:
                        continue
        except OSError as e:
            out.write(f"    (no stack scan: {e})\n")
            return
    for i in range(0, len(data) - 7, 8):
        word = int.from_bytes(data[i:i + 8], "little")
        where = locate(word)
        if where:
            hits.append((word, *where))
            if len(hits) >= MAX_FRAMES:
                break
    named = names(hits)
    out.write(f"    stack scan from sp {sp:#x} (pc {pc:#x}), innermost first:\n")
    for address, path, offset in hits:
        name = named.get((path, offset), "")
        out.write(f"      {address:#014x}  {path.rsplit('/', 1)[-1]}+{offset:#x}  {name}\n")


def group_members(pgid):
    """The processes of process group `pgid`, by PID."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                pids.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(pids)


def describe_process(pid, out):
    """Each thread of `pid`: its state, the kernel function it waits in,
    its system call, and a scan of its stack."""
    try:
        command = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return
    out.write(f"== process {pid}: {command}\n")
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        task = f"/proc/{pid}/task/{tid}"
        try:
            stat = open(f"{task}/stat").read()
            name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
            wchan = open(f"{task}/wchan").read()
            syscall = open(f"{task}/syscall").read().split()[0]
        except (OSError, ValueError, IndexError):
            continue
        out.write(f"  thread {tid} {name!r} state {state} wchan {wchan} syscall {syscall}\n")
        scan(pid, int(tid), out)
    out.flush()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    describe_process(int(sys.argv[1]), sys.stdout)


if __name__ == "__main__":
    main()
