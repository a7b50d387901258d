// OpenMP's event set in the archive (openmp_events.h): each fork and join
// as OTF2's ThreadFork and ThreadJoin of paradigm OpenMP. Registered with
// the finalizer in tools/finalize/adapter_writers.cc.
#pragma once

#include "otf2/event_set_writer.h"

namespace hybridprof::openmp {

const otf2::EventSetWriter& otf2_event_writer();

}  // namespace hybridprof::openmp
