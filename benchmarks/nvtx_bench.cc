// The time of an NVTX 3 push/pop pair and of a mark on the calling thread:
// `outer` timed repetitions of `inner` pairs each; prints the median
// repetition's time per pair (per mark):
//   push_pop_ns=... registered_push_pop_ns=... mark_ns=...
// (registered: a domain's push with a registered string, as frameworks
// that care about NVTX's cost do.) Plain, NVTX has no injection and each
// call returns at once; under hybridprof each pair is a user region.
// benchmarks/nvtx_overhead.sh runs both, interleaved.
//
//   nvtx_bench [INNER=20000] [OUTER=21]
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

#include "median_time.h"

int main(int argc, char** argv) {
  const int inner = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int outer = argc > 2 ? std::atoi(argv[2]) : 21;
  if (inner < 1 || outer < 1) {
    std::fprintf(stderr, "usage: nvtx_bench [INNER>=1] [OUTER>=1]\n");
    return 2;
  }
  nvtxDomainHandle_t domain = nvtxDomainCreateA("bench");
  nvtxEventAttributes_t step{};
  step.version = NVTX_VERSION;
  step.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  step.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  step.message.registered = nvtxDomainRegisterStringA(domain, "step");
  nvtxRangePushA("warm-up");  // NVTX loads its injection at the first call
  nvtxRangePop();
  const double push_pop = median_ns_per_call(inner, outer, [](int n) {
    for (int i = 0; i < n; ++i) {
      nvtxRangePushA("step");
      nvtxRangePop();
    }
  });
  const double registered = median_ns_per_call(inner, outer, [&](int n) {
    for (int i = 0; i < n; ++i) {
      nvtxDomainRangePushEx(domain, &step);
      nvtxDomainRangePop(domain);
    }
  });
  const double mark = median_ns_per_call(inner, outer, [](int n) {
    for (int i = 0; i < n; ++i) nvtxMarkA("tick");
  });
  std::printf("push_pop_ns=%.1f registered_push_pop_ns=%.1f mark_ns=%.1f\n", push_pop, registered, mark);
  return 0;
}
