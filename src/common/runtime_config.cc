#include "common/runtime_config.h"

#include <signal.h>
#include <string.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/trace_switch.h"

namespace hybridprof {
namespace {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

}  // namespace

bool env::flag(const char* name) {
  const char* v = get(name);
  return v != nullptr && std::string(v) != "0";
}

namespace {

bool number_from_env(const char* name, uint64_t min, uint64_t max, uint64_t* out, std::string* error) {
  const char* v = get(name);
  if (!v) return true;
  uint64_t n;
  if (!parse_uint(v, max, &n) || n < min) {
    *error = std::string(name) + "='" + v + "' is not a number in [" + std::to_string(min) + ", " +
             std::to_string(max) + "]";
    return false;
  }
  *out = n;
  return true;
}

}  // namespace

bool parse_uint(const std::string& text, uint64_t max, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + uint64_t(c - '0');
  }
  if (n > max) return false;
  *out = n;
  return true;
}

bool parse_size(const std::string& text, uint64_t* bytes) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  uint64_t n;
  if (!parse_uint(text.substr(0, digits), UINT64_MAX, &n) || n == 0) return false;
  std::string unit = text.substr(digits);
  for (char& c : unit) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();  // "MB", "MIB"
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  unsigned shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else return false;
  if (n > (UINT64_MAX >> 1) >> shift) return false;
  *bytes = n << shift;
  return true;
}

bool parse_signal(const std::string& text, int* signal) {
  std::string s = text;
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  uint64_t n;
  if (parse_uint(s, 64, &n) && n >= 1) {
    *signal = static_cast<int>(n);
    return true;
  }
  if (s.rfind("RTMIN", 0) == 0) {
    uint64_t off = 0;
    if (s.size() > 5 && (s[5] != '+' || !parse_uint(s.substr(6), 64, &off))) return false;
    if (SIGRTMIN + static_cast<int>(off) > SIGRTMAX) return false;
    *signal = SIGRTMIN + static_cast<int>(off);
    return true;
  }
  for (int i = 1; i < NSIG; ++i) {
    const char* abbrev = sigabbrev_np(i);
    if (abbrev && s == abbrev) {
      *signal = i;
      return true;
    }
  }
  return false;
}

bool parse_seconds(const std::string& text, uint64_t* ns) {
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(seconds >= 0) || seconds > 366.0 * 86400) return false;
  *ns = static_cast<uint64_t>(seconds * 1e9 + 0.5);
  return true;
}

bool parse_duration(const std::string& text, uint64_t* ns) {
  if (text == "0") {
    *ns = 0;
    return true;
  }
  static const std::pair<const char*, double> kUnits[] = {
      {"ns", 1}, {"us", 1e3}, {"\u00b5s", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& [unit, scale] : kUnits) {
    const size_t n = std::strlen(unit);
    if (text.size() <= n || text.compare(text.size() - n, n, unit) != 0) continue;
    const std::string number = text.substr(0, text.size() - n);
    if (number.find_first_not_of("0123456789.") != std::string::npos) return false;
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || !(value >= 0) || value * scale > 366.0 * 86400 * 1e9) return false;
    *ns = static_cast<uint64_t>(value * scale + 0.5);
    return true;
  }
  return false;
}

bool runtime_config_from_env(RuntimeConfig* c, std::string* error) {
  if (const char* v = get(env::kOutputDir)) c->output_dir = v;
  if (const char* v = get(env::kEvent)) c->event = v;
  uint64_t n;
  if (get(env::kPeriod)) {
    if (!number_from_env(env::kPeriod, 1, UINT64_MAX >> 1, &n, error)) return false;
    c->value = n;
    c->frequency = false;
  } else if (get(env::kFrequency)) {
    if (!number_from_env(env::kFrequency, 1, kMaxFrequencyHz, &n, error)) return false;
    c->value = n;
    c->frequency = true;
  }
  n = c->max_depth;
  if (!number_from_env(env::kMaxDepth, 1, kMaxDepthLimit, &n, error)) return false;
  c->max_depth = static_cast<uint32_t>(n);
  n = c->ring_kib;
  c->ring_kib_given = get(env::kRingKiB) != nullptr;
  if (!number_from_env(env::kRingKiB, 16, 1 << 20, &n, error)) return false;
  // The ring needs a power of two.
  uint32_t kib = 16;
  while (kib < n) kib <<= 1;
  c->ring_kib = kib;
  n = c->flush_ms;
  if (!number_from_env(env::kFlushMs, 1, 60000, &n, error)) return false;
  c->flush_ms = static_cast<uint32_t>(n);
  if (const char* v = get(env::kSignal)) {
    if (!parse_signal(v, &c->signal)) {
      *error = std::string(env::kSignal) + "='" + v + "' is not a signal";
      return false;
    }
  }
  if (const char* v = get(env::kMaxSize)) {
    if (!parse_size(v, &c->max_size_bytes) || c->max_size_bytes < kMinMaxSizeBytes) {
      *error = std::string(env::kMaxSize) + "='" + v + "' is not a size of at least 64K";
      return false;
    }
  }
  c->force_timer = env::flag(env::kForceTimer);
  c->fixed_period = env::flag(env::kFixedPeriod);
  c->paused = env::flag(env::kPaused);
  if (const char* v = get(env::kCaptureRange)) c->capture_range = v;
  if (get(env::kCaptureRangeCount) &&
      !number_from_env(env::kCaptureRangeCount, 1, UINT64_MAX >> 1, &c->capture_range_count, error))
    return false;
  for (const auto& [name, field] : {std::pair{env::kDelay, &c->delay_ns}, std::pair{env::kDuration, &c->duration_ns}}) {
    const char* v = get(name);
    if (v && !parse_seconds(v, field)) {
      *error = std::string(name) + "='" + v + "' is not a number of seconds";
      return false;
    }
  }
  c->quiet = env::flag(env::kQuiet);
  if (const char* v = get(env::kTraceClock)) {
    c->trace_clock = v;
    if (c->trace_clock != "tsc" && c->trace_clock != "monotonic") {
      *error = std::string(env::kTraceClock) + "='" + v + "' is neither tsc nor monotonic";
      return false;
    }
  }
  n = c->os_wait_min_ns;
  if (!number_from_env(env::kOsWaitMin, 0, kMaxOsWaitMinNs, &n, error)) return false;
  c->os_wait_min_ns = n;
  if (const char* v = get(env::kTrace)) {
    uint32_t mask = 0;
    if (!parse_trace_list(v, &mask, error)) {
      *error = std::string(env::kTrace) + "='" + v + "': " + *error;
      return false;
    }
  }
  return true;
}

}  // namespace hybridprof
