// A sink that keeps every call it is given, in memory, for tests: what the
// finalizer would have put in an archive, without OTF2. Refs are indices
// into its vectors. Every event set is written unless refused.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sink/trace_sink.h"

namespace hybridprof::sink {

class RecordingSink final : public TraceSink {
 public:
  // A process, or a device a process drives (`device_of`).
  struct Process {
    std::string name;
    uint32_t node = 0;
    std::map<std::string, std::string> properties;
    static constexpr uint32_t kNotADevice = 0xffffffffu;
    uint32_t device_of = kNotADevice;
  };
  // A thread, or a stream of a device (`stream`).
  struct Thread {
    uint32_t process = 0;
    std::string name;
    std::map<std::string, uint64_t> properties;
    bool ended = false;
    bool stream = false;
  };
  struct Region {
    std::string name, file, module;
    uint32_t begin_line = 0;
    Paradigm paradigm = Paradigm::kUnknown;
  };
  struct Context {
    uint32_t region = 0, source_location = 0, parent = 0;
  };
  // Samples, enters and leaves, and events of every location, in the order written.
  struct Record {
    enum class Type { kSample, kEnter, kLeave, kEvent } type = Type::kSample;
    uint64_t location = 0, timestamp = 0;
    uint32_t context = 0;  // samples, enters, leaves
    std::string set;       // events
    uint32_t kind = 0;
    EventPayload payload;
    std::map<uint32_t, uint32_t> definitions;  // events: the refs they were given (EventRefs)
  };

  std::map<std::string, std::string> properties;
  std::vector<std::string> nodes;
  std::vector<Process> processes;
  std::vector<Thread> threads;
  std::vector<Region> regions;
  std::vector<Context> contexts;
  std::vector<std::pair<std::string, uint32_t>> source_locations;  // file, line
  std::vector<Record> records;
  struct Comm {
    Paradigm paradigm = Paradigm::kUnknown;
    std::string name;
    std::vector<uint32_t> members;  // indices in the paradigm's comm locations
    uint32_t parent = otf2::kUndefined;
    bool self = false;
  };
  std::vector<Comm> comms;
  std::map<Paradigm, std::vector<uint64_t>> comm_locations;
  std::set<std::string> refused_sets;  // write_event says no to these
  bool closed = false, abandoned = false;

  // The region of a context's innermost frame, by name.
  const std::string& region_of(uint32_t context) const { return regions.at(contexts.at(context).region).name; }

  void set_property(const std::string& name, const std::string& value) override { properties[name] = value; }
  uint32_t define_system_tree_node(const std::string& name, const std::string&, uint32_t) override {
    return add(nodes, name);
  }
  uint32_t define_process(const std::string& name, uint32_t node) override { return add(processes, {name, node, {}}); }
  uint64_t define_thread(uint32_t process, const std::string& name) override {
    return add(threads, {process, name, {}, false, false});
  }
  uint32_t define_device(uint32_t process, const std::string& name) override {
    for (uint32_t ref = 0; ref < processes.size(); ++ref)
      if (processes[ref].device_of == process && processes[ref].name == name) return ref;
    return add(processes, {name, processes.at(process).node, {}, process});
  }
  uint64_t define_stream(uint32_t device, const std::string& name) override {
    return add(threads, {device, name, {}, false, true});
  }
  void set_thread_remote(uint64_t) override {}
  void set_process_property(uint32_t process, const std::string& name, const std::string& value) override {
    processes.at(process).properties[name] = value;
  }
  void set_thread_property(uint64_t location, const std::string& name, uint64_t value) override {
    threads.at(location).properties[name] = value;
  }
  void add_clock_offset(uint64_t, uint64_t, int64_t, double) override {}
  uint32_t define_region(const std::string& name, const std::string& file, uint32_t begin_line, Paradigm paradigm,
                         const std::string& module) override {
    return add(regions, {name, file, module, begin_line, paradigm});
  }
  uint32_t define_source_location(const std::string& file, uint32_t line) override {
    return add(source_locations, {file, line});
  }
  uint32_t define_calling_context(uint32_t region, uint32_t source_location, uint32_t parent) override {
    return add(contexts, {region, source_location, parent});
  }
  uint32_t define_interrupt_generator(const std::string&, bool, uint64_t) override { return 0; }
  void define_comm_locations(Paradigm paradigm, const std::vector<uint64_t>& locations) override {
    comm_locations[paradigm] = locations;
  }
  uint32_t define_comm(Paradigm paradigm, const std::string& name, const std::vector<uint32_t>& members,
                       uint32_t parent) override {
    return add(comms, {paradigm, name, members, parent, false});
  }
  uint32_t define_comm_self(Paradigm paradigm, const std::string& name) override {
    for (uint32_t ref = 0; ref < comms.size(); ++ref)
      if (comms[ref].self && comms[ref].paradigm == paradigm) return ref;
    return add(comms, {paradigm, name, {}, otf2::kUndefined, true});
  }
  void write_sample(uint64_t location, uint64_t timestamp, uint32_t context, uint32_t, uint32_t) override {
    records.push_back({Record::Type::kSample, location, timestamp, context, {}, 0, {}, {}});
  }
  void write_context_enter(uint64_t location, uint64_t timestamp, uint32_t context, uint32_t) override {
    records.push_back({Record::Type::kEnter, location, timestamp, context, {}, 0, {}, {}});
  }
  void write_context_leave(uint64_t location, uint64_t timestamp, uint32_t context) override {
    records.push_back({Record::Type::kLeave, location, timestamp, context, {}, 0, {}, {}});
  }
  bool write_event(uint64_t location, uint64_t timestamp, std::string_view set, uint32_t kind,
                   const EventPayload& payload, const EventRefs& refs) override {
    if (refused_sets.count(std::string(set))) return false;
    records.push_back({Record::Type::kEvent, location, timestamp, 0, std::string(set), kind, payload,
                       refs.definitions ? *refs.definitions : std::map<uint32_t, uint32_t>{}});
    return true;
  }
  void end_thread(uint64_t location, uint64_t) override { threads.at(location).ended = true; }
  void close(const ClockInfo&) override { closed = true; }
  void abandon() override { abandoned = true; }

 private:
  template <typename T>
  static uint32_t add(std::vector<T>& to, T value) {
    to.push_back(std::move(value));
    return static_cast<uint32_t>(to.size() - 1);
  }
};

}  // namespace hybridprof::sink
