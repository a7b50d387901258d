// Start-up and shut-down of the preloaded runtime.
#include "preload/runtime.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <type_traits>

#include "common/clock.h"
#include "common/launcher_rank.h"
#include "common/trace_clock.h"
#include "common/trace_switch.h"
#include "preload/real_functions.h"
#include "sigsafe/fault_tolerant_copy.h"
#include "sigsafe/reentrancy_guard.h"
#include "sigsafe/safe_read.h"
#include "trace/event_source.h"
#include "trace/tracing_host.h"
#include "unwind/loader_snapshot.h"
#include "unwind/native_unwinder.h"
#include "unwind/python/python_runtime.h"

namespace hybridprof::preload {
namespace {

// Leaked on purpose: threads may still take samples while exit() runs the
// destructors of other libraries, so the runtime must never be destroyed.
std::atomic<Runtime*> g_runtime{nullptr};
std::atomic<bool> g_enabled{false};
pthread_key_t g_thread_key;

__thread ThreadContext* tls_thread __attribute__((tls_model("initial-exec"))) = nullptr;
// What tls_thread points to once the thread is set up: in the thread's
// static TLS, not malloc'd (see thread_begin).
__thread ThreadContext tls_context __attribute__((tls_model("initial-exec")));
static_assert(std::is_trivially_destructible_v<ThreadContext>, "a TLS object with no destructor to register");

// sampling_enabled(), inlined where traced calls ask (RuntimeHost): no
// call level under them (see enter_region in trace/traced_region.h).
// The runtime of a profile that records: null before it starts, after it
// ends, and once recording stopped for good (a full disk, --max-size).
__attribute__((always_inline)) inline const Runtime* recording_runtime() {
  if (!g_enabled.load(std::memory_order_relaxed)) return nullptr;
  const Runtime* rt = g_runtime.load(std::memory_order_acquire);
  return rt && rt->drain.recording() ? rt : nullptr;
}
__attribute__((always_inline)) inline bool recording_now() {
  const Runtime* rt = recording_runtime();
  return rt && rt->drain.window_open();
}

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> command_line() {
  std::vector<std::string> args;
  const std::string all = read_file("/proc/self/cmdline");
  for (size_t i = 0; i < all.size();) {
    const size_t end = all.find('\0', i);
    args.push_back(all.substr(i, end == std::string::npos ? std::string::npos : end - i));
    if (end == std::string::npos) break;
    i = end + 1;
  }
  return args;
}

std::string executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// mkdir -p with the launcher's modes: rwxrwxr-x less the umask, never
// writable by every user. The last one, where the streams go, must be this
// user's directory itself, not a symbolic link planted to lead them elsewhere.
bool make_directories(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string prefix = path.substr(0, i);
      if (mkdir(prefix.c_str(), 0775) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return false;
  if (S_ISDIR(st.st_mode) && st.st_uid == geteuid()) return true;
  errno = S_ISLNK(st.st_mode) ? ELOOP : S_ISDIR(st.st_mode) ? EPERM : ENOTDIR;
  return false;
}

std::string default_output_dir(const std::vector<std::string>& args) {
  std::string program = args.empty() ? "program" : args[0];
  program = program.substr(program.find_last_of('/') + 1);
  return "hybridprof-" + program + "-" + std::to_string(getpid());
}

// Absolute, so that a fork child after a chdir() writes into the same
// directory; a relative HYBRIDPROF_OUTPUT_DIR is exported absolute, so that
// programs exec'd from elsewhere do too.
std::string run_directory(const RuntimeConfig& config) {
  const std::string dir = config.output_dir.empty() ? default_output_dir(command_line()) : config.output_dir;
  char cwd[4096];
  if (dir[0] == '/' || !getcwd(cwd, sizeof cwd)) return dir;
  const std::string absolute = std::string(cwd) + "/" + dir;
  if (!config.output_dir.empty()) setenv(env::kOutputDir, absolute.c_str(), 1);
  return absolute;
}

// A thread dying by a signal waits in its handler for the profile's end
// (finish_before_death), then dies its own way.
std::atomic<bool> g_dying_thread_waits{false};

void on_terminate(int signal) {
  // On the drain thread: the profile ends as at an exit (the sources'
  // last records first), then the process the way it would have without
  // us, unless a thread dying by a fault does that itself.
  finish_process(raw::EndReason::kSignal, signal);
  if (g_dying_thread_waits.load()) return;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  real().sigaction(signal, &dfl, nullptr);
  kill(getpid(), signal);
}

void before_fork() {
  if (Runtime* rt = runtime()) rt->drain.prepare_fork();
}
void after_fork_parent() {
  if (Runtime* rt = runtime()) rt->drain.after_fork_in_parent();
}
void start_process(Runtime& rt);
void after_fork_child() {
  Runtime* rt = runtime();
  if (!rt) return;
  rt->drain.after_fork_in_child();
  LoaderSnapshot::instance().after_fork_child();
  for_each_event_source([](EventSource& s) { s.fork_child(); });
  // The forking thread's state belongs to the parent's thread: its ring
  // holds the parent's data.
  const bool was_set_up = tls_thread != nullptr;
  const stack_t program_signal_stack = tls_context.program_signal_stack;
  tls_thread = nullptr;
  start_process(*rt);
  thread_begin();
  // The signal stack the child inherited is the runtime's: what the
  // program set is still the parent thread's record of it.
  if (was_set_up && tls_thread) tls_thread->program_signal_stack = program_signal_stack;
}

// atexit, not on_exit: registered from this library, it runs when the
// loader finalizes the library, before the libraries it depends on
// (libunwind, an OpenMP runtime the program uses while sampled) are. The
// status comes from note_exit_status (interpose_process.cc).
std::atomic<int64_t> g_exit_status{-1};
void at_exit() { finish_process(raw::EndReason::kExit, g_exit_status.load()); }

// The runtime as the adapters' host (trace/tracing_host.h).
class RuntimeHost final : public TracingHost {
  static constexpr uint64_t kPythonLookupIntervalNs = 10'000'000;

 public:
  explicit RuntimeHost(Runtime& rt) : TracingHost(rt.drain, rt.config), rt_(rt) {}
  bool tracing() const override { return recording_now(); }
  ThreadState* current_thread() override {
    ThreadContext* ctx = tls_thread;
    return ctx && recording_now() ? ctx->state : nullptr;
  }
  std::string raw_dir() const override { return rt_.raw_dir; }
  void say(const std::string& line) override { preload::say(line); }
  bool set_capture_window(bool open, const std::string& cause) override {
    return preload::set_capture_window(open, cause.c_str());
  }
  uint32_t read_python_frames(ThreadState& t, uint32_t* flags) override {
    if (!rt_.python.enabled()) return 0;
    if (t.sampled.python_thread_state == 0) {
      // Not seen running Python yet (an OpenMP worker may never be): its
      // lookup walks the interpreter's thread list, a few system calls,
      // so it is tried again only after a while, not at every construct.
      const uint64_t now = monotonic_ns();
      if (now < t.traced.python_lookup_after_ns) return 0;
      t.traced.python_lookup_after_ns = now + kPythonLookupIntervalNs;
    }
    // Plain copies where a fault is survived, as in the handler (checked
    // at the first read: a thread running no Python pays nothing).
    FaultTolerantReads reads(fault_tolerant_reads_usable_here, nullptr);
    return preload::read_python_frames(rt_, t, flags);
  }
  void finish_process(raw::EndReason reason, int64_t status) override { preload::finish_process(reason, status); }
  // on_exit (glibc): like atexit, but it is told the exit status; the hook
  // runs once, whichever of exit and _exit comes first.
  void at_process_exit(void (*hook)(int)) override {
    set_exit_hook(hook);
    on_exit([](int status, void*) { run_exit_hook(status); }, nullptr);
  }

 private:
  Runtime& rt_;
};

void thread_key_destructor(void*) { thread_end(); }

// Opens this process's raw stream and starts the drain.
void start_process(Runtime& rt) {
  rt.pid = getpid();
  safe_read_remember_pid(rt.pid);
  const uint64_t start_ns = monotonic_ns();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string path = rt.raw_dir + "/" + host + "." + std::to_string(rt.pid) + "." +
                           std::to_string(start_ns) + ".hpr";
  raw::ProcessBegin begin;
  begin.pid = uint64_t(rt.pid);
  begin.ppid = uint64_t(getppid());
  begin.monotonic_ns = start_ns;
  begin.realtime_ns = realtime_ns();
  begin.launcher_rank = launcher_rank_from_env();
  begin.hostname = host;
  begin.executable = executable();
  begin.args = command_line();
  for_each_event_source([&](const EventSource& s) { s.describe(begin); });

  // One copy per process image (a fork child writes its own, named by its pid).
  rt.modules.save_vdso_image(rt.raw_dir + "/" + host + "." + std::to_string(rt.pid) + ".vdso.so");
  std::vector<raw::Record> ignored;
  rt.modules.refresh(start_ns, &ignored, /*force=*/true);
  Drain::Options options;
  options.raw_path = path;
  options.flush_interval_ms = rt.config.flush_ms;
  options.ring_bytes = size_t{rt.config.ring_kib} * 1024;
  options.create_thread = real().pthread_create;
  options.on_terminate = on_terminate;
  options.max_bytes = rt.config.max_size_bytes;
  // An error, not a notice: said even when the launcher quiets notices.
  options.on_recording_stopped = [](const std::string& why) { say(why); };
  options.tsc_trace_clock = g_trace_clock_tsc;
  // Capture windows, from this process's start (preload/capture_window.cc).
  options.start_closed = rt.config.paused || rt.config.delay_ns != 0;
  options.closed_cause = rt.config.paused ? "--paused" : "--delay";
  if (rt.config.delay_ns != 0) options.open_at_ns = start_ns + rt.config.delay_ns;
  if (rt.config.duration_ns != 0) options.close_at_ns = start_ns + rt.config.delay_ns + rt.config.duration_ns;
  options.on_window_due = [](bool open, const char* cause) { set_capture_window(open, cause); };  // decided at the first MPI call; a fork child inherits it
  // The runtime's own code: its frames (wrappers aside) are not the program's.
  ModuleInfo self;
  if (rt.modules.find(reinterpret_cast<uint64_t>(&start_process), start_ns, &self)) {
    options.own_code_start = self.start;
    options.own_code_end = self.end;
  }
  // CPython: its frames are read at every sample, and named by the drain.
  python::PythonRuntime py;
  std::string python_notice;
  if (python::find_python(&py, &python_notice)) {
    rt.python = python::PythonStackReader(py.layout, py.runtime);
    options.python = py;
    begin.python = py.version;
  }
  std::string error;
  if (!rt.drain.start(options, begin, &error)) {
    say(error + "; profiling is off for this process");
    g_enabled = false;
    return;
  }
  if (!rt.plan.notice.empty()) rt.drain.append(raw::Notice{rt.plan.notice});
  if (const std::string traced = trace_switch_notice(); !traced.empty()) rt.drain.append(raw::Notice{traced});
  if (!python_notice.empty()) notice(rt, python_notice);
  for_each_event_source([&](EventSource& s) { s.process_started(rt.drain); });
  g_enabled = true;
}

// This process's executable, as the kernel has it.
std::string own_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

void start_runtime() {
  if (secure_execution() || mpi_helper_daemon(own_executable())) return;
  if (g_runtime.load() || std::getenv("HYBRIDPROF_DISABLE")) return;
  auto* rt = new Runtime();
  std::string error;
  if (!runtime_config_from_env(&rt->config, &error)) {
    say(error + "; profiling is off");
    return;
  }
  sampling::EventSpec event;
  if (!sampling::encode_event(rt->config.event, &event, &error)) {
    say(error + "; profiling is off");
    return;
  }
  sampling::SamplingRequest request;
  request.event = event;
  request.value = rt->config.value;
  request.frequency = rt->config.frequency;
  request.force_timer = rt->config.force_timer;
  request.fixed_period = rt->config.fixed_period;
  rt->plan = sampling::plan_sampling(request);
  if (!rt->plan.notice.empty() && !rt->config.quiet) say(rt->plan.notice);
  rt->sample_signal = rt->config.signal ? rt->config.signal : SIGRTMIN + 4;

  rt->raw_dir = run_directory(rt->config) + "/raw";
  if (!make_directories(rt->raw_dir)) {
    say("cannot create " + rt->raw_dir + ": " + std::strerror(errno) + "; profiling is off");
    return;
  }

  pthread_key_create(&g_thread_key, thread_key_destructor);
  // Other signals wait the few microseconds a sample takes (so that the
  // masks libunwind sets inside it need no system calls, see
  // interpose_signal.cc); forward_to_program gives the program's handlers
  // the mask they asked for.
  // On the runtime's signal stack where the thread has one (signal_stack.cc).
  install_handler(rt->sample_signal, on_sample_signal, sample_handler_mask(), SA_ONSTACK);
  install_fault_handlers();
  sigset_t none;
  sigemptyset(&none);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    struct sigaction current {};
    real().sigaction(sig, nullptr, &current);
    // Only where the program (so far) takes the default: finalize, then die
    // by the same signal. A program's own handler replaces ours.
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL)
      install_handler(sig, on_terminate_signal, none);
  }
  const std::string unwinder_problem = prepare_unwinder_for_process();
  g_runtime.store(rt);
  set_tracing_host(new RuntimeHost(*rt));  // leaked, like the runtime
  start_process(*rt);
  if (!g_enabled) return;
  if (!unwinder_problem.empty())
    notice(*rt, "libunwind's thread-local storage is reached through the loader (" + unwinder_problem +
                    "): a sample that lands in malloc just after a dlopen() may hang the program");
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  std::atexit(at_exit);
  thread_begin();
}

__attribute__((constructor)) void hybridprof_constructor() { start_runtime(); }

}  // namespace

