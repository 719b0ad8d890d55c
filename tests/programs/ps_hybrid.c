/* ps_hybrid: MPI + threads, for the sampler's thread rule.
 *
 *   ps_hybrid multiple   MPI_THREAD_MULTIPLE; on rank 0 a helper thread blocks in MPI_Recv (from
 *                        the last rank, which never sends) while the main thread computes; the
 *                        other ranks compute
 *   ps_hybrid funneled   MPI_THREAD_FUNNELED; every rank computes on its main thread and on a
 *                        helper thread
 * Each rank writes $PS_READY_DIR/rank.N once its threads are in place. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "multiple") != 0 && strcmp(argv[1], "funneled") != 0)) {
    fprintf(stderr, "usage: ps_hybrid multiple|funneled\n");
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
