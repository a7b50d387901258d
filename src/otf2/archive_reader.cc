#include "otf2/archive_reader.h"

#include <otf2/otf2.h>

#include <bit>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "otf2/crash_probe.h"
#include "otf2/otf2_error.h"
#include "otf2/paradigm.h"

namespace hybridprof::otf2 {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void throw_corrupt(const std::string& what, OTF2_ErrorCode status) {
  throw std::runtime_error("corrupt archive: " + what + ": " + detail::describe(status));
}

void check_read(OTF2_ErrorCode status, const std::string& what) {
  if (status != OTF2_SUCCESS) throw_corrupt(what, status);
}

// <dir>/traces.otf2, or the only *.otf2 of <dir>, or the path itself, or
// <path>.otf2. Empty if none of these is a regular file.
std::string find_anchor(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fs::path traces = fs::path(path) / "traces.otf2";
    if (fs::is_regular_file(traces, ec)) return traces.string();
    std::vector<fs::path> anchors;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.path().extension() == ".otf2" && entry.is_regular_file(ec)) anchors.push_back(entry.path());
    }
    return anchors.size() == 1 ? anchors[0].string() : std::string();
  }
  if (fs::is_regular_file(path, ec)) return path;
  if (fs::is_regular_file(path + ".otf2", ec)) return path + ".otf2";
  return {};
}

