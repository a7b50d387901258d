#include "fake_mpi.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "common/clock.h"
#include "trace/event_sets.h"
#include "trace/event_source.h"
#include "trace/raw_stream.h"

namespace hybridprof::mpi {
void PrintTo(const EventFields& f, std::ostream* out) {
  *out << "{comm " << f.comm << " peer " << f.peer << " tag " << f.tag << " op " << f.op << " sent " << f.sent
       << " received " << f.received << " request " << f.request << "}";
}
}  // namespace hybridprof::mpi

namespace hybridprof::mpi::testing {
namespace {

const FakeComm* find(MPI_Comm comm) {
  auto it = fake().comms.find(comm);
  return it == fake().comms.end() ? nullptr : &it->second;
}
// Groups are the communicators' handles (an intercommunicator's is its local group).
const FakeComm* find(MPI_Group group) { return find(reinterpret_cast<MPI_Comm>(group)); }

int comm_rank(MPI_Comm comm, int* rank) {
  const FakeComm* c = find(comm);
  if (!c) return MPI_ERR_COMM;
  *rank = c->rank;
  return MPI_SUCCESS;
}
int comm_size(MPI_Comm comm, int* size) {
  const FakeComm* c = find(comm);
  if (!c) return MPI_ERR_COMM;
  *size = int(c->members.size());
  return MPI_SUCCESS;
}
int comm_group(MPI_Comm comm, MPI_Group* group) {
  if (!find(comm)) return MPI_ERR_COMM;
  *group = reinterpret_cast<MPI_Group>(comm);
  return MPI_SUCCESS;
}
int comm_test_inter(MPI_Comm comm, int* inter) {
  const FakeComm* c = find(comm);
  if (!c) return MPI_ERR_COMM;
  *inter = c->inter;
  return MPI_SUCCESS;
}
// Into the world group only: what the tracer asks.
int group_translate_ranks(MPI_Group from, int n, const int ranks[], MPI_Group to, int out[]) {
  const FakeComm* c = find(from);
  if (!c || reinterpret_cast<MPI_Comm>(to) != fake().world) return MPI_ERR_GROUP;
  for (int i = 0; i < n; ++i) out[i] = c->members.at(size_t(ranks[i]));
  return MPI_SUCCESS;
}
int group_free(MPI_Group* group) {
  *group = nullptr;
  return MPI_SUCCESS;
}
int group_size(MPI_Group group, int* size) { return comm_size(reinterpret_cast<MPI_Comm>(group), size); }
int type_size(MPI_Datatype type, int* size) {
  ++fake().type_size_calls;
  auto it = fake().type_sizes.find(type);
  if (it == fake().type_sizes.end()) return MPI_ERR_TYPE;
  *size = it->second;
  return MPI_SUCCESS;
}
int type_get_envelope(MPI_Datatype type, int* integers, int* addresses, int* types, int* combiner) {
  if (fake().type_sizes.count(type) == 0) return MPI_ERR_TYPE;
  *integers = *addresses = *types = 0;
  *combiner = fake().predefined_types.count(type) ? MPI_COMBINER_NAMED : MPI_COMBINER_CONTIGUOUS;
  return MPI_SUCCESS;
}
int get_count(const MPI_Status* status, MPI_Datatype type, int* count) {
  int size = 0;
  if (type_size(type, &size) != MPI_SUCCESS || size == 0) return MPI_ERR_TYPE;
  *count = int(status->_ucount / size_t(size));
  return MPI_SUCCESS;
}
int test_cancelled(const MPI_Status* status, int* flag) {
  *flag = status->_cancelled;
  return MPI_SUCCESS;
}
int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  const FakeComm* c = find(comm);
  if (!c) return MPI_ERR_COMM;
  if (type == fake().uint64 && count == 1) {
    ++fake().bcasts_of_keys;
    if (c->rank != root) std::memcpy(buffer, &fake().root_key, sizeof(uint64_t));
  }
  return MPI_SUCCESS;  // anything else (the host name of the clock sync): everyone has rank 0's already
}
int comm_dup(MPI_Comm comm, MPI_Comm* out) {
  const FakeComm* c = find(comm);
  if (!c) return MPI_ERR_COMM;
  ++fake().comm_dups;
  *out = fake().make_comm(*c);
  return MPI_SUCCESS;
}
int comm_free(MPI_Comm* comm) {
  *comm = fake().comm_null;
  return MPI_SUCCESS;
}
int allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op, MPI_Comm) {
  int size = 0;
  if (type_size(type, &size) != MPI_SUCCESS) return MPI_ERR_TYPE;
  std::memcpy(out, in, size_t(count) * size_t(size));  // every rank said the same
  return MPI_SUCCESS;
}

}  // namespace

FakeMpi::FakeMpi() {
  type_sizes = {{byte, 1}, {int32, 4}, {float64, 8}, {uint64, 8}, {character, 1}};
  predefined_types = {byte, int32, float64, uint64, character};
  reset();
}

void FakeMpi::reset() {
  set_world(0, 1);
  root_key = 0;
  bcasts_of_keys = comm_dups = 0;
}

