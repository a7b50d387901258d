#include "preload/real_functions.h"

#include <dlfcn.h>

namespace hybridprof::preload {
namespace {

template <typename Fn>
void resolve(Fn*& slot, const char* name) {
  slot = reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
}

RealFunctions resolve_all() {
  RealFunctions r;
  resolve(r.pthread_create, "pthread_create");
  resolve(r.sigaction, "sigaction");
  resolve(r.signal, "signal");
  resolve(r.sigprocmask, "sigprocmask");
  resolve(r.pthread_sigmask, "pthread_sigmask");
  resolve(r.sigaltstack, "sigaltstack");
  resolve(r.close, "close");
  resolve(r.dup2, "dup2");
  resolve(r.dup3, "dup3");
  resolve(r.dlclose, "dlclose");
  resolve(r.dl_iterate_phdr, "dl_iterate_phdr");
  resolve(r.execve, "execve");
  resolve(r.execv, "execv");
  resolve(r.execvp, "execvp");
  resolve(r.execvpe, "execvpe");
  resolve(r.fexecve, "fexecve");
  resolve(r._exit, "_exit");
  resolve(r._Exit, "_Exit");
  return r;
}

}  // namespace

const RealFunctions& real() {
  static const RealFunctions functions = resolve_all();
  return functions;
}

}  // namespace hybridprof::preload
