#include "trace/tracing_host.h"

#include <atomic>

namespace hybridprof {
namespace {
std::atomic<TracingHost*> g_host{nullptr};
}

TracingHost* tracing_host() { return g_host.load(std::memory_order_acquire); }
void set_tracing_host(TracingHost* host) { g_host.store(host, std::memory_order_release); }

}  // namespace hybridprof
