// What the symbolizer found in a module, kept between runs: one file per
// module build (its GNU build id), so a second run of the same program
// reads names from the cache instead of opening DWARF (libtorch's debug
// information is gigabytes), and ranks of one node can share one rank's work.
//
// Files live in DIRECTORY/symbols-v1/<build id>.hps (and <build id>.debug,
// a compressed debug file decompressed: debug_copy.h). An entry is written
// whole to a temporary file and renamed into place, so a reader never sees
// half of one and concurrent writers cannot corrupt it (the last rename
// wins; what the other added is asked again next time). Each file carries
// a checksum: one that does not match is removed and rebuilt, with a
// warning, never trusted (an older format's is a miss, quietly). The
// directory is kept under a size bound by removing the files used least
// recently (a read touches its file).
//
// Not the signal path: used by the finalizer after the run.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbolizer/debug_copy.h"
#include "symbolizer/symbolizer.h"
#include "symbolizer/unit_index.h"

namespace hybridprof::symbolizer {

// Bump when the symbolizer answers differently for the same module
// (names, files, lines, inlining): entries of another format are misses.
inline constexpr uint32_t kSymbolCacheFormat = 7;

// The GNU build id of the ELF file at `path`, in hex; "" when it has none
// or is not a readable ELF file (such modules are not cached).
std::string build_id_of(const std::string& path);

// What one module's entry holds: answers of the symbolizer by ELF address
// (no frame: nothing resolved there, unresolved_frame() is the answer),
// and the answers of call_is_statement by address. A module with DWARF is
// kept a function at a time: the answers over the whole function an
// address lies in (ModuleDebugInfo::answers_around), so a later run's
// sample elsewhere in that function opens nothing. A module without DWARF
// is kept whole, at its first opening: every stretch of its symbol table
// answered alike (ModuleDebugInfo::each_symbol_stretch), with the symbol's
// raw name, demangled when read back; an address in none has no symbol. A
// later run's address in a function no run reached then opens nothing.
//
// Answers are kept as plain numbers (frames naming their function and
// file by index in one list of strings), so that an entry of a library's
// thousands of answers reads back as a few copies, not an allocation per
// name.
struct CachedModule {
  static constexpr uint32_t kInlined = 1, kResolved = 2;  // Frame::flags
  struct Frame {
    uint32_t function = 0, file = 0;  // indices in strings
    uint32_t line = 0, flags = 0;
  };
  struct Answer {
    uint32_t first = 0, count = 0;  // frames[first, first + count)
  };
  struct Range {
    uint64_t end = 0;
    Answer answer;
  };
  std::vector<std::string> strings;  // function names and files, each once
  std::vector<Frame> frames;         // every answer's frames, one answer after another
  std::unordered_map<uint64_t, Answer> addresses;  // answers of single addresses
  // Functions kept whole: stretches [start, end) by start, not overlapping.
  std::map<uint64_t, Range> ranges;
  std::unordered_map<uint64_t, bool> statements;
  // A DWARF module's units by address, as its first opening indexed them
  // (unit_index.h): a later opening reads only the units it is asked about.
  UnitIndex units;
  // The whole symbol table, when kept: stretches by start (they do not
  // overlap), each naming names[name, name + name_size).
  struct Stretch {
    uint64_t start = 0, end = 0;
    uint32_t name = 0, name_size = 0;
    friend bool operator==(const Stretch&, const Stretch&) = default;
  };
  bool whole_table = false;
  std::vector<Stretch> stretches;
  std::string names;  // raw (mangled) names, one after another

  bool empty() const {
    return addresses.empty() && statements.empty() && ranges.empty() && units.empty() && !whole_table;
  }
  // The frames cached for `address` (alone, or in a function kept whole):
  // false when there are none.
  bool find(uint64_t address, std::vector<SourceFrame>* out) const;
  void add_address(uint64_t address, const std::vector<SourceFrame>& frames);
  // Keeps [start, end) answered by `frames`, unless it is empty or
  // overlaps a stretch kept already (false then).
  bool add_range(uint64_t start, uint64_t end, const std::vector<SourceFrame>& frames);
  // The frames of a kept answer.
  std::vector<SourceFrame> frames_of(Answer answer) const;
  // Adds the next stretch of the whole table (in address order).
  void add_stretch(uint64_t start, uint64_t end, const char* name);
  // With the whole table: what the symbol table answers at `address`
  // (no frame: no symbol there).
  std::vector<SourceFrame> symbol_frames(uint64_t address) const;