// Whether the anchor holds as many properties as it says. OTF2 3.0.2 sizes
// its table of them as 2 * count pointers in 32-bit arithmetic: a count of
// 2^31 or more wraps, and the properties are then written past the table
// (a heap overflow: otf2-print aborts on such a file), and any large count
// allocates gigabytes before the file runs out. Each property is two
// NUL-terminated strings, so a count above half the bytes left is a lie.
// Only the anchor's fixed start is parsed, as OTF2_AnchorFile_Load reads
// it (the format only ever grows at the end); whatever else is wrong,
// OTF2 reports.
bool anchor_properties_fit(const std::string& anchor) {
  std::ifstream in(anchor, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  // A chunk header byte, the endianness (0x23 big, 0x42 little), "OTF2",
  // the anchor format, then 38 bytes of fixed-size fields.
  constexpr std::string_view kMagic("OTF2\0", 5);
  size_t at = 2 + kMagic.size();
  if (bytes.size() < at + 1 + 38 || bytes.compare(2, kMagic.size(), kMagic) != 0) return true;
  const auto anchor_format = static_cast<uint8_t>(bytes[at]);
  at += 1 + 38;
  for (int i = 0; i < 3; ++i) {  // machine, creator, description
    const size_t end = bytes.find('\0', at);
    if (end == std::string::npos) return true;
    at = end + 1;
  }
  if (anchor_format < 2 || bytes.size() - at < 4) return true;  // format 1 has no properties
  uint32_t count;
  std::memcpy(&count, bytes.data() + at, 4);
  if ((bytes[1] == 0x23) != (std::endian::native == std::endian::big)) count = __builtin_bswap32(count);
  at += 4;
  return count <= (bytes.size() - at) / 2;
}

// Definitions as OTF2 hands them over: refs to strings that may come later,
// so names are resolved once everything is read.
struct RawDefinitions {
  std::unordered_map<uint32_t, std::string> strings;
  struct Region { uint32_t name, description, file, line; OTF2_Paradigm paradigm; };
  std::map<uint32_t, Region> regions;
  std::map<uint32_t, ContextInfo> contexts;
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> source_locations;  // file, line
  struct Node { uint32_t name, class_name, parent; };
  std::map<uint32_t, Node> system_tree_nodes;
  struct LocationGroup { uint32_t name, node, creator; bool device; };
  std::map<uint32_t, LocationGroup> processes;  // location groups: processes and devices
  struct Location { uint32_t name, process; uint64_t events; };
  std::map<uint64_t, Location> threads;
  struct Property { uint64_t owner; uint32_t name; OTF2_Type type; OTF2_AttributeValue value; };
  std::vector<Property> process_properties, thread_properties;
  std::map<uint32_t, uint32_t> interrupt_generators;  // ref -> name
  struct Group { OTF2_GroupType type; OTF2_Paradigm paradigm; std::vector<uint64_t> members; };
  std::map<uint32_t, Group> groups;
  struct Comm { uint32_t name, group, parent; };
  std::map<uint32_t, Comm> comms;
  std::map<uint32_t, uint32_t> parameters;  // ref -> name
  ClockInfo clock;

  std::string text(uint32_t ref) const {
    auto it = strings.find(ref);
    return it == strings.end() ? std::string() : it->second;
  }
  std::string value_text(const Property& p) const {
    switch (p.type) {
      case OTF2_TYPE_STRING: return text(p.value.stringRef);
      case OTF2_TYPE_UINT8: return std::to_string(p.value.uint8);
      case OTF2_TYPE_UINT16: return std::to_string(p.value.uint16);
      case OTF2_TYPE_UINT32: return std::to_string(p.value.uint32);
      case OTF2_TYPE_UINT64: return std::to_string(p.value.uint64);
      case OTF2_TYPE_INT8: return std::to_string(p.value.int8);
      case OTF2_TYPE_INT16: return std::to_string(p.value.int16);
      case OTF2_TYPE_INT32: return std::to_string(p.value.int32);
      case OTF2_TYPE_INT64: return std::to_string(p.value.int64);
      case OTF2_TYPE_DOUBLE: return std::to_string(p.value.float64);
      default: return {};
    }
  }
};

// --- global definition callbacks (C; they only store PODs and strings) ----
// A std::bad_alloc must not unwind through OTF2: each callback catches and
// interrupts the reading instead.
template <class F>
OTF2_CallbackCode guarded(F&& f) {
  try {
    f();
    return OTF2_CALLBACK_SUCCESS;
  } catch (...) {
    return OTF2_CALLBACK_INTERRUPT;
  }
}

RawDefinitions& raw(void* user_data) { return *static_cast<RawDefinitions*>(user_data); }

OTF2_CallbackCode on_clock(void* u, uint64_t resolution, uint64_t offset, uint64_t length, uint64_t realtime) {
  raw(u).clock = {resolution, offset, length, realtime == OTF2_UNDEFINED_TIMESTAMP ? 0 : realtime};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode on_string(void* u, OTF2_StringRef self, const char* s) {
  return guarded([&] { raw(u).strings[self] = s ? s : ""; });
}
OTF2_CallbackCode on_system_tree_node(void* u, OTF2_SystemTreeNodeRef self, OTF2_StringRef name,
                                      OTF2_StringRef class_name, OTF2_SystemTreeNodeRef parent) {
  return guarded([&] { raw(u).system_tree_nodes[self] = {name, class_name, parent}; });
}
OTF2_CallbackCode on_location_group(void* u, OTF2_LocationGroupRef self, OTF2_StringRef name,
                                    OTF2_LocationGroupType type, OTF2_SystemTreeNodeRef node,
                                    OTF2_LocationGroupRef creator) {
  return guarded([&] {
    raw(u).processes[self] = {name, node, creator, type == OTF2_LOCATION_GROUP_TYPE_ACCELERATOR};
  });
}
OTF2_CallbackCode on_location(void* u, OTF2_LocationRef self, OTF2_StringRef name, OTF2_LocationType,
                              uint64_t events, OTF2_LocationGroupRef group) {
  return guarded([&] { raw(u).threads[self] = {name, group, events}; });
}
OTF2_CallbackCode on_region(void* u, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef /*canonical*/,
                            OTF2_StringRef description, OTF2_RegionRole, OTF2_Paradigm paradigm, OTF2_RegionFlag,
                            OTF2_StringRef file, uint32_t begin_line, uint32_t /*end_line*/) {
  return guarded([&] { raw(u).regions[self] = {name, description, file, begin_line, paradigm}; });
}
OTF2_CallbackCode on_source_location(void* u, OTF2_SourceCodeLocationRef self, OTF2_StringRef file, uint32_t line) {
  return guarded([&] { raw(u).source_locations[self] = {file, line}; });
}
OTF2_CallbackCode on_calling_context(void* u, OTF2_CallingContextRef self, OTF2_RegionRef region,
                                     OTF2_SourceCodeLocationRef source_location, OTF2_CallingContextRef parent) {
  return guarded([&] { raw(u).contexts[self] = {region, source_location, parent}; });
}
OTF2_CallbackCode on_interrupt_generator(void* u, OTF2_InterruptGeneratorRef self, OTF2_StringRef name,
                                         OTF2_InterruptGeneratorMode, OTF2_Base, int64_t, uint64_t) {
  return guarded([&] { raw(u).interrupt_generators[self] = name; });
}
OTF2_CallbackCode on_process_property(void* u, OTF2_LocationGroupRef group, OTF2_StringRef name, OTF2_Type type,
                                      OTF2_AttributeValue value) {
  return guarded([&] { raw(u).process_properties.push_back({group, name, type, value}); });
}
OTF2_CallbackCode on_thread_property(void* u, OTF2_LocationRef location, OTF2_StringRef name, OTF2_Type type,
                                     OTF2_AttributeValue value) {
  return guarded([&] { raw(u).thread_properties.push_back({location, name, type, value}); });
}

OTF2_CallbackCode on_group(void* u, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type, OTF2_Paradigm paradigm,
                           OTF2_GroupFlag, uint32_t n, const uint64_t* members) {
  return guarded([&] { raw(u).groups[self] = {type, paradigm, std::vector<uint64_t>(members, members + n)}; });
}
OTF2_CallbackCode on_comm(void* u, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group, OTF2_CommRef parent,
                          OTF2_CommFlag) {
  return guarded([&] { raw(u).comms[self] = {name, group, parent}; });
}
OTF2_CallbackCode on_parameter(void* u, OTF2_ParameterRef self, OTF2_StringRef name, OTF2_ParameterType) {
  return guarded([&] { raw(u).parameters[self] = name; });
}

void resolve(const RawDefinitions& r, Archive& a) {
  // A paradigm's first COMM_LOCATIONS group is its locations (a viewer
  // form writes communicators as more of them).
  for (const auto& [ref, g] : r.groups)
    if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS) a.comm_locations.emplace(from_otf2_paradigm(g.paradigm, {}), g.members);
  for (const auto& [ref, c] : r.comms) {
    CommInfo& info = a.comms[ref];
    info.name = r.text(c.name);
    info.parent = c.parent;
    if (auto g = r.groups.find(c.group); g != r.groups.end()) {
      info.paradigm = from_otf2_paradigm(g->second.paradigm, {});
      info.self = g->second.type == OTF2_GROUP_TYPE_COMM_SELF;
      for (uint64_t m : g->second.members) info.members.push_back(uint32_t(m));
    }
  }
  a.clock = r.clock;
  for (const auto& [ref, region] : r.regions) {
    const std::string description = r.text(region.description);
    RegionInfo& info = a.regions[ref];
    info = {r.text(region.name), r.text(region.file), {}, region.line, from_otf2_paradigm(region.paradigm, description)};
    if (description.rfind(kModuleDescriptionPrefix, 0) == 0) info.module = description.substr(kModuleDescriptionPrefix.size());
  }
  a.contexts = r.contexts;
  for (const auto& [ref, location] : r.source_locations) a.source_locations[ref] = {r.text(location.first), location.second};
  for (const auto& [ref, node] : r.system_tree_nodes) {
    a.system_tree_nodes[ref] = {r.text(node.name), r.text(node.class_name), node.parent};
  }
  for (const auto& [ref, group] : r.processes) {
    if (group.device)
      a.devices[ref] = {r.text(group.name), group.creator};
    else
      a.processes[ref] = {ref, r.text(group.name), {}, group.node};
  }
  for (const auto& [ref, thread] : r.threads) {
    auto device = a.devices.find(thread.process);
    if (device == a.devices.end())
      a.threads[ref] = {ref, r.text(thread.name), thread.process, {}, thread.events};
    else
      a.threads[ref] = {ref, r.text(thread.name), device->second.process, {}, thread.events, thread.process};
  }
  for (const auto& p : r.process_properties) {
    auto it = a.processes.find(static_cast<uint32_t>(p.owner));
    if (it != a.processes.end()) it->second.properties[r.text(p.name)] = r.value_text(p);
  }
  for (const auto& p : r.thread_properties) {
    auto it = a.threads.find(p.owner);
    if (it == a.threads.end()) continue;
    // Integer-valued properties only; numeric strings are accepted too.
    std::string text = r.value_text(p);
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) {
      it->second.properties[r.text(p.name)] = value;
    }
  }
  for (const auto& [ref, name] : r.interrupt_generators) a.interrupt_generators[ref] = r.text(name);
  for (const auto& [ref, name] : r.parameters) a.parameters[ref] = r.text(name);
}

