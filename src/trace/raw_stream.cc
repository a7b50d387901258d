#include "trace/raw_stream.h"

#include "trace/recent_calls.h"

#include "common/file_size_limit.h"
#include "common/own_fds.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <type_traits>
#include <unordered_map>

namespace hybridprof::raw {
namespace {

// The chunk checksum: catches torn and overwritten chunks, not tampering.
// Eight bytes a step (a byte-wise hash cost the drain ~1 ns per byte, at a
// rate of tens of MB/s of MPI events), in four lanes: one lane's serial
// chain of multiplies cost the drain ~0.5-1 ns more a repeated call
// (drain_bench).
uint32_t chunk_checksum(const unsigned char* p, size_t n) {
  uint64_t lane[4] = {0x84222325cbf29ce4ull ^ n, 0x9ae16a3b2f90404full, 0xc949d7c7509e6557ull, 0xff51afd7ed558ccdull};
  const auto mix = [](uint64_t& h, uint64_t word) {
    h = (h ^ word) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  };
  const auto word_at = [p](size_t i) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    return word;
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t k = 0; k < 4; ++k) mix(lane[k], word_at(i + 8 * k));
  for (size_t k = 0; i + 8 <= n; i += 8, ++k) mix(lane[k], word_at(i));
  if (i < n) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, n - i);
    mix(lane[3], word);
  }
  uint64_t h = lane[0];
  for (size_t k = 1; k < 4; ++k) mix(h, lane[k]);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

