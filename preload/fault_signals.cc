// The signals that end a process by a fault or an abort: SIGSEGV, SIGBUS,
// SIGFPE, SIGILL and SIGABRT. The runtime's handler stays installed for
// them, for two reasons:
//  - the sample handler reads the interpreter's memory with plain loads
//    (sigsafe/fault_tolerant_copy.h) instead of a system call per read:
//    the handler resumes a faulting read of ours (SIGSEGV, SIGBUS);
//  - a process dying by one of them keeps its profile: what was recorded
//    up to the fault is written out and the archive ended before the
//    default action happens (finish_before_death).
// Every other fault is the program's: its own handler, called as the
// kernel would have (forward_to_program), or the default action, by
// letting the faulting instruction run again under it (or raising the
// signal again), so that the core dump and the exit status are what they
// would have been without the profiler.
#include <signal.h>
#include <string.h>

#include <atomic>
#include <cerrno>

#include "preload/real_functions.h"
#include "preload/runtime.h"
#include "sigsafe/fault_tolerant_copy.h"

namespace hybridprof::preload {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
// Those a plain-load read of ours may raise.
constexpr int kReadFaults[] = {SIGSEGV, SIGBUS};

std::atomic<bool> g_installed{false};

// SIGNAL PATH entry: async-signal-safe calls only (sigaction, sigprocmask,
// raise, nanosleep, through forward_to_program and finish_before_death).
void on_fault_signal(int signal, siginfo_t* info, void* ucontext) {
  if ((signal == SIGSEGV || signal == SIGBUS) && resume_after_fault(ucontext)) return;  // the read returns false
  const int saved_errno = errno;
  const struct sigaction& wish = *program_action(signal);
  const bool program_handles_it = program_handles(signal);
  const bool ignored = !(wish.sa_flags & SA_SIGINFO) && wish.sa_handler == SIG_IGN;
  // A fault the kernel raised (si_code > 0) comes back when the instruction
  // runs again; the kernel forces the default action on it when ignored.
  const bool raised_by_fault = info != nullptr && info->si_code > 0;
  if (program_handles_it || (ignored && !raised_by_fault)) {
    // abort() ends the process once the program's handler has returned
    // (and an ignored SIGABRT does not stop it): what was recorded is
    // written out first. The profile goes on if the program does.
    if (signal == SIGABRT) write_out_before_possible_death();
    forward_to_program(signal, info, ucontext);
  } else {
    finish_before_death(signal);
    if (raised_by_fault)
      restore_default_action(signal);  // and the instruction faults again
    else
      signal_default_and_raise(signal);  // raise(), kill(), abort()
  }
  errno = saved_errno;
}

}  // namespace

void install_fault_handlers() {
  sigset_t none;
  sigemptyset(&none);
  // SA_ONSTACK: a program that overflows its stack on purpose (and set a
  // signal stack for it) gets its handler called there.
  for (int signal : kFatalSignals) install_handler(signal, on_fault_signal, none, SA_ONSTACK);
  g_installed.store(true, std::memory_order_release);
}

bool is_fault_signal(int signal) {
  if (!g_installed.load(std::memory_order_acquire)) return false;
  for (int fatal : kFatalSignals)
    if (signal == fatal) return true;
  return false;
}

// SIGNAL PATH. Plain loads are safe to fault only while the kernel calls
// on_fault_signal for both signals (a program may have replaced it with a
// raw system call, or a crash restored the default) and the reading code
// does not block them (a blocked fault signal kills at once). Two
// rt_sigaction queries: a fraction of what one process_vm_readv costs.
static bool fault_tolerant_reads_usable_with(const sigset_t& mask) {
  if (!g_installed.load(std::memory_order_acquire)) return false;
  for (int signal : kReadFaults) {
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