// --- event callbacks ------------------------------------------------------
struct EventSink {
  const std::function<void(const SampleEvent&)>* on_sample;
  const std::function<void(const RegionEvent&)>* on_region;
  const std::function<void(const MpiEvent&)>* on_mpi;
  const std::function<void(const ForkJoinEvent&)>* on_fork_join;
  const std::function<void(const ParameterEvent&)>* on_parameter;
  const Archive* archive;
  std::exception_ptr error;  // rethrown once OTF2 has returned

  template <class F>
  OTF2_CallbackCode deliver(F&& f) {
    try {
      f();
      return OTF2_CALLBACK_SUCCESS;
    } catch (...) {
      error = std::current_exception();
      return OTF2_CALLBACK_INTERRUPT;
    }
  }
};

OTF2_CallbackCode on_sample_event(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t, void* u,
                                  OTF2_AttributeList*, OTF2_CallingContextRef context, uint32_t,
                                  OTF2_InterruptGeneratorRef) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (*sink->on_sample) (*sink->on_sample)(SampleEvent{location, time, context});
  });
}
OTF2_CallbackCode on_enter_event(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t, void* u,
                                 OTF2_AttributeList*, OTF2_RegionRef region) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (*sink->on_region) (*sink->on_region)(RegionEvent{location, time, region, true});
  });
}
OTF2_CallbackCode on_leave_event(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t, void* u,
                                 OTF2_AttributeList*, OTF2_RegionRef region) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (*sink->on_region) (*sink->on_region)(RegionEvent{location, time, region, false});
  });
}

