// MPI's communicators in the archive: MPI_COMM_WORLD's ranks are the job's
// ranks (their locations are the MPI paradigm's comm locations), and a
// communicator every member recorded under one key is one communicator.
#include <map>
#include <numeric>

#include "mpi/mpi_events.h"
#include "mpi/mpi_otf2_events.h"

namespace hybridprof::mpi {
namespace {

class CommDefinitionWriter final : public sink::DefinitionSetWriter {
 public:
  std::string_view set_name() const override { return kEventSetName; }

  void define(const std::vector<Process>& processes, const std::vector<uint64_t>& job_locations,
              sink::CommSink& sink) const override {
    // Without ranks no communicator can name its members: their events are skipped.
    if (job_locations.empty()) return;
    const auto mpi = otf2::Paradigm::kMpi;
    sink.define_comm_locations(mpi, job_locations);
    std::vector<uint32_t> all_ranks(job_locations.size());
    std::iota(all_ranks.begin(), all_ranks.end(), 0u);
    std::map<uint64_t, uint32_t> by_key;
    for (const Process& p : processes) {
      for (const raw::Definition* d : p.definitions) {
        const std::optional<CommDefinition> c = comm_of(*d);
        if (!c || !members_known(*c, all_ranks.size())) continue;
        auto known = by_key.find(c->key);
        if (known == by_key.end()) {
          uint32_t ref;
          if (c->key == kCommSelfKey) {
            ref = sink.define_comm_self(mpi, c->name);
          } else {
            auto parent = p.refs->find(c->parent);
            const uint32_t parent_ref = parent == p.refs->end() ? otf2::kUndefined : parent->second;
            ref = sink.define_comm(mpi, c->name, c->key == kCommWorldKey ? all_ranks : c->members, parent_ref);
          }
          known = by_key.emplace(c->key, ref).first;
        }
        (*p.refs)[d->id] = known->second;
      }
    }
  }

 private:
  // A member beyond the world (a stream from another job) makes the
  // communicator unknown rather than the archive unwritable.
  static bool members_known(const CommDefinition& c, size_t world_size) {
    for (uint32_t m : c.members)
      if (m >= world_size) return false;
    return true;
  }
};

}  // namespace

const sink::DefinitionSetWriter& comm_definition_writer() {
  static const CommDefinitionWriter writer;
  return writer;
}

}  // namespace hybridprof::mpi
