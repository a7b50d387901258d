// Communicators as this process sees them: a dense id per live handle, a
// job-wide key agreed among the members at creation, members as world
// ranks; and the clock offsets measured against rank 0 at init and finalize.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "mpi/mpi_tracer.h"
#include "mpi/pmpi.h"
#include "trace/drain.h"
#include "trace/tracing_host.h"

namespace hybridprof::mpi {
namespace {

constexpr uint32_t kWorldId = 0, kSelfId = 1;

struct Communicators {
  std::mutex mutex;
  std::unordered_map<MPI_Comm, uint32_t> ids;
  uint32_t next_id = 2;
  uint32_t next_key = 1;   // this process's share of created-communicator keys
  int world_rank = -1, world_size = 0;
  MPI_Comm private_world = nullptr;  // the tracer's own messages (clock sync)
};

Communicators& comms() {
  static Communicators* c = new Communicators();  // leaked: used until the process ends
  return *c;
}

// The ids of communicators in use, read without the lock: every traced
// call on a communicator other than world and self (a library's duplicate
// of world, a grid's rows and columns) took the mutex and searched the map
// before. Direct-mapped by handle, written under Communicators::mutex; a
// miss (a slot two communicators share) goes to the map, which stays the
// truth. Each slot is a sequence lock: a reader takes a handle and id only
// if the slot's count was even and unchanged around reading them (on x86
// its four loads are plain loads), so one read while another thread gave
// the slot to another communicator is a miss, never the other's id.
class CommIdCache {
 public:
  bool find(MPI_Comm comm, uint32_t* id) const {
    const uintptr_t key = handle_key(comm);
    const Slot& s = slots_[slot_of(key)];
    const uint64_t before = s.sequence.load(std::memory_order_acquire);
    const uintptr_t handle = s.handle.load(std::memory_order_relaxed);
    *id = s.id.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    return before % 2 == 0 && handle == key && s.sequence.load(std::memory_order_relaxed) == before;
  }
  void put(MPI_Comm comm, uint32_t id) { set(handle_key(comm), handle_key(comm), id); }  // under the mutex
  void forget(MPI_Comm comm) { set(handle_key(comm), 0, 0); }                            // under the mutex

 private:
  struct Slot {
    std::atomic<uint64_t> sequence{0};  // odd while being written
    std::atomic<uintptr_t> handle{0};   // 0: empty (no MPI names a communicator so)
    std::atomic<uint32_t> id{0};
  };
  // The slot of `key` now holds `handle` (0: empty) and `id`.
  void set(uintptr_t key, uintptr_t handle, uint32_t id) {
    Slot& s = slots_[slot_of(key)];
    if (handle == 0 && s.handle.load(std::memory_order_relaxed) != key) return;  // another's: leave it
    const uint64_t sequence = s.sequence.load(std::memory_order_relaxed);
    s.sequence.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.handle.store(handle, std::memory_order_relaxed);
    s.id.store(id, std::memory_order_relaxed);
    s.sequence.store(sequence + 2, std::memory_order_release);
  }
  static constexpr size_t kSlots = 64;
  static size_t slot_of(uintptr_t key) { return (key >> 4 ^ key >> 10 ^ key) & (kSlots - 1); }
  Slot slots_[kSlots];
};
CommIdCache g_comm_ids;

// The job's rank, its communicators and clock offsets are what later
// events name: written whenever the stream records at all, a capture
// window open or not (a rank whose window opens after MPI_Init still
// needs them).
void append(const raw::Record& record) {
  if (TracingHost* host = tracing_host(); host && host->drain().recording()) host->drain().append(record);
}

std::vector<uint32_t> world_ranks_of(MPI_Comm comm) {
  const Pmpi& p = pmpi();
  std::vector<uint32_t> members;
  MPI_Group group, world;
  // An intercommunicator's group is its local group.
  if (p.Comm_group(comm, &group) != MPI_SUCCESS) return members;
  if (p.Comm_group(p.comm_world, &world) == MPI_SUCCESS) {
    int n = 0;
    p.Group_size(group, &n);
    std::vector<int> local(static_cast<size_t>(n)), global(static_cast<size_t>(n), -1);
    for (int i = 0; i < n; ++i) local[size_t(i)] = i;
    if (n > 0 && p.Group_translate_ranks(group, n, local.data(), world, global.data()) == MPI_SUCCESS)
      for (int g : global) members.push_back(static_cast<uint32_t>(g));
    p.Group_free(&world);
  }
  p.Group_free(&group);
  return members;
}

// A key that names the communicator on this process only (the members
// could not agree on one): the upper bit marks it.
uint64_t local_key(Communicators& c) {
  return (uint64_t{1} << 63) | (uint64_t(uint32_t(c.world_rank)) << 32) | c.next_key++;
}

uint32_t add_locked(Communicators& c, MPI_Comm comm, uint64_t key, uint32_t parent, std::string name) {
  const uint32_t id = c.next_id++;
  c.ids[comm] = id;
  g_comm_ids.put(comm, id);
  append(definition_of(CommDefinition{id, key, parent, std::move(name), world_ranks_of(comm)}));
  return id;
}

// Rank 0's CLOCK_MONOTONIC minus ours, from the fastest of a few round trips
// (NTP-style: the reply was stamped half-way). Ranks on rank 0's host share
// its clock and get 0 without measuring.
void measure_clock_offsets(Communicators& c) {
  const Pmpi& p = pmpi();
  if (c.private_world == nullptr || c.world_size < 2) return;
  char host[256] = {}, host0[256] = {};
  gethostname(host, sizeof host - 1);
  std::memcpy(host0, host, sizeof host);
  p.Bcast(host0, sizeof host0, p.character, 0, c.private_world);
  int remote = std::strcmp(host, host0) != 0;
  std::vector<int> remotes(c.world_rank == 0 ? size_t(c.world_size) : 1);
  p.Gather(&remote, 1, pmpi().int32, remotes.data(), 1, pmpi().int32, 0, c.private_world);
  constexpr int kRounds = 8, kTag = 1;
  const uint64_t now = monotonic_ns();
  if (c.world_rank == 0) {
    for (int r = 1; r < c.world_size; ++r) {
      if (!remotes[size_t(r)]) continue;
      for (int i = 0; i < kRounds; ++i) {
        uint64_t t = 0;
        p.Recv(&t, 1, p.uint64, r, kTag, c.private_world, MPI_STATUS_IGNORE);
        t = monotonic_ns();
        p.Send(&t, 1, p.uint64, r, kTag, c.private_world);
      }
    }
    append(raw::ClockOffset{now, 0, 0});
    return;
  }
  if (!remote) {
    append(raw::ClockOffset{now, 0, 0});
    return;
  }
  uint64_t best_rtt = UINT64_MAX;
  int64_t best_offset = 0;
  for (int i = 0; i < kRounds; ++i) {
    uint64_t t0 = monotonic_ns(), remote_t = 0;
    p.Send(&t0, 1, p.uint64, 0, kTag, c.private_world);
    p.Recv(&remote_t, 1, p.uint64, 0, kTag, c.private_world, MPI_STATUS_IGNORE);
    const uint64_t t1 = monotonic_ns();
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      best_offset = int64_t(remote_t) - int64_t(t0 + (t1 - t0) / 2);
    }
  }
  append(raw::ClockOffset{now, best_offset, best_rtt / 2});
}

}  // namespace

