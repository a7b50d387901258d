// The OS-runtime adapter's event set on the archive side: a recorded
// wait's arguments (os_wait_arguments.h) as OTF2 ParameterUnsignedInt
// records ("fd", "bytes asked", ...) at the region's enter, inside it, as
// viewers show a region's parameters.
#pragma once

#include "otf2/event_set_writer.h"

namespace hybridprof::osrt {

const otf2::EventSetWriter& otf2_event_writer();

}  // namespace hybridprof::osrt
