// libpfm4 encodes every name but perf's generic ones ("cycles", "cpu-clock",
// ...), which the small table below encodes exactly as libpfm does (a unit
// test compares them): the default event then never pays pfm_initialize,
// which scans every PMU table it knows (about 3 ms at the start of every
// process profiled: each MPI rank, each Python worker). The table also lists
// the generic names with readable descriptions.
//
// This file is the only one that includes libpfm's <perfmon/perf_event.h>: it
// defines struct perf_event_attr itself and collides with <linux/perf_event.h>.
#include "sampling/event_encoding.h"

#include <perfmon/pfmlib_perf_event.h>
#include <pthread.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>

namespace hybridprof::sampling {
namespace {

struct GenericEvent {
  const char* name;
  uint32_t type;
  uint64_t config;
  const char* description;
  const char* perf_name;  // libpfm's name of it in its "perf" PMU
};

// What `perf list` calls the generic events, in the order users look for them.
constexpr GenericEvent kGenericEvents[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "CPU core cycles (hardware PMU)", "PERF_COUNT_HW_CPU_CYCLES"},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "Instructions retired (hardware PMU)", "PERF_COUNT_HW_INSTRUCTIONS"},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "CPU time of the thread, period in ns (software)", "PERF_COUNT_SW_CPU_CLOCK"},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "CPU time of the task, period in ns (software)", "PERF_COUNT_SW_TASK_CLOCK"},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "Mispredicted branches (hardware PMU)", "PERF_COUNT_HW_BRANCH_MISSES"},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "Branch instructions retired (hardware PMU)", "PERF_COUNT_HW_BRANCH_INSTRUCTIONS"},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "Last-level cache misses (hardware PMU)", "PERF_COUNT_HW_CACHE_MISSES"},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, "Last-level cache accesses (hardware PMU)", "PERF_COUNT_HW_CACHE_REFERENCES"},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, "Reference cycles, not scaled by frequency (hardware PMU)", "PERF_COUNT_HW_REF_CPU_CYCLES"},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "Page faults (software)", "PERF_COUNT_SW_PAGE_FAULTS"},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "Context switches (software)", "PERF_COUNT_SW_CONTEXT_SWITCHES"},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "Migrations to another CPU (software)", "PERF_COUNT_SW_CPU_MIGRATIONS"},
};

const GenericEvent* find_generic(const char* name) {
  for (const GenericEvent& e : kGenericEvents)
    if (strcasecmp(e.name, name) == 0) return &e;
  return nullptr;
}

// Our own status next to libpfm's PFM_ERR_* (all small negatives).
constexpr int kExcludesUserLevel = -1000;

bool is_software_clock(uint32_t type, uint64_t config) {
  return type == PERF_TYPE_SOFTWARE && (config == PERF_COUNT_SW_CPU_CLOCK || config == PERF_COUNT_SW_TASK_CLOCK);
}

// pfm_initialize(3): "must be called only once". pthread_once + POD globals:
// no static constructor, nothing to destroy at exit.
pthread_once_t g_pfm_once = PTHREAD_ONCE_INIT;
int g_pfm_status = PFM_ERR_NOINIT;
// libpfm4 does not document its encoding calls as thread-safe; encoding is
// rare (start-up, --list-events), so serializing costs nothing.
pthread_mutex_t g_pfm_mutex = PTHREAD_MUTEX_INITIALIZER;

void initialize_pfm() { g_pfm_status = pfm_initialize(); }

bool pfm_ready() {
  pthread_once(&g_pfm_once, initialize_pfm);
  return g_pfm_status == PFM_SUCCESS;
}

class PfmLock {
 public:
  PfmLock() { pthread_mutex_lock(&g_pfm_mutex); }
  ~PfmLock() { pthread_mutex_unlock(&g_pfm_mutex); }
  PfmLock(const PfmLock&) = delete;
  PfmLock& operator=(const PfmLock&) = delete;
};

