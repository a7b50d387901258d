// Definitions unified up a tree of ranks (issue 39): each rank's
// definitions are tables whose entries name earlier entries by index
// (strings, then regions naming strings, calling contexts naming regions
// and their parent context, communicators naming their members); in
// round k a rank r with r mod 2^(k+1) == 2^k sends its subtree's tables
// to rank r - 2^k, which merges them into its own, deduplicating; after
// log2(P) rounds rank 0 holds the job's tables. Maps go back down: each
// rank learns where its own entries went in the job's tables, and holds
// only its subtree's tables meanwhile (for ranks running one program,
// about its own).
//
// Merging keeps the receiver's indices (its entries stay where they were,
// new ones are appended), so a rank's own entries are the first of its
// subtree's tables, and the map from its subtree's tables to the job's is
// all it needs. This file is the merge and the maps, and the tree's rounds
// in one process (unify_in_tree, for tests); the ranks' archive writing
// runs the same rounds over MPI for their calling contexts
// (job_archive.cc: unify_contexts).
//
// Not the signal path: runs after the program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hybridprof::finalize::tree {

inline constexpr uint32_t kNone = UINT32_MAX;  // a context without parent

struct Region {
  uint32_t name = 0, file = 0, module = 0;  // strings
  uint32_t line = 0;
  uint32_t paradigm = 0;
  friend bool operator==(const Region&, const Region&) = default;
};
struct Context {
  uint32_t region = 0;       // regions
  uint32_t line = 0;         // the line it is at (0: none)
  uint32_t parent = kNone;   // contexts, an earlier one
  friend bool operator==(const Context&, const Context&) = default;
};
// A communicator: the key its members agreed on (job-wide), its name
// (strings) and its members as world ranks, in its rank order. Two with
// one key are one communicator; a key names the same members everywhere.
struct Comm {
  uint64_t key = 0;
  uint32_t name = 0;
  std::vector<uint32_t> members;
  friend bool operator==(const Comm&, const Comm&) = default;
};

struct Definitions {
  std::vector<std::string> strings;
  std::vector<Region> regions;
  std::vector<Context> contexts;  // parents before children
  std::vector<Comm> comms;
  friend bool operator==(const Definitions&, const Definitions&) = default;
};

// Where each entry of one table set went in another (by index).
struct Map {
  std::vector<uint32_t> strings, regions, contexts, comms;
  friend bool operator==(const Map&, const Map&) = default;
};

// Adds `from` to `into`, deduplicating (an entry equal to one of into's,
// once its references are mapped, is that one), and returns where each of
// from's entries went. into's own entries keep their indices; into holds
// each entry once if it did before (merge a rank's tables into empty ones
// first: then they do). Throws
// std::invalid_argument when `from` names an entry it does not hold (a
// reference out of range, a parent not before its child).
Map merge_into(Definitions& into, const Definitions& from);

// `first` then `second`: where an entry went through both.
Map compose(const Map& first, const Map& second);

// The identity on `d`'s entries.
Map identity(const Definitions& d);

// The tree's rounds in one process over `ranks` (rank r's definitions at
// index r): the job's tables (rank 0's subtree, the whole job) and each
// rank's map from its own entries to the job's. `largest_subtree` (may be
// null) gets the most entries a rank held at once: its subtree's tables.
struct Unified {
  Definitions job;
  std::vector<Map> maps;
};
Unified unify_in_tree(std::vector<Definitions> ranks, size_t* largest_subtree = nullptr);

// The number of entries in every table of `d`.
size_t entries(const Definitions& d);

}  // namespace hybridprof::finalize::tree
