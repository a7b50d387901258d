// big_archive DIR SAMPLES EVENTS [RANKS=4] [THREADS=4]: writes a synthetic
// archive of the shape real runs give, without running anything, for the
// converter's benchmark (convert_bench.sh): RANKS processes of THREADS
// threads; 200 distinct stacks 10 to 51 frames deep sharing their trunk
// (see below), sampled a phase at a time with the leaf changing every 3
// samples; SAMPLES samples (1 ms apart per thread) and EVENTS traced MPI
// calls (enter and leave) spread over the threads.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "otf2/archive_writer.h"

using namespace hybridprof;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: big_archive DIR SAMPLES EVENTS [RANKS=4] [THREADS=4]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const uint64_t samples = std::strtoull(argv[2], nullptr, 10), events = std::strtoull(argv[3], nullptr, 10);
  const uint32_t ranks = argc > 4 ? std::atoi(argv[4]) : 4, threads = argc > 5 ? std::atoi(argv[5]) : 4;
  otf2::ArchiveWriter::Options options;
  options.directory = dir;
  otf2::ArchiveWriter w(options);
  const uint32_t node = w.define_system_tree_node("machine", "machine", otf2::kUndefined);
  std::vector<uint64_t> locations;
  for (uint32_t r = 0; r < ranks; ++r) {
    const uint32_t p = w.define_process("rank " + std::to_string(r), node);
    for (uint32_t t = 0; t < threads; ++t) locations.push_back(w.define_thread(p, t == 0 ? "main thread" : "thread " + std::to_string(t)));
  }
  const uint32_t generator = w.define_interrupt_generator("cpu-clock", true, 1000000);
  // Stacks as programs make them: a trunk (main and the solver's driver, 8
  // frames), 20 phases under it (each 6 to 40 frames deeper: PyTorch's
  // stacks reach 190), and 10 leaves under each phase, 1 to 3 frames of
  // their own. 200 distinct stacks, 10 to 51 frames deep.
  std::vector<uint32_t> regions;
  for (int i = 0; i < 4000; ++i)
    regions.push_back(w.define_region("solver::kernel_" + std::to_string(i) + "(double const*, int)", "solver.cc", 10 + i,
                                      otf2::Paradigm::kSampling, "solver"));
  uint32_t trunk = otf2::kUndefined;
  for (int f = 0; f < 8; ++f) trunk = w.define_calling_context(regions[f], otf2::kUndefined, trunk);
  std::vector<std::pair<uint32_t, uint32_t>> leaves;  // context, depth
  int next_region = 8;
  for (int phase = 0; phase < 20; ++phase) {
    uint32_t at = trunk, depth = 8;
    for (int f = 0; f < 6 + (phase * 7) % 35; ++f, ++depth)
      at = w.define_calling_context(regions[next_region++ % 4000], otf2::kUndefined, at);
    for (int leaf = 0; leaf < 10; ++leaf) {
      uint32_t l = at, d = depth;
      for (int f = 0; f <= leaf % 3; ++f, ++d) l = w.define_calling_context(regions[next_region++ % 4000], otf2::kUndefined, l);
      leaves.push_back({l, d});
    }
  }
  const uint32_t send = w.define_region("MPI_Send", "", 0, otf2::Paradigm::kMpi, "");
  const uint32_t send_context = w.define_calling_context(send, otf2::kUndefined, trunk);
  const uint64_t per_thread = samples / locations.size(), events_per_thread = events / locations.size();
  for (size_t l = 0; l < locations.size(); ++l) {
    const uint64_t every = events_per_thread ? std::max<uint64_t>(per_thread / events_per_thread, 1) : 0;
    uint64_t written_events = 0;
    for (uint64_t i = 0; i < per_thread; ++i) {
      const uint64_t t = 1'000'000 + i * 1'000'000;  // ns: 1 ms apart
      const size_t phase = (i / 100 + l) % 20, leaf = (i / 3) % 10;  // a phase at a time, its leaves in turn
      const auto& [context, depth] = leaves[phase * 10 + leaf];
      w.write_sample(locations[l], t, context, depth, generator);
      if (every && i % every == 0 && written_events < events_per_thread) {
        w.write_context_enter(locations[l], t + 100, send_context, 2);
        w.write_context_leave(locations[l], t + 900, send_context);
        ++written_events;
      }
    }
    w.end_thread(locations[l], 1'000'000 + per_thread * 1'000'000);
  }
  otf2::ClockInfo clock;
  clock.global_offset = 0;
  clock.trace_length = 2'000'000 + per_thread * 1'000'000;
  w.close(clock);
  std::printf("%s: %llu samples, %llu traced calls, %zu threads\n", dir.c_str(),
              (unsigned long long)(per_thread * locations.size()), (unsigned long long)(events_per_thread * locations.size()),
              locations.size());
  return 0;
}
