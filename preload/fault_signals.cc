// SIGSEGV and SIGBUS: the runtime's handler stays installed so that the
// sample handler may read the interpreter's memory with plain loads
// (sigsafe/fault_tolerant_copy.h) instead of a system call per read. The
// handler resumes a faulting read of ours and gives every other fault to
// the program: its own handler, as the kernel would have called it
// (forward_to_program), or the default action, by letting the faulting
// instruction run again under it, so the core dump and the exit status are
// what they would have been without the profiler.
#include <signal.h>
#include <string.h>

#include <atomic>
#include <cerrno>

#include "preload/real_functions.h"
#include "preload/runtime.h"
#include "sigsafe/fault_tolerant_copy.h"

namespace hybridprof::preload {
namespace {

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS};

std::atomic<bool> g_installed{false};

// SIGNAL PATH entry: async-signal-safe calls only (sigaction, sigprocmask,
// raise, through forward_to_program).
void on_fault_signal(int signal, siginfo_t* info, void* ucontext) {
  if (resume_after_fault(ucontext)) return;  // the read returns false
  const int saved_errno = errno;
  const struct sigaction& wish = *program_action(signal);
  const bool takes_default =
      !(wish.sa_flags & SA_SIGINFO) && (wish.sa_handler == SIG_DFL || wish.sa_handler == SIG_IGN);
  // A fault the kernel raised (si_code > 0) comes back when the instruction
  // runs again: under the default action then (as for an ignored one: the
  // kernel forces the default on faults it raises).
  if (takes_default && info != nullptr && info->si_code > 0) {
    restore_default_action(signal);
  } else {
    forward_to_program(signal, info, ucontext);
  }
  errno = saved_errno;
}

}  // namespace

void install_fault_handlers() {
  sigset_t none;
  sigemptyset(&none);
  // SA_ONSTACK: a program that overflows its stack on purpose (and set a
  // signal stack for it) gets its handler called there.
  for (int signal : kFaultSignals) install_handler(signal, on_fault_signal, none, SA_ONSTACK);
  g_installed.store(true, std::memory_order_release);
}

bool is_fault_signal(int signal) {
  if (!g_installed.load(std::memory_order_acquire)) return false;
  for (int fault : kFaultSignals)
    if (signal == fault) return true;
  return false;
}

// SIGNAL PATH. Plain loads are safe to fault only while the kernel calls
// on_fault_signal for both signals (a program may have replaced it with a
// raw system call, or a crash restored the default) and the reading code
// does not block them (a blocked fault signal kills at once). Two
// rt_sigaction queries: a fraction of what one process_vm_readv costs.
static bool fault_tolerant_reads_usable_with(const sigset_t& mask) {
  if (!g_installed.load(std::memory_order_acquire)) return false;
  for (int signal : kFaultSignals) {
    if (sigismember(&mask, signal)) return false;
    struct sigaction now;
    if (real().sigaction(signal, nullptr, &now) != 0 || !(now.sa_flags & SA_SIGINFO) ||
        now.sa_sigaction != on_fault_signal)
      return false;
  }
  return true;
}

bool fault_tolerant_reads_usable(const void* ucontext) {
  return ucontext != nullptr && fault_tolerant_reads_usable_with(static_cast<const ucontext_t*>(ucontext)->uc_sigmask);
}

// The thread's mask is asked for: a third system call.
bool fault_tolerant_reads_usable_here(const void*) {
  sigset_t now;
  return real().pthread_sigmask(SIG_BLOCK, nullptr, &now) == 0 && fault_tolerant_reads_usable_with(now);
}

}  // namespace hybridprof::preload
