#include "finalize/adapter_writers.h"

#include <vector>

#include "cuda/cuda_otf2_events.h"
#include "mpi/mpi_otf2_events.h"
#include "openmp/openmp_otf2_events.h"
#include "osrt/os_wait_otf2_events.h"

namespace hybridprof::finalize {
namespace {

// One line per adapter with an event set: its event writer and, when its
// events name definitions, their writer.
struct AdapterWriters {
  const otf2::EventSetWriter* events;
  const sink::DefinitionSetWriter* definitions;
};
const std::vector<AdapterWriters>& adapters() {
  static const std::vector<AdapterWriters> all = {
      {&mpi::otf2_event_writer(), &mpi::comm_definition_writer()},
      {&openmp::otf2_event_writer(), nullptr},
      {&cuda::otf2_event_writer(), nullptr},
      {&osrt::otf2_event_writer(), nullptr},
  };
  return all;
}

}  // namespace

const otf2::EventSetWriter* event_set_writer(std::string_view name) {
  for (const AdapterWriters& a : adapters())
    if (a.events->set_name() == name) return a.events;
  return nullptr;
}

void define_event_sets(otf2::ArchiveWriter& writer) {
  for (const AdapterWriters& a : adapters()) a.events->define(writer);
}

const sink::DefinitionSetWriter* definition_set_writer(std::string_view name) {
  for (const AdapterWriters& a : adapters())
    if (a.definitions && a.definitions->set_name() == name) return a.definitions;
  return nullptr;
}

}  // namespace hybridprof::finalize
