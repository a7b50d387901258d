#include "fuzz_archive.h"

#include <otf2/otf2.h>

#include <algorithm>
#include <filesystem>

#include "cuda/cuda_otf2_events.h"
#include "otf2/archive_writer.h"
#include "otf2/property_names.h"

namespace hybridprof::fuzz {
namespace {

using otf2::ArchiveWriter;
using otf2::kUndefined;
using otf2::Paradigm;
namespace property = otf2::property;

// Two ranks of an MPI job, one thread each, rank 0 with an OpenMP worker
// and a GPU stream; what the report's sections look for.
void write_events(ArchiveWriter& w) {
  const uint32_t node = w.define_system_tree_node("host", "node", kUndefined);
  const uint32_t rank0 = w.define_process("rank 0", node);
  const uint32_t rank1 = w.define_process("rank 1", node);
  const uint64_t main0 = w.define_thread(rank0, "main");
  const uint64_t worker = w.define_thread(rank0, "OpenMP worker 1");
  const uint64_t main1 = w.define_thread(rank1, "main");
  const uint64_t stream = w.define_stream(w.define_device(rank0, "GPU 0"), "stream 7");
  w.set_process_property(rank0, property::kPid, "4242");
  w.set_process_property(rank0, property::kExitStatus, "0");
  w.set_process_property(rank0, property::kPython, "3.11");
  w.set_process_property(rank1, property::kPid, "4243");
  w.set_process_property(rank1, property::kSamplesWithoutThread, "2");
  w.set_thread_property(main0, property::kTid, 100);
  w.set_thread_property(main0, property::kSamples, 12);
  w.set_thread_property(main0, property::kDropped, 1);
  w.set_thread_property(main0, property::kPythonIncomplete, 1);
  w.set_thread_property(worker, property::kTid, 101);
  w.set_thread_property(main1, property::kTid, 200);
  w.set_thread_property(main1, property::kUnwindRecovered, 1);

  w.define_comm_locations(Paradigm::kMpi, {main0, main1});
  const uint32_t world = w.define_comm(Paradigm::kMpi, "MPI_COMM_WORLD", {0, 1}, kUndefined);
  w.define_comm_self(Paradigm::kMpi, "MPI_COMM_SELF");
  const uint32_t correlation = w.define_parameter(cuda::kCorrelationParameter);

  const uint32_t c_main = w.define_calling_context(w.define_region("main", "main.cc", 3, Paradigm::kSampling,
                                                                   "/usr/bin/app"),
                                                   kUndefined, kUndefined);
  const uint32_t c_solve = w.define_calling_context(w.define_region("solve", "solve.cc", 10, Paradigm::kCompiler),
                                                    w.define_source_location("main.cc", 12), c_main);
  const uint32_t c_step = w.define_calling_context(
      w.define_region("Model.step", "/lib/python3.11/site-packages/torch/nn/module.py", 7, Paradigm::kPython),
      w.define_source_location("/lib/python3.11/site-packages/torch/nn/module.py", 9), c_main);
  const uint32_t c_send = w.define_calling_context(w.define_region("MPI_Send", "", 0, Paradigm::kMpi), kUndefined,
                                                   c_solve);
  const uint32_t c_parallel = w.define_calling_context(
      w.define_region("!$omp parallel @solve.cc:20", "solve.cc", 20, Paradigm::kOpenMp), kUndefined, c_solve);
  const uint32_t c_range = w.define_calling_context(w.define_region("phase 1", "", 0, Paradigm::kUser), kUndefined,
                                                    c_main);
  const uint32_t c_kernel = w.define_calling_context(w.define_region("vector_add", "", 0, Paradigm::kCuda),
                                                     kUndefined, kUndefined);
  const uint32_t generator = w.define_interrupt_generator("cpu-clock", true, 1'000'000);

  auto mpi_send = [world](OTF2_EvtWriter* e, uint64_t t) {
    return OTF2_EvtWriter_MpiSend(e, nullptr, t, 1, world, 7, 2048);
  };
  auto mpi_recv = [world](OTF2_EvtWriter* e, uint64_t t) {
    return OTF2_EvtWriter_MpiRecv(e, nullptr, t, 0, world, 7, 2048);
  };
  auto fork = [](OTF2_EvtWriter* e, uint64_t t) { return OTF2_EvtWriter_ThreadFork(e, nullptr, t, OTF2_PARADIGM_OPENMP, 2); };
  auto join = [](OTF2_EvtWriter* e, uint64_t t) { return OTF2_EvtWriter_ThreadJoin(e, nullptr, t, OTF2_PARADIGM_OPENMP); };
  auto collective_begin = [](OTF2_EvtWriter* e, uint64_t t) { return OTF2_EvtWriter_MpiCollectiveBegin(e, nullptr, t); };
  auto collective_end = [world](OTF2_EvtWriter* e, uint64_t t) {
    return OTF2_EvtWriter_MpiCollectiveEnd(e, nullptr, t, OTF2_COLLECTIVE_OP_BCAST, world, 0, 400, 0);
  };

  const uint64_t t0 = 1'000'000;
  w.write_sample(main0, t0 + 1000, c_main, 1, generator);
  w.write_context_enter(main0, t0 + 2000, c_range, 1);
  w.write_sample(main0, t0 + 3000, c_step, 1, generator);
  w.write_context_enter(main0, t0 + 4000, c_send, 2);
  w.write_event_record(main0, t0 + 4100, "MpiSend", mpi_send);
  w.write_context_leave(main0, t0 + 4200, c_send);
  w.write_context_enter(main0, t0 + 5000, c_parallel, 1);
  w.write_event_record(main0, t0 + 5000, "ThreadFork", fork);
  w.write_sample(main0, t0 + 6000, c_solve, 1, generator);
  w.write_event_record(main0, t0 + 7000, "ThreadJoin", join);
  w.write_context_leave(main0, t0 + 7000, c_parallel);
  w.write_event_record(main0, t0 + 8000, "MpiCollectiveBegin", collective_begin);
  w.write_event_record(main0, t0 + 8100, "MpiCollectiveEnd", collective_end);
  w.write_parameter(main0, t0 + 8200, correlation, 17);
  w.write_context_leave(main0, t0 + 9000, c_range);

  w.write_context_enter(worker, t0 + 5100, c_parallel, 1);
  w.write_sample(worker, t0 + 6000, c_solve, 1, generator);
  w.write_context_leave(worker, t0 + 6900, c_parallel);

  w.write_event_record(main1, t0 + 4300, "MpiRecv", mpi_recv);
  w.write_sample(main1, t0 + 4400, c_solve, 1, generator);
  w.write_event_record(main1, t0 + 8000, "MpiCollectiveBegin", collective_begin);
  w.write_event_record(main1, t0 + 8300, "MpiCollectiveEnd", collective_end);

  w.write_context_enter(stream, t0 + 8400, c_kernel, 1);
  w.write_parameter(stream, t0 + 8400, correlation, 17);
  w.write_context_leave(stream, t0 + 8900, c_kernel);

  // Two offsets make OTF2 correct the location's times (ArchiveWriter::add_clock_offset).
  w.add_clock_offset(main1, t0, 50, 1.0);
  w.add_clock_offset(main1, t0 + 10'000, 70, 1.0);
}

}  // namespace

void write_base_archive(const std::string& directory) {
  ArchiveWriter w({.directory = directory});
  w.set_property(property::kProgram, "./app --steps 3");
  w.set_property(property::kEvent, "cpu-clock");
  w.set_property(property::kMechanism, "perf_event");
  w.set_property(property::kPeriod, "1000 Hz");
  w.set_property(property::kNotices, "first notice\nsecond notice");
  w.set_property(property::kVersion, "0.1.0");
  write_events(w);
  w.close({});
}

std::vector<std::string> archive_files(const std::string& directory) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    if (entry.is_regular_file()) files.push_back(std::filesystem::relative(entry.path(), directory).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace hybridprof::fuzz
