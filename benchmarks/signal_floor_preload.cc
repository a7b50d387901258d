// The signal floor (signal_floor.h) for any program: preloaded, it samples
// the main thread at 1 kHz into an empty handler from the start. For
// single-threaded programs such as benchmarks/python_workload.py.
#include "signal_floor.h"

namespace {

__attribute__((constructor)) void arm_main_thread() {
  signal_floor::install_empty_handler();
  signal_floor::arm_this_thread();
}

}  // namespace
