// Keeps the program's signals its own while the runtime uses one signal for
// samples and the terminating signals for a final flush:
//  - sigaction()/signal() on a signal the runtime handles store the program's
//    wish; for the sample signal and the fault signals (fault_signals.cc)
//    the runtime's handler stays installed and forwards every signal that
//    is not its own to it;
//  - sigprocmask()/pthread_sigmask() from the program never block the sample
//    signal (blocked samples would be lost), everything else is the
//    program's business; calls from the profiler's own code pass unchanged;
//  - the program's handlers of every other signal run through
//    program_handler_entry, which marks them (sigsafe's kProgramHandler
//    section) for the OS-runtime adapter, which records nothing there.
//    A handler left by siglongjmp leaves its thread marked: that thread's
//    OS-runtime waits are no longer recorded.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>

#include "preload/real_functions.h"
#include "preload/runtime.h"
#include "sigsafe/reentrancy_guard.h"
#include "unwind/native_unwinder.h"

namespace hybridprof::preload {
namespace {

// What the program asked for, for the signals the runtime handles.
struct sigaction g_program_actions[NSIG];
// Signals whose kernel disposition is the runtime's handler.
std::atomic<bool> g_runtime_handles[NSIG];
// Signals whose kernel disposition is program_handler_entry (the program's
// action is in g_program_actions).
std::atomic<bool> g_entry_installed[NSIG];

bool has_handler(const struct sigaction& a) {
  if (a.sa_flags & SA_SIGINFO) return a.sa_sigaction != nullptr;
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

bool valid(int signal) { return signal > 0 && signal < NSIG; }

bool is_sample_signal(int signal) {
  Runtime* rt = runtime();
  return rt && signal == rt->sample_signal;
}

sigset_t without_sample_signal(const sigset_t* set) {
  sigset_t copy = *set;
  if (Runtime* rt = runtime()) sigdelset(&copy, rt->sample_signal);
  return copy;
}

// Masks set by the profiler's own code (libunwind blocks all signals around
// its caches, and it runs only in the runtime's section) must hold as asked.
bool called_by_profiler() { return sigsafe::inside(sigsafe::Section::kRuntime); }

// SIGNAL PATH.
int mask_unchanged_in_handler(sigset_t* old) {
  if (old) *old = sample_handler_mask();
  return 0;
}

// The runtime's own unwinds outside the handler (a traced call's first
// from a new stack): libunwind masks every signal around each unwind-table
// lookup so that no handler runs while it holds the loader's lock
// (dl_iterate_phdr). Ours answer those lookups from the loader snapshot,
// which takes no lock and which a handler may read too, so the masks
// guard nothing: libunwind's calls (`caller`, the return address, in its
// code) are skipped with their restores, instead of two system calls a
// frame; a program's handler that runs meanwhile still has its own calls
// made.
bool masks_change_nothing(const void* caller) {
  return recording_sample() || hybridprof::called_by_own_unwind(reinterpret_cast<uint64_t>(caller));
}

}  // namespace

struct sigaction* program_action(int signal) { return &g_program_actions[signal]; }

bool program_handles(int signal) { return has_handler(g_program_actions[signal]); }

namespace {
void program_handler_entry(int signal, siginfo_t* info, void* ucontext);
}  // namespace

void mark_runtime_handler(int signal, const struct sigaction& previous) {
  // The program's handler through the entry: its action is kept already.
  if (!((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction == program_handler_entry))
    g_program_actions[signal] = previous;
  g_entry_installed[signal] = false;
  g_runtime_handles[signal] = true;
}

namespace {

// SIGNAL PATH: the program's handler, as the kernel would have run it (the
// kernel applied its mask and flags: the entry was installed with them).
void program_handler_entry(int signal, siginfo_t* info, void* ucontext) {
  const struct sigaction a = g_program_actions[signal];
  if (a.sa_flags & SA_RESETHAND) {  // the kernel reset the disposition already
    g_program_actions[signal].sa_handler = SIG_DFL;
    g_program_actions[signal].sa_flags &= ~SA_SIGINFO;
    g_entry_installed[signal] = false;
  }
  sigsafe::SectionScope in_handler(sigsafe::Section::kProgramHandler);
  if (a.sa_flags & SA_SIGINFO) {
    if (a.sa_sigaction) a.sa_sigaction(signal, info, ucontext);
  } else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN) {
    a.sa_handler(signal);
  }
}

// sigaction() for a signal the runtime does not handle: a handler is
// installed as program_handler_entry with the program's mask and flags.
int set_program_action(int signal, const struct sigaction* action, struct sigaction* old) {
  const bool entry_before = g_entry_installed[signal];
  const struct sigaction program_before = g_program_actions[signal];
  struct sigaction kernel_before {};
  if (action && has_handler(*action) && signal != SIGKILL && signal != SIGSTOP) {
    struct sigaction entry = *action;
    entry.sa_flags |= SA_SIGINFO;
    entry.sa_sigaction = program_handler_entry;
    g_program_actions[signal] = *action;  // before the kernel can run the entry
    if (real().sigaction(signal, &entry, &kernel_before) != 0) {
      g_program_actions[signal] = program_before;
      return -1;
    }
    g_entry_installed[signal] = true;
  } else {
    if (real().sigaction(signal, action, &kernel_before) != 0) return -1;
    if (action) g_entry_installed[signal] = false;
  }
  if (old) {
    const bool was_entry = (kernel_before.sa_flags & SA_SIGINFO) && kernel_before.sa_sigaction == program_handler_entry;
    *old = entry_before && was_entry ? program_before : kernel_before;
  }
  return 0;
}

}  // namespace

// SIGNAL PATH: calls the program's handler as the kernel would have: with
// the mask of the interrupted code plus its sa_mask and the signal itself
// (unless SA_NODEFER) blocked for the call, and reset to the default first
// when it asked for SA_RESETHAND.
void forward_to_program(int signal, siginfo_t* info, void* ucontext) {
  const struct sigaction a = g_program_actions[signal];
  if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN) return;
  if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL) {
    signal_default_and_raise(signal);
    return;
  }
  if (a.sa_flags & SA_RESETHAND) {
    g_program_actions[signal].sa_handler = SIG_DFL;
    g_program_actions[signal].sa_flags &= ~SA_SIGINFO;
  }
  sigset_t mask = a.sa_mask;
  if (ucontext) sigorset(&mask, &mask, &static_cast<const ucontext_t*>(ucontext)->uc_sigmask);
  if (!(a.sa_flags & SA_NODEFER)) sigaddset(&mask, signal);
  sigset_t old;
  real().pthread_sigmask(SIG_SETMASK, &mask, &old);
  {
    sigsafe::SectionScope in_handler(sigsafe::Section::kProgramHandler);
    if (a.sa_flags & SA_SIGINFO) {
      if (a.sa_sigaction) a.sa_sigaction(signal, info, ucontext);
    } else {
      a.sa_handler(signal);
    }
  }
  real().pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// SIGNAL PATH: sigaction is async-signal-safe.
void restore_default_action(int signal) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  real().sigaction(signal, &dfl, nullptr);
  g_runtime_handles[signal] = false;
}

