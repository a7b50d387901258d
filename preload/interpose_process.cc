// Process boundaries: _exit skips atexit, and exec replaces the image, so
// both flush the raw stream first (and _exit runs the exit hook, see
// runtime.h). exit() is covered by atexit and on_exit; fork by
// pthread_atfork in runtime.cc.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <vector>

#include "common/clock.h"
#include "preload/real_functions.h"
#include "preload/runtime.h"

namespace hybridprof::preload {
namespace {

// `program`: the path or name exec'd, when the call gives one.
void before_exec(const char* program) {
  if (Runtime* rt = runtime(); rt && program && mpi_helper_daemon(program) && profile_open())
    rt->drain.append(raw::Notice{std::string("exec of ") + program +
                                 ", the MPI launcher's helper daemon, which is not profiled"});
  // A failed exec keeps running unprofiled: the stream is already closed.
  finish_process(raw::EndReason::kExec, 0);
}

// execl* take their arguments inline; glibc's own execl calls execve
// internally (not through the PLT), so they need wrappers of their own.
std::vector<char*> inline_arguments(const char* first, va_list ap) {
  std::vector<char*> args{const_cast<char*>(first)};
  while (args.back() != nullptr) args.push_back(va_arg(ap, char*));
  return args;
}

// The program's main, which start_main becomes.
using MainFunction = int (*)(int, char**, char**);
MainFunction g_program_main = nullptr;

// Runs as the program's main. The exit status reaches atexit handlers
// nowhere, and an exit() interposer would miss main's return (libc calls
// its own exit then); an on_exit handler gets both. Registered here, after
// libc registered the loader's finalizer (which runs the runtime's atexit
// handler with the library's other finalizers), it runs before that: handlers run
// in the reverse order of their registration. Then a sibling call: main
// takes this frame's place, so no frame of the runtime's stays below it.
int start_main(int argc, char** argv, char** envp) {
  on_exit(note_exit_status, nullptr);
  return g_program_main(argc, argv, envp);
}

}  // namespace
}  // namespace hybridprof::preload

using namespace hybridprof::preload;
namespace raw = hybridprof::raw;

extern "C" {

int __libc_start_main(MainFunction main, int argc, char** argv, void (*init)(), void (*fini)(), void (*rtld_fini)(),
                      void* stack_end) {
  using Start = int (*)(MainFunction, int, char**, void (*)(), void (*)(), void (*)(), void*);
  static const auto real_start = reinterpret_cast<Start>(dlsym(RTLD_NEXT, "__libc_start_main"));
  g_program_main = main;
  return real_start(start_main, argc, argv, init, fini, rtld_fini, stack_end);
}

int execve(const char* path, char* const argv[], char* const envp[]) {
  before_exec(path);
  return real().execve(path, argv, envp);
}

int execv(const char* path, char* const argv[]) {
  before_exec(path);
  return real().execv(path, argv);
}

int execvp(const char* file, char* const argv[]) {
  before_exec(file);
  return real().execvp(file, argv);
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  before_exec(file);
  return real().execvpe(file, argv, envp);
}

int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> args = inline_arguments(arg, ap);
  va_end(ap);
  return execv(path, args.data());
}

int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> args = inline_arguments(arg, ap);
  va_end(ap);
  return execvp(file, args.data());
}

int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> args = inline_arguments(arg, ap);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return execve(path, args.data(), envp);
}

int fexecve(int fd, char* const argv[], char* const envp[]) {
  before_exec(nullptr);
  return real().fexecve(fd, argv, envp);
}

void _exit(int status) {
  run_exit_hook(status);
  finish_process(raw::EndReason::kExit, status);
  real()._exit(status);
  __builtin_unreachable();
}

void _Exit(int status) {
  run_exit_hook(status);
  finish_process(raw::EndReason::kExit, status);
  real()._Exit(status);
  __builtin_unreachable();
}

}  // extern "C"
