#include "mpi/pmpi.h"

#include "common/fatal.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <type_traits>

namespace hybridprof::mpi {
namespace {

void die(const char* what, const char* symbol) { die_plainly({what, symbol}); }

template <typename T>
T need(const char* symbol) {
  void* p = find_mpi_symbol(symbol);
  if (p == nullptr) die("cannot find the MPI library's ", symbol);
  if constexpr (std::is_pointer_v<T> && !std::is_function_v<std::remove_pointer_t<T>>)
    return static_cast<T>(p);
  else
    return reinterpret_cast<T>(p);
}

Pmpi resolve_all() {
  Pmpi p{};
  p.Comm_rank = need<decltype(p.Comm_rank)>("PMPI_Comm_rank");
  p.Comm_size = need<decltype(p.Comm_size)>("PMPI_Comm_size");
  p.Comm_group = need<decltype(p.Comm_group)>("PMPI_Comm_group");
  p.Comm_test_inter = need<decltype(p.Comm_test_inter)>("PMPI_Comm_test_inter");
  p.Group_translate_ranks = need<decltype(p.Group_translate_ranks)>("PMPI_Group_translate_ranks");
  p.Group_free = need<decltype(p.Group_free)>("PMPI_Group_free");
  p.Group_size = need<decltype(p.Group_size)>("PMPI_Group_size");
  p.Type_size = need<decltype(p.Type_size)>("PMPI_Type_size");
  p.Type_get_envelope = need<decltype(p.Type_get_envelope)>("PMPI_Type_get_envelope");
  p.Get_count = need<decltype(p.Get_count)>("PMPI_Get_count");
  p.Test_cancelled = need<decltype(p.Test_cancelled)>("PMPI_Test_cancelled");
  p.Bcast = need<decltype(p.Bcast)>("PMPI_Bcast");
  p.Send = need<decltype(p.Send)>("PMPI_Send");
  p.Recv = need<decltype(p.Recv)>("PMPI_Recv");
  p.Barrier = need<decltype(p.Barrier)>("PMPI_Barrier");
  p.Gather = need<decltype(p.Gather)>("PMPI_Gather");
  p.Comm_dup = need<decltype(p.Comm_dup)>("PMPI_Comm_dup");
  p.Comm_free = need<decltype(p.Comm_free)>("PMPI_Comm_free");
  p.Allreduce = need<decltype(p.Allreduce)>("PMPI_Allreduce");
  // Open MPI's predefined handles are the addresses of these globals.
  p.comm_world = static_cast<MPI_Comm>(need<void*>("ompi_mpi_comm_world"));
  p.comm_self = static_cast<MPI_Comm>(need<void*>("ompi_mpi_comm_self"));
  p.comm_null = static_cast<MPI_Comm>(need<void*>("ompi_mpi_comm_null"));
  p.request_null = static_cast<MPI_Request>(need<void*>("ompi_request_null"));
  p.uint64 = static_cast<MPI_Datatype>(need<void*>("ompi_mpi_uint64_t"));
  p.int32 = static_cast<MPI_Datatype>(need<void*>("ompi_mpi_int"));
  p.character = static_cast<MPI_Datatype>(need<void*>("ompi_mpi_char"));
  p.op_min = static_cast<MPI_Op>(need<void*>("ompi_mpi_op_min"));
  return p;
}

}  // namespace

void* find_mpi_symbol(const char* symbol) {
  if (void* p = dlsym(RTLD_DEFAULT, symbol)) return p;
  // Loaded, but not into the global scope (dlopen'ed RTLD_LOCAL by an
  // interpreter's extension module): RTLD_NOLOAD finds it without loading.
  for (const char* lib : {"libmpi.so.40", "libmpi.so"}) {
    if (void* h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      void* p = dlsym(h, symbol);
      dlclose(h);
      if (p) return p;
    }
  }
  return nullptr;
}

void* require_mpi_function(const char* symbol) {
  void* p = find_mpi_symbol(symbol);
  if (p == nullptr) die("an MPI function was called but the MPI library has no ", symbol);
  return p;
}

namespace {
std::atomic<const Pmpi*> g_fake{nullptr};
}

const Pmpi& pmpi() {
  if (const Pmpi* fake = g_fake.load(std::memory_order_acquire)) return *fake;
  static const Pmpi p = resolve_all();
  return p;
}

void use_pmpi(const Pmpi* fake) { g_fake.store(fake, std::memory_order_release); }

}  // namespace hybridprof::mpi
