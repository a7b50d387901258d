// The archive writers of the adapters' event sets, by set name: the one
// place an adapter's event set is registered with the finalizer.
#pragma once

#include <string_view>

#include "otf2/event_set_writer.h"

namespace hybridprof::finalize {

// The writer of the set `name`, or nullptr (a set this build cannot write).
const otf2::EventSetWriter* event_set_writer(std::string_view name);

}  // namespace hybridprof::finalize
