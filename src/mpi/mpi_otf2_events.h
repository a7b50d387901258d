// MPI's event set in the archive: its communicators (CommDefinitions,
// mpi_events.h) as OTF2 communicators of the MPI paradigm, unified across
// ranks by key, and each MPI event as OTF2's MPI record of the same name.
// Registered with the finalizer in tools/finalize/adapter_writers.cc.
#pragma once

#include "otf2/event_set_writer.h"
#include "sink/definition_set_writer.h"

namespace hybridprof::mpi {

const otf2::EventSetWriter& otf2_event_writer();
const sink::DefinitionSetWriter& comm_definition_writer();

}  // namespace hybridprof::mpi
