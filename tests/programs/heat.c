/* heat: the example `packaging/bootstrap.sh demo` runs under parastack. A 1-D heat-diffusion
 * solver (Jacobi iterations, halo exchange with both neighbours, a global residual every
 * iteration) with a planted bug: with --bug-rank R --bug-after S, rank R's boundary refinement
 * stops converging after S seconds and loops forever, outside MPI, while the other ranks wait for
 * it in MPI. That is the classic computation-error hang parastack is for.
 *
 *   heat SECONDS [--bug-rank R --bug-after S]
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clocks.h"

#define CELLS 20000

/* Refines the boundary cells until they agree to a tolerance. With the bug armed the tolerance
 * test can never succeed (a NaN compares false), so the loop never ends. */
__attribute__((noinline)) static void refine_boundary(double* u, int broken) {
  double change;
  do {
    change = 0;
    for (int i = 1; i <= 8; ++i) {
      const double next = 0.5 * (u[i - 1] + u[i + 1]);
      change = fmax(change, fabs(next - u[i]));
      u[i] = next;
    }
    if (broken) change = NAN;
  } while (!(change < 1e-12));
}

/* Ranks own unequal shares of the work (1x, 1.5x, 2x), as real decompositions do, so the faster
 * ones wait in MPI for the slowest every step: the variation parastack's model learns from. */
__attribute__((noinline)) static double jacobi_sweep(double* u, double* next, int rank) {
  double residual = 0;
  const int repeats = 40 + 20 * (rank % 3);
  for (int repeat = 0; repeat < repeats; ++repeat) {
    for (int i = 1; i <= CELLS; ++i) next[i] = 0.5 * (u[i - 1] + u[i + 1]);
    for (int i = 1; i <= CELLS; ++i) {
      residual += fabs(next[i] - u[i]);
      u[i] = next[i];
    }
  }
  return residual;
}

__attribute__((noinline)) static void exchange_halos(double* u, int rank, int size) {
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  MPI_Request requests[4];
  MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &requests[0]);
  MPI_Irecv(&u[CELLS + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &requests[1]);
  MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &requests[2]);
  MPI_Isend(&u[CELLS], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &requests[3]);
  MPI_Waitall(4, requests, MPI_STATUSES_IGNORE);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double seconds = argc > 1 ? atof(argv[1]) : 60, bug_after = -1;
  int bug_rank = -1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--bug-rank") == 0) bug_rank = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--bug-after") == 0) bug_after = atof(argv[i + 1]);
  }
  static double u[CELLS + 2], next[CELLS + 2];
  for (int i = 0; i < CELLS + 2; ++i) u[i] = (rank * CELLS + i) % 97 == 0 ? 100.0 : 0.0;
  const double start = now();
  long step = 0;
  for (int stop = 0; !stop; ++step) {
    exchange_halos(u, rank, size);
    const double local = jacobi_sweep(u, next, rank);
    refine_boundary(u, rank == bug_rank && bug_after >= 0 && now() - start > bug_after);
    double residual = 0;
    MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int done = now() - start >= seconds;
    MPI_Allreduce(MPI_IN_PLACE, &done, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    stop = done;
    if (rank == 0 && step % 200 == 0) printf("heat: step %ld, residual %.6g\n", step, residual);
  }
  if (rank == 0) printf("heat: %ld steps in %.1f s\n", step, now() - start);
  MPI_Finalize();
  return 0;
}
