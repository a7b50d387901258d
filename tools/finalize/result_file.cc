#include "finalize/result_file.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <utility>
#include <vector>

namespace hybridprof::finalize {
namespace {

// One "name value" line per field; warnings may repeat.
template <typename Fn>
void for_each_counter(Result& r, Fn&& fn) {
  const std::pair<const char*, uint64_t*> counters[] = {
      {"processes", &r.processes}, {"threads", &r.threads}, {"streams", &r.streams}, {"samples", &r.samples},
      {"dropped", &r.dropped}, {"unwind_failed", &r.unwind_failed}, {"truncated", &r.truncated},
      {"unwind_recovered", &r.unwind_recovered},
      {"python_incomplete", &r.python_incomplete}, {"traced_events", &r.traced_events},
      {"events_skipped", &r.events_skipped}, {"missing_ranks", &r.missing_ranks},
      {"symbol_modules_cached", &r.symbol_modules_cached}, {"symbol_modules_read", &r.symbol_modules_read},
      {"phase_read_ms", &r.phase_read_ms}, {"phase_node_naming_ms", &r.phase_node_naming_ms},
      {"phase_symbolize_ms", &r.phase_symbolize_ms}, {"phase_unify_ms", &r.phase_unify_ms},
      {"phase_exchange_ms", &r.phase_exchange_ms},
      {"phase_write_ms", &r.phase_write_ms}, {"rank_peak_rss_kib", &r.rank_peak_rss_kib},
      {"context_bytes_rank_max", &r.context_bytes_rank_max}, {"context_bytes_job", &r.context_bytes_job},
      {"definitions_bytes_rank_max", &r.definitions_bytes_rank_max},
      {"definitions_bytes_job", &r.definitions_bytes_job},
      {"definitions_bytes_received_max", &r.definitions_bytes_received_max}};
  for (const auto& [name, value] : counters) fn(name, *value);
}

}  // namespace

bool save_result(const std::string& path, const Result& result) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    Result r = result;
    out << "hybridprof-result 1\n";
    out << "anchor " << r.anchor << "\n";
    out << "enter_leave_anchor " << r.enter_leave_anchor << "\n";
    for_each_counter(r, [&](const char* name, uint64_t value) { out << name << ' ' << value << '\n'; });
    for (const auto& w : r.warnings) out << "warning " << w << '\n';
    out.close();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool load_result(const std::string& path, Result* result) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != "hybridprof-result 1") return false;
  Result r;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    const std::string name = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (name == "anchor") r.anchor = value;
    else if (name == "enter_leave_anchor") r.enter_leave_anchor = value;
    else if (name == "warning") r.warnings.push_back(value);
    else for_each_counter(r, [&](const char* counter, uint64_t& field) {
      if (name == counter) field = std::strtoull(value.c_str(), nullptr, 10);
    });
  }
  *result = std::move(r);
  return true;
}

}  // namespace hybridprof::finalize
