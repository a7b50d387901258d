#include "finalize/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace hybridprof::finalize {
namespace {

using Clock = std::chrono::steady_clock;

struct State {
  bool terminal = isatty(STDERR_FILENO) == 1;
  Clock::time_point started = Clock::now(), shown{};
  std::chrono::milliseconds after{[] {
    const char* text = std::getenv("HYBRIDPROF_PROGRESS_AFTER_MS");
    return text ? std::atol(text) : 1000L;
  }()};
  bool showing = false;
};

State& state() {
  static State s;
  return s;
}

}  // namespace

void show_progress(const char* step, size_t done, size_t total) {
  State& s = state();
  if (!s.terminal) return;
  const Clock::time_point now = Clock::now();
  if (now - s.started < s.after || (s.showing && now - s.shown < std::chrono::milliseconds(200))) return;
  s.shown = now;
  s.showing = true;
  std::fprintf(stderr, "\r\033[Khybridprof: %s: %zu of %zu", step, done, total);
  std::fflush(stderr);
}

void end_progress() {
  State& s = state();
  if (!s.showing) return;
  s.showing = false;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace hybridprof::finalize
