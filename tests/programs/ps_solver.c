/* ps_solver: a healthy iterative MPI code in several styles, for the watchdog tests. Each
 * iteration computes for about COMPUTE_MS (with per-rank imbalance), exchanges halos with its ring
 * neighbours and agrees on a residual; after SECONDS everyone stops together and finalizes.
 *
 *   ps_solver STYLE SECONDS [COMPUTE_MS]
 *
 * Styles: blocking  (MPI_Sendrecv + MPI_Allreduce)
 *         polling   (MPI_Isend/Irecv completed by an MPI_Test busy-wait loop, + MPI_Iallreduce
 *                    polled the same way: a code that never blocks inside MPI)
 *         hybrid    (MPI_THREAD_MULTIPLE: two threads compute and exchange on their own tags)
 * Exit status 0; rank 0 prints "iterations N elapsed S". With the fault injector preloaded
 * (libps_fault.so) a rank can be made to hang. With PS_SOLVER_SPAWN=PROGRAM every rank forks and
 * execs PROGRAM (no arguments) after each iteration and waits for it: ranks that fork and exec
 * while they are sampled (bench/faults.sh). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "ready_file.h"

static volatile double sink;
static int rank, size;
static double compute_ms = 20;

/* Load imbalance, as real decompositions have: ranks compute 1x, 1.5x or 2x the base time, so
 * the faster ones wait inside MPI for the slowest every iteration. (With 1.0-1.2x, a 2-rank
 * sample set of a 4-rank job saw "both computing" in 16 samples in a row, a constant sequence
 * from which the model cannot be built: docs/user-guide.md, limits.) */
static double imbalance(void) { return 1 + 0.5 * (rank % 3); }

static void poll_until_done(MPI_Request* requests, int count) {
  int done = 0;
  while (!done) {
    MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
    if (!done) sink += 1.0; /* the application's own polling loop */
  }
}

__attribute__((noinline)) static void exchange_halos(int style, MPI_Comm comm, int tag, double* halo) {
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  double mine = sink + rank;
  if (style == 0 || style == 2) {
    MPI_Sendrecv(&mine, 1, MPI_DOUBLE, right, tag, &halo[0], 1, MPI_DOUBLE, left, tag, comm, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&mine, 1, MPI_DOUBLE, left, tag + 1, &halo[1], 1, MPI_DOUBLE, right, tag + 1, comm, MPI_STATUS_IGNORE);
  } else {
    MPI_Request requests[4];
    MPI_Irecv(&halo[0], 1, MPI_DOUBLE, left, tag, comm, &requests[0]);
    MPI_Irecv(&halo[1], 1, MPI_DOUBLE, right, tag + 1, comm, &requests[1]);
    MPI_Isend(&mine, 1, MPI_DOUBLE, right, tag, comm, &requests[2]);
    MPI_Isend(&mine, 1, MPI_DOUBLE, left, tag + 1, comm, &requests[3]);
    poll_until_done(requests, 4);
  }
}

__attribute__((noinline)) static int agree_to_stop(int style, double start, double seconds) {
  int stop = now() - start >= seconds, any = 0;
  if (style == 1) {
    MPI_Request request;
    MPI_Iallreduce(&stop, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &request);
    poll_until_done(&request, 1);
  } else {
    MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  return any;
}

/* The second thread of a hybrid rank: its own communicator, and its own agreement to stop, so
 * every rank's helper runs the same number of exchanges. */
struct worker {
  MPI_Comm comm;
  long iterations;
  volatile int stop;
};

static void* hybrid_worker(void* arg) {
  struct worker* w = arg;
  double halo[2];
  int any = 0;
  while (!any) {
    sink = relax_grid(compute_ms * imbalance());
    exchange_halos(2, w->comm, 20, halo);
    ++w->iterations;
    int stop = w->stop;
    MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, w->comm);
  }
  return NULL;
}

static void spawn_and_wait(const char* program) {
  const pid_t child = fork();
  if (child == 0) {
    execl(program, program, (char*)NULL);
    _exit(127);
  }
  if (child > 0) waitpid(child, NULL, 0);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ps_solver blocking|polling|hybrid SECONDS [COMPUTE_MS]\n");
    return 2;
  }
  const int style = strcmp(argv[1], "blocking") == 0  ? 0
                    : strcmp(argv[1], "polling") == 0 ? 1
                    : strcmp(argv[1], "hybrid") == 0  ? 2
                                                      : -1;
  if (style < 0) {
    fprintf(stderr, "ps_solver: unknown style %s\n", argv[1]);
    return 2;
  }
  const double seconds = atof(argv[2]);
  if (argc > 3) compute_ms = atof(argv[3]);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, style == 2 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (style == 2 && provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "ps_solver: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  {
    char name[32];
    snprintf(name, sizeof name, "rank.%d", rank);
    write_ready_file(name); /* with PS_READY_DIR only (a test that must know every rank is up) */
  }
  struct worker helper = {MPI_COMM_NULL, 0, 0};
  pthread_t thread;
  if (style == 2) {
    MPI_Comm_dup(MPI_COMM_WORLD, &helper.comm);
    pthread_create(&thread, NULL, hybrid_worker, &helper);
  }
  const double start = now();
  long iterations = 0;
  double halo[2];
  const char* spawn = getenv("PS_SOLVER_SPAWN");
  do {
    sink = relax_grid(compute_ms * imbalance());
    exchange_halos(style, MPI_COMM_WORLD, 10, halo);
    if (spawn && *spawn) spawn_and_wait(spawn);
    ++iterations;
  } while (!agree_to_stop(style, start, seconds));
  if (style == 2) {
    helper.stop = 1;
    pthread_join(thread, NULL);
    MPI_Comm_free(&helper.comm);
  }
  if (rank == 0) printf("iterations %ld elapsed %.3f\n", iterations, now() - start);
  MPI_Finalize();
  return 0;
}
