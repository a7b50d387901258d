/* The clock floor of MPI tracing, preloaded into an MPI program
 * (benchmarks/real_codes.sh runs OSU's osu_bw and osu_latency under it):
 * the least any tracer that times every point-to-point call can do. Each
 * of MPI_Send, MPI_Recv, MPI_Isend, MPI_Irecv, MPI_Wait and MPI_Waitall
 * reads the time-stamp counter (elsewhere CLOCK_MONOTONIC) before and after the real call and stores
 * what it was (times, handle, peer, tag) in a 32-byte slot of a per-thread
 * buffer of 1 MiB reused in turn; a Waitall stores each of its handles
 * too. No calling context, no request matching, no drain, no sampling.
 *
 * What a profiler adds beyond this figure is its own; what this figure
 * costs a program is out of any profiler's reach on that machine (the
 * counter's reads: ~10 ns each on this project's VM). Not a profiler:
 * nothing is ever read back.
 */
#include <mpi.h>
#include <stdint.h>
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t floor_clock(void) { return __rdtsc(); }
#else
#include <time.h>
static inline uint64_t floor_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif

#define FLOOR_SLOTS (1u << 15) /* 32 bytes each: 1 MiB */

static __thread uint64_t floor_buffer[FLOOR_SLOTS][4];
static __thread uint32_t floor_next;

static inline void floor_store(uint64_t start, uint64_t end, uint64_t what, uint64_t where) {
  uint64_t* slot = floor_buffer[floor_next];
  floor_next = (floor_next + 1) & (FLOOR_SLOTS - 1);
  slot[0] = start;
  slot[1] = end;
  slot[2] = what;
  slot[3] = where;
  __asm__ volatile("" : : "r"(slot) : "memory"); /* kept: the stores are the point */
}

static inline uint64_t floor_key(int peer, int tag) { return (uint64_t)(uint32_t)peer << 32 | (uint32_t)tag; }

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  const uint64_t start = floor_clock();
  const int rc = PMPI_Send(buf, count, type, dest, tag, comm);
  floor_store(start, floor_clock(), (uint64_t)count, floor_key(dest, tag));
  return rc;
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  const uint64_t start = floor_clock();
  const int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
  floor_store(start, floor_clock(), (uint64_t)count, floor_key(source, tag));
  return rc;
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  const uint64_t start = floor_clock();
  const int rc = PMPI_Isend(buf, count, type, dest, tag, comm, request);
  floor_store(start, floor_clock(), (uint64_t)(uintptr_t)*request, floor_key(dest, tag));
  return rc;
}

int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request) {
  const uint64_t start = floor_clock();
  const int rc = PMPI_Irecv(buf, count, type, source, tag, comm, request);
  floor_store(start, floor_clock(), (uint64_t)(uintptr_t)*request, floor_key(source, tag));
  return rc;
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  const uint64_t handle = (uint64_t)(uintptr_t)*request;
  const uint64_t start = floor_clock();
  const int rc = PMPI_Wait(request, status);
  floor_store(start, floor_clock(), handle, 1);
  return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  const uint64_t start = floor_clock();
  for (int i = 0; i < count; ++i) floor_store(start, 0, (uint64_t)(uintptr_t)requests[i], 2);
  const int rc = PMPI_Waitall(count, requests, statuses);
  floor_store(start, floor_clock(), (uint64_t)count, 3);
  return rc;
}
