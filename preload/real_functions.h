// The C library functions the runtime interposes, looked up once with
// dlsym(RTLD_NEXT) so wrappers can call through to the real ones.
#pragma once

#include <link.h>
#include <pthread.h>
#include <signal.h>

namespace hybridprof::preload {

struct RealFunctions {
  int (*pthread_create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*) = nullptr;
  int (*sigaction)(int, const struct sigaction*, struct sigaction*) = nullptr;
  sighandler_t (*signal)(int, sighandler_t) = nullptr;
  int (*sigprocmask)(int, const sigset_t*, sigset_t*) = nullptr;
  int (*pthread_sigmask)(int, const sigset_t*, sigset_t*) = nullptr;
  int (*sigaltstack)(const stack_t*, stack_t*) = nullptr;
  int (*close)(int) = nullptr;
  int (*dup2)(int, int) = nullptr;
  int (*dup3)(int, int, int) = nullptr;
  int (*dlclose)(void*) = nullptr;
  int (*dl_iterate_phdr)(int (*)(struct dl_phdr_info*, size_t, void*), void*) = nullptr;
  int (*execve)(const char*, char* const[], char* const[]) = nullptr;
  int (*execv)(const char*, char* const[]) = nullptr;
  int (*execvp)(const char*, char* const[]) = nullptr;
  int (*execvpe)(const char*, char* const[], char* const[]) = nullptr;
  int (*fexecve)(int, char* const[], char* const[]) = nullptr;
  void (*_exit)(int) = nullptr;
  void (*_Exit)(int) = nullptr;
};

// Resolved on first use (the constructor, or the first wrapper called
// before it, which happens when another library's constructor runs first).
const RealFunctions& real();

}  // namespace hybridprof::preload
