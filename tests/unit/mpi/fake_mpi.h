// A stand-in for the MPI library and for the runtime, so MPI's translation
// (src/mpi) runs in a unit test: the tracer's PMPI seam (mpi/pmpi.h) filled
// with fake functions over fake handles, and a TracingHost whose drain
// writes a raw stream that the test reads back.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mpi/mpi_events.h"
#include "mpi/mpi_intercept.h"
#include "mpi/pmpi.h"
#include "trace/drain.h"
#include "trace/module_table.h"
#include "trace/tracing_host.h"

namespace hybridprof::mpi {
// For the test's messages.
void PrintTo(const EventFields& f, std::ostream* out);
}  // namespace hybridprof::mpi

namespace hybridprof::mpi::testing {

// A handle of any kind: the address of one of these.
struct FakeObject {
  int id = 0;
};
template <typename Handle>
Handle handle(FakeObject& object) {
  return reinterpret_cast<Handle>(&object);
}

// What the fake library knows of one communicator: this rank in it, and
// its members as world ranks (their number is its size).
struct FakeComm {
  int rank = 0;
  std::vector<int> members;
  bool inter = false;
};

// The fake library's state; the fake functions read and write it.
struct FakeMpi {
  FakeObject world_object, self_object, null_comm_object, null_request_object;
  FakeObject byte_object, int_object, double_object, uint64_object, char_object, min_object;
  MPI_Comm world = handle<MPI_Comm>(world_object);
  MPI_Comm self = handle<MPI_Comm>(self_object);
  MPI_Comm comm_null = handle<MPI_Comm>(null_comm_object);
  MPI_Request request_null = handle<MPI_Request>(null_request_object);
  MPI_Datatype byte = handle<MPI_Datatype>(byte_object);
  MPI_Datatype int32 = handle<MPI_Datatype>(int_object);
  MPI_Datatype float64 = handle<MPI_Datatype>(double_object);
  MPI_Datatype uint64 = handle<MPI_Datatype>(uint64_object);
  MPI_Datatype character = handle<MPI_Datatype>(char_object);

  std::map<MPI_Comm, FakeComm> comms;
  std::map<MPI_Datatype, int> type_sizes;
  // The predefined ones (MPI_COMBINER_NAMED; any other type is derived),
  // and how many times a type's size was asked.
  std::set<MPI_Datatype> predefined_types;
  int type_size_calls = 0;
  // What a Bcast of one uint64 (a communicator's key) delivers on a rank
  // that is not the root: the key of the new communicator's rank 0.
  uint64_t root_key = 0;
  int bcasts_of_keys = 0;
  int comm_dups = 0;

  FakeMpi();
  // A world of one, no key to hand out, counters at 0 (communicators made
  // earlier stay: their handles may still be in use).
  void reset();
  // This rank is `rank` of a world of `size`.
  void set_world(int rank, int size);
  // A new communicator the fake library hands out.
  MPI_Comm make_comm(FakeComm comm);
  Pmpi functions() const;
};

// The one fake library of the test process (fake functions are plain
// function pointers: they find it here).
FakeMpi& fake();

// A status as the fake library completes a receive: from `source`, with
// `tag`, `bytes` long; `cancelled` for a cancelled request.
void fill_status(MPI_Status* status, int source, int tag, uint64_t bytes, bool cancelled = false);

// The runtime's part: a drain over a raw stream in the test's temporary
// directory, one traced thread (the test's own).
class FakeHost final : public TracingHost {
 public:
  explicit FakeHost(const std::string& raw_path);
  ~FakeHost() override;
  bool tracing() const override { return true; }
  ThreadState* current_thread() override { return thread_; }
  std::string raw_dir() const override { return "/nonexistent"; }
  void say(const std::string& line) override { said.push_back(line); }
  void finish_process(raw::EndReason, int64_t) override { ++finished; }
  void at_process_exit(void (*hook)(int)) override { exit_hook = hook; }

  std::vector<std::string> said;
  int finished = 0;
  void (*exit_hook)(int) = nullptr;

 private:
  RuntimeConfig config_;
  ModuleTable modules_;
  Drain drain_{modules_};
  ThreadState* thread_ = nullptr;
};

// What reached the raw stream, MPI's way: the calls' names in the order
// they were entered, enters and leaves, MPI's events with their fields in
// order, and the communicators and world defined.
struct Traced {
  struct Event {
    EventKind kind;
    EventFields fields;
    bool operator==(const Event&) const = default;
    friend void PrintTo(const Event& e, std::ostream* out) {
      *out << "kind " << uint32_t(e.kind) << " ";
      PrintTo(e.fields, out);
    }
  };
  std::vector<std::string> calls;
  uint64_t enters = 0, leaves = 0;
  std::vector<Event> events;
  std::vector<CommDefinition> comms;
  std::vector<raw::JobRank> worlds;
  std::vector<EventKind> kinds() const;
  const CommDefinition* comm(uint32_t id) const;
};
// Flushes `host`'s drain and reads its stream at `raw_path`.
Traced read_traced(FakeHost& host, const std::string& raw_path);

// An MPI call as the program makes it: `F`'s interposer over `real` (the
// fake library's PMPI_ function), with the arguments converted to the
// function's own parameter types first, as a C caller passes them.
template <MpiFunction F, typename... P, typename... A>
int call(int (*real)(P...), A&&... args) {
  std::tuple<P...> params{std::forward<A>(args)...};
  return std::apply([&](P&... p) { return intercept<F>(real, p...); }, params);
}

// A fake PMPI_ function of type `Fn` that only succeeds.
template <typename Fn>
struct Succeeds;
template <typename... P>
struct Succeeds<int (*)(P...)> {
  static int fn(P...) { return MPI_SUCCESS; }
};
#define HP_SUCCEEDS(name) (::hybridprof::mpi::testing::Succeeds<decltype(&::P##name)>::fn)

}  // namespace hybridprof::mpi::testing
