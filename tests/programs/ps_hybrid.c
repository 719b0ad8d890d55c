/* ps_hybrid: MPI + threads, for the sampler's thread rule.
 *
 *   ps_hybrid multiple   MPI_THREAD_MULTIPLE; on rank 0 a helper thread blocks in MPI_Recv (from
 *                        the last rank, which never sends) while the main thread computes; the
 *                        other ranks compute
 *   ps_hybrid funneled   MPI_THREAD_FUNNELED; every rank computes on its main thread and on a
 *                        helper thread
 *   ps_hybrid server SECONDS [LONG_AT LONG_SECONDS]
 *                        MPI_THREAD_MULTIPLE, healthy, as codes with a communication thread are
 *                        written (Charm++'s comm thread, task runtimes): every rank's server thread
 *                        polls with MPI_Iprobe for ever and answers requests, while its main thread
 *                        computes in steps and, between steps, asks the next rank's server for a
 *                        value (an MPI_Test loop) and learns rank 0's decisions (MPI_Allreduce).
 *                        At the first step after LONG_AT s every main thread computes for
 *                        LONG_SECONDS with no MPI call at all (a long phase). Ends after SECONDS;
 *                        rank 0 prints "steps N long-phase L elapsed E". With
 *                        PS_HYBRID_DEAF=R:AFTER rank R's server stops answering AFTER s in (it
 *                        probes for a tag nobody sends, a lost request): the previous rank's main
 *                        thread polls for its reply for ever, the others block in the next
 *                        MPI_Allreduce, and every server polls on (a hang). With
 *                        PS_HYBRID_SPIN=R:AFTER rank R's main thread, at its first step after
 *                        AFTER s, spins for ever in one loop (hybrid_compute) while its server
 *                        answers on: the others block in the next MPI_Allreduce (a hang whose
 *                        faulty rank is R). PS_HYBRID_LOOP=R:AFTER is the same spin going round
 *                        the step's own two kernels (relax_grid, scan_table) for ever instead.
 * Each rank writes $PS_READY_DIR/rank.N once its threads are in place. */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"
#include "ready_file.h"

static volatile double sink;
static volatile int receiver_started;

__attribute__((noinline)) static void hybrid_compute(void) {
  for (;;)
    for (int i = 1; i < 100000; ++i) sink += 1.0 / i;
}

static int last_rank;