// SIGNAL PATH: sigaction, sigprocmask and raise are async-signal-safe.
void signal_default_and_raise(int signal) {
  restore_default_action(signal);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  real().sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(signal);
}

}  // namespace hybridprof::preload

using namespace hybridprof::preload;

extern "C" {

int sigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  if (!valid(signal)) return real().sigaction(signal, action, old);
  if (!g_runtime_handles[signal]) return set_program_action(signal, action, old);
  if (old) *old = g_program_actions[signal];
  if (action) {
    if (is_sample_signal(signal) || is_fault_signal(signal)) {
      g_program_actions[signal] = *action;  // forwarded to from the runtime's handler
    } else {
      // A terminate signal: the program takes it over; its handler decides
      // how the process ends (usually exit(), which finalizes).
      g_runtime_handles[signal] = false;
      g_entry_installed[signal] = false;
      return set_program_action(signal, action, nullptr);
    }
  }
  return 0;
}

sighandler_t signal(int signal, sighandler_t handler) {
  if (!valid(signal)) return real().signal(signal, handler);
  struct sigaction action {}, old{};
  action.sa_handler = handler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal, &action, &old) != 0) return SIG_ERR;
  // sa_handler and sa_sigaction share storage: either way this is the old handler.
  return old.sa_handler;
}

// Inside the sample handler every signal a mask could block is blocked
// already (sample_handler_mask), so the masks libunwind sets around its
// lookups there change nothing; in the runtime's other unwinds they guard
// nothing (masks_change_nothing). Either way they are answered without the
// system call each would cost; `old` gets the handler's mask, which only
// the matching restore (answered so too) reads.
int sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  if (masks_change_nothing(__builtin_return_address(0))) return mask_unchanged_in_handler(old);
  if (set && how != SIG_UNBLOCK && !called_by_profiler()) {
    const sigset_t filtered = without_sample_signal(set);
    return real().sigprocmask(how, &filtered, old);
  }
  return real().sigprocmask(how, set, old);
}

int pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  if (masks_change_nothing(__builtin_return_address(0))) return mask_unchanged_in_handler(old);
  if (set && how != SIG_UNBLOCK && !called_by_profiler()) {
    const sigset_t filtered = without_sample_signal(set);
    return real().pthread_sigmask(how, &filtered, old);
  }
  return real().pthread_sigmask(how, set, old);
}

}  // extern "C"
