// The signal floor (signal_floor.h) for any program: preloaded, it samples
// the main thread at 1 kHz into an empty handler from the start. For
// single-threaded programs such as benchmarks/python_workload.py.
// SIGNAL_FLOOR_KERNEL=1: system time counts too (see arm_this_thread).
#include <cstdlib>
#include <cstring>

#include "signal_floor.h"

namespace {

__attribute__((constructor)) void arm_main_thread() {
  signal_floor::install_empty_handler();
  const char* kernel = std::getenv("SIGNAL_FLOOR_KERNEL");
  signal_floor::arm_this_thread(kernel != nullptr && std::strcmp(kernel, "1") == 0);
}

}  // namespace
