// The process-wide state of the preloaded runtime and its lifecycle:
// start (constructor), per-thread begin/end, fork, exec, exit, and the
// terminate path for the signals that end it.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/runtime_config.h"
#include "sampling/sampling.h"
#include "trace/drain.h"
#include "trace/module_table.h"
#include "unwind/python/python_stack.h"

namespace hybridprof::preload {

// Per sampled thread, in its TLS (runtime.cc); reached from the signal
// path through a TLS pointer, null while the thread is not set up.
struct ThreadContext {
  ThreadState* state = nullptr;
  sampling::ThreadSampler sampler;
  void* signal_stack = nullptr;  // the runtime's (signal_stack.cc), guard page first
  stack_t program_signal_stack{nullptr, SS_DISABLE, 0};  // what the program set, for sigaltstack()
};

// The sample handler's own stack (signal_stack.cc): installed on a thread
// before its sampler starts (`mapped`: one begin_thread_on_signal_stack
// mapped), removed at its end. False when it cannot be (the handler then
// runs on the thread's stack).
bool install_signal_stack(ThreadContext&, void* mapped = nullptr);
void remove_signal_stack(ThreadContext&);
// Threads with smaller stacks start the runtime's part on its signal stack
// instead: that start (libunwind's set-up) takes about 16 KiB of stack.
inline constexpr size_t kMinSampledStackBytes = 32 * 1024;
// True (and counted) when a thread of `bytes` of stack (0: unknown) is too
// small to sample: only where no other stack can be used for its start;
// the notice naming those threads, "" when none.
bool stack_too_small_to_sample(size_t bytes);
std::string small_stack_notice();

struct Runtime {
  RuntimeConfig config;
  sampling::SamplingPlan plan;
  int sample_signal = 0;
  pid_t pid = 0;
  std::string raw_dir;
  ModuleTable modules;
  Drain drain{modules};
  // CPython's frames, when the program is a Python interpreter we can read.
  python::PythonStackReader python;
  // Samples arriving on threads that have no state (before their start or
  // after their end) — counted, never silent.
  std::atomic<uint64_t> samples_without_thread{0};
};

// One line on stderr, "hybridprof: " first (unless it has it already).
// Not for the signal path (it allocates).
void say(const std::string& line);
// A notice: said (unless the launcher quiets the runtime's, having said
// them itself) and kept in the archive's notices. Not for the signal path.
void notice(Runtime& rt, const std::string& line);

// Secure execution (setuid, setgid, file capabilities): the environment
// is another user's, and /etc/ld.so.preload or a library's dlopen of an
// injection path (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH) loads the
// runtime despite the loader's rules. Nothing of it starts then: not the
// runtime, nor the OMPT tool or the NVTX callbacks.
bool secure_execution();
// An on_exit handler: the status exit() was called with (or main
// returned), for the process's end record.
void note_exit_status(int status, void*);
// Whether `program` (a path or a name) is an MPI launcher's helper daemon
// (Open MPI's orted, PRRTE's prted, MPICH's hydra_pmi_proxy): a program
// that starts MPI as a singleton runs one under the profiler, which is
// not the program and is not profiled.
bool mpi_helper_daemon(std::string_view program);

// Null until the constructor has started the runtime (or when disabled).
Runtime* runtime();
// False from exit onwards, once recording has stopped (a full disk,
// --max-size: Drain::recording), and while no capture window is open: the
// signal path and the traced calls then record nothing.
bool sampling_enabled();
// As sampling_enabled(), windows aside: the process's profile goes on
// (threads are set up, modules followed) between capture windows too.
bool profile_recording();
// True until the process's profile is ended (finish_process): a fault or
// a terminating signal still ends it, after recording has stopped too.
bool profile_open();

// The calling thread's context, or null. Signal-safe (initial-exec TLS).
ThreadContext* this_thread();

// What the creator of a thread knew of its stack (interpose_thread.cc):
// its attribute's sizes; zero when unknown.
struct KnownStack {
  size_t bytes = 0, guard_bytes = 0;
};
// On a new thread, before its start routine; and at its end. Neither
// mallocs or frees on a thread started by pthread_create (a thread that
// does gets a malloc arena, set up and grown at its first call).
void thread_begin(KnownStack stack = {}, void* signal_stack = nullptr);
// thread_begin on the thread's signal stack, mapped first (signal_stack.cc),
// for a thread whose own stack is smaller than kMinSampledStackBytes.
void begin_thread_on_signal_stack(KnownStack stack);
void thread_end();

// Capture windows (capture_window.cc): opens or closes this process's,
// `cause` saying what did ("--delay", "hybridprof_stop()"); false when it
// was already so (counted, for capture_window_notice). Not the signal path.
bool set_capture_window(bool open, const char* cause);
// A named point of the process's time (hybridprof_mark).
void capture_mark(const char* text);
// "" or one line on start/stop calls that changed nothing.
std::string capture_window_notice();

// Final flush at process end (exit, _exit, exec).
void finish_process(raw::EndReason reason, int64_t status);
// SIGNAL PATH: the process is about to die by `signal` (a fault, abort):
// the drain thread ends the profile while this thread waits (5 s at
// most); then the caller lets the signal's default action happen.
void finish_before_death(int signal);
// SIGNAL PATH: the process may die (the program's SIGABRT handler runs,
// and abort() ends the process when it returns): what was recorded is
// written out while this thread waits (5 s at most). Profiling goes on.
void write_out_before_possible_death();

// What must run when the process leaves by _exit/_Exit too, which skip
// atexit handlers (an MPI rank's deferred finalize), with the exit status.
// One hook, run once; null clears.
void set_exit_hook(void (*hook)(int status));
void run_exit_hook(int status);

// Installs `handler` for `signal` (SA_SIGINFO | SA_RESTART | flags), the
// program's action until then kept as program_action(signal).
void install_handler(int signal, void (*handler)(int, siginfo_t*, void*), const sigset_t& mask, int flags = 0);

// The signal handlers (sample_handler.cc).
void on_sample_signal(int signal, siginfo_t* info, void* ucontext);
// What the sample handler runs with blocked: every signal but the ones a
// fault raises (a fault under a blocked signal kills without a word).
sigset_t sample_handler_mask();
// SIGNAL PATH (and the producers'), under t's busy guard on its own
// thread: its Python frames into t.sampled.python_scratch (python_stack.h),
// how many; 0 when the program is no CPython we read or the thread runs no
// Python. Sets kSamplePythonIncomplete in *flags for a chain cut short.
uint32_t read_python_frames(Runtime& rt, ThreadState& t, uint32_t* flags);
// Records the samples deferred while the thread was busy (ThreadState's
// record_deferred): the thread itself, outside handlers.
void record_deferred_samples(ThreadState& t);
// True on a thread while its sample handler records a sample. Signal-safe.
bool recording_sample();
// SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 while the program
// leaves them at their default action (which ends the process).
void on_terminate_signal(int signal, siginfo_t* info, void* ucontext);

// SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (fault_signals.cc): the
// runtime's handler resumes the faulting reads of
// sigsafe/fault_tolerant_copy.h, ends the profile before a death by one of
// them, and hands every fault to the program's handler or default action.
// is_fault_signal: one of them, once installed.
void install_fault_handlers();
bool is_fault_signal(int signal);
// SIGNAL PATH: may a sample handler interrupting `ucontext` arm
// FaultTolerantReads?
bool fault_tolerant_reads_usable(const void* ucontext);
// The same for the calling thread outside handlers (a traced call reading
// its Python frames); its argument is unused.
bool fault_tolerant_reads_usable_here(const void*);

// What the program asked for the signals the runtime handles
// (interpose_signal.cc). The handlers forward to it.
// Signal-safe accessors; the interposers keep these tables.
struct sigaction* program_action(int signal);
bool program_handles(int signal);
// The runtime installed its handler for `signal`; `previous` was the
// kernel's action before (the program's, kept as program_action).
void mark_runtime_handler(int signal, const struct sigaction& previous);
void forward_to_program(int signal, siginfo_t* info, void* ucontext);
// Restores the default action (the runtime's handler is gone); and that,
// then raises the signal on this thread.
void restore_default_action(int signal);
void signal_default_and_raise(int signal);

}  // namespace hybridprof::preload
