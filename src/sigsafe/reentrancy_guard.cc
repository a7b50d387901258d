#include "sigsafe/reentrancy_guard.h"

namespace hybridprof::sigsafe {

__thread ThreadSections tls_sections __attribute__((tls_model("initial-exec"))) = {};

}  // namespace hybridprof::sigsafe