OTF2_CallbackCode on_context_enter_event(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t, void* u,
                                         OTF2_AttributeList*, OTF2_CallingContextRef context, uint32_t) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (!*sink->on_region) return;
    auto it = sink->archive->contexts.find(context);
    (*sink->on_region)(RegionEvent{location, time, it == sink->archive->contexts.end() ? kUndefined : it->second.region,
                                   true, context});
  });
}
OTF2_CallbackCode on_context_leave_event(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t, void* u,
                                         OTF2_AttributeList*, OTF2_CallingContextRef context) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (!*sink->on_region) return;
    auto it = sink->archive->contexts.find(context);
    (*sink->on_region)(RegionEvent{location, time, it == sink->archive->contexts.end() ? kUndefined : it->second.region,
                                   false, context});
  });
}

OTF2_CallbackCode deliver_fork_join(void* u, const ForkJoinEvent& e) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (*sink->on_fork_join) (*sink->on_fork_join)(e);
  });
}
OTF2_CallbackCode on_thread_fork(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                                 OTF2_Paradigm model, uint32_t requested) {
  return deliver_fork_join(u, ForkJoinEvent{l, t, true, from_otf2_paradigm(model, {}), requested});
}
OTF2_CallbackCode on_thread_join(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                                 OTF2_Paradigm model) {
  return deliver_fork_join(u, ForkJoinEvent{l, t, false, from_otf2_paradigm(model, {}), 0});
}

