/* ps_finale: how a job ends, for the tests of ranks in MPI_Finalize beside others
 * (tests/mpi/run_test.cc). Every rank first iterates for --healthy-seconds S (--compute-ms M of CPU
 * time in relax_grid, 2 by default; a ring exchange with MPI_Sendrecv, an MPI_Allreduce by which rank 0 tells
 * the others when S has passed on its clock, so all leave the loop at the same iteration; with
 * --healthy-until FILE, not before FILE exists either, so a test can end the healthy part when the
 * watchdog is ready rather than after a time that a loaded machine may not honour); then the ending:
 *
 *   ps_finale --healthy-seconds S --end last-message
 *       rank 0 waits in MPI_Recv for a result from rank 1, which rank 1 never sends: ranks 1..N-1
 *       go straight to MPI_Finalize and wait there for rank 0 for ever. The classic last-message
 *       hang. Rank 0 writes $PS_READY_DIR/fault.0 (ready_file.h) just before its receive.
 *   ps_finale --healthy-seconds S --end serial --serial-seconds T
 *       rank 0 works alone for T seconds in one loop (noinline summarize, no I/O, no new memory)
 *       while ranks 1..N-1 wait in MPI_Finalize, then prints its result and finalizes: a job's
 *       serial end, healthy. Rank 0 writes $PS_READY_DIR/serial.0 as it begins.
 *
 * Rank 0 prints "iterations N" when the loop ends. Exit 0 unless hung. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clocks.h"
#include "ready_file.h"

static volatile double sink;

__attribute__((noinline)) static double residual(const double* cells, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += cells[i] * cells[i];
  return sum;
}

/* One loop function for the whole serial end: a rank here stands at one place for T seconds. */
__attribute__((noinline)) static double summarize(double seconds) {
  const double until = now() + seconds;
  double sum = 0;
  while (now() < until)
    for (int i = 1; i < 200000; ++i) sum += 1.0 / i;
  return sum;
}

int main(int argc, char** argv) {
  double healthy_seconds = 5, serial_seconds = 20, compute_ms = 2;
  const char* end = "last-message";
  const char* healthy_until = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--healthy-seconds") == 0) {
      healthy_seconds = atof(argv[i + 1]);
    } else if (strcmp(argv[i], "--end") == 0) {
      end = argv[i + 1];
    } else if (strcmp(argv[i], "--serial-seconds") == 0) {
      serial_seconds = atof(argv[i + 1]);
    } else if (strcmp(argv[i], "--compute-ms") == 0) {
      compute_ms = atof(argv[i + 1]);
    } else if (strcmp(argv[i], "--healthy-until") == 0) {
      healthy_until = argv[i + 1];
    } else {
      fprintf(stderr,
              "usage: ps_finale [--healthy-seconds S] [--healthy-until FILE] [--end last-message|serial] "
              "[--serial-seconds T] [--compute-ms M]\n");
      return 2;
    }
  }
  if (strcmp(end, "last-message") != 0 && strcmp(end, "serial") != 0) {
    fprintf(stderr, "ps_finale: unknown ending %s\n", end);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "ps_finale: needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  enum { kCells = 4096 };
  static double cells[kCells];
  for (int i = 0; i < kCells; ++i) cells[i] = rank + i % 7;
  const double start = now();
  long iterations = 0;
  for (int done = 0; !done; ++iterations) {
    cells[1] += relax_grid(compute_ms) * 1e-9;
    double left, right = cells[kCells - 1];
    MPI_Sendrecv(&right, 1, MPI_DOUBLE, (rank + 1) % size, 1, &left, 1, MPI_DOUBLE, (rank + size - 1) % size, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    cells[0] = left;
    int over = rank == 0 && now() - start >= healthy_seconds && (!healthy_until || access(healthy_until, F_OK) == 0);
    MPI_Allreduce(MPI_IN_PLACE, &over, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    sink = residual(cells, kCells);
    done = over;
  }
  if (rank == 0) {
    printf("iterations %ld\n", iterations);
    fflush(stdout);
    if (strcmp(end, "last-message") == 0) {
      double result;
      write_ready_file("fault.0");
      MPI_Recv(&result, 1, MPI_DOUBLE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* never sent */
    } else {
      write_ready_file("serial.0");
      printf("summary %g\n", summarize(serial_seconds));
      fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
