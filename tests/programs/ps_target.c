/* ps_target: an MPI program that puts its ranks in a chosen place, for the sampler tests.
 *
 *   ps_target MODE [LAST]   every rank but the last does MODE, the last rank does LAST (default
 *                           MODE); the blocking modes block because the last rank never answers
 *   ps_target exit SECONDS  every rank exchanges with its neighbours for SECONDS, then finalizes
 *   ps_target healthy N     a 1-D stencil for N iterations; rank 0 prints "elapsed <seconds>"
 *
 * Modes: wait (MPI_Irecv + MPI_Wait), recv, barrier, allreduce, testpoll (MPI_Irecv + an
 * MPI_Test loop), compute (a loop several frames deep), halo (a compute loop in a function whose
 * name starts with mpi_), finalize (MPI_Finalize, which waits for the last rank), clock (a loop
 * reading the thread's CPU clock, so that most of its time is spent inside the kernel's vdso),
 * epoll (waits in epoll_wait for an event that never comes, and aborts the job if the wait ever
 * fails, as code that expects no signal does: a ptrace stop would make it fail with EINTR).
 * Each rank writes $PS_READY_DIR/rank.N (its pid) just before entering its mode. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "ready_file.h"

static volatile double sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Three frames of user code below main, none of them inlined, so a test can find them. */
__attribute__((noinline)) static double compute_kernel(int n) {
  double x = 0;
  for (int i = 1; i <= n; ++i) x += 1.0 / ((double)i * (double)i);
  return x;
}

__attribute__((noinline)) static void compute_step(void) { sink = compute_kernel(1 << 16); }

__attribute__((noinline, noreturn)) static void compute_forever(void) {
  for (;;) compute_step();
}

/* An application function whose name looks like MPI's: the name rule is fooled by it. */
__attribute__((noinline, noreturn)) void mpi_exchange_halo(void) {
  for (;;) sink = compute_kernel(1 << 16);
}

/* CLOCK_THREAD_CPUTIME_ID has no fast path in the vdso: the vdso's clock_gettime makes the system
 * call itself, so a sample mostly stops the thread with its pc in the vdso. */
__attribute__((noinline, noreturn)) static void read_cpu_clock_forever(void) {
  struct timespec ts;
  for (;;) {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    sink = (double)ts.tv_nsec;
  }
}

__attribute__((noinline, noreturn)) static void wait_for_event(void) {
  int pipe_ends[2];
  const int poller = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN};
  if (poller < 0 || pipe(pipe_ends) != 0 || epoll_ctl(poller, EPOLL_CTL_ADD, pipe_ends[0], &event) != 0) {
    perror("ps_target: epoll set-up");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (;;) {
    if (epoll_wait(poller, &event, 1, -1) < 0) {
      perror("ps_target: epoll_wait");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
}

static void announce(int rank) {
  char name[64];
  snprintf(name, sizeof name, "rank.%d", rank);
  write_ready_file(name);
}

static void run_mode(const char* mode, int rank, int size) {
  const int last = size - 1;
  int value = rank, result = 0;
  MPI_Request request;
  if (strcmp(mode, "compute") == 0) {
    /* Ready once inside the loop: a sample right after the ready file must not find the rank
     * still writing it (a test once saw no compute_kernel on the stack under load). */
    compute_step();
    announce(rank);
    compute_forever();
  }
  announce(rank);
  if (strcmp(mode, "clock") == 0) {
    read_cpu_clock_forever();
  } else if (strcmp(mode, "epoll") == 0) {
    wait_for_event();
  } else if (strcmp(mode, "halo") == 0) {
    mpi_exchange_halo();
  } else if (strcmp(mode, "wait") == 0) {
    MPI_Irecv(&result, 1, MPI_INT, last, 7, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "recv") == 0) {
    MPI_Recv(&result, 1, MPI_INT, last, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "barrier") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "allreduce") == 0) {
    MPI_Allreduce(&value, &result, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  } else if (strcmp(mode, "testpoll") == 0) {
    int done = 0;
    MPI_Irecv(&result, 1, MPI_INT, last, 7, MPI_COMM_WORLD, &request);
    while (!done) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      sink = compute_kernel(64); /* a little work between polls, as real polling codes do */
    }
  } else if (strcmp(mode, "finalize") == 0) {
    MPI_Finalize();
    exit(0);
  } else {
    fprintf(stderr, "ps_target: unknown mode %s\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

/* Neighbour exchange plus a little computation: a healthy iterative code. */
static void stencil_iteration(int rank, int size, double* halo) {
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  double mine = compute_kernel(20000) + rank;
  MPI_Sendrecv(&mine, 1, MPI_DOUBLE, right, 1, &halo[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(&mine, 1, MPI_DOUBLE, left, 2, &halo[1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: ps_target MODE [LAST] | exit SECONDS | healthy N\n");
    MPI_Finalize();
    return 2;
  }
  double halo[2];
  if (strcmp(argv[1], "exit") == 0 || strcmp(argv[1], "healthy") == 0) {
    const int healthy = strcmp(argv[1], "healthy") == 0;
    const double limit = argc > 2 ? atof(argv[2]) : 1.0;
    announce(rank);
    const double start = now();
    for (long i = 0; !healthy || i < (long)limit; ++i) {
      stencil_iteration(rank, size, halo);
      if (!healthy && i % 64 == 0) {
        /* Everyone agrees when to stop, so no rank leaves a neighbour waiting. */
        int stop = now() - start >= limit, any = 0;
        MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) break;
      }
    }
    if (healthy && rank == 0) printf("elapsed %.3f\n", now() - start);
    MPI_Finalize();
    return 0;
  }
  const char* mode = argv[1];
  const char* last_mode = argc > 2 ? argv[2] : argv[1];
  run_mode(rank == size - 1 ? last_mode : mode, rank, size);
  MPI_Finalize();
  return 0;
}