OTF2_CallbackCode on_parameter_event(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                                     OTF2_ParameterRef parameter, uint64_t value) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (*sink->on_parameter) (*sink->on_parameter)(ParameterEvent{l, t, parameter, value});
  });
}

OTF2_CallbackCode deliver_mpi(void* u, const MpiEvent& e) {
  auto* sink = static_cast<EventSink*>(u);
  return sink->deliver([&] {
    if (*sink->on_mpi) (*sink->on_mpi)(e);
  });
}
MpiEvent mpi_event(OTF2_LocationRef location, OTF2_TimeStamp time, MpiEventKind kind) {
  MpiEvent e;
  e.location = location;
  e.timestamp = time;
  e.kind = kind;
  return e;
}
OTF2_CallbackCode on_mpi_send(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                              uint32_t receiver, OTF2_CommRef comm, uint32_t tag, uint64_t length) {
  MpiEvent e = mpi_event(l, t, MpiEventKind::kSend);
  e.peer = receiver, e.comm = comm, e.tag = tag, e.bytes = length;
  return deliver_mpi(u, e);
}
OTF2_CallbackCode on_mpi_recv(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                              uint32_t sender, OTF2_CommRef comm, uint32_t tag, uint64_t length) {
  MpiEvent e = mpi_event(l, t, MpiEventKind::kRecv);
  e.peer = sender, e.comm = comm, e.tag = tag, e.bytes = length;
  return deliver_mpi(u, e);
}
OTF2_CallbackCode on_mpi_isend(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                               uint32_t receiver, OTF2_CommRef comm, uint32_t tag, uint64_t length, uint64_t request) {
  MpiEvent e = mpi_event(l, t, MpiEventKind::kIsend);
  e.peer = receiver, e.comm = comm, e.tag = tag, e.bytes = length, e.request = request;
  return deliver_mpi(u, e);
}
OTF2_CallbackCode on_mpi_irecv(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                               uint32_t sender, OTF2_CommRef comm, uint32_t tag, uint64_t length, uint64_t request) {
  MpiEvent e = mpi_event(l, t, MpiEventKind::kIrecv);
  e.peer = sender, e.comm = comm, e.tag = tag, e.bytes = length, e.request = request;
  return deliver_mpi(u, e);
}
template <MpiEventKind K>
OTF2_CallbackCode on_mpi_request(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                                 uint64_t request) {
  MpiEvent e = mpi_event(l, t, K);
  e.request = request;
  return deliver_mpi(u, e);
}
OTF2_CallbackCode on_mpi_collective_begin(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u,
                                          OTF2_AttributeList*) {
  return deliver_mpi(u, mpi_event(l, t, MpiEventKind::kCollectiveBegin));
}
OTF2_CallbackCode on_mpi_collective_end(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                                        OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root, uint64_t sent,
                                        uint64_t received) {
  MpiEvent e = mpi_event(l, t, MpiEventKind::kCollectiveEnd);
  e.op = static_cast<CollectiveOp>(op), e.comm = comm, e.peer = root, e.sent = sent, e.received = received;
  return deliver_mpi(u, e);
}
OTF2_CallbackCode on_nbc_complete(OTF2_LocationRef l, OTF2_TimeStamp t, uint64_t, void* u, OTF2_AttributeList*,
                                  OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root, uint64_t sent,
                                  uint64_t received, uint64_t request) {
  MpiEvent e = mpi_event(l, t, MpiEventKind::kNonBlockingCollectiveComplete);
  e.op = static_cast<CollectiveOp>(op), e.comm = comm, e.peer = root, e.sent = sent, e.received = received;
  e.request = request;
  return deliver_mpi(u, e);
}

}  // namespace