void put_u32(unsigned char* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint32_t get_u32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

bool write_all(int fd, const unsigned char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

constexpr size_t kChunkHeader = 16;

// Decodes one chunk's payload.
class Decoder {
 public:
  Decoder(const unsigned char* p, size_t n) : p_(p), end_(p + n) {}

  bool done() const { return p_ >= end_ && queued_next_ == queued_.size() && run_left_ == 0; }
  bool ok() const { return ok_; }

  // The next record; a Call comes out as the records it stands for.
  bool next(Record& out) {
    if (run_left_ != 0) {  // the rest of an event run, one at a time (a run may be millions long)
      --run_left_;
      if (run_counts_) count_on(run_next_.payload);
      out = run_next_;
      return true;
    }
    if (queued_next_ < queued_.size()) {
      out = std::move(queued_[queued_next_++]);
      return true;
    }
    queued_.clear();
    queued_next_ = 0;
    return decode(out);
  }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return fail();
      unsigned char b = *p_++;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    return fail();
  }
  int64_t signed_varint() {
    uint64_t z = varint();
    return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  uint32_t u32() { return static_cast<uint32_t>(varint()); }
  std::string string() {
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) {
      fail();
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  uint64_t timestamp(uint32_t location) {
    // A location index past any process's: a corrupt or hostile stream.
    if (location >= kMaxLocations) return fail();
    uint64_t& last = last_ts_[local(location)];
    last += static_cast<uint64_t>(signed_varint());
    return last;
  }
  // The chunk's own index of `location`, in the order locations appear in
  // it: the tables by location (last_ts_, recent_calls_) grow with what the
  // chunk holds, not with the numbers it names (one record of a hostile
  // stream naming location 4 million would size them for 4 million, a table
  // of shapes by 2 GB). Records of one thread come in runs: the last answer
  // is kept.
  uint32_t local(uint32_t location) {
    if (location == last_location_ && !last_ts_.empty()) return last_local_;
    const auto [it, added] = locals_.try_emplace(location, static_cast<uint32_t>(last_ts_.size()));
    if (added) {
      last_ts_.push_back(0);
      last_events_.emplace_back();
    }
    last_location_ = location;
    last_local_ = it->second;
    return last_local_;
  }

  bool decode(Record& out) {
    const auto tag = static_cast<Tag>(varint());
    switch (tag) {
      case Tag::kProcessBegin: {
        ProcessBegin r;
        r.pid = varint(); r.ppid = varint();
        r.monotonic_ns = varint(); r.realtime_ns = varint();
        r.launcher_rank = signed_varint();
        r.hostname = string(); r.executable = string();
        const uint64_t argc = varint();
        for (uint64_t i = 0; i < argc && ok_; ++i) r.args.push_back(string());
        r.event = string(); r.mechanism = string();
        r.period = varint(); r.frequency = varint() != 0;
        r.max_depth = varint(); r.signal = varint();
        r.python = string();
        r.kernel_time = string();
        r.periods = string();
        out = std::move(r);
        break;
      }
      case Tag::kModuleLoad: {
        ModuleLoad r;
        r.id = u32(); r.timestamp_ns = varint(); r.bias = varint();
        r.start = varint(); r.end = varint(); r.path = string();
        out = std::move(r);
        break;
      }
      case Tag::kModuleUnload: {
        ModuleUnload r;
        r.id = u32(); r.timestamp_ns = varint();
        out = r;
        break;
      }
      case Tag::kLocationBegin: {
        LocationBegin r;
        r.location = u32(); r.id = varint(); r.timestamp_ns = timestamp(r.location); r.name = string();
        const uint32_t kind = u32();
        if (kind > kLastLocationKind) fail();
        r.kind = static_cast<LocationKind>(kind);
        r.device = string();
        out = std::move(r);
        break;
      }
      case Tag::kLocationEnd: {
        LocationEnd r;
        r.location = u32(); r.timestamp_ns = timestamp(r.location);
        for (auto field : kThreadCounterFields) r.counters.*field = varint();
        r.name = string();
        out = std::move(r);
        break;
      }
      case Tag::kCctNode: {
        CctNode r;
        r.id = u32(); r.parent = u32(); r.module = u32(); r.offset = varint();
        out = r;
        break;
      }
      case Tag::kSample: {
        Sample r;
        r.location = u32(); r.timestamp_ns = timestamp(r.location); r.node = u32(); r.flags = u32(); r.weight = u32();
        if (r.weight == 0 || r.weight > kMaxSampleWeight) return fail() != 0;
        out = r;
        break;
      }
      case Tag::kRegionDef: {
        RegionDef r;
        r.id = u32(); r.name = string(); r.paradigm = u32(); r.code_module = u32(); r.code_offset = varint();
        r.implicit_name = string();
        out = std::move(r);
        break;
      }
      case Tag::kEnter:
      case Tag::kLeave: {
        RegionEvent r;
        r.location = u32(); r.timestamp_ns = timestamp(r.location); r.region = u32(); r.node = u32();
        if (tag == Tag::kEnter) out = Enter{r}; else out = Leave{r};
        break;
      }
      case Tag::kProcessEnd: {
        ProcessEnd r;
        r.timestamp_ns = varint(); r.reason = static_cast<EndReason>(varint());
        r.status = signed_varint(); r.samples_without_thread = varint();
        out = r;
        break;
      }
      case Tag::kNotice:
        out = Notice{string()};
        break;
      case Tag::kMark: {
        Mark r;
        r.timestamp_ns = varint();
        const uint64_t kind = varint();
        if (kind > kLastMarkKind) return fail() != 0;
        r.kind = MarkKind(kind);
        r.location = u32();
        r.text = string();
        out = std::move(r);
        break;
      }
      case Tag::kEvent: {
        Event r;
        r.location = u32(); r.timestamp_ns = timestamp(r.location);
        r.kind = u32();
        payload(r.payload);
        if (!ok_) return false;
        last_events_[local(r.location)].remember(r.kind, r.payload);
        out = r;
        break;
      }
      case Tag::kEventRepeat:
      case Tag::kEventCounted: {
        Event r;
        r.location = u32(); r.timestamp_ns = timestamp(r.location);
        if (!ok_) return false;
        LastEvent& last = last_events_[local(r.location)];
        if (last.kind == LastEvent::kNoKind) return fail() != 0;  // no event to repeat in this chunk
        r.kind = last.kind;
        r.payload = last.repeat(tag == Tag::kEventRepeat ? EventRepeat::kSame : EventRepeat::kCounted);
        out = r;
        break;
      }
      case Tag::kEventRun: {
        Event r;
        r.location = u32(); r.timestamp_ns = timestamp(r.location);
        r.kind = u32();
        payload(r.payload);
        const uint64_t how = varint(), count = varint();
        if (!ok_ || how > 1 || count == 0 || count > kMaxEventRun) return fail() != 0;
        run_next_ = r;
        run_counts_ = how == 1;
        run_left_ = count - 1;
        EventPayload last = r.payload;
        if (run_counts_) count_on(last, int64_t(count - 1));
        last_events_[local(r.location)].remember(r.kind, last);
        out = r;
        break;
      }
      case Tag::kEventSetDef: {
        EventSetDef r;
        r.base = u32(); r.kinds = u32(); r.name = string();
        out = std::move(r);
        break;
      }
      case Tag::kCall: {
        Call c;
        c.location = u32(); c.enter_ns = timestamp(c.location);
        c.leave_ns = c.enter_ns + varint();
        c.region = u32(); c.node = u32();
        const uint64_t events = varint();
        if (events > Call::kMaxEvents) return fail() != 0;
        c.event_count = static_cast<uint32_t>(events);
        for (uint32_t i = 0; i < c.event_count; ++i) {
          Event& e = c.events[i];
          e.location = c.location;
          const uint64_t kind_and_bits = varint();
          e.timestamp_ns = (kind_and_bits & 1) ? c.leave_ns : c.enter_ns;
          c.counting |= uint32_t((kind_and_bits >> 1) & 1) << i;
          c.outside |= uint32_t((kind_and_bits >> 2) & 1) << i;
          e.kind = static_cast<uint32_t>(kind_and_bits >> 3);
          payload(e.payload);
        }
        if (!ok_) return false;
        recent_calls_.remember(local(c.location), CallShape::of(c));
        expand(c, out);
        break;
      }
      case Tag::kCallRepeat: {
        const uint32_t thread = u32();
        const uint64_t slot = varint();
        const uint64_t enter_ns = timestamp(thread);
        const uint64_t leave_ns = enter_ns + varint();
        if (!ok_) return false;
        const CallShape* shape = recent_calls_.repeat_at(local(thread), slot);
        if (shape == nullptr) return fail() != 0;
        expand(shape->at(thread, enter_ns, leave_ns), out);
        break;
      }
      case Tag::kDefinition: {
        Definition r;
        r.set = string(); r.id = u32(); r.name = string();
        const uint64_t n = varint();
        if (n > static_cast<uint64_t>(end_ - p_)) return fail() != 0;  // one byte per value at least
        r.values.reserve(n);
        for (uint64_t i = 0; i < n && ok_; ++i) r.values.push_back(varint());
        out = std::move(r);
        break;
      }
      case Tag::kJobRank: {
        JobRank r;
        r.rank = u32(); r.size = u32();
        if (r.rank >= r.size) return fail() != 0;
        out = r;
        break;
      }
      case Tag::kClockOffset: {
        ClockOffset r;
        r.timestamp_ns = varint(); r.offset_ns = signed_varint(); r.stddev_ns = varint();
        out = r;
        break;
      }
      case Tag::kPythonCode: {
        PythonCode r;
        r.id = u32(); r.qualname = string(); r.filename = string(); r.firstlineno = u32();
        r.line_format = u32(); r.linetable = string();
        out = std::move(r);
        break;
      }
      default:
        return fail() != 0;
    }
    return ok_;
  }

 private:
  uint64_t fail() {
    ok_ = false;
    p_ = end_;
    run_left_ = 0;
    queued_.clear();
    queued_next_ = 0;
    return 0;
  }
  // A Call comes out as its Enter, then (queued) its events and Leave;
  // events outside it before the Enter or after the Leave.
  void expand(const Call& c, Record& out) {
    last_ts_[local(c.location)] = c.leave_ns;  // the thread's next delta counts from the leave
    const auto outside = [&](uint32_t i, bool at_leave) {
      return ((c.outside >> i) & 1u) != 0 && (c.events[i].timestamp_ns != c.enter_ns) == at_leave;
    };
    for (uint32_t i = 0; i < c.event_count; ++i)
      if (outside(i, false)) queued_.push_back(c.events[i]);
    queued_.push_back(Enter{{c.location, c.enter_ns, c.region, c.node}});
    for (uint32_t i = 0; i < c.event_count; ++i)
      if (!outside(i, false) && !outside(i, true)) queued_.push_back(c.events[i]);
    queued_.push_back(Leave{{c.location, c.leave_ns, c.region, c.node}});
    for (uint32_t i = 0; i < c.event_count; ++i)
      if (outside(i, true)) queued_.push_back(c.events[i]);
    out = std::move(queued_[queued_next_]);
    ++queued_next_;
  }
  void payload(EventPayload& p) {
    for (uint32_t& w : p.word) w = u32();
    for (uint64_t& w : p.wide) w = varint();
  }
  const unsigned char* p_;
  const unsigned char* end_;
  std::vector<uint64_t> last_ts_;  // by local(location): deltas start over in every chunk
  std::vector<LastEvent> last_events_;  // by local(location): what an EventRepeat repeats
  std::unordered_map<uint32_t, uint32_t> locals_;  // location -> local index
  uint32_t last_location_ = 0, last_local_ = 0;
  bool ok_ = true;
  std::vector<Record> queued_;  // the rest of a Call's records
  size_t queued_next_ = 0;
  Event run_next_;  // an event run's last read (Tag::kEventRun): the next repeats it
  uint64_t run_left_ = 0;
  bool run_counts_ = false;
  RecentCalls recent_calls_;  // of this chunk, by local(location)
};

}  // namespace

bool StreamWriter::open(const std::string& path) {
  fd_ = own_fds::adopt(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), &fd_);
  if (fd_ < 0) return false;
  if (!write_all(fd_, reinterpret_cast<const unsigned char*>(kFileMagic), sizeof kFileMagic)) {
    int saved = errno;
    close();
    errno = saved;
    return false;
  }
  bytes_written_ = sizeof kFileMagic;
  stop_ = Stop::kNone;
  stop_errno_ = 0;
  // The reserve: written, not fallocate()d (not every file system has it),
  // and a file of its own, which no truncation of the stream gives back
  // early. None where it would pass a file size limit or finds no room.
  const std::string reserve = path + kReserveSuffix;
  if (!passes_file_size_limit(kClosingReserve)) {
    const int fd = ::open(reserve.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const std::vector<unsigned char> zeros(kClosingReserve, 0);
      const bool kept = write_all(fd, zeros.data(), zeros.size());
      ::close(fd);
      if (kept) reserve_path_ = reserve;
      else ::unlink(reserve.c_str());
    }
  }
  return true;
}

void StreamWriter::release_reserve() {
  if (reserve_path_.empty()) return;
  ::unlink(reserve_path_.c_str());
  reserve_path_.clear();
}

StreamWriter::~StreamWriter() { close(); }

void StreamWriter::close() {
  if (fd_ < 0) return;
  flush();
  if (own_fds::release(fd_)) ::close(fd_);
  fd_ = -1;
  release_reserve();
}

void StreamWriter::abandon() {
  used_ = 0;
  reserve_path_.clear();  // the parent's, as the stream is
  if (fd_ >= 0 && own_fds::release(fd_)) ::close(fd_);
  fd_ = -1;
}

unsigned char* StreamWriter::room_slow(size_t bytes) {
  if (used_ == 0) used_ = kChunkHeader;
  if (used_ + bytes > chunk_.size()) chunk_.resize(std::max(chunk_.size() * 2, used_ + bytes + 4096));
  return chunk_.data() + used_;
}

void StreamWriter::put_signed(int64_t v) {
  put_varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void StreamWriter::put_string(const std::string& s) {
  put_varint(s.size());
  std::memcpy(room(s.size()), s.data(), s.size());
  used_ += s.size();
}

template <typename T>
void StreamWriter::put(const T& r) {
  if (stop_ != Stop::kNone) return;
  auto tag = [&](Tag t) { put_varint(static_cast<uint32_t>(t)); };
    if constexpr (std::is_same_v<T, ProcessBegin>) {
      tag(Tag::kProcessBegin);
      put_varint(r.pid); put_varint(r.ppid);
      put_varint(r.monotonic_ns); put_varint(r.realtime_ns);
      put_signed(r.launcher_rank);
      put_string(r.hostname); put_string(r.executable);
      put_varint(r.args.size());
      for (const auto& a : r.args) put_string(a);
      put_string(r.event); put_string(r.mechanism);
      put_varint(r.period); put_varint(r.frequency);
      put_varint(r.max_depth); put_varint(r.signal);
      put_string(r.python);
      put_string(r.kernel_time);
      put_string(r.periods);
    } else if constexpr (std::is_same_v<T, ModuleLoad>) {
      tag(Tag::kModuleLoad);
      put_varint(r.id); put_varint(r.timestamp_ns); put_varint(r.bias);
      put_varint(r.start); put_varint(r.end); put_string(r.path);
    } else if constexpr (std::is_same_v<T, ModuleUnload>) {
      tag(Tag::kModuleUnload);
      put_varint(r.id); put_varint(r.timestamp_ns);
    } else if constexpr (std::is_same_v<T, LocationBegin>) {
      tag(Tag::kLocationBegin);
      put_varint(r.location); put_varint(r.id); put_varint(delta(r.location, r.timestamp_ns));
      put_string(r.name); put_varint(static_cast<uint32_t>(r.kind)); put_string(r.device);
    } else if constexpr (std::is_same_v<T, LocationEnd>) {
      tag(Tag::kLocationEnd);
      put_varint(r.location); put_varint(delta(r.location, r.timestamp_ns));
      for (auto field : kThreadCounterFields) put_varint(r.counters.*field);
      put_string(r.name);
    } else if constexpr (std::is_same_v<T, CctNode>) {
      tag(Tag::kCctNode);
      put_varint(r.id); put_varint(r.parent); put_varint(r.module); put_varint(r.offset);
    } else if constexpr (std::is_same_v<T, Sample>) {
      tag(Tag::kSample);
      put_varint(r.location); put_varint(delta(r.location, r.timestamp_ns));
      put_varint(r.node); put_varint(r.flags); put_varint(r.weight);
    } else if constexpr (std::is_same_v<T, RegionDef>) {
      tag(Tag::kRegionDef);
      put_varint(r.id); put_string(r.name); put_varint(r.paradigm); put_varint(r.code_module); put_varint(r.code_offset);
      put_string(r.implicit_name);
    } else if constexpr (std::is_same_v<T, Enter> || std::is_same_v<T, Leave>) {
      tag(std::is_same_v<T, Enter> ? Tag::kEnter : Tag::kLeave);
      put_varint(r.location); put_varint(delta(r.location, r.timestamp_ns));
      put_varint(r.region); put_varint(r.node);
    } else if constexpr (std::is_same_v<T, ProcessEnd>) {
      tag(Tag::kProcessEnd);
      put_varint(r.timestamp_ns); put_varint(static_cast<uint32_t>(r.reason));
      put_signed(r.status); put_varint(r.samples_without_thread);
    } else if constexpr (std::is_same_v<T, Notice>) {
      tag(Tag::kNotice);
      put_string(r.text);
    } else if constexpr (std::is_same_v<T, Mark>) {
      tag(Tag::kMark);
      put_varint(r.timestamp_ns); put_varint(uint32_t(r.kind)); put_varint(r.location);
      put_string(r.text);
    } else if constexpr (std::is_same_v<T, Event>) {
      if (r.location >= last_events_.size()) last_events_.resize(r.location + 1);
      LastEvent& last = last_events_[r.location];
      const EventRepeat how = last.repeat_of(r.kind, r.payload);
      tag(how == EventRepeat::kNone ? Tag::kEvent : how == EventRepeat::kSame ? Tag::kEventRepeat : Tag::kEventCounted);
      put_varint(r.location); put_varint(delta(r.location, r.timestamp_ns));
      if (how == EventRepeat::kNone) {
        put_varint(r.kind);
        put_payload(r.payload);
        last.remember(r.kind, r.payload);
      } else {
        last.repeat(how);
      }
    } else if constexpr (std::is_same_v<T, EventSetDef>) {
      tag(Tag::kEventSetDef);
      put_varint(r.base); put_varint(r.kinds); put_string(r.name);
    } else if constexpr (std::is_same_v<T, Definition>) {
      tag(Tag::kDefinition);
      put_string(r.set); put_varint(r.id); put_string(r.name);
      put_varint(r.values.size());
      for (uint64_t v : r.values) put_varint(v);
    } else if constexpr (std::is_same_v<T, JobRank>) {
      tag(Tag::kJobRank);
      put_varint(r.rank); put_varint(r.size);
    } else if constexpr (std::is_same_v<T, ClockOffset>) {
      tag(Tag::kClockOffset);
      put_varint(r.timestamp_ns); put_signed(r.offset_ns); put_varint(r.stddev_ns);
    } else if constexpr (std::is_same_v<T, PythonCode>) {
      tag(Tag::kPythonCode);
      put_varint(r.id); put_string(r.qualname); put_string(r.filename); put_varint(r.firstlineno);
      put_varint(r.line_format); put_string(r.linetable);
    } else {
      static_assert(sizeof(T) == 0, "every raw record needs an encoding");
    }
  if (used_ >= kChunkFlushBytes) flush();
}

void StreamWriter::append(const Record& record) {
  std::visit([&](const auto& r) { put(r); }, record);
}
void StreamWriter::append(const Sample& r) { put(r); }
void StreamWriter::append(const Enter& r) { put(r); }
void StreamWriter::append(const Leave& r) { put(r); }
void StreamWriter::append(const Event& r) { put(r); }
void StreamWriter::append(const CctNode& r) { put(r); }
void StreamWriter::append(const Call& r) { append_call(r.location, r.enter_ns, r.leave_ns, CallShape::of(r)); }

void StreamWriter::append_event_run(uint32_t location, uint64_t timestamp_ns, uint32_t kind, const EventPayload& first,
                                    EventRepeat how, uint64_t count) {
  if (stop_ != Stop::kNone || count == 0) return;
  put_varint(static_cast<uint32_t>(Tag::kEventRun));
  put_varint(location); put_varint(delta(location, timestamp_ns));
  put_varint(kind);
  put_payload(first);
  put_varint(how == EventRepeat::kCounted ? 1 : 0);
  put_varint(count);
  // What a following Tag::kEventRepeat repeats: the run's last.
  if (location >= last_events_.size()) last_events_.resize(location + 1);
  last_events_[location].remember(kind, first);
  if (how == EventRepeat::kCounted) count_on(last_events_[location].payload, int64_t(count - 1));
  if (used_ >= kChunkFlushBytes) flush();
}

RecentCalls::Handle StreamWriter::append_call(uint32_t thread, uint64_t enter_ns, uint64_t leave_ns,
                                              const CallShape& shape) {
  if (stop_ != Stop::kNone) return {};
  uint32_t slot = recent_calls_.find_repeat(thread, shape);
  if (slot != RecentCalls::kNone) {
    put_repeat(thread, slot, enter_ns, leave_ns);
  } else {
    slot = recent_calls_.remember(thread, shape);
    // Events carry one bit for their time instead of a timestamp: the
    // enter's (0) or the leave's (1); one saying whether they count; one
    // whether they are outside the call.
    put_varint(static_cast<uint32_t>(Tag::kCall));
    put_varint(thread); put_varint(delta(thread, enter_ns));
    put_varint(leave_ns - enter_ns);
    put_varint(shape.region); put_varint(shape.node); put_varint(shape.event_count);
    for (uint32_t i = 0; i < shape.event_count; ++i) {
      const CallShape::Event& e = shape.events[i];
      put_varint(uint64_t{e.kind} << 3 | uint64_t{e.outside != 0} << 2 | uint64_t{e.counts != 0} << 1 |
                 (e.at_leave != 0));
      put_payload(e.payload);
    }
    last_ts_[thread] = leave_ns;  // the thread's next delta counts from the leave
  }
  const RecentCalls::Handle kept = recent_calls_.handle(thread, slot);
  if (used_ >= kChunkFlushBytes) flush();
  return kept;
}

bool StreamWriter::flush() {
  if (used_ <= kChunkHeader || fd_ < 0) {
    discard_pending();
    return fd_ >= 0 && stop_ == Stop::kNone;
  }
  if (stop_ != Stop::kNone) {
    discard_pending();
    return false;
  }
  if (limit_ != 0 && !closing_ && bytes_written_ + used_ > limit_) {
    stop_ = Stop::kSizeLimit;
    discard_pending();
    return false;
  }
  // The closing records (why recording stopped, the process end) keep
  // their room below a file size limit as below --max-size.
  if (passes_file_size_limit(bytes_written_ + used_ + (closing_ ? 0 : kClosingReserve))) {
    stop_errno_ = errno = EFBIG;  // not written at all: the write would raise SIGXFSZ at the program
    stop_ = Stop::kWriteError;
    discard_pending();
    return false;
  }
  const size_t payload = used_ - kChunkHeader;
  put_u32(chunk_.data(), kChunkMagic);
  put_u32(chunk_.data() + 4, static_cast<uint32_t>(payload));
  put_u32(chunk_.data() + 8, chunk_checksum(chunk_.data() + kChunkHeader, payload));
  put_u32(chunk_.data() + 12, 0);
  const bool ok = write_all(fd_, chunk_.data(), used_);
  if (ok) {
    bytes_written_ += used_;
  } else {
    // Cut a partly written chunk off again: the file keeps whole chunks
    // (a reader stops at a torn one), and more space, if any turns up, is
    // written from their end.
    stop_errno_ = errno;
    stop_ = Stop::kWriteError;
    [[maybe_unused]] const int cut = ftruncate(fd_, static_cast<off_t>(bytes_written_));
    lseek(fd_, static_cast<off_t>(bytes_written_), SEEK_SET);
  }
  discard_pending();
  return ok;
}

void StreamWriter::discard_pending() {
  used_ = 0;
  // Deltas and recent calls restart with every chunk so each chunk decodes
  // on its own.
  last_ts_.assign(last_ts_.size(), 0);
  last_events_.assign(last_events_.size(), LastEvent{});
  recent_calls_.forget_all();
}

bool StreamWriter::write_closing(const Record& record) {
  if (fd_ < 0) return false;
  flush();  // what is pending, as any chunk (nothing is, once stopped)
  const Stop stop = stop_;
  const int stop_errno = stop_errno_;
  // A write failed (a full disk, most likely): its room is the reserve's.
  if (stop == Stop::kWriteError) release_reserve();
  stop_ = Stop::kNone;
  closing_ = true;
  append(record);
  const bool ok = flush();
  closing_ = false;
  if (stop != Stop::kNone) {  // the first reason stays
    stop_ = stop;
    stop_errno_ = stop_errno;
  }
  return ok;
}

namespace {

// The chunks of a stream of `size` bytes read from `in`; `name` (the path)
// starts the error messages.
bool read_chunks(std::istream& in, uint64_t size, const std::string& name,
                 const std::function<void(const Record&)>& on_record, ReadSummary* summary, std::string* error) {
  char magic[sizeof kFileMagic] = {};
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kFileMagic, sizeof kFileMagic - 1) != 0) {
    *error = name + ": not a hybridprof raw stream";
    return false;
  }
  if (magic[sizeof magic - 1] != kFileMagic[sizeof kFileMagic - 1]) {
    *error = name + ": raw stream format " + std::string(1, magic[sizeof magic - 1]) +
             " was written by another hybridprof version (this one reads format " + kFileMagic[sizeof kFileMagic - 1] + ")";
    return false;
  }
  ReadSummary local;
  ReadSummary& s = summary ? *summary : local;
  uint64_t pos = sizeof kFileMagic;
  std::vector<unsigned char> chunk;
  while (pos < size) {
    const uint64_t left = size - pos;
    unsigned char header[kChunkHeader];
    if (left < kChunkHeader || !in.read(reinterpret_cast<char*>(header), kChunkHeader) ||
        get_u32(header) != kChunkMagic) {
      s.problem = "bad chunk header";
      s.bytes_ignored = left;
      break;
    }
    const uint32_t payload = get_u32(header + 4);
    if (payload > left - kChunkHeader) {
      s.problem = "torn last chunk (process killed while writing?)";
      s.bytes_ignored = left;
      break;
    }
    chunk.resize(payload);
    in.read(reinterpret_cast<char*>(chunk.data()), payload);
    const unsigned char* p = chunk.data();
    if (!in || chunk_checksum(p, payload) != get_u32(header + 8)) {
      s.problem = "chunk checksum mismatch";
      s.bytes_ignored = left;
      break;
    }
    if (!decode_chunk(p, payload, on_record, &s.records)) {
      s.problem = "undecodable record";
      s.bytes_ignored = left;
      break;
    }
    ++s.chunks;
    pos += kChunkHeader + payload;
  }
  return true;
}

// Bytes in memory as a stream, without a copy. Only ever read: the get
// area is all it has.
class MemoryBuffer : public std::streambuf {
 public:
  MemoryBuffer(const unsigned char* data, size_t size) {
    char* begin = reinterpret_cast<char*>(const_cast<unsigned char*>(data));
    setg(begin, begin, begin + size);
  }
};

}  // namespace

bool decode_chunk(const unsigned char* payload, size_t size, const std::function<void(const Record&)>& on_record,
                  uint64_t* records) {
  Decoder d(payload, size);
  Record r;
  while (!d.done()) {
    if (!d.next(r)) break;
    on_record(r);
    if (records) ++*records;
  }
  return d.ok();
}

bool read_stream(const std::string& path, const std::function<void(const Record&)>& on_record,
                 ReadSummary* summary, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  // Chunk by chunk: memory stays at one chunk however long the run was.
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  return read_chunks(in, file_size, path, on_record, summary, error);
}

bool read_stream(const unsigned char* data, size_t size, const std::string& name,
                 const std::function<void(const Record&)>& on_record, ReadSummary* summary, std::string* error) {
  MemoryBuffer buffer(data, size);
  std::istream in(&buffer);
  return read_chunks(in, size, name, on_record, summary, error);
}

}  // namespace hybridprof::raw
