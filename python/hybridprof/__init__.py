"""hybridprof's control API for Python: record only the part that matters.

    import hybridprof

    for epoch in range(10):
        with hybridprof.window(f"epoch {epoch}") if epoch == 4 else contextlib.nullcontext():
            train_one_epoch()

Run the program under ``hybridprof --paused`` so that nothing is recorded
before the first window opens. Without the profiler every call is a no-op.
The calls go, through ctypes, to the functions of the preloaded hybridprof
runtime (include/hybridprof/control.h); where the process has none, nothing
happens.
"""

import contextlib
import ctypes

__all__ = ["start", "stop", "mark", "recording", "window"]


def _runtime_functions():
    try:
        process = ctypes.CDLL(None)  # the process's global scope: the preloaded runtime is there
    except OSError:
        return None
    try:
        functions = (process.hybridprof_start, process.hybridprof_stop, process.hybridprof_mark,
                     process.hybridprof_recording)
    except AttributeError:
        return None  # not profiled
    functions[0].restype = None
    functions[1].restype = None
    functions[2].argtypes = [ctypes.c_char_p]
    functions[2].restype = None
    functions[3].restype = ctypes.c_int
    return functions


_functions = _runtime_functions()


def start():
    """Opens the capture window of this process."""
    if _functions:
        _functions[0]()


def stop():
    """Closes it: what ran inside is recorded, what runs after is not."""
    if _functions:
        _functions[1]()


def mark(text):
    """A named point of the process's time in the archive."""
    if _functions:
        _functions[2](str(text).encode("utf-8", "replace"))


def recording():
    """True when the profiler runs in this process and the window is open."""
    return bool(_functions and _functions[3]())


@contextlib.contextmanager
def window(name=None):
    """Records the body: opens the window (marked `name`), closes it after."""
    start()
    if name is not None:
        mark(name)
    try:
        yield
    finally:
        stop()