struct ArchiveReader::Handle {
  OTF2_Reader* reader = nullptr;
  ~Handle() {
    if (reader) OTF2_Reader_Close(reader);
  }
};

std::vector<uint32_t> Archive::context_path(uint32_t context) const {
  std::vector<uint32_t> path;
  std::set<uint32_t> seen;
  for (uint32_t c = context; c != kUndefined && seen.insert(c).second;) {
    auto it = contexts.find(c);
    if (it == contexts.end()) break;
    path.push_back(c);
    c = it->second.parent;
  }
  return {path.rbegin(), path.rend()};
}

namespace {

// Opens the archive at archive.anchor and reads its properties and global
// definitions into `archive`.
void read_definitions(ArchiveReader::Handle& handle, Archive& archive) {
  detail::take_last_otf2_message();
  handle.reader = OTF2_Reader_Open(archive.anchor.c_str());
  if (handle.reader == nullptr) {
    std::string detail = detail::take_last_otf2_message();
    throw std::runtime_error("corrupt archive: cannot open " + archive.anchor + (detail.empty() ? "" : ": " + detail));
  }
  OTF2_Reader* reader = handle.reader;
  check_read(OTF2_Reader_SetSerialCollectiveCallbacks(reader), "OTF2_Reader_SetSerialCollectiveCallbacks");

  uint32_t property_count = 0;
  char** names = nullptr;
  check_read(OTF2_Reader_GetPropertyNames(reader, &property_count, &names), "reading archive properties");
  for (uint32_t i = 0; i < property_count; ++i) {
    char* value = nullptr;
    if (OTF2_Reader_GetProperty(reader, names[i], &value) == OTF2_SUCCESS && value) {
      archive.properties[names[i]] = value;
    }
    std::free(value);
  }
  std::free(names);  // one allocation holds the array and the strings

  OTF2_GlobalDefReader* defs = OTF2_Reader_GetGlobalDefReader(reader);
  if (defs == nullptr) {
    throw std::runtime_error("corrupt archive: cannot read the global definitions of " + archive.anchor + ": " +
                             detail::take_last_otf2_message());
  }
  OTF2_GlobalDefReaderCallbacks* callbacks = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(callbacks, on_clock);
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(callbacks, on_string);
  OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(callbacks, on_system_tree_node);
  OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(callbacks, on_location_group);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(callbacks, on_location);
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(callbacks, on_region);
  OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(callbacks, on_source_location);
  OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback(callbacks, on_calling_context);
  OTF2_GlobalDefReaderCallbacks_SetInterruptGeneratorCallback(callbacks, on_interrupt_generator);
  OTF2_GlobalDefReaderCallbacks_SetLocationGroupPropertyCallback(callbacks, on_process_property);
  OTF2_GlobalDefReaderCallbacks_SetLocationPropertyCallback(callbacks, on_thread_property);
  OTF2_GlobalDefReaderCallbacks_SetGroupCallback(callbacks, on_group);
  OTF2_GlobalDefReaderCallbacks_SetCommCallback(callbacks, on_comm);
  OTF2_GlobalDefReaderCallbacks_SetParameterCallback(callbacks, on_parameter);
  RawDefinitions raw_definitions;
  OTF2_ErrorCode status = OTF2_Reader_RegisterGlobalDefCallbacks(reader, defs, callbacks, &raw_definitions);
  OTF2_GlobalDefReaderCallbacks_Delete(callbacks);
  check_read(status, "registering definition callbacks");
  uint64_t read = 0;
  check_read(OTF2_Reader_ReadAllGlobalDefinitions(reader, defs, &read), "reading the global definitions of " + archive.anchor);
  OTF2_Reader_CloseGlobalDefReader(reader, defs);
  resolve(raw_definitions, archive);
}

// OTF2's readers trust the contents of a record: a corrupt definition file
// can make them read far outside their buffers (seen under fuzzing: a
// SIGSEGV in OTF2_Buffer_ReadUint64 on a def file whose chunk header and a
// string were mutated). The definitions are small, so they are read once
// in a child process first: a child killed by a signal means a file OTF2
// cannot read safely, and the tool says "corrupt archive" instead of
// crashing. A child that exits otherwise leaves the reading to the parent
// (which then reports what went wrong as usual; a sanitizer finding in the
// profiler's own callbacks is reported there, not hidden).
void check_definitions_in_a_child(const std::string& anchor) {
  const int sig = signal_that_kills([&] {
    ArchiveReader::Handle handle;
    Archive archive;
    archive.anchor = anchor;
    read_definitions(handle, archive);
  });
  if (sig != 0)
    throw std::runtime_error("corrupt archive: reading the global definitions of " + anchor +
                             " crashed OTF2's reader (" + strsignal(sig) + ")");
}

}  // namespace

