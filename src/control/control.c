/* libhybridprof_control.so: the control API's no-ops, for programs that
 * link against it and run without the profiler. Under `hybridprof` the
 * preloaded runtime defines the same symbols, and the dynamic linker binds
 * the program's calls to those first (LD_PRELOAD comes before every
 * library the program needs). */
#include "hybridprof/control.h"

void hybridprof_start(void) {}
void hybridprof_stop(void) {}
void hybridprof_mark(const char* text) { (void)text; }
int hybridprof_recording(void) { return 0; }