uint32_t comm_id(MPI_Comm comm) {
  const Pmpi& p = pmpi();
  if (comm == p.comm_world) return kWorldId;
  if (comm == p.comm_self) return kSelfId;
  if (uint32_t id; g_comm_ids.find(comm, &id)) return id;
  Communicators& c = comms();
  std::lock_guard lock(c.mutex);
  if (auto it = c.ids.find(comm); it != c.ids.end()) {
    g_comm_ids.put(comm, it->second);
    return it->second;
  }
  // Made where we did not look (before the runtime, or by a function not
  // intercepted): known from now on, but only to this process.
  return add_locked(c, comm, local_key(c), kNoParentComm, "communicator");
}

void register_comm(MPI_Comm newcomm, MPI_Comm parent, const char* how) {
  const Pmpi& p = pmpi();
  if (newcomm == p.comm_null) return;
  Communicators& c = comms();
  const uint32_t parent_id = parent == p.comm_null ? kNoParentComm : comm_id(parent);
  int inter = 0;
  p.Comm_test_inter(newcomm, &inter);
  uint64_t key = 0;
  {
    std::lock_guard lock(c.mutex);
    key = inter ? local_key(c) : (uint64_t(uint32_t(c.world_rank) + 1) << 32) | c.next_key++;
  }
  // The members of an intracommunicator agree on the key of its rank 0
  // (collective over newcomm, like the call that made it). An
  // intercommunicator's bcast needs MPI_ROOT roles: its key stays local.
  if (!inter) p.Bcast(&key, 1, p.uint64, 0, newcomm);
  std::lock_guard lock(c.mutex);
  add_locked(c, newcomm, key, parent_id, how);
}

void forget_comm(MPI_Comm comm) {
  Communicators& c = comms();
  std::lock_guard lock(c.mutex);
  c.ids.erase(comm);
  g_comm_ids.forget(comm);
}

void on_mpi_initialized() {
  const Pmpi& p = pmpi();
  Communicators& c = comms();
  c.world_rank = comm_rank(p.comm_world);
  c.world_size = comm_size(p.comm_world);
  append(raw::JobRank{uint32_t(c.world_rank), uint32_t(c.world_size)});
  // World: members implied (all ranks in order). Self: this rank.
  append(definition_of(CommDefinition{kWorldId, kCommWorldKey, kNoParentComm, "MPI_COMM_WORLD", {}}));
  append(definition_of(CommDefinition{kSelfId, kCommSelfKey, kNoParentComm, "MPI_COMM_SELF", {uint32_t(c.world_rank)}}));
  if (p.Comm_dup(p.comm_world, &c.private_world) != MPI_SUCCESS) c.private_world = nullptr;
  measure_clock_offsets(c);
}

void before_mpi_finalize() {
  Communicators& c = comms();
  measure_clock_offsets(c);
  if (c.private_world) pmpi().Comm_free(&c.private_world);
  c.private_world = nullptr;
}

}  // namespace hybridprof::mpi
