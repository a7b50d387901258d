// IP -> function, file:line and inline chain, read from the module's DWARF with
// elfutils libdw. Runs after sampling (at exit / MPI_Finalize), never on the
// signal path: it allocates, opens files and may be slow on first use of a module.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace hybridprof::symbolizer {

struct SourceFrame {
  std::string function;  // demangled C++ name (e.g. "ns::Foo::bar(int)"), or plain C name
                         // (qualified but without parameters, "ns::(anonymous namespace)::f"
                         // or Fortran "mod::proc", when DWARF has no C++ linkage name)
  std::string file;      // source file path as in DWARF (absolute if DWARF gives comp_dir), "" if unknown
  uint32_t line = 0;     // 0 if unknown
  bool inlined = false;  // this frame was inlined into the next frame in the vector
  bool resolved = true;  // false when no symbol was found: function is then "<module basename>+0x<hex>"

  friend bool operator==(const SourceFrame&, const SourceFrame&) = default;
};

class ModuleDebugInfo;  // one opened module (its Dwfl session), see module_debug_info.h
class SymbolCache;      // what earlier runs found, see symbol_cache.h
struct CachedModule;
class CachedEntry;

class Symbolizer {
 public:
  // With `cache` (not owned; may be null), a module with a build id is
  // answered from what earlier runs stored there, and opened only for
  // addresses they did not ask about; save() stores what was new.
  explicit Symbolizer(SymbolCache* cache = nullptr);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `address` is an ELF virtual address inside the file at `module_path` (i.e. runtime
  // address minus the module's load bias, as dl_iterate_phdr's dlpi_addr gives).
  // Returns frames innermost first: inlined callees first, the real (out-of-line)
  // function last. Never empty (but when memory ran out). Results are kept
  // per (module, address): the reference stays valid as long as the
  // symbolizer (but after a failed call, only until the next call).
  // Thread-compatible (one thread at a time). Never throws, never prints.
  const std::vector<SourceFrame>& resolve(const std::string& module_path, uint64_t address);

  // Whether the call instruction at `address` (its return address - 1) is
  // a statement of its own: the line table begins a statement right at the
  // call (within a call instruction's length of its end). A call the
  // compiler made for a construct's implicit part is not: GCC's barrier
  // closing a loop is inside the loop's statement, on the loop's line,
  // while `#pragma omp barrier` is a statement that is only the call.
  // False when the line table does not say.
  bool call_is_statement(const std::string& module_path, uint64_t address);

  // Stores in the cache what this symbolizer found that it did not hold.
  void save();
  // Modules asked about that have a build id: answered wholly from the
  // cache, or opened (some address was new).
  struct CacheUse {
    uint64_t modules_cached = 0, modules_read = 0;
  };
  CacheUse cache_use() const;

 private:
  struct Module {
    std::string build_id;  // "" without a cache, or when the file has none
    std::unique_ptr<CachedEntry> cached;   // what the cache held; null without one
    std::unique_ptr<CachedModule> found;   // what this symbolizer added; null without a cache
    bool opened = false;                   // debug_info was opened (it may still be null)
    std::unique_ptr<ModuleDebugInfo> debug_info;  // null when the file cannot be opened
    std::unordered_map<uint64_t, std::vector<SourceFrame>> frames_by_address;
  };
  Module& module_for(const std::string& module_path);
  // What the module's file answers at `address` (kept for later runs).
  std::vector<SourceFrame> read_frames(Module& module, const std::string& module_path, uint64_t address);
  // What the module's whole symbol table answers, when the cache or this
  // run holds it (false otherwise).
  static bool from_whole_table(const Module& module, uint64_t address, std::vector<SourceFrame>* frames);
  // Keeps `info`'s whole symbol table (a module without DWARF) in `found`.
  static void keep_symbol_table(ModuleDebugInfo& info, CachedModule* found);
  // Keeps the answers over the whole function around `address` (a module
  // with DWARF) in `found`; false when they cannot be kept whole.
  static bool keep_function(ModuleDebugInfo& info, uint64_t address, CachedModule* found);
  ModuleDebugInfo* debug_info(Module& module, const std::string& module_path);

  SymbolCache* cache_;
  std::unordered_map<std::string, Module> modules_;
  std::vector<SourceFrame> unanswered_;  // what a call that ran out of memory returns
};

// Demangles an Itanium C++ ABI name ("_ZN2ns3fooEi" -> "ns::foo(int)"); returns the
// input unchanged if it is not a mangled name or cannot be demangled.
std::string demangle(const std::string& mangled);

// The frame returned when nothing is known: "<basename of module_path>+0x<hex address>".
SourceFrame unresolved_frame(const std::string& module_path, uint64_t address);

}  // namespace hybridprof::symbolizer