 private:
  Answer add_answer(const std::vector<SourceFrame>& frames);
  uint32_t string_index(const std::string& s);
  std::unordered_map<std::string, uint32_t> string_indices_;  // of strings, made at the first add
};

// An entry as it lies in the cache, mapped and checked but not copied:
// what the symbolizer asks of the modules a run touches (every run reads
// libtorch's whole table of megabytes; copying it into maps and strings
// was most of a warm run's reading). Read-only; empty when default-made.
class CachedEntry {
 public:
  using Frame = CachedModule::Frame;
  using Answer = CachedModule::Answer;
  using Stretch = CachedModule::Stretch;
  // As the file holds them: sorted by address, 8-byte aligned.
  struct AddressRecord {
    uint64_t address;
    Answer answer;
  };
  struct RangeRecord {
    uint64_t start, end;
    Answer answer;
  };
  struct StatementRecord {
    uint64_t address;
    uint8_t statement, padding[7];
  };

  bool empty() const { return mapping_ == nullptr; }
  // As CachedModule's.
  bool find(uint64_t address, std::vector<SourceFrame>* out) const;
  std::vector<SourceFrame> frames_of(Answer answer) const;
  bool whole_table() const { return whole_table_; }
  std::vector<SourceFrame> symbol_frames(uint64_t address) const;
  // The answer of call_is_statement kept for `address`, if any.
  std::optional<bool> statement(uint64_t address) const;
  std::span<const UnitRange> units() const { return units_; }

  // Everything it holds, for a writer adding to it (SymbolCache::store).
  void add_to(CachedModule* m) const;

 private:
  friend class EntryParser;
  std::shared_ptr<const void> mapping_;  // keeps the views below valid
  std::vector<std::string_view> strings_;
  std::span<const Frame> frames_;
  std::span<const AddressRecord> addresses_;
  std::span<const RangeRecord> ranges_;
  std::span<const StatementRecord> statements_;
  bool whole_table_ = false;
  std::span<const Stretch> stretches_;
  std::string_view names_;
  std::span<const UnitRange> units_;
};

class SymbolCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = 512ull << 20;

  // The user's cache directory for hybridprof: $XDG_CACHE_HOME/hybridprof,
  // else $HOME/.cache/hybridprof; "" when neither is set.
  static std::string default_directory();

  explicit SymbolCache(std::string directory, uint64_t max_bytes = kDefaultMaxBytes);

  // The entry of `build_id` (empty when there is none, it is of another
  // format, or it is damaged: then it is removed and a warning says so).
  CachedEntry open(const std::string& build_id);
  // The same, copied into a CachedModule (a writer's, or a test's).
  CachedModule load(const std::string& build_id);
  // Adds `added` to the entry of `build_id` as it is on disk now. False
  // (and a warning) when it cannot be written: the run goes on without.
  bool store(const std::string& build_id, const CachedModule& added);

  const std::string& directory() const { return directory_; }
  // Where a module's decompressed debug copy goes (debug_copy.h): beside
  // the entries, counted in the bound, a copy at most a quarter of it.
  DebugCopies debug_copies(const std::string& build_id) const { return {directory_, build_id, max_bytes_ / 4}; }
  // What went wrong since the last call, one line each.
  std::vector<std::string> take_warnings();

 private:
  std::string entry_path(const std::string& build_id) const;
  // Removes the least recently used files while they exceed the bound,
  // `written` bytes having just been stored.
  void trim(uint64_t written);

  std::string directory_;  // .../symbols-v1
  uint64_t max_bytes_;
  std::vector<std::string> warnings_;
  bool write_failed_ = false;
  // The directory's bytes at the last count plus what this cache stored
  // since (replaced entries counted twice: an overestimate, which only
  // counts again sooner; other processes' writes are seen at the next count).
  static constexpr uint64_t kNotCounted = UINT64_MAX;
  uint64_t counted_bytes_ = kNotCounted;
};

}  // namespace hybridprof::symbolizer
