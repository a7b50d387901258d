// Process boundaries: _exit skips atexit, and exec replaces the image, so
// both flush the raw stream first (and _exit runs the exit hook, see
// runtime.h). exit() is covered by atexit; fork by pthread_atfork in
// runtime.cc.
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

void before_exec() {
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

}  // namespace
}  // namespace hybridprof::preload

using namespace hybridprof::preload;
namespace raw = hybridprof::raw;

extern "C" {

int execve(const char* path, char* const argv[], char* const envp[]) {
  before_exec();
  return real().execve(path, argv, envp);
}

int execv(const char* path, char* const argv[]) {
  before_exec();
  return real().execv(path, argv);
}

int execvp(const char* file, char* const argv[]) {
  before_exec();
  return real().execvp(file, argv);
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  before_exec();
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
  before_exec();
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
