/* ps_progress: an iterative MPI code with known ground truth for faults, for the progress library's
 * tests (libparastack-progress.so preloaded: tests/mpi/progress_page_test.cc). Iteration i:
 *
 *   1. a few ms of compute (CPU time, noinline relax_grid);
 *   2. a ring exchange: MPI_Irecv from the left, MPI_Isend to the right, 8 doubles, tag i % 1000,
 *      MPI_Waitall (small messages: eager, so an Isend completes without its receive);
 *   3. MPI_Allreduce on MPI_COMM_WORLD (the residual, and whether a fault was announced);
 *   4. every 4th iteration MPI_Bcast on a half communicator (MPI_Comm_split by rank < size/2);
 *   5. every 10th iteration MPI_Barrier on MPI_COMM_WORLD.
 *
 *   ps_progress [--iterations N] [--compute-ms M] [--fault KIND --fault-rank R --fault-after S]
 *               [--churn C] [--comms K]
 *
 * Before the loop, --churn C duplicates MPI_COMM_WORLD and frees the copy C times, then --comms K
 * makes K copies that stay: more communicators than the progress page has room for.
 *
 * The faulty rank R decides alone: the fault fires at its first "plain" iteration (no Bcast, no
 * Barrier) that starts S seconds or more after its MPI_Init, and R writes $PS_READY_DIR/fault.R
 * (ready_file.h) just before it enters the faulty state. Every rank writes rank.N after MPI_Init
 * and the split. The kinds, and the ground truth (who waits on whom, forever):
 *
 *   skip-collective  R skips the Allreduce of that iteration and goes on to the next ring
 *                    exchange, where it waits (Waitall) for its left neighbour's message, which
 *                    never comes: every other rank is inside that Allreduce waiting for R, one
 *                    collective further on MPI_COMM_WORLD than R. Faulty: R.
 *   deadlock-pair    R announces the fault through that iteration's Allreduce; right after it R
 *                    and its right neighbour P = (R+1) % size each enter a blocking MPI_Recv from
 *                    the other with a tag nobody sends (DEADLOCK_TAG). The others go on to the
 *                    next iteration and wait there: P's right neighbour in the ring exchange for
 *                    P's message, the rest in the next Allreduce. Faulty: {R, P}.
 *   deadlock-pair-finalize  the same pair, while every other rank, having learned of it in that
 *                    Allreduce, leaves the loop and waits in MPI_Finalize for the pair (the
 *                    classic first test program: two ranks receive from each other, the rest
 *                    finish). Faulty: {R, P}.
 *   wrong-tag        in that iteration's ring exchange R posts its Irecv from the left with
 *                    WRONG_TAG: the left neighbour's message (sent eagerly, so the left goes on)
 *                    never matches, R waits in MPI_Waitall forever, and everyone else waits for R
 *                    in the Allreduce. Faulty: R.
 *   compute          R computes forever outside MPI (noinline compute_forever) instead of that
 *                    iteration's ring exchange: its right neighbour waits for its message, the
 *                    others in the Allreduce. Faulty: R.
 *   unreceived-send  after that iteration's ring exchange R sends its right neighbour a large
 *                    message (1 MiB: a rendezvous, done only once received) with DEADLOCK_TAG,
 *                    which nobody receives, and waits for it in MPI_Wait; everyone else waits for
 *                    R in the Allreduce. Faulty: R.
 *
 * Without a fault it runs N iterations (default 100000) and exits 0; rank 0 prints
 * "iterations N elapsed S". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clocks.h"
#include "ready_file.h"

#define RING_DOUBLES 8
#define DEADLOCK_TAG 31337
#define WRONG_TAG 4242
#define UNRECEIVED_DOUBLES (1 << 17)

enum fault { NONE, SKIP_COLLECTIVE, DEADLOCK_PAIR, DEADLOCK_PAIR_FINALIZE, WRONG_TAG_FAULT, COMPUTE, UNRECEIVED_SEND };

static volatile double sink;
static int rank, size;

__attribute__((noinline, noreturn)) static void compute_forever(void) {
  for (;;)
    for (int i = 1; i < 100000; ++i) sink += 1.0 / i;
}

static void announce_fault(void) {
  char name[32];
  snprintf(name, sizeof name, "fault.%d", rank);
  write_ready_file(name);
}

/* The ring exchange; with a receive_tag other than tag (wrong-tag) the receive never matches. */
__attribute__((noinline)) static void exchange_ring(int tag, int receive_tag, double* halo, double* mine) {
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  MPI_Request requests[2];
  MPI_Irecv(halo, RING_DOUBLES, MPI_DOUBLE, left, receive_tag, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(mine, RING_DOUBLES, MPI_DOUBLE, right, tag, MPI_COMM_WORLD, &requests[1]);
  if (receive_tag != tag) announce_fault();
  MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
}

/* deadlock-pair-finalize's other ranks. Out of line and cold, so that main's call sites keep their
 * code order (the stacks' least-progressed rule reads it: Run.WithoutTheProgressLibrary...). */
__attribute__((noinline, noreturn, cold)) static void finalize_beside_the_pair(void) {
  MPI_Finalize(); /* waits there for the pair, for ever */
  exit(0);
}

static enum fault parse_fault(const char* text) {
  if (strcmp(text, "skip-collective") == 0) return SKIP_COLLECTIVE;
  if (strcmp(text, "deadlock-pair") == 0) return DEADLOCK_PAIR;
  if (strcmp(text, "deadlock-pair-finalize") == 0) return DEADLOCK_PAIR_FINALIZE;
  if (strcmp(text, "wrong-tag") == 0) return WRONG_TAG_FAULT;
  if (strcmp(text, "compute") == 0) return COMPUTE;
  if (strcmp(text, "unreceived-send") == 0) return UNRECEIVED_SEND;
  fprintf(stderr, "ps_progress: unknown fault %s\n", text);
  exit(2);
}

int main(int argc, char** argv) {
  long iterations = 100000;
  double compute_ms = 2, fault_after = 0;
  enum fault fault = NONE;
  int fault_rank = -1, churn = 0, comms = 0;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!value) {
      fprintf(stderr, "ps_progress: %s needs a value\n", argv[i]);
      return 2;
    }
    if (strcmp(argv[i], "--iterations") == 0) {
      iterations = atol(value);
    } else if (strcmp(argv[i], "--compute-ms") == 0) {
      compute_ms = atof(value);
    } else if (strcmp(argv[i], "--fault") == 0) {
      fault = parse_fault(value);
    } else if (strcmp(argv[i], "--fault-rank") == 0) {
      fault_rank = atoi(value);
    } else if (strcmp(argv[i], "--fault-after") == 0) {
      fault_after = atof(value);
    } else if (strcmp(argv[i], "--churn") == 0) {
      churn = atoi(value);
    } else if (strcmp(argv[i], "--comms") == 0) {
      comms = atoi(value);
    } else {
      fprintf(stderr,
              "usage: ps_progress [--iterations N] [--compute-ms M] "
              "[--fault skip-collective|deadlock-pair|deadlock-pair-finalize|wrong-tag|compute|unreceived-send "
              "--fault-rank R "
              "--fault-after S] "
              "[--churn C] [--comms K]\n");
      return 2;
    }
    ++i;
  }
  MPI_Init(&argc, &argv);
  const double start = now();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
  for (int c = 0; c < churn; ++c) {
    MPI_Comm copy;
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    MPI_Comm_free(&copy);
  }
  MPI_Comm* copies = calloc((size_t)comms + 1, sizeof(MPI_Comm));
  for (int c = 0; c < comms; ++c) MPI_Comm_dup(MPI_COMM_WORLD, &copies[c]);
  {
    char name[32];
    snprintf(name, sizeof name, "rank.%d", rank);
    write_ready_file(name);
  }
  const int faulty = fault != NONE && rank == fault_rank;
  const int partner = (fault_rank + 1) % size; /* deadlock-pair's P */
  double halo[RING_DOUBLES], mine[RING_DOUBLES], bcast_value = 0;
  int fired = 0;
  long i = 0;
  for (; i < iterations; ++i) {
    const int plain = i % 4 != 0 && i % 10 != 0;
    const int fires = faulty && !fired && plain && now() - start >= fault_after;
    fired |= fires;
    sink = relax_grid(compute_ms);
    for (int k = 0; k < RING_DOUBLES; ++k) mine[k] = sink + rank + k;
    const int tag = (int)(i % 1000);
    if (fires && fault == COMPUTE) {
      announce_fault();
      compute_forever();
    }
    exchange_ring(tag, fires && fault == WRONG_TAG_FAULT ? WRONG_TAG : tag, halo, mine);
    if (fires && fault == UNRECEIVED_SEND) {
      static double big[UNRECEIVED_DOUBLES];
      MPI_Request request;
      MPI_Isend(big, UNRECEIVED_DOUBLES, MPI_DOUBLE, (rank + 1) % size, DEADLOCK_TAG, MPI_COMM_WORLD, &request);
      announce_fault();
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    if (fires && fault == SKIP_COLLECTIVE) {
      announce_fault();
      continue; /* a plain iteration: nothing else to skip */
    }
    /* The residual, and deadlock-pair's announcement: every rank learns it here. */
    double local[2] = {halo[0], fires && (fault == DEADLOCK_PAIR || fault == DEADLOCK_PAIR_FINALIZE)}, global[2];
    MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (__builtin_expect(global[1] > 0 && fault == DEADLOCK_PAIR_FINALIZE && rank != fault_rank && rank != partner,
                         0)) {
      finalize_beside_the_pair();
    }
    if (global[1] > 0 && (rank == fault_rank || rank == partner)) {
      if (rank == fault_rank) announce_fault();
      int never;
      MPI_Recv(&never, 1, MPI_INT, rank == fault_rank ? partner : fault_rank, DEADLOCK_TAG, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    }
    if (i % 4 == 0) MPI_Bcast(&bcast_value, 1, MPI_DOUBLE, 0, half);
    if (i % 10 == 0) MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0) printf("iterations %ld elapsed %.3f\n", i, now() - start);
  for (int c = 0; c < comms; ++c) MPI_Comm_free(&copies[c]);
  free(copies);
  MPI_Comm_free(&half);
  MPI_Finalize();
  return 0;
}
