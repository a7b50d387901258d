// The intercepted MPI functions as an enum, from the list in
// src/mpi/mpi_functions.def.
#pragma once

#include <cstdint>

namespace hybridprof::mpi {

enum class MpiFunction : uint16_t {
#define MPI_FUNCTION(name, params, args) name,
#include "mpi/mpi_functions.def"
  kCount
};
inline constexpr uint32_t kMpiFunctionCount = static_cast<uint32_t>(MpiFunction::kCount);

const char* mpi_function_name(MpiFunction);

// Whether `f` returns without waiting for another process (it starts,
// tests or frees a request, or probes): a repeated call of it may hold its
// enter back until its leave (TracedCallWriter::defer_enter). A call that
// may wait writes its enter first: a process killed, or ending, while a
// thread waits in it (without the CPU time that would bring a sample)
// still shows the call's start.
constexpr bool returns_at_once(MpiFunction f) {
  switch (f) {
    case MpiFunction::MPI_Iprobe:
    case MpiFunction::MPI_Isend:
    case MpiFunction::MPI_Ibsend:
    case MpiFunction::MPI_Issend:
    case MpiFunction::MPI_Irsend:
    case MpiFunction::MPI_Irecv:
    case MpiFunction::MPI_Send_init:
    case MpiFunction::MPI_Bsend_init:
    case MpiFunction::MPI_Ssend_init:
    case MpiFunction::MPI_Rsend_init:
    case MpiFunction::MPI_Recv_init:
    case MpiFunction::MPI_Start:
    case MpiFunction::MPI_Startall:
    case MpiFunction::MPI_Test:
    case MpiFunction::MPI_Testall:
    case MpiFunction::MPI_Testany:
    case MpiFunction::MPI_Testsome:
    case MpiFunction::MPI_Request_free:
    case MpiFunction::MPI_Cancel:
    case MpiFunction::MPI_Ibarrier:
    case MpiFunction::MPI_Ibcast:
    case MpiFunction::MPI_Ireduce:
    case MpiFunction::MPI_Iallreduce:
    case MpiFunction::MPI_Igather:
    case MpiFunction::MPI_Igatherv:
    case MpiFunction::MPI_Iscatter:
    case MpiFunction::MPI_Iscatterv:
    case MpiFunction::MPI_Iallgather:
    case MpiFunction::MPI_Iallgatherv:
    case MpiFunction::MPI_Ialltoall:
    case MpiFunction::MPI_Ialltoallv:
    case MpiFunction::MPI_Ialltoallw:
    case MpiFunction::MPI_Ireduce_scatter:
    case MpiFunction::MPI_Ireduce_scatter_block:
    case MpiFunction::MPI_Iscan:
    case MpiFunction::MPI_Iexscan:
      return true;
    default:
      return false;
  }
}

// Raw-stream region ids of the MPI functions: the base of a block reserved
// (trace/region_ids.h) when the first MPI call defines the regions, before
// any region id is used, + the enum value. Inline: every call uses it.
extern uint32_t g_mpi_region_base;
inline uint32_t mpi_region(MpiFunction f) { return g_mpi_region_base + static_cast<uint32_t>(f); }

// The interposers' entry points, kMpiFunctionCount of them in the list's
// order (the runtime's, preload/mpi/mpi_wrappers.cc; none in unit tests):
// the drain files the frames of their code under the call's region.
void set_wrapper_entries(const void* const* entries);

}  // namespace hybridprof::mpi