// Caller holds PfmLock. PFM_PLM3 = user level (plus hv, which libpfm then
// excludes): the default privilege mask for names without :u/:k modifiers.
int pfm_encode_locked(const char* text, EventSpec* out) {
  perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  char* fstr = nullptr;
  pfm_perf_encode_arg_t arg;
  memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.fstr = &fstr;
  arg.size = sizeof arg;
  int status = pfm_get_os_event_encoding(text, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
  if (status == PFM_SUCCESS && attr.exclude_user) status = kExcludesUserLevel;  // see header: user level only
  if (status == PFM_SUCCESS && out != nullptr) {
    out->type = attr.type;
    out->config = attr.config;
    out->config1 = attr.config1;
    out->config2 = attr.config2;
    out->precise_ip = uint8_t(attr.precise_ip);
    out->software_clock = is_software_clock(attr.type, attr.config);
    out->canonical = fstr != nullptr ? fstr : "";
  }
  free(fstr);  // libpfm mallocs it
  return status;
}

// A bare name is tried as "perf::name" first so that generic names keep perf's
// meaning; only if the generic PMU has no such event does libpfm search the
// other PMUs (and "INST_RETIRED:ANY_P" lands on the core PMU).
int pfm_encode_name_locked(const std::string& name, EventSpec* out) {
  int status = PFM_ERR_NOTFOUND;
  if (name.find("::") == std::string::npos) status = pfm_encode_locked(("perf::" + name).c_str(), out);
  if (status == PFM_ERR_NOTFOUND) status = pfm_encode_locked(name.c_str(), out);
  return status;
}

std::string short_description(const char* text) {
  std::string s = text != nullptr ? text : "";
  size_t sentence = s.find(". ");
  if (sentence != std::string::npos) s.resize(sentence);
  std::string clean;  // one line, single spaces: the list is "name<TAB>description" per line
  for (char c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    if (c != ' ' || (!clean.empty() && clean.back() != ' ')) clean.push_back(c);
  }
  s = clean;
  constexpr size_t kMax = 80;
  if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
  return s;
}

std::string lowercase(const char* text) {
  std::string s = text;
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

// Caller holds PfmLock. perf's other generic names: the aliases libpfm keeps in
// its "perf" PMU ("L1-DCACHE-LOAD-MISSES" = PERF_COUNT_HW_CACHE_L1D:READ:MISS).
void list_generic_aliases_locked(std::vector<std::string>* out) {
  pfm_pmu_info_t pmu;
  memset(&pmu, 0, sizeof pmu);
  pmu.size = sizeof pmu;
  if (pfm_get_pmu_info(PFM_PMU_PERF_EVENT, &pmu) != PFM_SUCCESS || !pmu.is_present) return;
  for (int idx = pmu.first_event; idx != -1; idx = pfm_get_event_next(idx)) {
    pfm_event_info_t event;
    memset(&event, 0, sizeof event);
    event.size = sizeof event;
    if (pfm_get_event_info(idx, PFM_OS_NONE, &event) != PFM_SUCCESS) continue;
    if (event.equiv == nullptr || find_generic(event.name) != nullptr) continue;
    std::string name = lowercase(event.name);
    if (pfm_encode_name_locked(name, nullptr) != PFM_SUCCESS) continue;
    std::string description = short_description(event.desc);
    // libpfm describes the plain generic aliases by their perf constant only.
    description = description == event.equiv ? std::string("perf's ") + event.equiv : description + " (" + event.equiv + ")";
    out->push_back(name + "\t" + description);
  }
}

// Caller holds PfmLock.
void list_pmu_events_locked(pfm_pmu_t pmu_id, const char* pmu_name, std::vector<std::string>* out) {
  pfm_pmu_info_t pmu;
  memset(&pmu, 0, sizeof pmu);
  pmu.size = sizeof pmu;
  if (pfm_get_pmu_info(pmu_id, &pmu) != PFM_SUCCESS) return;
  for (int idx = pmu.first_event; idx != -1; idx = pfm_get_event_next(idx)) {
    pfm_event_info_t event;
    memset(&event, 0, sizeof event);
    event.size = sizeof event;
    if (pfm_get_event_info(idx, PFM_OS_NONE, &event) != PFM_SUCCESS) continue;
    std::string name = std::string(pmu_name) + "::" + event.name;
    // Events whose unit masks have no default do not encode bare; their
    // "EVENT:UMASK" entries below do.
    if (pfm_encode_locked(name.c_str(), nullptr) == PFM_SUCCESS)
      out->push_back(name + "\t" + short_description(event.desc));
    for (int a = 0; a < event.nattrs; ++a) {
      pfm_event_attr_info_t attr;
      memset(&attr, 0, sizeof attr);
      attr.size = sizeof attr;
      if (pfm_get_event_attr_info(idx, a, PFM_OS_NONE, &attr) != PFM_SUCCESS) continue;
      if (attr.type != PFM_ATTR_UMASK) continue;
      std::string with_umask = name + ":" + attr.name;
      if (pfm_encode_locked(with_umask.c_str(), nullptr) != PFM_SUCCESS) continue;
      out->push_back(with_umask + "\t" + short_description(attr.desc));
    }
  }
}

}  // namespace

bool encode_event(const std::string& name, EventSpec* out, std::string* error) {
  if (name.empty()) {
    if (error != nullptr) *error = "empty event name (see --list-events)";
    return false;
  }
  EventSpec spec;
  int status;
  if (const GenericEvent* generic = find_generic(name.c_str())) {
    spec.type = generic->type;
    spec.config = generic->config;
    spec.software_clock = is_software_clock(generic->type, generic->config);
    spec.canonical = std::string("perf::") + generic->perf_name;
    status = PFM_SUCCESS;
  } else if (pfm_ready()) {
    PfmLock lock;
    status = pfm_encode_name_locked(name, &spec);
  } else {
    status = PFM_ERR_NOTFOUND;
  }
  if (status != PFM_SUCCESS) {
    if (error != nullptr) {
      if (status == PFM_ERR_NOTFOUND)
        *error = "unknown event '" + name + "' (see --list-events)";
      else if (status == kExcludesUserLevel)
        *error = "event '" + name + "' excludes user level; hybridprof samples user-level code only";
      else
        *error = "invalid event '" + name + "': " + pfm_strerror(status) + " (see --list-events)";
      if (!pfm_ready()) *error += std::string("; libpfm4 unavailable: ") + pfm_strerror(g_pfm_status);
    }
    return false;
  }
  spec.name = name;
  if (out != nullptr) *out = std::move(spec);
  return true;
}

bool encode_event_with_libpfm(const std::string& name, EventSpec* out) {
  if (!pfm_ready()) return false;
  PfmLock lock;
  return pfm_encode_name_locked(name, out) == PFM_SUCCESS;
}

EventSpec cpu_clock_event() {
  EventSpec spec;
  spec.name = "cpu-clock";
  spec.type = PERF_TYPE_SOFTWARE;
  spec.config = PERF_COUNT_SW_CPU_CLOCK;
  spec.software_clock = true;
  spec.canonical = "perf::PERF_COUNT_SW_CPU_CLOCK";
  return spec;
}

std::vector<std::string> list_events() {
  std::vector<std::string> out;
  for (const GenericEvent& e : kGenericEvents) out.push_back(std::string(e.name) + "\t" + e.description);
  if (!pfm_ready()) return out;
  PfmLock lock;
  list_generic_aliases_locked(&out);
  for (int id = 0; id < PFM_PMU_MAX; ++id) {
    pfm_pmu_info_t pmu;
    memset(&pmu, 0, sizeof pmu);
    pmu.size = sizeof pmu;
    if (pfm_get_pmu_info(pfm_pmu_t(id), &pmu) != PFM_SUCCESS) continue;
    if (!pmu.is_present || pmu.type != PFM_PMU_TYPE_CORE) continue;
    list_pmu_events_locked(pfm_pmu_t(id), pmu.name, &out);
  }
  return out;
}

}  // namespace hybridprof::sampling
