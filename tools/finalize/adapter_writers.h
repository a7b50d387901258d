// The archive writers of the adapters' event sets, by set name: the one
// place an adapter registers with the finalizer what its events and its
// definitions become.
#pragma once

#include <string_view>

#include "otf2/event_set_writer.h"
#include "sink/definition_set_writer.h"

namespace hybridprof::finalize {

// The writer of the set `name`'s events, or nullptr (a set this build cannot write).
const otf2::EventSetWriter* event_set_writer(std::string_view name);
// Every set's definitions (ArchiveWriter::Options::define_event_sets).
void define_event_sets(otf2::ArchiveWriter& writer);
// The writer of the set `name`'s definitions, or nullptr (a set that has none,
// or that this build cannot write).
const sink::DefinitionSetWriter* definition_set_writer(std::string_view name);

}  // namespace hybridprof::finalize
