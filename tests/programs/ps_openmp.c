/* ps_openmp: a hybrid MPI + OpenMP code as most large applications are built (MPI between ranks,
 * MPI_THREAD_FUNNELED, OpenMP threads inside each rank). Every step: a halo exchange, a relaxation
 * sweep in one parallel region, a smoothing pass that repeats another parallel region until it
 * converges, and a global residual. With --bug-rank R and --bug-after S (seconds) or --bug-file F
 * (once file F exists: a test's condition), rank R's smoothing never converges from then on: it
 * runs its parallel region again and again for ever, outside MPI, while the other ranks wait for
 * it in MPI (a computation hang in OpenMP code).
 *
 *   ps_openmp SECONDS [--bug-rank R (--bug-after S | --bug-file F)]   (threads: OMP_NUM_THREADS)
 *
 * Writes $PS_READY_DIR/rank.N once running, and fault.R when the bug strikes. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clocks.h"
#include "ready_file.h"

#define CELLS 40000

static double u[CELLS + 2], next[CELLS + 2];

__attribute__((noinline)) static double relax(int rank) {
  double residual = 0;
  const int repeats = 4 + 2 * (rank % 3); /* unequal shares: the faster ranks wait in MPI */
  for (int repeat = 0; repeat < repeats; ++repeat) {
#pragma omp parallel for reduction(+ : residual)
    for (int i = 1; i <= CELLS; ++i) {
      next[i] = 0.5 * (u[i - 1] + u[i + 1]);
      residual += fabs(next[i] - u[i]);
    }
#pragma omp parallel for
    for (int i = 1; i <= CELLS; ++i) u[i] = next[i];
  }
  return residual;
}

/* Smooths the interior until no cell changes by more than a tolerance. With the bug armed the
 * tolerance test can never succeed (a NaN compares false), so the region repeats for ever. */
__attribute__((noinline)) static void smooth(int broken) {
  double change;
  do {
    change = 0;
#pragma omp parallel for reduction(max : change)
    for (int i = 1; i <= CELLS; ++i) {
      const double smoothed = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
      change = fmax(change, fabs(smoothed - u[i]) * 1e-9);
    }
    if (broken) change = NAN;
  } while (!(change < 1e-6));
}

__attribute__((noinline)) static void exchange_halos(int rank, int size) {
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 1, &u[CELLS + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(&u[CELLS], 1, MPI_DOUBLE, right, 0, &u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double seconds = argc > 1 ? atof(argv[1]) : 60, bug_after = -1;
  int bug_rank = -1;
  const char* bug_file = NULL;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--bug-rank") == 0) bug_rank = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--bug-after") == 0) bug_after = atof(argv[i + 1]);
    if (strcmp(argv[i], "--bug-file") == 0) bug_file = argv[i + 1];
  }
  for (int i = 0; i < CELLS + 2; ++i) u[i] = (rank * CELLS + i) % 97 == 0 ? 100.0 : 0.0;
  char name[32];
  snprintf(name, sizeof name, "rank.%d", rank);
  write_ready_file(name);
  const double start = now();
  long step = 0;
  double residual = 0;
  for (int stop = 0; !stop; ++step) {
    exchange_halos(rank, size);
    const double local = relax(rank);
    const int broken = rank == bug_rank &&
                       ((bug_after >= 0 && now() - start >= bug_after) || (bug_file && access(bug_file, F_OK) == 0));
    if (broken) {
      snprintf(name, sizeof name, "fault.%d", rank);
      write_ready_file(name);
    }
    smooth(broken);
    MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int done = now() - start >= seconds;
    MPI_Allreduce(MPI_IN_PLACE, &done, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    stop = done;
  }
  if (rank == 0) printf("ps_openmp: %ld steps in %.1f s, residual %.6g\n", step, now() - start, residual);
  MPI_Finalize();
  return 0;
}
