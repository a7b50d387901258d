#include "common/trace_switch.h"

#include <cstdlib>

namespace hybridprof {

bool parse_trace_list(std::string_view text, uint32_t* mask, std::string* error) {
  auto known = [] {
    std::string names;
    for (std::string_view n : kTracedAdapters) names += std::string(names.empty() ? "" : ", ") + std::string(n);
    return names + ", all or none";
  };
  if (text == "all" || text == "none") {
    *mask = text == "all" ? kAllTracedAdapters : 0;
    return true;
  }
  uint32_t m = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view name = text.substr(start, comma - start);
    size_t i = 0;
    while (i < kTracedAdapters.size() && kTracedAdapters[i] != name) ++i;
    if (i == kTracedAdapters.size()) {
      *error = name.empty() ? "--trace needs a list of adapters (" + known() + ")"
                            : "--trace: unknown adapter '" + std::string(name) + "' (known: " + known() + ")";
      return false;
    }
    m |= 1u << i;
    start = comma + 1;
  }
  *mask = m;
  return true;
}

std::string trace_list_text(uint32_t mask) {
  if (mask == 0) return "none";
  std::string text;
  for (size_t i = 0; i < kTracedAdapters.size(); ++i)
    if (mask & (1u << i)) text += std::string(text.empty() ? "" : ",") + std::string(kTracedAdapters[i]);
  return text;
}

namespace {

uint32_t traced_mask() {
  static const uint32_t mask = [] {
    const char* v = std::getenv(env::kTrace);
    if (v == nullptr || *v == '\0') return kAllTracedAdapters;
    uint32_t m = 0;
    std::string error;
    return parse_trace_list(v, &m, &error) ? m : 0u;
  }();
  return mask;
}

}  // namespace

std::string trace_switch_notice() {
  const uint32_t mask = traced_mask();
  if (mask == kAllTracedAdapters) return "";
  return "traced: " + trace_list_text(mask) + "; switched off (--trace): " + trace_list_text(kAllTracedAdapters & ~mask);
}

bool adapter_traced(std::string_view adapter) { return mask_traces(traced_mask(), adapter); }

}  // namespace hybridprof