void FakeMpi::set_world(int rank, int size) {
  FakeComm w{rank, {}, false};
  for (int i = 0; i < size; ++i) w.members.push_back(i);
  comms[world] = w;
  comms[self] = FakeComm{0, {rank}, false};
}

MPI_Comm FakeMpi::make_comm(FakeComm comm) {
  static std::vector<std::unique_ptr<FakeObject>> objects;  // handles stay valid to the process's end
  objects.push_back(std::make_unique<FakeObject>());
  const auto h = handle<MPI_Comm>(*objects.back());
  comms[h] = std::move(comm);
  return h;
}

Pmpi FakeMpi::functions() const {
  Pmpi p{};
  p.Comm_rank = comm_rank;
  p.Comm_size = comm_size;
  p.Comm_group = comm_group;
  p.Comm_test_inter = comm_test_inter;
  p.Group_translate_ranks = group_translate_ranks;
  p.Group_free = group_free;
  p.Group_size = group_size;
  p.Type_size = type_size;
  p.Type_get_envelope = type_get_envelope;
  p.Get_count = get_count;
  p.Test_cancelled = test_cancelled;
  p.Bcast = bcast;
  p.Send = HP_SUCCEEDS(MPI_Send);
  p.Recv = HP_SUCCEEDS(MPI_Recv);
  p.Barrier = HP_SUCCEEDS(MPI_Barrier);
  p.Gather = HP_SUCCEEDS(MPI_Gather);
  p.Comm_dup = comm_dup;
  p.Comm_free = comm_free;
  p.Allreduce = allreduce;
  p.comm_world = world;
  p.comm_self = self;
  p.comm_null = comm_null;
  p.request_null = request_null;
  p.uint64 = uint64;
  p.int32 = int32;
  p.character = character;
  p.op_min = handle<MPI_Op>(const_cast<FakeObject&>(min_object));
  return p;
}

FakeMpi& fake() {
  static FakeMpi f;
  return f;
}

void fill_status(MPI_Status* status, int source, int tag, uint64_t bytes, bool cancelled) {
  status->MPI_SOURCE = source;
  status->MPI_TAG = tag;
  status->MPI_ERROR = MPI_SUCCESS;
  status->_cancelled = cancelled;
  status->_ucount = bytes;
}

FakeHost::FakeHost(const std::string& raw_path) : TracingHost(drain_, config_) {
  config_.trace_clock = "monotonic";  // timestamps the test's drain reads as they are
  Drain::Options options;
  options.raw_path = raw_path;
  options.flush_interval_ms = 3600 * 1000;  // passes only when the test reads
  options.ring_bytes = 256 * 1024;
  std::string error;
  EXPECT_TRUE(drain_.start(options, raw::ProcessBegin{}, &error)) << error;
  thread_ = drain_.add_thread(getpid(), monotonic_ns());
  // As the runtime does at a process's start.
  for_each_event_source([&](EventSource& s) { s.process_started(drain_); });
  set_tracing_host(this);
}

FakeHost::~FakeHost() {
  set_tracing_host(nullptr);
  if (thread_) drain_.finish_thread(thread_, monotonic_ns());
  drain_.stop(raw::ProcessEnd{monotonic_ns(), raw::EndReason::kExit, 0, 0});
}

std::vector<EventKind> Traced::kinds() const {
  std::vector<EventKind> k;
  for (const Event& e : events) k.push_back(e.kind);
  return k;
}

const CommDefinition* Traced::comm(uint32_t id) const {
  for (const CommDefinition& c : comms)
    if (c.id == id) return &c;
  return nullptr;
}

Traced read_traced(FakeHost& host, const std::string& raw_path) {
  host.drain().flush_now();
  Traced t;
  std::map<uint32_t, std::string> regions;
  uint32_t base = kNoEventSet;
  std::string error;
  EXPECT_TRUE(raw::read_stream(
      raw_path,
      [&](const raw::Record& r) {
        if (const auto* d = std::get_if<raw::RegionDef>(&r)) regions[d->id] = d->name;
        if (const auto* s = std::get_if<raw::EventSetDef>(&r); s && s->name == kEventSetName) base = s->base;
        if (const auto* e = std::get_if<raw::Enter>(&r)) {
          ++t.enters;
          t.calls.push_back(regions.count(e->region) ? regions[e->region] : "(undefined region)");
        }
        if (std::holds_alternative<raw::Leave>(r)) ++t.leaves;
        if (const auto* e = std::get_if<raw::Event>(&r)) {
          EXPECT_NE(base, kNoEventSet) << "an MPI event before MPI's event set was defined";
          t.events.push_back({EventKind(e->kind - base), fields_of(e->payload)});
        }
        if (const auto* d = std::get_if<raw::Definition>(&r)) {
          const std::optional<CommDefinition> c = comm_of(*d);
          EXPECT_TRUE(c.has_value()) << "every definition is MPI's, and decodes: " << d->name;
          if (c) t.comms.push_back(*c);
        }
        if (const auto* w = std::get_if<raw::JobRank>(&r)) t.worlds.push_back(*w);
      },
      nullptr, &error))
      << error;
  return t;
}

}  // namespace hybridprof::mpi::testing
