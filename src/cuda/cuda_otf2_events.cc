#include "cuda/cuda_otf2_events.h"

#include <iterator>

#include "cuda/cuda_events.h"

namespace hybridprof::cuda {
namespace {

// One parameter of an event: its name and where its value is.
struct Field {
  const char* name;
  uint64_t (*value)(const EventPayload&);
};
#define HP_FIELD(name, expr) Field{name, [](const EventPayload& p) -> uint64_t { return expr; }}
constexpr Field kCorrelation = HP_FIELD(kCorrelationParameter, correlation(p));
const Field kLaunchFields[] = {kCorrelation};
const Field kKernelFields[] = {
    kCorrelation,
    HP_FIELD("CUDA grid x", kernel_shape(p).grid[0]),
    HP_FIELD("CUDA grid y", kernel_shape(p).grid[1]),
    HP_FIELD("CUDA grid z", kernel_shape(p).grid[2]),
    HP_FIELD("CUDA block x", kernel_shape(p).block[0]),
    HP_FIELD("CUDA block y", kernel_shape(p).block[1]),
    HP_FIELD("CUDA block z", kernel_shape(p).block[2]),
    HP_FIELD("CUDA registers per thread", kernel_shape(p).registers),
    HP_FIELD("CUDA shared memory per block", kernel_shape(p).shared_memory),
};
const Field kMemcpyFields[] = {
    kCorrelation,
    HP_FIELD("CUDA bytes", p.wide[0]),
    HP_FIELD("CUDA copy kind", p.word[0]),
    HP_FIELD("CUDA source memory kind", p.word[1]),
    HP_FIELD("CUDA destination memory kind", p.word[2]),
};
const Field kMemsetFields[] = {
    kCorrelation,
    HP_FIELD("CUDA bytes", p.wide[0]),
    HP_FIELD("CUDA memset value", p.word[0]),
    HP_FIELD("CUDA memory kind", p.word[1]),
};
#undef HP_FIELD

struct KindFields {
  const Field* fields;
  size_t count;
};
constexpr KindFields kFields[] = {
    {kLaunchFields, std::size(kLaunchFields)},
    {kKernelFields, std::size(kKernelFields)},
    {kMemcpyFields, std::size(kMemcpyFields)},
    {kMemsetFields, std::size(kMemsetFields)},
};
static_assert(std::size(kFields) == static_cast<size_t>(EventKind::kCount), "one list per kind");

class CudaEventWriter final : public otf2::EventSetWriter {
 public:
  std::string_view set_name() const override { return kEventSetName; }

  void define(otf2::ArchiveWriter& w) const override {
    for (const KindFields& k : kFields)
      for (size_t i = 0; i < k.count; ++i) w.define_parameter(k.fields[i].name);
  }

  bool writable(uint32_t kind, const EventPayload&, const Refs&) const override {
    return kind < static_cast<uint32_t>(EventKind::kCount);
  }

  void write(otf2::ArchiveWriter& w, uint64_t loc, uint64_t t, uint32_t kind, const EventPayload& payload,
             const Refs&) const override {
    const KindFields& k = kFields[kind];
    for (size_t i = 0; i < k.count; ++i)
      w.write_parameter(loc, t, w.define_parameter(k.fields[i].name), k.fields[i].value(payload));
  }
};

}  // namespace

const otf2::EventSetWriter& otf2_event_writer() {
  static const CudaEventWriter writer;
  return writer;
}

}  // namespace hybridprof::cuda
