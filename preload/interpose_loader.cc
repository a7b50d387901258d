// The dynamic loader's entry points the runtime stands in front of:
// dl_iterate_phdr, so the runtime's unwinds never take the loader's lock (see unwind/loader_snapshot.h), and dlclose, so the module
// map learns of an unload when it happens.
#include <link.h>

#include <vector>

#include "common/clock.h"
#include "preload/real_functions.h"
#include "preload/runtime.h"
#include "unwind/loader_snapshot.h"
#include "unwind/native_unwinder.h"

using namespace hybridprof::preload;
namespace raw = hybridprof::raw;

extern "C" {

// SIGNAL PATH when called from the handler's unwind (libunwind looking up
// the unwind table of a frame): answered from the snapshot, no lock taken,
// as for the runtime's other unwinds.
int dl_iterate_phdr(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  if (hybridprof::libunwind_lookups_use_snapshot()) return hybridprof::LoaderSnapshot::instance().iterate(callback, data);
  return real().dl_iterate_phdr(callback, data);
}

int dlclose(void* handle) {
  // Record the unload time precisely: samples drained later that were taken
  // before it still resolve to the library.
  const int rc = real().dlclose(handle);
  if (Runtime* rt = runtime(); rt && profile_recording()) {
    std::vector<raw::Record> changes;
    rt->modules.refresh(hybridprof::monotonic_ns(), &changes);
    rt->drain.append(changes);
  }
  return rc;
}

}  // extern "C"
