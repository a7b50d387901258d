#include "symbolizer/symbolizer.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>

#include "symbolizer/module_debug_info.h"
#include "symbolizer/symbol_cache.h"

namespace hybridprof::symbolizer {

Symbolizer::Symbolizer(SymbolCache* cache) : cache_(cache) {}
Symbolizer::~Symbolizer() = default;

Symbolizer::Module& Symbolizer::module_for(const std::string& module_path) {
  auto [it, inserted] = modules_.try_emplace(module_path);
  if (inserted && cache_) {
    Module& m = it->second;
    m.build_id = build_id_of(module_path);
    if (!m.build_id.empty()) {
      m.cached = std::make_unique<CachedEntry>(cache_->open(m.build_id));
      m.found = std::make_unique<CachedModule>();
    }
  }
  return it->second;
}

ModuleDebugInfo* Symbolizer::debug_info(Module& module, const std::string& module_path) {
  // A file that failed to open stays null: we try each path once, not per address.
  if (!module.opened) {
    module.opened = true;
    // With a cache, a compressed debug file is read from its decompressed copy there.
    const std::optional<DebugCopies> copies =
        cache_ && !module.build_id.empty() ? std::optional(cache_->debug_copies(module.build_id)) : std::nullopt;
    module.debug_info = ModuleDebugInfo::open(module_path, copies ? &*copies : nullptr);
    if (module.debug_info && module.cached && !module.cached->units().empty())
      module.debug_info->use_units({module.cached->units().begin(), module.cached->units().end()});
  }
  return module.debug_info.get();
}

bool Symbolizer::call_is_statement(const std::string& module_path, uint64_t address) {
  try {
    Module& module = module_for(module_path);
    if (module.cached) {
      if (const std::optional<bool> kept = module.cached->statement(address)) return *kept;
    }
    ModuleDebugInfo* info = debug_info(module, module_path);
    const bool statement = info && info->call_is_statement(address);
    if (module.found) module.found->statements[address] = statement;
    return statement;
  } catch (...) {
    return false;  // allocation failure: the plain name
  }
}

const std::vector<SourceFrame>& Symbolizer::resolve(const std::string& module_path, uint64_t address) {
  try {
    Module& module = module_for(module_path);
    if (auto it = module.frames_by_address.find(address); it != module.frames_by_address.end()) {
      return it->second;
    }
    std::vector<SourceFrame> frames;
    // Kept by an earlier run, or earlier in this one; else read.
    const bool kept = (module.cached && module.cached->find(address, &frames)) ||
                      (module.found && module.found->find(address, &frames));
    if (!kept && !from_whole_table(module, address, &frames)) frames = read_frames(module, module_path, address);
    if (frames.empty()) frames.push_back(unresolved_frame(module_path, address));
    // Insert only complete results, so an exception cannot leave an empty entry.
    return module.frames_by_address.emplace(address, std::move(frames)).first->second;
  } catch (...) {
    // Only allocation failure gets here; at exit a profiler should degrade, not abort.
    try {
      unanswered_ = {unresolved_frame(module_path, address)};
    } catch (...) {
      unanswered_.clear();
    }
    return unanswered_;
  }
}

std::vector<SourceFrame> Symbolizer::read_frames(Module& module, const std::string& module_path, uint64_t address) {
  std::vector<SourceFrame> frames;
  uint64_t from = address, to = address + 1;
  ModuleDebugInfo* info = debug_info(module, module_path);
  if (info) frames = info->frames_at(address, &from, &to);
  // Stored without the unresolved frame: it names the module by the path
  // it was loaded from, which another run may spell otherwise. A module
  // without DWARF answers a symbol's whole range alike: its whole symbol
  // table is kept at once; one with DWARF keeps the address's whole
  // function (a later run's address anywhere in them is answered from the
  // cache).
  if (module.found) {
    if (to - from > 1)
      keep_symbol_table(*info, module.found.get());
    else if (!(info && keep_function(*info, address, module.found.get())))
      module.found->add_address(address, frames);
    // The units' index, once (a DWARF module's): later openings skip indexing.
    if (info && module.found->units.empty() && !(module.cached && !module.cached->units().empty()))
      module.found->units = info->units();
  }
  return frames;
}

bool Symbolizer::from_whole_table(const Module& module, uint64_t address, std::vector<SourceFrame>* frames) {
  if (module.cached && module.cached->whole_table())
    *frames = module.cached->symbol_frames(address);
  else if (module.found && module.found->whole_table)
    *frames = module.found->symbol_frames(address);
  else
    return false;
  return true;
}

void Symbolizer::keep_symbol_table(ModuleDebugInfo& info, CachedModule* found) {
  found->stretches.clear();
  found->names.clear();
  found->whole_table =
      info.each_symbol_stretch([&](uint64_t lo, uint64_t hi, const char* name) { found->add_stretch(lo, hi, name); });
}

bool Symbolizer::keep_function(ModuleDebugInfo& info, uint64_t address, CachedModule* found) {
  // A function of more stretches is kept an address at a time (a few
  // generated functions hold tens of thousands of line rows).
  constexpr size_t kMostStretches = 4096;
  std::vector<ModuleDebugInfo::Answer> answers;
  if (!info.answers_around(address, kMostStretches, &answers)) return false;
  for (const auto& a : answers) found->add_range(a.lo, a.hi, a.frames);
  return true;
}

void Symbolizer::save() {
  if (cache_ == nullptr) return;
  for (auto& [path, module] : modules_) {
    if (!module.found || module.found->empty()) continue;
    cache_->store(module.build_id, *module.found);
    *module.found = {};
  }
}

Symbolizer::CacheUse Symbolizer::cache_use() const {
  CacheUse use;
  for (const auto& [path, module] : modules_) {
    if (!module.cached) continue;
    ++(module.opened ? use.modules_read : use.modules_cached);
  }
  return use;
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
