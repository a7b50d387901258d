#include "symbolizer/symbolizer.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>

#include "symbolizer/module_debug_info.h"

namespace hybridprof::symbolizer {

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

Symbolizer::Module& Symbolizer::module_for(const std::string& module_path) {
  auto [it, inserted] = modules_.try_emplace(module_path);
  // A file that failed to open stays null: we try each path once, not per address.
  if (inserted) it->second.debug_info = ModuleDebugInfo::open(module_path);
  return it->second;
}

bool Symbolizer::call_is_statement(const std::string& module_path, uint64_t address) {
  try {
    Module& module = module_for(module_path);
    return module.debug_info && module.debug_info->call_is_statement(address);
  } catch (...) {
    return false;  // allocation failure: the plain name
  }
}

std::vector<SourceFrame> Symbolizer::resolve(const std::string& module_path, uint64_t address) {
  try {
    Module& module = module_for(module_path);
    if (auto it = module.frames_by_address.find(address); it != module.frames_by_address.end()) {
      return it->second;
    }
    std::vector<SourceFrame> frames;
    if (module.debug_info) frames = module.debug_info->frames_at(address);
    if (frames.empty()) frames.push_back(unresolved_frame(module_path, address));
    // Insert only complete results, so an exception cannot leave an empty entry.
    return module.frames_by_address.emplace(address, std::move(frames)).first->second;
  } catch (...) {
    // Only allocation failure gets here; at exit a profiler should degrade, not abort.
    try {
      return {unresolved_frame(module_path, address)};
    } catch (...) {
      return {};
    }
  }
}

std::string demangle(const std::string& mangled) {
  // Only "_Z..." names are mangled symbols: __cxa_demangle also decodes bare type
  // encodings, so a C function named "i" would come back as "int".
  if (mangled.size() < 3 || mangled.compare(0, 2, "_Z") != 0) return mangled;
  int status = 0;
  char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) {
    free(text);
    return mangled;
  }
  std::string result(text);
  free(text);
  return result;
}

SourceFrame unresolved_frame(const std::string& module_path, uint64_t address) {
  std::string name = module_path.substr(module_path.find_last_of('/') + 1);
  if (name.empty()) name = module_path.empty() ? "??" : module_path;
  char offset[2 + 16 + 1];
  std::snprintf(offset, sizeof offset, "0x%llx", static_cast<unsigned long long>(address));
  SourceFrame frame;
  frame.function = name + "+" + offset;
  frame.resolved = false;
  return frame;
}

}  // namespace hybridprof::symbolizer
