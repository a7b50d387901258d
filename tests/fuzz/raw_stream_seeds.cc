// Seeds for raw_stream_fuzzer: a small stream of every record kind, written
// by the runtime's own StreamWriter, as a whole file and chunk by chunk
// (see raw_stream_fuzzer.cc for the leading byte).
// Usage: raw_stream_seeds <corpus directory>   (emptied first)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "trace/raw_stream.h"

namespace {

using namespace hybridprof::raw;
namespace fs = std::filesystem;

void write_stream(const std::string& path) {
  StreamWriter w;
  if (!w.open(path)) throw std::runtime_error("cannot create " + path);
  ProcessBegin begin;
  begin.pid = 42, begin.ppid = 1, begin.monotonic_ns = 1000, begin.realtime_ns = 2000;
  begin.hostname = "host", begin.executable = "/bin/app", begin.args = {"./app", "--steps", "3"};
  begin.event = "cpu-clock", begin.mechanism = "perf_event", begin.period = 1000, begin.frequency = true;
  begin.max_depth = 128, begin.signal = 38, begin.python = "3.11", begin.kernel_time = "counted";
  w.append(begin);
  w.append(JobRank{1, 4});
  w.append(ClockOffset{1500, -20, 3});
  w.append(ModuleLoad{1, 1100, 0x400000, 0x400000, 0x500000, "/bin/app"});
  w.append(thread_begin(0, 4242, 1200));
  w.append(LocationBegin{1, 7, 1300, "stream 7", LocationKind::kDeviceStream, "GPU 0"});
  w.append(EventSetDef{8, 4, "mpi"});
  w.append(Definition{"mpi", 2, "split", {(4ull << 32) | 1, 0, 1}});
  w.append(RegionDef{5, "MPI_Send", 3, kUnknownModule, 0, {}});
  w.append(PythonCode{1, "Model.step", "model.py", 7, 3, std::string("\x01\x02\x03", 3)});
  w.flush();

  w.append(CctNode{3, kRootComplete, 1, 0x1234});
  w.append(CctNode{4, 3, kPythonModule, (1ull << 32) | 5});
  w.append(Sample{0, 2000, 3, 0});
  w.append(Sample{0, 1900, 4, 1, 3});
  w.append(Enter{{0, 2100, 5, 3}});
  w.append(Event{0, 2150, 9, {{1, 2, 3, 4}, {5, 6, 7}}});
  w.append(Leave{{0, 2200, 5, 3}});
  Call send;
  send.location = 0, send.enter_ns = 3000, send.leave_ns = 3400, send.region = 5, send.node = 3;
  send.event_count = 2;
  send.events[0] = Event{0, 3000, 8, {{1, 1, 7, 0}, {2048, 0, 0}}};
  send.events[1] = Event{0, 3400, 9, {}};
  w.append(send);
  send.enter_ns = 4000, send.leave_ns = 4300;  // same shape: a repeat
  send.events[0].timestamp_ns = 4000, send.events[1].timestamp_ns = 4300;
  w.append(send);
  w.append(Event{1, 4400, 10, {}});
  w.append(ModuleUnload{1, 4500});
  w.flush();

  w.append(Notice{"stopped: --max-size"});
  w.append(LocationEnd{0, 5000, {3, 1, 0, 0, 0, 0, 1, 200}, "worker"});
  w.append(ProcessEnd{5100, EndReason::kSignal, 15, 2});
  w.close();
}

void write_seed(const std::string& path, char mode, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << mode << bytes;
}

uint32_t u32_at(const std::string& bytes, size_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  const std::string corpus = argv[1];
  fs::remove_all(corpus);
  fs::create_directories(corpus);
  const std::string stream_path = corpus + "/stream.hpr";
  write_stream(stream_path);
  std::string stream;
  {
    std::ifstream in(stream_path, std::ios::binary);
    stream.assign(std::istreambuf_iterator<char>(in), {});
  }
  fs::remove(stream_path);
  write_seed(corpus + "/stream", '\0', stream);
  // raw_format.h: the file magic, then chunks of a 16-byte header (magic,
  // payload bytes, checksum, 0) and the payload.
  int n = 0;
  for (size_t at = sizeof kFileMagic; at + 16 <= stream.size(); ++n) {
    const uint32_t payload = u32_at(stream, at + 4);
    write_seed(corpus + "/chunk-" + std::to_string(n), '\1', stream.substr(at + 16, payload));
    at += 16 + payload;
  }
  std::printf("%s: a stream of %zu bytes and %d chunks\n", corpus.c_str(), stream.size(), n);
  return n == 3 ? 0 : 1;  // one chunk per flush
}
