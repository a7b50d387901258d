// The libgomp entry points the runtime interposes, generated from the list
// in src/openmp/gomp_functions.def: each calls the real one inside what its
// role records (openmp/gomp_tracer.h); and GOMP_task, whose task is traced
// where it runs.
#include "openmp/gomp_tracer.h"

namespace hp = hybridprof::openmp;

// A fork's outlined function and data as the real call gets them: the
// program's own when OpenMP is not traced, else traced_body and a packet.
#define OUTLINED outlined
#define PACKET payload
#define GOMP_FUNCTION(ret, name, params, args, construct, role)                                           \
  extern "C" __attribute__((noinline)) ret name params {                                                  \
    static const hp::RealGompFunction real(#name);                                                        \
    return hp::intercept<hp::Construct::construct, hp::Role::role, ret(*) params>(                        \
        real, __builtin_return_address(0) HYBRIDPROF_GOMP_ARGS args);                                     \
  }
#define HYBRIDPROF_GOMP_ARGS(...) __VA_OPT__(, ) __VA_ARGS__
#define GOMP_FORK(name, params, args, construct, role)                                                    \
  extern "C" __attribute__((noinline)) void name params {                                                 \
    static const hp::RealGompFunction real(#name);                                                        \
    if (!real.traced()) {                                                                                 \
      void (*const outlined)(void*) = fn;                                                                 \
      void* const payload = data;                                                                         \
      return reinterpret_cast<void(*) params>(real.function) args;                                        \
    }                                                                                                     \
    hp::ForkPacket local{fn, data, hp::Construct::construct, true, hp::this_thread_token()};              \
    constexpr bool kStart = hp::Role::role == hp::Role::kForkStart;                                       \
    hp::ForkPacket* kept = nullptr;                                                                       \
    {                                                                                                     \
      hybridprof::TracingHost* const host = hybridprof::traced_host();                                    \
      local.forker_state = host ? host->current_thread() : nullptr;                                       \
      const hybridprof::ProfilerWork work(local.forker_state);                                            \
      kept = kStart ? hp::keep_fork_packet(local) : &local;                                               \
      hp::before_fork(*kept, num_threads);                                                                \
    }                                                                                                     \
    hp::ForkPacket& packet = *kept;                                                                       \
    void (*const outlined)(void*) = &hp::traced_body;                                                     \
    void* const payload = &packet;                                                                        \
    reinterpret_cast<void(*) params>(real.function) args;                                                 \
    if (kStart) hp::after_fork_start(&packet);                                                            \
    else hp::after_fork(packet);                                                                          \
  }
#include "openmp/gomp_functions.def"

extern "C" __attribute__((noinline)) void GOMP_task(void (*fn)(void*), void* data, void (*cpyfn)(void*, void*),
                                                    long arg_size, long arg_align, bool if_clause, unsigned flags,
                                                    void** depend, int priority, void* detach) {
  static const hp::RealGompFunction real("GOMP_task");
  hp::create_task(real, __builtin_return_address(0), fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend,
                  priority, detach);
}
