#include "hybridprof/rank_notices.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>


namespace hybridprof::launcher {
namespace {
constexpr const char* kRankNoticesFile = "notices";
}

bool append_rank_notice(const std::string& rank_dir, const std::string& line) {
  std::ofstream out(rank_dir + "/" + kRankNoticesFile, std::ios::app);
  out << line << '\n';
  out.flush();
  return static_cast<bool>(out);
}

std::vector<std::string> rank_notices(const std::string& job_dir) {
  std::set<long> ranks;
  DIR* d = opendir(job_dir.c_str());
  if (d == nullptr) return {};
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    char* end = nullptr;
    if (name.rfind("rank-", 0) != 0) continue;
    const long rank = std::strtol(name.c_str() + 5, &end, 10);
    if (end != name.c_str() + 5 && *end == '\0') ranks.insert(rank);
  }
  closedir(d);
  std::vector<std::string> order;
  std::map<std::string, std::set<long>> said;
  for (long rank : ranks) {
    std::ifstream in(job_dir + "/rank-" + std::to_string(rank) + "/" + kRankNoticesFile);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      if (!said.count(line)) order.push_back(line);
      said[line].insert(rank);
    }
  }
  std::vector<std::string> lines;
  for (const std::string& text : order) {
    const std::set<long>& who = said[text];
    std::string suffix;
    if (who.size() == ranks.size() && ranks.size() > 1) {
      suffix = " (" + std::to_string(who.size()) + " ranks)";
    } else {
      suffix = who.size() == 1 ? " (rank " : " (ranks ";
      bool first = true;
      for (long r : who) {
        suffix += (first ? "" : ", ") + std::to_string(r);
        first = false;
      }
      suffix += ")";
    }
    lines.push_back(text + suffix);
  }
  return lines;
}

}  // namespace hybridprof::launcher
