#include "otf2/archive_writer.h"

#include <fcntl.h>
#include <otf2/otf2.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <stdexcept>

#include "otf2/chunk_budget.h"
#include "otf2/event_set_writer.h"
#include "otf2/otf2_error.h"
#include "otf2/paradigm.h"
#include "otf2/property_names.h"
#include "otf2/region_stack.h"

namespace hybridprof::otf2 {
namespace fs = std::filesystem;
using detail::check;

namespace {

// Every full chunk goes to disk: that is what keeps memory bounded.
OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
// No post-flush callback: BufferFlush records would mark our drain thread's
// I/O inside the application's timeline, which is noise for a sampler.
const OTF2_FlushCallbacks kFlushCallbacks = {pre_flush, nullptr};

std::string location_text(uint64_t location) { return "location " + std::to_string(location); }

// check() for an event record: the message is built only when the record
// failed (building it for every record was a tenth of an archive's writing).
void check_event(OTF2_ErrorCode status, const char* what, uint64_t location) {
  if (status != OTF2_SUCCESS) [[unlikely]]
    check(status, std::string(what) + " for " + location_text(location));
}

void check_ref(uint64_t ref, size_t count, const char* what) {
  if (ref >= count) {
    throw std::invalid_argument(std::string("ArchiveWriter: unknown ") + what + " ref " + std::to_string(ref));
  }
}

void check_optional_ref(uint32_t ref, size_t count, const char* what) {
  if (ref != kUndefined) check_ref(ref, count, what);
}

// Fails early, with the path in the message, where OTF2 would fail late
// (at the first flush or at close) with a less helpful one.
void prepare_directory(const ArchiveWriter::Options& options) {
  if (options.directory.empty()) throw std::runtime_error("ArchiveWriter: empty archive directory");
  if (options.name.empty() || options.name.find('/') != std::string::npos) {
    throw std::runtime_error("ArchiveWriter: bad archive name '" + options.name + "'");
  }
  const fs::path dir(options.directory);
  // Of a collective archive, the master checks: the others may find what it made already.
  const bool checks_existing = options.collective == nullptr || options.collective->is_master();
  for (const fs::path& part : {dir / (options.name + ".otf2"), dir / (options.name + ".def"), dir / options.name}) {
    std::error_code ec;
    if (checks_existing && fs::exists(fs::symlink_status(part, ec))) {
      throw std::runtime_error("ArchiveWriter: an OTF2 archive already exists at " + part.string());
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error("ArchiveWriter: cannot create archive directory " + dir.string() + ": " + ec.message());
  }
  if (!fs::is_directory(dir, ec)) {
    throw std::runtime_error("ArchiveWriter: archive path " + dir.string() + " is not a directory");
  }
  // access(W_OK) says yes to root on a read-only file system: try for real.
  std::string probe = (dir / ".hybridprof-write-test-XXXXXX").string();
  int fd = mkstemp(probe.data());
  if (fd < 0) {
    throw std::runtime_error("ArchiveWriter: archive directory " + dir.string() + " is not writable: " +
                             std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

struct ArchiveWriter::Thread {
  uint64_t ref = 0;
  uint32_t name = kUndefined;
  uint32_t process = kUndefined;  // or the device, for a stream
  bool stream = false;
  OTF2_EvtWriter* writer = nullptr;  // created at the first event
  bool ended = false;
  bool remote = false;  // collective mode: another writer's
  uint64_t events = 0;
  uint64_t first_timestamp = UINT64_MAX;  // UINT64_MAX: no event yet
  uint64_t last_timestamp = 0;
  uint64_t clamped = 0, most_clamped_ns = 0;  // rule 2: events moved later, and by how much at most
  RegionStack sampled;               // enter_leave mode: the regions open now
};

struct ArchiveWriter::Archive {
  OTF2_Archive* handle = nullptr;
  detail::ChunkBudget budget;  // must outlive `handle`: OTF2 calls back with it
};

size_t ArchiveWriter::TripleHash::operator()(const std::tuple<uint32_t, uint32_t, uint64_t>& key) const noexcept {
  uint64_t h = std::get<0>(key);
  h = h * 0x9e3779b97f4a7c15ull ^ std::get<1>(key);
  h = h * 0x9e3779b97f4a7c15ull ^ std::get<2>(key);
  return static_cast<size_t>(h ^ (h >> 29));
}

ArchiveWriter::ArchiveWriter(const Options& options) : options_(options), archive_(std::make_unique<Archive>()) {
  detail::install_error_capture();
  if (options_.max_chunks_per_thread == 0) options_.max_chunks_per_thread = 1;
  prepare_directory(options_);
  anchor_path_ = (fs::path(options_.directory) / (options_.name + ".otf2")).string();
  archive_->budget.max_event_chunks = options_.max_chunks_per_thread;

  archive_->handle = OTF2_Archive_Open(options_.directory.c_str(), options_.name.c_str(), OTF2_FILEMODE_WRITE,
                                       // Definition buffers use the event chunk size too: OTF2 allocates
                                       // (and memsets) a whole chunk for each location's local
                                       // definition file, 4 MiB by default; large global
                                       // definitions simply span several chunks.
                                       options_.event_chunk_bytes, options_.event_chunk_bytes,
                                       OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (archive_->handle == nullptr) {
    throw std::runtime_error("ArchiveWriter: cannot open OTF2 archive " + anchor_path_ + ": " +
                             detail::take_last_otf2_message());
  }
  try {
    OTF2_Archive* a = archive_->handle;
    check(OTF2_Archive_SetFlushCallbacks(a, &kFlushCallbacks, nullptr), "OTF2_Archive_SetFlushCallbacks");
    check(OTF2_Archive_SetMemoryCallbacks(a, detail::bounded_memory_callbacks(), &archive_->budget),
          "OTF2_Archive_SetMemoryCallbacks");
    if (options_.collective)
      options_.collective->install(a);
    else
      check(OTF2_Archive_SetSerialCollectiveCallbacks(a), "OTF2_Archive_SetSerialCollectiveCallbacks");
    check(OTF2_Archive_SetCreator(a, "hybridprof"), "OTF2_Archive_SetCreator");
    check(OTF2_Archive_OpenEvtFiles(a), "OTF2_Archive_OpenEvtFiles for " + anchor_path_);
  } catch (...) {
    OTF2_Archive_Close(archive_->handle);
    archive_->handle = nullptr;
    throw;
  }
  if (options_.define_event_sets) options_.define_event_sets(*this);
}

ArchiveWriter::~ArchiveWriter() {
  if (archive_ && archive_->handle) {
    try {
      // Of a collective archive, each writer alone cannot tell whether the
      // others will close: abandon() must be called by all or none.
      if (!options_.collective) close(ClockInfo{});
    } catch (...) {
      // A destructor cannot report; close() explicitly to see failures.
    }
  }
}

void ArchiveWriter::require_open(const char* what) const {
  if (!archive_ || !archive_->handle) throw std::logic_error(std::string("ArchiveWriter::") + what + " after close()");
}

void ArchiveWriter::set_property(const std::string& name, const std::string& value) {
  require_open("set_property");
  // OTF2 checks names only at close(), when a failure would lose the archive:
  // check now. Its rule: "NAMESPACE::NAME[::...]", [A-Za-z0-9_], case-insensitive
  // (stored upper-case).
  std::string key;
  bool valid = name.find("::") != std::string::npos;
  for (size_t i = 0; valid && i < name.size(); ++i) {
    const char ch = name[i];
    if (ch == ':') {
      valid = i + 2 < name.size() && name[i + 1] == ':' && i > 0 && name[i - 1] != ':' && name[i + 2] != ':';
      key += "::";
      ++i;
    } else {
      valid = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
      key += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
  }
  if (!valid) {
    throw std::invalid_argument("ArchiveWriter: bad property name '" + name +
                                "' (want NAMESPACE::NAME of letters, digits and _)");
  }
  if (value.empty()) {
    archive_properties_.erase(key);
  } else {
    archive_properties_[key] = value;
  }
}

uint32_t ArchiveWriter::define_string(std::string_view text) {
  if (auto it = string_refs_.find(text); it != string_refs_.end()) return it->second;
  const auto ref = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(text);
  string_refs_.emplace(strings_.back(), ref);
  return ref;
}

uint32_t ArchiveWriter::define_source_location(const std::string& file, uint32_t line) {
  const uint32_t file_ref = define_string(file);
  auto [it, inserted] = source_location_refs_.try_emplace({file_ref, line}, source_locations_.size());
  if (inserted) source_locations_.push_back({file_ref, line});
  return it->second;
}

uint32_t ArchiveWriter::define_region(const std::string& name, const std::string& file, uint32_t begin_line,
                                      Paradigm paradigm, const std::string& module) {
  const uint32_t name_ref = define_string(name);
  const uint32_t file_ref = define_string(file);
  auto [it, inserted] =
      region_refs_.try_emplace({name_ref, file_ref, static_cast<uint64_t>(paradigm)}, regions_.size());
  if (inserted) {
    const std::string_view as_user = user_paradigm_description(paradigm);
    const std::string description = !as_user.empty()  ? std::string(as_user)
                                    : module.empty() ? std::string()
                                                     : std::string(kModuleDescriptionPrefix) + module;
    regions_.push_back({name_ref, file_ref, begin_line, paradigm, define_string(description)});
  }
  return it->second;
}

uint32_t ArchiveWriter::define_calling_context(uint32_t region, uint32_t source_location, uint32_t parent) {
  check_ref(region, regions_.size(), "region");
  check_optional_ref(source_location, source_locations_.size(), "source location");
  check_optional_ref(parent, contexts_.size(), "parent calling context");
  auto [it, inserted] = context_refs_.try_emplace({region, source_location, parent}, contexts_.size());
  if (inserted) contexts_.push_back({region, source_location, parent});
  return it->second;
}

uint32_t ArchiveWriter::define_interrupt_generator(const std::string& name, bool time_based, uint64_t period) {
  const uint32_t name_ref = define_string(name);
  // period is folded into the key's third field with time_based in the top bit.
  const uint64_t key = (period & ~(1ull << 63)) | (time_based ? 1ull << 63 : 0);
  auto [it, inserted] =
      interrupt_generator_refs_.try_emplace({name_ref, 0u, key}, interrupt_generators_.size());
  if (inserted) interrupt_generators_.push_back({name_ref, time_based, period});
  return it->second;
}

uint32_t ArchiveWriter::define_parameter(const std::string& name) {
  if (auto it = parameter_refs_.find(name); it != parameter_refs_.end()) return it->second;
  const uint32_t ref = static_cast<uint32_t>(parameters_.size());
  parameters_.push_back(define_string(name));
  parameter_refs_.emplace(name, ref);
  return ref;
}

void ArchiveWriter::write_parameter(uint64_t location, uint64_t timestamp, uint32_t parameter, uint64_t value) {
  check_ref(parameter, parameters_.size(), "parameter");
  write_event_record(location, timestamp, "OTF2_EvtWriter_ParameterUnsignedInt", [&](OTF2_EvtWriter* e, uint64_t t) {
    return OTF2_EvtWriter_ParameterUnsignedInt(e, nullptr, t, parameter, value);
  });
}

uint32_t ArchiveWriter::define_system_tree_node(const std::string& name, const std::string& class_name,
                                                uint32_t parent) {
  check_optional_ref(parent, system_tree_nodes_.size(), "parent system tree node");
  const uint32_t name_ref = define_string(name);
  const uint32_t class_ref = define_string(class_name);
  auto [it, inserted] = system_tree_node_refs_.try_emplace({name_ref, class_ref, parent}, system_tree_nodes_.size());
  if (inserted) system_tree_nodes_.push_back({name_ref, class_ref, parent});
  return it->second;
}

uint32_t ArchiveWriter::define_process(const std::string& name, uint32_t system_tree_node) {
  check_ref(system_tree_node, system_tree_nodes_.size(), "system tree node");
  processes_.push_back({define_string(name), system_tree_node});
  return static_cast<uint32_t>(processes_.size() - 1);
}

uint32_t ArchiveWriter::define_device(uint32_t process, const std::string& name) {
  check_ref(process, processes_.size(), "process");
  if (processes_[process].creator != kUndefined) throw std::invalid_argument("ArchiveWriter: a device of a device");
  const uint32_t name_ref = define_string(name);
  for (uint32_t ref = 0; ref < processes_.size(); ++ref)
    if (processes_[ref].creator == process && processes_[ref].name == name_ref) return ref;
  processes_.push_back({name_ref, processes_[process].system_tree_node, process});
  return static_cast<uint32_t>(processes_.size() - 1);
}

uint64_t ArchiveWriter::define_stream(uint32_t device, const std::string& name) {
  require_open("define_stream");
  check_ref(device, processes_.size(), "device");
  if (processes_[device].creator == kUndefined) throw std::invalid_argument("ArchiveWriter: a stream of a process");
  if (follower()) throw std::logic_error("ArchiveWriter: define_stream is the collective archive's master's");
  Thread stream;
  stream.ref = threads_.size();
  stream.name = define_string(name);
  stream.process = device;
  stream.stream = true;
  threads_.push_back(std::move(stream));
  return threads_.size() - 1;
}

uint64_t ArchiveWriter::define_thread(uint32_t process, const std::string& name) {
  require_open("define_thread");
  check_ref(process, processes_.size(), "process");
  if (processes_[process].creator != kUndefined) throw std::invalid_argument("ArchiveWriter: a thread of a device");
  if (follower()) throw std::logic_error("ArchiveWriter: define_thread is the collective archive's master's");
  Thread thread;
  thread.ref = threads_.size();
  thread.name = define_string(name);
  thread.process = process;
  threads_.push_back(std::move(thread));
  return threads_.size() - 1;
}

void ArchiveWriter::set_thread_remote(uint64_t location) {
  Thread& thread = thread_at(location);
  if (!options_.collective) throw std::logic_error("ArchiveWriter: set_thread_remote without a collective");
  thread.remote = true;
}

void ArchiveWriter::adopt(const AdoptedRefs& refs) {
  require_open("adopt");
  if (!follower()) throw std::logic_error("ArchiveWriter: adopt is for a collective archive's writers but its master");
  if (!threads_.empty() || adopted_generators_ || adopted_comms_)
    throw std::logic_error("ArchiveWriter: adopt called twice");
  for (const auto& [ref, stream] : refs.locations) {
    Thread thread;
    thread.ref = ref;
    thread.stream = stream;
    if (!adopted_.emplace(ref, threads_.size()).second)
      throw std::invalid_argument("ArchiveWriter: location ref " + std::to_string(ref) + " adopted twice");
    threads_.push_back(std::move(thread));
  }
  adopted_generators_ = refs.interrupt_generators;
  adopted_comms_ = refs.comms;
}

ArchiveWriter::Thread& ArchiveWriter::thread_at(uint64_t location) {
  if (follower()) {
    const auto it = adopted_.find(location);
    if (it == adopted_.end())
      throw std::invalid_argument("ArchiveWriter: unknown location ref " + std::to_string(location) + " (not adopted)");
    return threads_[it->second];
  }
  check_ref(location, threads_.size(), "location");
  return threads_[location];
}

void ArchiveWriter::set_process_property(uint32_t process, const std::string& name, const std::string& value) {
  check_ref(process, processes_.size(), "process");
  process_properties_[{process, define_string(name)}] = define_string(value);
}

void ArchiveWriter::set_thread_property(uint64_t location, const std::string& name, uint64_t value) {
  thread_at(location);
  thread_properties_[{location, define_string(name)}] = value;
}

void ArchiveWriter::open_writer(Thread& thread, uint64_t location) {
  if (thread.writer != nullptr) return;
  thread.writer = OTF2_Archive_GetEvtWriter(archive_->handle, location);
  if (thread.writer == nullptr) {
    throw std::runtime_error("ArchiveWriter: cannot create the event writer of " + location_text(location) + ": " +
                             detail::take_last_otf2_message());
  }
  ++open_threads_;
}

ArchiveWriter::Thread& ArchiveWriter::thread_for_event(uint64_t location, uint64_t& timestamp) {
  require_open("write_*");
  Thread& thread = thread_at(location);
  if (thread.ended) throw std::logic_error("ArchiveWriter: event for " + location_text(location) + " after end_thread");
  if (thread.remote) throw std::logic_error("ArchiveWriter: event for " + location_text(location) + ", another writer's");
  open_writer(thread, location);
  if (timestamp < thread.last_timestamp) {
    ++clamped_timestamps_;
    ++thread.clamped;
    thread.most_clamped_ns = std::max(thread.most_clamped_ns, thread.last_timestamp - timestamp);
    timestamp = thread.last_timestamp;
  }
  thread.last_timestamp = timestamp;
  if (thread.first_timestamp == UINT64_MAX) thread.first_timestamp = timestamp;
  if (timestamp < first_timestamp_) first_timestamp_ = timestamp;
  if (timestamp > last_timestamp_) last_timestamp_ = timestamp;
  return thread;
}

void ArchiveWriter::write_sample(uint64_t location, uint64_t timestamp, uint32_t calling_context,
                                 uint32_t unwind_distance, uint32_t interrupt_generator) {
  check_ref(calling_context, contexts_.size(), "calling context");
  check_optional_ref(interrupt_generator, follower() ? adopted_generators_ : interrupt_generators_.size(),
                     "interrupt generator");
  Thread& thread = thread_for_event(location, timestamp);
  if (options_.enter_leave) {
    move_to_context(thread, location, timestamp, calling_context);
    return;
  }
  check_event(OTF2_EvtWriter_CallingContextSample(thread.writer, nullptr, timestamp, calling_context,
                                                  unwind_distance, interrupt_generator),
              "OTF2_EvtWriter_CallingContextSample", location);
  ++thread.events;
  ++events_;
}

void ArchiveWriter::move_to_context(Thread& thread, uint64_t location, uint64_t timestamp,
                                    uint32_t calling_context) {
  path_scratch_.clear();
  for (uint32_t c = calling_context; c != kUndefined; c = contexts_[c].parent) {
    path_scratch_.push_back(contexts_[c].region);
  }
  std::reverse(path_scratch_.begin(), path_scratch_.end());
  thread.sampled.move_to(path_scratch_, [&](uint32_t region, bool enter) {
    OTF2_ErrorCode status = enter ? OTF2_EvtWriter_Enter(thread.writer, nullptr, timestamp, region)
                                  : OTF2_EvtWriter_Leave(thread.writer, nullptr, timestamp, region);
    check_event(status, "OTF2_EvtWriter_Enter/Leave", location);
    ++thread.events;
    ++events_;
  });
}

void ArchiveWriter::write_context_enter(uint64_t location, uint64_t timestamp, uint32_t calling_context,
                                        uint32_t unwind_distance) {
  check_ref(calling_context, contexts_.size(), "calling context");
  Thread& thread = thread_for_event(location, timestamp);
  if (options_.enter_leave) {
    move_to_context(thread, location, timestamp, calling_context);
    return;
  }
  check_event(OTF2_EvtWriter_CallingContextEnter(thread.writer, nullptr, timestamp, calling_context, unwind_distance),
              "OTF2_EvtWriter_CallingContextEnter", location);
  ++thread.events;
  ++events_;
}

void ArchiveWriter::write_context_leave(uint64_t location, uint64_t timestamp, uint32_t calling_context) {
  check_ref(calling_context, contexts_.size(), "calling context");
  Thread& thread = thread_for_event(location, timestamp);
  if (options_.enter_leave) {
    move_to_context(thread, location, timestamp, contexts_[calling_context].parent);
    return;
  }
  check_event(OTF2_EvtWriter_CallingContextLeave(thread.writer, nullptr, timestamp, calling_context),
              "OTF2_EvtWriter_CallingContextLeave", location);
  ++thread.events;
  ++events_;
}

namespace {
// Records the viewers' archive (enter_leave) leaves out: ViTE, whose archive
// it is, reads none of them and says so once a record ("callback_ThreadFork
// not implemented": 78,180 lines for an 8-rank LULESH run; parameters, the
// arguments of CUDA work and OS-runtime waits, likewise). The main archive
// keeps them.
bool viewers_read(const char* what) {
  return std::strcmp(what, "OTF2_EvtWriter_ThreadFork") != 0 && std::strcmp(what, "OTF2_EvtWriter_ThreadJoin") != 0 &&
         std::strcmp(what, "OTF2_EvtWriter_ParameterUnsignedInt") != 0;
}
}  // namespace

void ArchiveWriter::write_event_record(uint64_t location, uint64_t timestamp, const char* what, EventRecordFn fn,
                                       const void* record) {
  if (options_.enter_leave && !viewers_read(what)) return;
  Thread& thread = thread_for_event(location, timestamp);
  check_event(static_cast<OTF2_ErrorCode>(fn(thread.writer, timestamp, record)), what, location);
  ++thread.events;
  ++events_;
}

bool ArchiveWriter::write_event(uint64_t location, uint64_t timestamp, std::string_view set, uint32_t kind,
                                const EventPayload& payload, const sink::EventRefs& refs) {
  const EventSetWriter* writer = options_.event_set_writer ? options_.event_set_writer(set) : nullptr;
  if (writer == nullptr || !writer->writable(kind, payload, refs)) return false;
  writer->write(*this, location, timestamp, kind, payload, refs);
  return true;
}

void ArchiveWriter::check_comm(uint32_t comm) const {
  check_ref(comm, follower() ? adopted_comms_ : comms_.size(), "communicator");
}

const ArchiveWriter::Group& ArchiveWriter::comm_locations_of(Paradigm paradigm, const char* what) const {
  // OTF2 readers resolve COMM_GROUP and COMM_SELF groups through their
  // paradigm's COMM_LOCATIONS group, defined before them (otf2-print:
  // "undefined Group(COMM_LOCATIONS) for paradigm MPI").
  auto it = comm_locations_.find(paradigm);
  if (it == comm_locations_.end())
    throw std::logic_error(std::string("ArchiveWriter: ") + what + " before define_comm_locations of its paradigm");
  return groups_[it->second];
}

void ArchiveWriter::define_comm_locations(Paradigm paradigm, const std::vector<uint64_t>& locations) {
  require_open("define_comm_locations");
  if (comm_locations_.count(paradigm))
    throw std::logic_error("ArchiveWriter: define_comm_locations called twice for a paradigm");
  for (uint64_t location : locations) thread_at(location);
  comm_locations_[paradigm] = uint32_t(groups_.size());
  groups_.push_back({GroupType::kCommLocations, paradigm, locations});
}

uint32_t ArchiveWriter::define_comm(Paradigm paradigm, const std::string& name, const std::vector<uint32_t>& members,
                                    uint32_t parent) {
  require_open("define_comm");
  const size_t size = comm_locations_of(paradigm, "define_comm").members.size();
  check_optional_ref(parent, comms_.size(), "communicator");
  std::vector<uint64_t> indices;
  for (uint32_t member : members) {
    check_ref(member, size, "communicator member");
    indices.push_back(member);
  }
  auto [it, added] = member_group_refs_.emplace(std::make_pair(paradigm, indices), uint32_t(groups_.size()));
  if (added) groups_.push_back({GroupType::kCommMembers, paradigm, std::move(indices)});
  comms_.push_back({define_string(name), it->second, parent});
  return uint32_t(comms_.size() - 1);
}

uint32_t ArchiveWriter::define_comm_self(Paradigm paradigm, const std::string& name) {
  require_open("define_comm_self");
  if (auto known = comm_self_.find(paradigm); known != comm_self_.end()) return known->second;
  comm_locations_of(paradigm, "define_comm_self");
  groups_.push_back({GroupType::kSelf, paradigm, {}});
  comms_.push_back({define_string(name), uint32_t(groups_.size() - 1), kUndefined});
  return comm_self_[paradigm] = uint32_t(comms_.size() - 1);
}

void ArchiveWriter::add_clock_offset(uint64_t location, uint64_t time, int64_t offset, double stddev) {
  require_open("add_clock_offset");
  thread_at(location);
  std::vector<ClockOffset>& offsets = clock_offsets_[location];
  // OTF2's reader fails on two offsets at one time and interpolates as if
  // they were in time order.
  if (!offsets.empty() && time <= offsets.back().time) {
    throw std::invalid_argument("ArchiveWriter: clock offset at time " + std::to_string(time) + " of " +
                                location_text(location) + " is not after the previous one at " +
                                std::to_string(offsets.back().time));
  }
  offsets.push_back({time, offset, stddev});
}

// OTF2 3.0's otf2_evt_reader_apply_clock_correction, for the default clock
// range: offsets i, i+1 bound interval i, over which the offset is linear; a
// time goes to the first interval whose end is not before it, else the last.
// One offset makes no interval, and no correction.
uint64_t ArchiveWriter::corrected_time(const std::vector<ClockOffset>& offsets, uint64_t time) {
  if (offsets.size() < 2) return time;
  size_t i = 0;
  while (i + 2 < offsets.size() && time > offsets[i + 1].time) ++i;
  const ClockOffset& begin = offsets[i];
  const ClockOffset& end = offsets[i + 1];
  const double slope = double(end.offset - begin.offset) / double(end.time - begin.time);
  const double diff = time >= begin.time ? double(time - begin.time) : -double(begin.time - time);
  return time + uint64_t(begin.offset + int64_t(std::rint(slope * diff)));
}

void ArchiveWriter::end_thread(uint64_t location, uint64_t timestamp) {
  require_open("end_thread");
  Thread& thread = thread_at(location);
  if (thread.ended) return;
  if (thread.remote) {
    thread.ended = true;
    return;
  }
  open_writer(thread, location);  // every location gets an event file, readers expect one
  if (options_.enter_leave && !thread.sampled.open().empty()) {
    thread_for_event(location, timestamp);  // the leaves are events: same time rules
    move_to_context(thread, location, timestamp, kUndefined);
  }
  close_thread_writer(thread);
}

void ArchiveWriter::close_thread_writer(Thread& thread) {
  thread.ended = true;
  OTF2_EvtWriter* writer = thread.writer;
  thread.writer = nullptr;
  thread.sampled = RegionStack();
  --open_threads_;
  check(OTF2_Archive_CloseEvtWriter(archive_->handle, writer), "OTF2_Archive_CloseEvtWriter");
}

void ArchiveWriter::close(const ClockInfo& clock_in) {
  require_open("close");
  try {
    for (const Thread& thread : threads_) {
      if (!thread.ended) end_thread(thread.ref, thread.last_timestamp);
    }
    OTF2_Archive* a = archive_->handle;
    check(OTF2_Archive_CloseEvtFiles(a), "OTF2_Archive_CloseEvtFiles");
    if (options_.collective) gather_thread_totals();
    write_local_definitions();
    if (!options_.collective || options_.collective->is_master()) {
      for (const Thread& thread : threads_) {
        if (thread.clamped == 0) continue;
        set_thread_property(thread.ref, property::kOutOfOrderEvents, thread.clamped);
        set_thread_property(thread.ref, property::kOutOfOrderNs, thread.most_clamped_ns);
      }
      write_global_definitions(clock_in);
      for (const auto& [name, value] : archive_properties_) {
        check(OTF2_Archive_SetProperty(a, name.c_str(), value.c_str(), true), "OTF2_Archive_SetProperty " + name);
      }
    }
  } catch (...) {
    OTF2_Archive_Close(archive_->handle);
    archive_->handle = nullptr;
    throw;
  }
  OTF2_ErrorCode status = OTF2_Archive_Close(archive_->handle);
  archive_->handle = nullptr;
  check(status, "OTF2_Archive_Close " + anchor_path_);
}

void ArchiveWriter::abandon() {
  if (!archive_ || !archive_->handle) return;
  for (Thread& thread : threads_) {
    if (thread.writer) OTF2_Archive_CloseEvtWriter(archive_->handle, thread.writer);
    thread.writer = nullptr;
    thread.ended = true;
  }
  OTF2_Archive_CloseEvtFiles(archive_->handle);
  OTF2_Archive_Close(archive_->handle);
  archive_->handle = nullptr;
}

// Each location's event count and time range as its writer saw them,
// and the time range of all events, at the master: what the global
// definitions say.
void ArchiveWriter::gather_thread_totals() {
  struct Totals {
    uint64_t ref, events, first, last, clamped, most_clamped_ns;
  };
  std::vector<Totals> mine{{UINT64_MAX, 0, first_timestamp_, last_timestamp_, 0, 0}};  // all of this writer's first
  for (const Thread& t : threads_)
    if (!t.remote) mine.push_back({t.ref, t.events, t.first_timestamp, t.last_timestamp, t.clamped, t.most_clamped_ns});
  const std::vector<std::string> parts = options_.collective->gather(
      std::string(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(Totals)));
  for (const std::string& part : parts) {  // the master's only
    if (part.empty() || part.size() % sizeof(Totals) != 0)
      throw std::runtime_error("ArchiveWriter: a writer's event totals did not arrive whole");
    std::vector<Totals> theirs(part.size() / sizeof(Totals));
    std::memcpy(theirs.data(), part.data(), part.size());
    first_timestamp_ = std::min(first_timestamp_, theirs[0].first);
    last_timestamp_ = std::max(last_timestamp_, theirs[0].last);
    for (size_t i = 1; i < theirs.size(); ++i) {
      Thread& t = thread_at(theirs[i].ref);
      t.events = theirs[i].events;
      t.first_timestamp = theirs[i].first;
      t.last_timestamp = theirs[i].last;
      t.clamped = theirs[i].clamped;
      t.most_clamped_ns = theirs[i].most_clamped_ns;
    }
  }
}

// Readers (otf2-print, ViTE) open <location>.def for every location: it
// holds the location's clock offsets, if any (no mappings: refs are global).
void ArchiveWriter::write_local_definitions() {
  OTF2_Archive* a = archive_->handle;
  check(OTF2_Archive_OpenDefFiles(a), "OTF2_Archive_OpenDefFiles");
  for (const Thread& thread : threads_) {
    if (thread.remote) continue;
    const uint64_t location = thread.ref;
    OTF2_DefWriter* writer = OTF2_Archive_GetDefWriter(a, location);
    if (writer == nullptr) {
      throw std::runtime_error("ArchiveWriter: cannot create the local definition writer of " +
                               location_text(location) + ": " + detail::take_last_otf2_message());
    }
    if (auto it = clock_offsets_.find(location); it != clock_offsets_.end()) {
      for (const ClockOffset& c : it->second)
        check(OTF2_DefWriter_WriteClockOffset(writer, c.time, c.offset, c.stddev), "OTF2_DefWriter_WriteClockOffset");
    }
    check(OTF2_Archive_CloseDefWriter(a, writer), "OTF2_Archive_CloseDefWriter");
  }
  check(OTF2_Archive_CloseDefFiles(a), "OTF2_Archive_CloseDefFiles");
}

void ArchiveWriter::write_global_definitions(const ClockInfo& clock_in) {
  // Groups have names; ours are unnamed (defined before the string table is written).
  const uint32_t empty_name = groups_.empty() ? kUndefined : define_string("");
  // The default range covers the times readers will see: after clock offsets.
  uint64_t first = first_timestamp_, last = last_timestamp_;
  if (!clock_offsets_.empty()) {
    first = UINT64_MAX, last = 0;
    for (uint64_t location = 0; location < threads_.size(); ++location) {
      const Thread& t = threads_[location];
      if (t.first_timestamp == UINT64_MAX) continue;
      auto it = clock_offsets_.find(location);
      const uint64_t a = it == clock_offsets_.end() ? t.first_timestamp : corrected_time(it->second, t.first_timestamp);
      const uint64_t b = it == clock_offsets_.end() ? t.last_timestamp : corrected_time(it->second, t.last_timestamp);
      first = std::min({first, a, b});
      last = std::max({last, a, b});
    }
  }
  ClockInfo clock = clock_in;
  const bool have_events = first <= last;
  if (clock.global_offset == 0 && have_events) clock.global_offset = first;
  if (clock.trace_length == 0 && have_events && last > clock.global_offset) {
    clock.trace_length = last - clock.global_offset;
  }

  OTF2_GlobalDefWriter* w = OTF2_Archive_GetGlobalDefWriter(archive_->handle);
  if (w == nullptr) {
    throw std::runtime_error("ArchiveWriter: cannot create the global definition writer: " +
                             detail::take_last_otf2_message());
  }
  const std::string what = "writing global definitions of " + anchor_path_;

  check(OTF2_GlobalDefWriter_WriteClockProperties(
            w, clock.resolution, clock.global_offset, clock.trace_length,
            clock.realtime_ns_at_offset ? clock.realtime_ns_at_offset : OTF2_UNDEFINED_TIMESTAMP),
        what);
  for (uint32_t ref = 0; ref < strings_.size(); ++ref) {
    check(OTF2_GlobalDefWriter_WriteString(w, ref, strings_[ref].c_str()), what);
  }
  for (uint32_t ref = 0; ref < system_tree_nodes_.size(); ++ref) {
    const SystemTreeNode& n = system_tree_nodes_[ref];
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(w, ref, n.name, n.class_name, n.parent), what);
  }
  for (uint32_t ref = 0; ref < processes_.size(); ++ref) {
    const Process& p = processes_[ref];
    const bool device = p.creator != kUndefined;
    check(OTF2_GlobalDefWriter_WriteLocationGroup(
              w, ref, p.name, device ? OTF2_LOCATION_GROUP_TYPE_ACCELERATOR : OTF2_LOCATION_GROUP_TYPE_PROCESS,
              p.system_tree_node, device ? p.creator : OTF2_UNDEFINED_LOCATION_GROUP),
          what);
  }
  for (uint64_t ref = 0; ref < threads_.size(); ++ref) {
    const Thread& t = threads_[ref];
    check(OTF2_GlobalDefWriter_WriteLocation(
              w, ref, t.name, t.stream ? OTF2_LOCATION_TYPE_ACCELERATOR_STREAM : OTF2_LOCATION_TYPE_CPU_THREAD,
              t.events, t.process),
          what);
  }
  for (uint32_t ref = 0; ref < regions_.size(); ++ref) {
    const Region& r = regions_[ref];
    check(OTF2_GlobalDefWriter_WriteRegion(
              w, ref, r.name, r.name, r.description,
              OTF2_REGION_ROLE_FUNCTION, to_otf2_paradigm(r.paradigm), OTF2_REGION_FLAG_NONE, r.file, r.begin_line,
              r.begin_line),
          what);
  }
  for (uint32_t ref = 0; ref < source_locations_.size(); ++ref) {
    const SourceLocation& s = source_locations_[ref];
    check(OTF2_GlobalDefWriter_WriteSourceCodeLocation(w, ref, s.file, s.line), what);
  }
  for (uint32_t ref = 0; ref < contexts_.size(); ++ref) {
    const CallingContext& c = contexts_[ref];
    check(OTF2_GlobalDefWriter_WriteCallingContext(w, ref, c.region, c.source_location, c.parent), what);
  }
  for (uint32_t ref = 0; ref < parameters_.size(); ++ref)
    check(OTF2_GlobalDefWriter_WriteParameter(w, ref, parameters_[ref], OTF2_PARAMETER_TYPE_UINT64), what);
  for (uint32_t ref = 0; ref < interrupt_generators_.size(); ++ref) {
    const InterruptGenerator& g = interrupt_generators_[ref];
    // Time based: period in ns = period * 10^-9 s. Count based: plain events.
    check(OTF2_GlobalDefWriter_WriteInterruptGenerator(
              w, ref, g.name,
              g.time_based ? OTF2_INTERRUPT_GENERATOR_MODE_TIME : OTF2_INTERRUPT_GENERATOR_MODE_COUNT,
              OTF2_BASE_DECIMAL, g.time_based ? -9 : 0, g.period),
          what);
  }
  // Viewer form (below): a communicator of all its paradigm's locations in
  // order is that paradigm's COMM_LOCATIONS group itself, not a copy of it.
  auto locations_of = [&](const Group& g) -> const Group& { return groups_[comm_locations_.at(g.paradigm)]; };
  auto is_locations_copy = [&](const Group& g) {
    if (!options_.enter_leave || g.type != GroupType::kCommMembers || g.members.size() != locations_of(g).members.size())
      return false;
    for (uint64_t i = 0; i < g.members.size(); ++i)
      if (g.members[i] != i) return false;
    return true;
  };
  // Refs as written: dense, without the copies (readers expect no gaps). A
  // paradigm's locations group comes before its other groups.
  std::vector<uint32_t> written_group(groups_.size(), 0);
  for (uint32_t ref = 0, next = 0; ref < groups_.size(); ++ref) {
    const Group& g = groups_[ref];
    written_group[ref] = is_locations_copy(g) ? written_group[comm_locations_.at(g.paradigm)] : next++;
  }
  for (uint32_t ref = 0; ref < groups_.size(); ++ref) {
    const Group& g = groups_[ref];
    if (is_locations_copy(g)) continue;
    OTF2_GroupType type = g.type == GroupType::kCommLocations ? OTF2_GROUP_TYPE_COMM_LOCATIONS
                          : g.type == GroupType::kCommMembers ? OTF2_GROUP_TYPE_COMM_GROUP
                                                              : OTF2_GROUP_TYPE_COMM_SELF;
    std::vector<uint64_t> members = g.members;
    // For viewers: ViTE 1.2 finds a message's peer only through a
    // COMM_LOCATIONS group (COMM_GROUP is "not yet implemented" there, and
    // then it draws no message). So a communicator's members are written
    // as their locations, in rank order. The main archive keeps OTF2's form.
    if (options_.enter_leave && g.type == GroupType::kCommMembers) {
      type = OTF2_GROUP_TYPE_COMM_LOCATIONS;
      for (uint64_t& m : members) m = locations_of(g).members.at(m);
    }
    check(OTF2_GlobalDefWriter_WriteGroup(w, written_group[ref], empty_name, type, to_otf2_paradigm(g.paradigm),
                                          OTF2_GROUP_FLAG_NONE, uint32_t(members.size()), members.data()),
          what);
  }
  for (uint32_t ref = 0; ref < comms_.size(); ++ref) {
    const Comm& c = comms_[ref];
    check(OTF2_GlobalDefWriter_WriteComm(w, ref, c.name, written_group[c.group], c.parent, OTF2_COMM_FLAG_NONE),
          what);
  }
  for (const auto& [key, value] : process_properties_) {
    OTF2_AttributeValue v;
    v.stringRef = value;
    check(OTF2_GlobalDefWriter_WriteLocationGroupProperty(w, key.first, key.second, OTF2_TYPE_STRING, v), what);
  }
  for (const auto& [key, value] : thread_properties_) {
    OTF2_AttributeValue v;
    v.uint64 = value;
    check(OTF2_GlobalDefWriter_WriteLocationProperty(w, key.first, key.second, OTF2_TYPE_UINT64, v), what);
  }
  check(OTF2_Archive_CloseGlobalDefWriter(archive_->handle, w), what);
}

ArchiveWriter::Stats ArchiveWriter::stats() const {
  Stats s;
  s.events = events_;
  s.clamped_timestamps = clamped_timestamps_;
  s.event_flushes = archive_->budget.event_flushes;
  s.chunk_bytes = archive_->budget.bytes_in_use;
  s.peak_chunk_bytes = archive_->budget.peak_bytes;
  s.open_threads = open_threads_;
  return s;
}

namespace {
struct CollectiveOpName {
  CollectiveOp op;
  OTF2_CollectiveOp otf2;
  const char* name;
};
constexpr CollectiveOpName kCollectiveOps[] = {
    {CollectiveOp::kBarrier, OTF2_COLLECTIVE_OP_BARRIER, "barrier"},
    {CollectiveOp::kBcast, OTF2_COLLECTIVE_OP_BCAST, "bcast"},
    {CollectiveOp::kGather, OTF2_COLLECTIVE_OP_GATHER, "gather"},
    {CollectiveOp::kGatherv, OTF2_COLLECTIVE_OP_GATHERV, "gatherv"},
    {CollectiveOp::kScatter, OTF2_COLLECTIVE_OP_SCATTER, "scatter"},
    {CollectiveOp::kScatterv, OTF2_COLLECTIVE_OP_SCATTERV, "scatterv"},
    {CollectiveOp::kAllgather, OTF2_COLLECTIVE_OP_ALLGATHER, "allgather"},
    {CollectiveOp::kAllgatherv, OTF2_COLLECTIVE_OP_ALLGATHERV, "allgatherv"},
    {CollectiveOp::kAlltoall, OTF2_COLLECTIVE_OP_ALLTOALL, "alltoall"},
    {CollectiveOp::kAlltoallv, OTF2_COLLECTIVE_OP_ALLTOALLV, "alltoallv"},
    {CollectiveOp::kAlltoallw, OTF2_COLLECTIVE_OP_ALLTOALLW, "alltoallw"},
    {CollectiveOp::kAllreduce, OTF2_COLLECTIVE_OP_ALLREDUCE, "allreduce"},
    {CollectiveOp::kReduce, OTF2_COLLECTIVE_OP_REDUCE, "reduce"},
    {CollectiveOp::kReduceScatter, OTF2_COLLECTIVE_OP_REDUCE_SCATTER, "reduce_scatter"},
    {CollectiveOp::kScan, OTF2_COLLECTIVE_OP_SCAN, "scan"},
    {CollectiveOp::kExscan, OTF2_COLLECTIVE_OP_EXSCAN, "exscan"},
    {CollectiveOp::kReduceScatterBlock, OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK, "reduce_scatter_block"},
    {CollectiveOp::kCreateHandle, OTF2_COLLECTIVE_OP_CREATE_HANDLE, "create_handle"},
    {CollectiveOp::kDestroyHandle, OTF2_COLLECTIVE_OP_DESTROY_HANDLE, "destroy_handle"},
    {CollectiveOp::kAllocate, OTF2_COLLECTIVE_OP_ALLOCATE, "allocate"},
    {CollectiveOp::kDeallocate, OTF2_COLLECTIVE_OP_DEALLOCATE, "deallocate"},
    {CollectiveOp::kCreateHandleAndAllocate, OTF2_COLLECTIVE_OP_CREATE_HANDLE_AND_ALLOCATE,
     "create_handle_and_allocate"},
    {CollectiveOp::kDestroyHandleAndDeallocate, OTF2_COLLECTIVE_OP_DESTROY_HANDLE_AND_DEALLOCATE,
     "destroy_handle_and_deallocate"},
};
// Writer and reader convert with static_cast: every value must be OTF2's,
// and the table dense and in order so that collective_op_name can index it.
constexpr bool collective_ops_match_otf2() {
  for (size_t i = 0; i < std::size(kCollectiveOps); ++i) {
    if (static_cast<size_t>(kCollectiveOps[i].op) != i) return false;
    if (static_cast<uint32_t>(kCollectiveOps[i].op) != static_cast<uint32_t>(kCollectiveOps[i].otf2)) return false;
  }
  return true;
}
static_assert(collective_ops_match_otf2(), "CollectiveOp must number its values as OTF2_CollectiveOp");
static_assert(std::size(kCollectiveOps) == size_t(CollectiveOp::kDestroyHandleAndDeallocate) + 1);
static_assert(kRootNone == OTF2_COLLECTIVE_ROOT_NONE);
static_assert(kUndefined == OTF2_UNDEFINED_COMM);
}  // namespace

const char* collective_op_name(CollectiveOp op) {
  const auto i = static_cast<size_t>(op);
  return i < std::size(kCollectiveOps) ? kCollectiveOps[i].name : "unknown";
}

}  // namespace hybridprof::otf2