ArchiveReader::ArchiveReader(const std::string& path) : handle_(std::make_unique<Handle>()) {
  detail::install_error_capture();
  archive_.anchor = find_anchor(path);
  if (archive_.anchor.empty()) {
    std::string hint;
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path given = fs::path(path).lexically_normal();
    if (given.filename().empty()) given = given.parent_path();  // "JOB/rank-0/"
    const fs::path job = given.parent_path();
    const bool rank_of_job = given.filename().string().rfind("rank-", 0) == 0 && !job.empty() &&
                             fs::is_directory(job / "rank-0", ec);
    if (rank_of_job) {
      // One rank's directory: its data is in the job's archive, one up.
      hint = find_anchor(job.string()).empty()
                 ? " (a rank of an MPI job whose archive was not written: run hybridprof-merge " + job.string() + ")"
                 : " (a rank of an MPI job: its archive is the job's, hybridprof-report " + job.string() + ")";
    } else if (fs::is_directory(fs::path(path) / "rank-0", ec)) {
      hint = " (an MPI job directory without its archive, e.g. a killed job: run hybridprof-merge " + path + ")";
    } else if (fs::is_directory(fs::path(path) / "raw", ec)) {
      hint = " (raw data only: run hybridprof-merge " + path + ")";
    }
    throw std::runtime_error("no OTF2 archive at " + path + hint);
  }

  if (!anchor_properties_fit(archive_.anchor)) {
    throw std::runtime_error("corrupt archive: " + archive_.anchor + " says it has more properties than it holds");
  }
  check_definitions_in_a_child(archive_.anchor);
  read_definitions(*handle_, archive_);
}

ArchiveReader::~ArchiveReader() = default;

const Archive& ArchiveReader::archive() const { return archive_; }

