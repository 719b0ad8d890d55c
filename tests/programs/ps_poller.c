/* ps_poller: a healthy MPI code whose ranks never block inside MPI, for the watchdog's tests and
 * benchmark. Every wait is a polling loop that does a slice of real work between two polls,
 *
 *     while (!done) { MPI_Test(...) or MPI_Iprobe(...); do_some_work(); }
 *
 * as codes that overlap communication with computation are written. Each iteration of a 1-D
 * diffusion solver on a ring of ranks:
 *   1. posts the halo exchange with both neighbours (MPI_Isend, MPI_Irecv);
 *   2. waits for the left halo with an MPI_Iprobe loop (then MPI_Recv, which returns at once), for
 *      the right halo and its own sends with MPI_Test loops; the work between polls relaxes the
 *      interior cells slice by slice (they need no halo), and once they are done, it scans the
 *      field for a local diagnostic;
 *   3. updates the two boundary cells and agrees on the global residual (and on stopping) with an
 *      MPI_Iallreduce completed by an MPI_Test loop, scanning between polls.
 * Ranks own 1x, 1.5x or 2x the base number of cells (load imbalance, as real decompositions have),
 * so the faster ones spend most of their time polling, inside MPI_Test and MPI_Iprobe.
 *
 *   ps_poller SECONDS            run until SECONDS have passed on every rank (all stop together)
 *   ps_poller --iterations N     run exactly N iterations (the checksum is then reproducible)
 *   ... --deadlock R AFTER       a hang of its own (no injector needed): rank R, at its first
 *                                iteration AFTER seconds or more after MPI_Init, writes
 *                                $PS_READY_DIR/fault.R and enters an MPI_Recv nobody matches; the
 *                                others poll for its halo for ever (hpcc's deadlock beside pollers)
 *   PS_POLLER_CELLS=C            base cells per rank (default 20000)
 *   PS_POLLER_STOP_FILE=F        also stop (all together, as at SECONDS) once file F exists: a
 *                                test ends the healthy job when it has seen what it waited for
 *
 * Rank 0 prints "iterations N elapsed S checksum X" (X: the sum of squares of the whole field,
 * which depends only on the iteration count and the number of ranks). Each rank writes
 * $PS_READY_DIR/rank.N (its pid) once MPI is initialized (tests/programs/ready_file.h). With the
 * fault injector preloaded (libps_fault.so) a rank can be made to hang: it wraps MPI_Test,
 * MPI_Iprobe and the rest. Exit status 0, or 2 on bad arguments. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "ready_file.h"

enum { kTagRightward = 31, kTagLeftward = 32, kSlice = 256 };

static volatile double sink;
static int rank, size;

/* The rank's share of the field: u[0] and u[cells + 1] are the halo cells. */
struct field {
  double* u;
  double* next;
  long cells;
};

/* The work a rank does while it waits: first the interior relaxation (cells 2..cells-1, which do
 * not depend on the halos) with its residual, then, while the wait goes on, a scan of the field
 * for a diagnostic (its sum of squares), slice after slice, round and round. */
struct work {
  const struct field* f;
  long interior_next; /* next interior cell to relax; > cells - 1 once done */
  double residual;
  long scan_next;
  double scan_sum;
};

static void start_work(struct work* w, const struct field* f) {
  w->f = f;
  w->interior_next = 2;
  w->residual = 0;
}

static int interior_done(const struct work* w) { return w->interior_next > w->f->cells - 1; }

static double relax_cell(const struct field* f, long i) {
  /* Diffusion with a mild non-linear decay, so the field's energy depends on every step. */
  const double* u = f->u;
  f->next[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]) - 1e-4 * u[i] * fabs(u[i]);
  return fabs(f->next[i] - u[i]);
}

/* One slice of real work: what the rank does between two polls. Not inlined, so the program's
 * call path moves between it and the MPI call it polls, as a healthy polling code's does. */
__attribute__((noinline)) static void do_some_work(struct work* w) {
  const struct field* f = w->f;
  if (!interior_done(w)) {
    const long end = w->interior_next + kSlice < f->cells ? w->interior_next + kSlice : f->cells;
    double residual = 0;
    for (long i = w->interior_next; i < end; ++i) residual += relax_cell(f, i);
    w->residual += residual;
    w->interior_next = end;
    return;
  }
  double sum = 0;
  for (int k = 0; k < kSlice; ++k) {
    if (w->scan_next > f->cells) w->scan_next = 1, w->scan_sum = 0;
    const double v = f->u[w->scan_next++];
    sum += v * v;
  }
  w->scan_sum += sum;
  sink = w->scan_sum;
}

/* What is left of the interior once the waits are over (a rank whose messages came early). */
static void finish_interior(struct work* w) {
  while (!interior_done(w)) do_some_work(w);
}