static void* receiver(void* unused) {
  (void)unused;
  int value = 0;
  receiver_started = 1;
  MPI_Recv(&value, 1, MPI_INT, last_rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return NULL;
}

static void* helper_compute(void* unused) {
  (void)unused;
  hybrid_compute();
  return NULL;
}

/* The server mode. Its requests and replies travel on a communicator of their own. */
enum { kTagRequest = 11, kTagReply = 12, kTagNobodySends = 13 };
static MPI_Comm server_comm;
static atomic_int stop_serving;
static int deaf; /* this rank's server stops answering at deaf_at (PS_HYBRID_DEAF) */
static double deaf_at;

__attribute__((noinline)) static void* serve(void* unused) {
  (void)unused;
  while (!atomic_load(&stop_serving)) {
    int flag = 0;
    MPI_Status status;
    const int tag = deaf && now() >= deaf_at ? kTagNobodySends : kTagRequest;
    MPI_Iprobe(MPI_ANY_SOURCE, tag, server_comm, &flag, &status);
    if (!flag) continue;
    int value = 0;
    MPI_Recv(&value, 1, MPI_INT, status.MPI_SOURCE, kTagRequest, server_comm, MPI_STATUS_IGNORE);
    ++value;
    MPI_Send(&value, 1, MPI_INT, status.MPI_SOURCE, kTagReply, server_comm);
  }
  return NULL;
}

__attribute__((noinline)) static int ask_next_rank(int value, int rank, int size) {
  const int next = (rank + 1) % size;
  MPI_Request request;
  int reply = 0, done = 0;
  MPI_Irecv(&reply, 1, MPI_INT, next, kTagReply, server_comm, &request);
  MPI_Send(&value, 1, MPI_INT, next, kTagRequest, server_comm);
  while (!done) MPI_Test(&request, &done, MPI_STATUS_IGNORE);
  return reply;
}

/* Scans a table: the step's second kernel, a place of its own. */
__attribute__((noinline)) static double scan_table(double ms) {
  const double end = now() + ms / 1000;
  double x = 0;
  do
    for (int i = 1; i < 2000; ++i) x += 1.0 / ((double)i + 0.5);
  while (now() < end);
  return x;
}

__attribute__((noinline)) static void long_phase(double seconds) {
  const double end = now() + seconds;
  while (now() < end) sink += relax_grid(20) + scan_table(20);
}

/* Whether the fault variable NAME (R:AFTER) names this rank; *after gets AFTER. */
static int fault_here(const char* name, int rank, double* after) {
  const char* spec = getenv(name);
  int fault_rank = -1;
  return spec && sscanf(spec, "%d:%lf", &fault_rank, after) == 2 && fault_rank == rank;
}

static int run_server(int argc, char** argv) {
  const double seconds = atof(argv[2]);
  const double long_at = argc > 4 ? atof(argv[3]) : 1e30;
  const double long_seconds = argc > 4 ? atof(argv[4]) : 0;
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "ps_hybrid: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_dup(MPI_COMM_WORLD, &server_comm);
  const double start = now();
  double deaf_after = 0, spin_after = 0, loop_after = 0;
  if (fault_here("PS_HYBRID_DEAF", rank, &deaf_after)) {
    deaf = 1;
    deaf_at = start + deaf_after;
  }
  const int spins = fault_here("PS_HYBRID_SPIN", rank, &spin_after);
  const int loops = fault_here("PS_HYBRID_LOOP", rank, &loop_after);
  pthread_t server;
  pthread_create(&server, NULL, serve, NULL);
  char name[64];
  snprintf(name, sizeof name, "rank.%d", rank);
  write_ready_file(name);
  int value = rank, steps = 0, long_done = 0;
  double long_took = 0;
  for (;;) {
    sink += relax_grid(30) + scan_table(20);
    if (spins && now() - start >= spin_after) hybrid_compute();
    if (loops && now() - start >= loop_after) long_phase(1e300);
    value = ask_next_rank(value, rank, size);
    /* Rank 0's clock decides, for everyone at once (the others add nothing to the maximum). */
    int mine[2] = {0, 0}, decide[2];
    if (rank == 0) {
      mine[0] = now() - start >= seconds;
      mine[1] = !long_done && now() - start >= long_at;
    }
    MPI_Allreduce(mine, decide, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ++steps;
    if (decide[1]) {
      const double began = now();
      long_phase(long_seconds);
      long_took = now() - began;
      long_done = 1;
    }
    if (decide[0]) break;
  }
  MPI_Barrier(MPI_COMM_WORLD); /* every request has had its reply */
  atomic_store(&stop_serving, 1);
  pthread_join(server, NULL);
  if (rank == 0) printf("steps %d long-phase %.1f elapsed %.1f\n", steps, long_took, now() - start);
  MPI_Comm_free(&server_comm);
  MPI_Finalize();
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "server") == 0) return run_server(argc, argv);
  if (argc < 2 || (strcmp(argv[1], "multiple") != 0 && strcmp(argv[1], "funneled") != 0)) {
    fprintf(stderr, "usage: ps_hybrid multiple|funneled|server SECONDS [LONG_AT LONG_SECONDS]\n");
    return 2;
  }
  const int multiple = strcmp(argv[1], "multiple") == 0;
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
  if (multiple && provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "ps_hybrid: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  last_rank = size - 1;
  pthread_t thread;
  if (multiple && rank == 0) {
    pthread_create(&thread, NULL, receiver, NULL);
    while (!receiver_started) sched_yield();
  } else {
    pthread_create(&thread, NULL, helper_compute, NULL);
  }
  char name[64];
  snprintf(name, sizeof name, "rank.%d", rank);
  write_ready_file(name);
  hybrid_compute();
}