void ArchiveReader::read_events(const std::function<void(const SampleEvent&)>& on_sample,
                                const std::function<void(const RegionEvent&)>& on_region,
                                const std::function<void(const MpiEvent&)>& on_mpi,
                                const std::function<void(const ForkJoinEvent&)>& on_fork_join,
                                const std::function<void(const ParameterEvent&)>& on_parameter) {
  OTF2_Reader* reader = handle_->reader;
  for (const auto& [location, thread] : archive_.threads) {
    check_read(OTF2_Reader_SelectLocation(reader, location), "selecting location " + std::to_string(location));
  }
  // Local definition files are optional in OTF2. They hold mapping tables
  // (not ours; other writers' archives may have them) and clock offsets:
  // reading a location's local definitions before its events is what makes
  // OTF2's event reader correct that location's timestamps (it does by
  // default; see ArchiveWriter::add_clock_offset for how).
  const bool have_local_defs = OTF2_Reader_OpenDefFiles(reader) == OTF2_SUCCESS;
  check_read(OTF2_Reader_OpenEvtFiles(reader), "opening event files");

  OTF2_EvtReaderCallbacks* callbacks = OTF2_EvtReaderCallbacks_New();
  OTF2_EvtReaderCallbacks_SetCallingContextSampleCallback(callbacks, on_sample_event);
  OTF2_EvtReaderCallbacks_SetEnterCallback(callbacks, on_enter_event);
  OTF2_EvtReaderCallbacks_SetLeaveCallback(callbacks, on_leave_event);
  OTF2_EvtReaderCallbacks_SetCallingContextEnterCallback(callbacks, on_context_enter_event);
  OTF2_EvtReaderCallbacks_SetCallingContextLeaveCallback(callbacks, on_context_leave_event);
  OTF2_EvtReaderCallbacks_SetMpiSendCallback(callbacks, on_mpi_send);
  OTF2_EvtReaderCallbacks_SetMpiRecvCallback(callbacks, on_mpi_recv);
  OTF2_EvtReaderCallbacks_SetMpiIsendCallback(callbacks, on_mpi_isend);
  OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(callbacks, on_mpi_irecv);
  OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(callbacks, on_mpi_request<MpiEventKind::kIsendComplete>);
  OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(callbacks, on_mpi_request<MpiEventKind::kIrecvRequest>);
  OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(callbacks, on_mpi_request<MpiEventKind::kRequestTest>);
  OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(callbacks, on_mpi_request<MpiEventKind::kRequestCancelled>);
  OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(callbacks, on_mpi_collective_begin);
  OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(callbacks, on_mpi_collective_end);
  OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(
      callbacks, on_mpi_request<MpiEventKind::kNonBlockingCollectiveRequest>);
  OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(callbacks, on_nbc_complete);
  OTF2_EvtReaderCallbacks_SetThreadForkCallback(callbacks, on_thread_fork);
  OTF2_EvtReaderCallbacks_SetThreadJoinCallback(callbacks, on_thread_join);
  OTF2_EvtReaderCallbacks_SetParameterUnsignedIntCallback(callbacks, on_parameter_event);
  EventSink sink{&on_sample, &on_region, &on_mpi, &on_fork_join, &on_parameter, &archive_, nullptr};

  std::string failure;
  OTF2_ErrorCode failure_status = OTF2_SUCCESS;
  // Named in errors: ARCHIVE/<location>.evt, beside the anchor ARCHIVE.otf2.
  const auto events_of = [&](uint64_t location) {
    const std::string& a = archive_.anchor;
    return a.substr(0, a.rfind(".otf2")) + "/" + std::to_string(location) + ".evt (the events of location " +
           std::to_string(location) + ")";
  };
  for (const auto& [location, thread] : archive_.threads) {
    if (have_local_defs) {
      if (OTF2_DefReader* local = OTF2_Reader_GetDefReader(reader, location)) {
        uint64_t read = 0;
        OTF2_Reader_ReadAllLocalDefinitions(reader, local, &read);  // optional, see above
        OTF2_Reader_CloseDefReader(reader, local);
      }
    }
    detail::take_last_otf2_message();  // forget complaints about missing optional files
    OTF2_EvtReader* events = OTF2_Reader_GetEvtReader(reader, location);
    if (events == nullptr) {
      failure = "cannot read " + events_of(location) + ": " + detail::take_last_otf2_message();
      break;
    }
    OTF2_ErrorCode status = OTF2_Reader_RegisterEvtCallbacks(reader, events, callbacks, &sink);
    uint64_t read = 0;
    if (status == OTF2_SUCCESS) status = OTF2_Reader_ReadAllLocalEvents(reader, events, &read);
    OTF2_Reader_CloseEvtReader(reader, events);
    if (sink.error) break;
    if (status != OTF2_SUCCESS) {
      failure = "reading " + events_of(location);
      failure_status = status;
      break;
    }
  }
  OTF2_EvtReaderCallbacks_Delete(callbacks);
  OTF2_Reader_CloseEvtFiles(reader);
  if (have_local_defs) OTF2_Reader_CloseDefFiles(reader);
  if (sink.error) std::rethrow_exception(sink.error);
  if (failure_status != OTF2_SUCCESS) throw_corrupt(failure, failure_status);
  if (!failure.empty()) throw std::runtime_error("corrupt archive: " + failure);
}

}  // namespace hybridprof::otf2
