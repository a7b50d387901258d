// The MPI library as the translation sees it: the seam between the
// tracer (hooks, requests, communicators) and MPI itself. In a program it
// is the real library, reached only through dlsym: the runtime must not
// link libmpi (a program that never calls MPI must not load it because of
// the profiler), so it never names an MPI symbol directly. mpi.h's
// predefined handles (MPI_COMM_WORLD, MPI_REQUEST_NULL...) are addresses of
// libmpi's globals; they are looked up here too, never taken from the macros
// (the link uses --no-undefined so a stray one fails the build).
#pragma once

#include <mpi.h>

namespace hybridprof::mpi {

// The address of `symbol` in the MPI library: the global scope first, then
// a loaded libmpi opened RTLD_LOCAL (Python extension modules). Null when
// no MPI library is loaded.
void* find_mpi_symbol(const char* symbol);

// The real PMPI_<name> function; aborts with a message when it is missing
// (an MPI call with no MPI library loaded cannot happen in a working program).
void* require_mpi_function(const char* symbol);

// What the tracer itself calls, resolved together at the first MPI call.
struct Pmpi {
  int (*Comm_rank)(MPI_Comm, int*);
  int (*Comm_size)(MPI_Comm, int*);
  int (*Comm_group)(MPI_Comm, MPI_Group*);
  int (*Comm_test_inter)(MPI_Comm, int*);
  int (*Group_translate_ranks)(MPI_Group, int, const int[], MPI_Group, int[]);
  int (*Group_free)(MPI_Group*);
  int (*Group_size)(MPI_Group, int*);
  int (*Type_size)(MPI_Datatype, int*);
  // Optional (null: every size is asked): tells predefined datatypes,
  // whose sizes the tracer remembers, from derived ones.
  int (*Type_get_envelope)(MPI_Datatype, int*, int*, int*, int*);
  int (*Get_count)(const MPI_Status*, MPI_Datatype, int*);
  int (*Test_cancelled)(const MPI_Status*, int*);
  int (*Bcast)(void*, int, MPI_Datatype, int, MPI_Comm);
  int (*Send)(const void*, int, MPI_Datatype, int, int, MPI_Comm);
  int (*Recv)(void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*);
  int (*Barrier)(MPI_Comm);
  int (*Gather)(const void*, int, MPI_Datatype, void*, int, MPI_Datatype, int, MPI_Comm);
  int (*Comm_dup)(MPI_Comm, MPI_Comm*);
  int (*Comm_free)(MPI_Comm*);
  int (*Allreduce)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);
  MPI_Comm comm_world, comm_self, comm_null;
  MPI_Request request_null;
  MPI_Datatype uint64, int32, character;
  MPI_Op op_min;
};

// The real library's, resolved once on first use; or what use_pmpi installed.
const Pmpi& pmpi();
// Unit tests: the tracer calls `fake` (not owned) from now on instead of
// the MPI library. Null goes back to the real one.
void use_pmpi(const Pmpi* fake);

}  // namespace hybridprof::mpi
