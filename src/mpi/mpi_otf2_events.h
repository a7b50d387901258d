// MPI's event set in the archive: each MPI event (mpi_events.h) as OTF2's
// MPI record of the same name. Registered with the finalizer in
// tools/finalize/event_set_writers.cc.
#pragma once

#include "otf2/event_set_writer.h"

namespace hybridprof::mpi {

const otf2::EventSetWriter& otf2_event_writer();

}  // namespace hybridprof::mpi
