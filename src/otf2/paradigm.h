// Paradigm <-> OTF2_Paradigm, in one place for the writer and the reader.
#pragma once

#include <otf2/OTF2_GeneralDefinitions.h>

#include <string_view>

#include "otf2/types.h"

namespace hybridprof::otf2 {

// OTF2 3.0 has no Python paradigm, so Python regions are written as
// OTF2_PARADIGM_USER with this region description and recognised by it.
inline constexpr std::string_view kPythonRegionDescription = "python";
// Nor one for blocking C library calls: OTF2_PARADIGM_USER with this.
inline constexpr std::string_view kOsRuntimeRegionDescription = "os runtime";
// The region description a paradigm written as OTF2_PARADIGM_USER is
// recognised by (empty for plain user regions).
std::string_view user_paradigm_description(Paradigm);
// Native regions name their module (executable or library path) in the
// region description: "module:/usr/lib/x86_64-linux-gnu/libc.so.6".
inline constexpr std::string_view kModuleDescriptionPrefix = "module:";

OTF2_Paradigm to_otf2_paradigm(Paradigm);
Paradigm from_otf2_paradigm(OTF2_Paradigm, std::string_view region_description);
const char* paradigm_name(Paradigm);  // "sampling", "python", ... for reports

}  // namespace hybridprof::otf2