static void poll_request(MPI_Request* request, struct work* w) {
  int done = 0;
  while (!done) {
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (!done) do_some_work(w);
  }
}

static void poll_probe(int source, int tag, struct work* w) {
  int found = 0;
  while (!found) {
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE);
    if (!found) do_some_work(w);
  }
}

/* The halo exchange, overlapped with the interior relaxation; returns the local residual. */
__attribute__((noinline)) static double exchange_and_relax(struct field* f, struct work* w) {
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  MPI_Request receive_right, sends[2];
  start_work(w, f);
  MPI_Irecv(&f->u[f->cells + 1], 1, MPI_DOUBLE, right, kTagLeftward, MPI_COMM_WORLD, &receive_right);
  MPI_Isend(&f->u[f->cells], 1, MPI_DOUBLE, right, kTagRightward, MPI_COMM_WORLD, &sends[0]);
  MPI_Isend(&f->u[1], 1, MPI_DOUBLE, left, kTagLeftward, MPI_COMM_WORLD, &sends[1]);
  poll_probe(left, kTagRightward, w);
  MPI_Recv(&f->u[0], 1, MPI_DOUBLE, left, kTagRightward, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  poll_request(&receive_right, w);
  poll_request(&sends[0], w);
  poll_request(&sends[1], w);
  finish_interior(w);
  double residual = w->residual + relax_cell(f, 1);
  if (f->cells > 1) residual += relax_cell(f, f->cells);
  double* swap = f->u;
  f->u = f->next;
  f->next = swap;
  return residual;
}

/* A global sum completed by polling: MPI_Iallreduce, then MPI_Test and work in turn. */
__attribute__((noinline)) static void agree(double* values, int count, struct work* w) {
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
  poll_request(&request, w);
}

int main(int argc, char** argv) {
  double seconds = -1, deadlock_after = -1;
  long iterations_wanted = -1;
  int deadlock_rank = -1;
  if (argc >= 4 && strcmp(argv[argc - 3], "--deadlock") == 0) {
    deadlock_rank = atoi(argv[argc - 2]);
    deadlock_after = atof(argv[argc - 1]);
    argc -= 3;
  }
  if (argc == 2 && strcmp(argv[1], "--iterations") != 0) {
    seconds = atof(argv[1]);
  } else if (argc == 3 && strcmp(argv[1], "--iterations") == 0) {
    iterations_wanted = atol(argv[2]);
  }
  if ((seconds <= 0 && iterations_wanted <= 0) || (deadlock_rank >= 0 && deadlock_after < 0)) {
    fprintf(stderr, "usage: ps_poller SECONDS | ps_poller --iterations N  [--deadlock RANK AFTER_SECONDS]\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    char name[32];
    snprintf(name, sizeof name, "rank.%d", rank);
    write_ready_file(name);
  }
  const char* base_text = getenv("PS_POLLER_CELLS");
  const long base = base_text && atol(base_text) > 0 ? atol(base_text) : 20000;
  struct field f;
  f.cells = base + base / 2 * (rank % 3);
  f.u = calloc((size_t)f.cells + 2, sizeof(double));
  f.next = calloc((size_t)f.cells + 2, sizeof(double));
  if (!f.u || !f.next) MPI_Abort(MPI_COMM_WORLD, 3);
  for (long i = 1; i <= f.cells; ++i) f.u[i] = f.next[i] = (i + rank) % 97 == 0 ? 100.0 : 1.0;
  struct work w = {&f, 2, 0, 1, 0};

  const char* stop_file = getenv("PS_POLLER_STOP_FILE");
  const double start = now();
  long iterations = 0;
  double residual = 0;
  for (;;) {
    if (rank == deadlock_rank && now() - start >= deadlock_after) {
      char name[32];
      snprintf(name, sizeof name, "fault.%d", rank);
      write_ready_file(name);
      double never;
      MPI_Recv(&never, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 32000, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double agreed[2] = {exchange_and_relax(&f, &w), 0};
    ++iterations;
    if (iterations_wanted > 0) {
      if (iterations >= iterations_wanted) agreed[1] = 1;
    } else if (now() - start >= seconds || (stop_file && access(stop_file, F_OK) == 0)) {
      agreed[1] = 1;
    }
    agree(agreed, 2, &w);
    residual = agreed[0];
    /* Once every rank has run its time by its own clock: the ranks start a little apart, and rank
     * 0's "elapsed" must not fall short of SECONDS (it read 179.998 of 180 when any rank decided). */
    if (agreed[1] >= size) break;
  }
  double energy = 0;
  for (long i = 1; i <= f.cells; ++i) energy += f.u[i] * f.u[i];
  agree(&energy, 1, &w);
  if (rank == 0) {
    printf("iterations %ld elapsed %.3f residual %.6e checksum %.12e\n", iterations, now() - start, residual, energy);
  }
  free(f.u);
  free(f.next);
  MPI_Finalize();
  return 0;
}
