/* mpi_window_bench [WINDOWS=20000]: osu_bw's shape on one rank sending to
 * itself: windows of 64 MPI_Irecv and 64 MPI_Isend of 8 bytes, each from
 * one call site, completed by one MPI_Waitall. One process, no partner to
 * wait for, so the figures are the CPU cost of a message and nothing else:
 * per message, the calling thread's CPU time (the program and the
 * profiler's wrappers), the whole process's (with the drain thread) and
 * the wall time, over a second pass of WINDOWS windows (the first warms up).
 *
 *   build/bin/mpi_window_bench                       plain
 *   build/bin/hybridprof -F 1 -- build/bin/mpi_window_bench   traced, not sampled
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WINDOW 64

static double now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const long windows = argc > 1 ? atol(argv[1]) : 20000;
  if (windows < 1) {
    fprintf(stderr, "usage: mpi_window_bench [WINDOWS>=1]\n");
    MPI_Finalize();
    return 2;
  }
  static char sent[WINDOW][8], received[WINDOW][8];
  MPI_Request requests[2 * WINDOW];
  for (int pass = 0; pass < 2; ++pass) {
    const double thread0 = now_ns(CLOCK_THREAD_CPUTIME_ID), process0 = now_ns(CLOCK_PROCESS_CPUTIME_ID),
                 wall0 = now_ns(CLOCK_MONOTONIC);
    for (long w = 0; w < windows; ++w) {
      for (int k = 0; k < WINDOW; ++k)
        MPI_Irecv(received[k], 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &requests[k]);
      for (int k = 0; k < WINDOW; ++k)
        MPI_Isend(sent[k], 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &requests[WINDOW + k]);
      MPI_Waitall(2 * WINDOW, requests, MPI_STATUSES_IGNORE);
    }
    const double messages = (double)windows * WINDOW;
    if (pass == 1)
      printf("ns a message: thread CPU %.1f  process CPU %.1f  wall %.1f\n",
             (now_ns(CLOCK_THREAD_CPUTIME_ID) - thread0) / messages,
             (now_ns(CLOCK_PROCESS_CPUTIME_ID) - process0) / messages, (now_ns(CLOCK_MONOTONIC) - wall0) / messages);
  }
  MPI_Finalize();
  return 0;
}
