#include "trace/tracing_host.h"

#include <atomic>

namespace hybridprof {

std::atomic<TracingHost*> detail::g_tracing_host{nullptr};

void set_tracing_host(TracingHost* host) { detail::g_tracing_host.store(host, std::memory_order_release); }

}  // namespace hybridprof
