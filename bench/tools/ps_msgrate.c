/* ps_msgrate: a message-heavy MPI job of fixed work, for bench/progress-overhead.sh (what the
 * progress library, libparastack-progress.so, costs per MPI call). Each iteration computes WORK
 * steps of a dependent floating-point recurrence (a fixed amount of computation, about a
 * nanosecond a step), then posts WINDOW small receives from each ring neighbour and WINDOW small
 * sends to each (MPI_Irecv, MPI_Isend: BYTES bytes, eager), completes them with one MPI_Waitall,
 * and every ALLREDUCE_EVERY iterations agrees on a sum with MPI_Allreduce. WORK sets the call
 * rate: with 0 the job is nothing but MPI calls, so their cost is the job's.
 *
 *   ps_msgrate [--iterations N] [--work STEPS] [--window W] [--bytes B] [--allreduce-every K]
 *
 * Rank 0 prints "calls C elapsed S calls/s/rank R": C the MPI calls one rank made between the two
 * barriers that bracket the timed part, S the wall time between them, R = C / S. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WINDOW 64
#define MAX_BYTES 1024

int main(int argc, char** argv) {
  long iterations = 20000, allreduce_every = 100, work = 0;
  int window = 4, bytes = 8;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) {
      fprintf(stderr, "ps_msgrate: %s needs a value\n", argv[i]);
      return 2;
    }
    if (strcmp(argv[i], "--iterations") == 0) {
      iterations = atol(argv[i + 1]);
    } else if (strcmp(argv[i], "--work") == 0) {
      work = atol(argv[i + 1]);
    } else if (strcmp(argv[i], "--window") == 0) {
      window = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--bytes") == 0) {
      bytes = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--allreduce-every") == 0) {
      allreduce_every = atol(argv[i + 1]);
    } else {
      fprintf(stderr,
              "usage: ps_msgrate [--iterations N] [--work STEPS] [--window W] [--bytes B] [--allreduce-every K]\n");
      return 2;
    }
  }
  if (window < 1 || window > MAX_WINDOW || bytes < 0 || bytes > MAX_BYTES || allreduce_every < 1 || work < 0) {
    fprintf(stderr, "ps_msgrate: window 1..%d, bytes 0..%d, allreduce-every >= 1, work >= 0\n", MAX_WINDOW, MAX_BYTES);
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  static char in[4 * MAX_WINDOW][MAX_BYTES], out[MAX_BYTES];
  MPI_Request requests[4 * MAX_WINDOW];
  memset(out, rank, sizeof out);
  long calls = 0;
  double sum = 0, x = 1.0 + rank;

  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long i = 0; i < iterations; ++i) {
    int n = 0;
    const int tag = (int)(i % 1000);
    /* Each step waits for the one before: the compiler can neither drop nor vectorise it. */
    for (long k = 0; k < work; ++k) x = x * 0.999999 + 1e-6;
    for (int w = 0; w < window; ++w) {
      MPI_Irecv(in[n], bytes, MPI_BYTE, left, tag, MPI_COMM_WORLD, &requests[n]);
      ++n;
      MPI_Irecv(in[n], bytes, MPI_BYTE, right, tag, MPI_COMM_WORLD, &requests[n]);
      ++n;
    }
    for (int w = 0; w < window; ++w) {
      MPI_Isend(out, bytes, MPI_BYTE, right, tag, MPI_COMM_WORLD, &requests[n++]);
      MPI_Isend(out, bytes, MPI_BYTE, left, tag, MPI_COMM_WORLD, &requests[n++]);
    }
    MPI_Waitall(n, requests, MPI_STATUSES_IGNORE);
    calls += n + 1;
    if ((i + 1) % allreduce_every == 0) {
      double mine = (double)in[0][0], all = 0;
      MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      sum += all;
      ++calls;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double elapsed = MPI_Wtime() - start;
  if (rank == 0) {
    printf("calls %ld elapsed %.3f calls/s/rank %.0f (checksum %.0f %.3f)\n", calls, elapsed, (double)calls / elapsed,
           sum, x);
  }
  MPI_Finalize();
  return 0;
}