void install_handler(int signal, void (*handler)(int, siginfo_t*, void*), const sigset_t& mask, int flags) {
  struct sigaction action {};
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART | flags;
  action.sa_mask = mask;
  struct sigaction previous {};
  real().sigaction(signal, &action, &previous);
  mark_runtime_handler(signal, previous);
}

// Notices from the sampling module carry the prefix already.
void say(const std::string& line) {
  const std::string prefix = "hybridprof: ";
  const std::string text = (line.rfind(prefix, 0) == 0 ? line : prefix + line) + "\n";
  [[maybe_unused]] ssize_t w = write(STDERR_FILENO, text.data(), text.size());
}

void notice(Runtime& rt, const std::string& line) {
  if (!rt.config.quiet) say(line);
  rt.drain.append(raw::Notice{line});
}

Runtime* runtime() { return g_runtime.load(std::memory_order_acquire); }
bool secure_execution() { return getauxval(AT_SECURE) != 0; }
void note_exit_status(int status, void*) { g_exit_status.store(status); }

bool mpi_helper_daemon(std::string_view program) {
  const std::string_view name = program.substr(program.find_last_of('/') + 1);
  for (std::string_view daemon : {"orted", "prted", "hydra_pmi_proxy", "pmi_proxy"})
    if (name == daemon) return true;
  return false;
}

