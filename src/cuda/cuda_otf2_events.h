// CUDA's event set on the archive side: each event's fields as OTF2
// ParameterUnsignedInt records ("CUDA correlation id", "CUDA grid x", ...)
// at the event's time, inside its region, as viewers show a region's
// parameters.
#pragma once

#include "otf2/event_set_writer.h"

namespace hybridprof::cuda {

// The parameter every kind writes, on an API call and on the work it
// launched alike: what ties the two together for a reader.
inline constexpr const char* kCorrelationParameter = "CUDA correlation id";

const otf2::EventSetWriter& otf2_event_writer();

}  // namespace hybridprof::cuda