namespace {
std::atomic<void (*)(int)> g_exit_hook{nullptr};
}
void set_exit_hook(void (*hook)(int)) { g_exit_hook.store(hook); }
void run_exit_hook(int status) {
  if (auto* hook = g_exit_hook.exchange(nullptr)) hook(status);
}
bool sampling_enabled() { return recording_now(); }
bool profile_recording() { return recording_runtime() != nullptr; }
bool profile_open() { return g_enabled.load(std::memory_order_relaxed); }
ThreadContext* this_thread() { return tls_thread; }

void thread_begin(KnownStack stack, void* signal_stack) {
  Runtime* rt = runtime();
  if (!rt || !g_enabled || tls_thread) return;
  const pid_t tid = static_cast<pid_t>(gettid());
  // An MPI rank's main thread (unless the user sized the rings) gets room
  // for its calls' records.
  const bool mpi_main = tid == rt->pid && launcher_rank_from_env() >= 0 && !rt->config.ring_kib_given;
  ThreadState* state =
      rt->drain.add_thread(tid, monotonic_ns(), mpi_main ? size_t{kMpiMainThreadRingKiB} * 1024 : 0);
  if (!state) return;
  ThreadContext* ctx = new (&tls_context) ThreadContext();  // trivially destructible: nothing to end first
  ctx->state = state;
  install_signal_stack(*ctx, signal_stack);
  state->sampled.record_deferred = record_deferred_samples;
  if (rt->python.enabled()) {
    state->sampled.python_window = std::make_unique<python::PythonReadWindow>();
    state->sampled.python_seen_codes = std::make_unique<python::SeenCodes>();
  }
  {
    BusyScope busy(state);
    // The main thread's unwinder is made whole now; other threads' at their
    // first sample (a short thread may have none).
    prepare_unwinder_for_thread(/*with_trace_cache=*/tid == rt->pid, stack.bytes, stack.guard_bytes);
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tls_thread = ctx;
  pthread_setspecific(g_thread_key, ctx);
  for_each_event_source([&](EventSource& s) { s.thread_started(*state); });
}

void thread_end() {
  Runtime* rt = runtime();
  ThreadContext* ctx = tls_thread;
  if (!rt || !ctx) return;
  for_each_event_source([&](EventSource& s) { s.thread_ending(*ctx->state); });
  prctl(PR_GET_NAME, ctx->state->name);
  // From here the signal path sees no state and counts, not records.
  tls_thread = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  rt->drain.finish_thread(ctx->state, monotonic_ns());
  remove_signal_stack(*ctx);
}

namespace {

// SIGNAL PATH: the drain can do what this thread waits for; false when
// nothing is to be waited for.
bool drain_can_help(Runtime* rt) {
  return rt && profile_open() && getpid() == rt->pid && !rt->drain.is_drain_thread();
}

// SIGNAL PATH: nanosleep until `done`, 5 s at most: the drain may need a
// lock this thread holds (a crash inside malloc), and the program's death
// must not wait on the profiler for long.
template <class Done>
void wait_for_drain(Done done) {
  for (int waited_ms = 0; waited_ms < 5000 && !done(); ++waited_ms) {
    const timespec millisecond{0, 1000000};
    nanosleep(&millisecond, nullptr);
  }
}

}  // namespace

void finish_before_death(int signal) {
  Runtime* rt = runtime();
  if (!drain_can_help(rt)) return;
  g_dying_thread_waits.store(true);
  rt->drain.request_terminate_from_signal(signal);
  wait_for_drain([&] { return rt->drain.ended(); });
}

void write_out_before_possible_death() {
  Runtime* rt = runtime();
  if (!drain_can_help(rt)) return;
  const uint64_t before = rt->drain.passes_written();
  rt->drain.wake();
  wait_for_drain([&] { return rt->drain.passes_written() >= before + 2 || rt->drain.ended(); });
}

void finish_process(raw::EndReason reason, int64_t status) {
  Runtime* rt = runtime();
  if (!rt || getpid() != rt->pid) return;  // not started, or a vfork child
  bool expected = true;
  if (!g_enabled.compare_exchange_strong(expected, false)) return;
  for_each_event_source([&](EventSource& s) { s.process_ending(reason); });
  if (const std::string line = small_stack_notice(); !line.empty()) notice(*rt, line);
  if (const std::string line = capture_window_notice(); !line.empty()) notice(*rt, line);
  if (ThreadContext* ctx = tls_thread) {
    prctl(PR_GET_NAME, ctx->state->name);
    // The process ends inside a traced call whose enter was held back
    // (TracedCallWriter::defer_enter): the enter goes in, and the drain
    // closes the call at the thread's end. Not where the end interrupted
    // the thread's own writing (a crash inside the runtime).
    if (!sigsafe::inside(sigsafe::Section::kRuntime))
      ctx->state->traced.calls.write_deferred_enter_shared(ctx->state->ring);
  }
  raw::ProcessEnd end{monotonic_ns(), reason, status, rt->samples_without_thread.load()};
  rt->drain.stop(end);
}

}  // namespace hybridprof::preload
