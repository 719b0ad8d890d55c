/* ps_handle_edge: a healthy MPI program whose request and communicator handles lie at the very end
 * of readable memory (the page after them is PROT_NONE), as the last elements of a large array do
 * when malloc places it at the end of its own mapping. A tool that reads one byte past a handle
 * (say, an 8-byte Open MPI handle where MPICH's are 4-byte ints) crashes the rank here instead of
 * reading a neighbour's bytes unnoticed. Built for Open MPI (ps_handle_edge) and, where MPICH is
 * installed, for MPICH (ps_handle_edge_mpich).
 *
 *   ps_handle_edge ITERATIONS
 *
 * Every iteration each rank exchanges with its ring neighbours, completing its two requests by
 * each of MPI_Waitall, Testall, Waitany, Testany, Waitsome, Testsome, Wait and Test in turn, and
 * duplicates and frees a communicator. Rank 0 prints "edges ok ITERATIONS"; exit status 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* `bytes` of memory that end where an unreadable page begins. */
static void* at_the_edge(size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char* base = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED || mprotect(base + page, page, PROT_NONE) != 0) {
    perror("ps_handle_edge: mmap");
    exit(2);
  }
  return base + page - bytes;
}

static void post(MPI_Request* requests, int* in, int* out, int left, int right) {
  MPI_Irecv(in, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(out, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &requests[1]);
}

static void complete(int how, MPI_Request* requests) {
  int flag = 0, index = 0, count = 0, indices[2];
  switch (how) {
    case 0:
      MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
      break;
    case 1:
      while (!flag) MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE);
      break;
    case 2:
      for (int done = 0; done < 2; ++done) MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE);
      break;
    case 3:
      for (int done = 0; done < 2;) {
        MPI_Testany(2, requests, &index, &flag, MPI_STATUS_IGNORE);
        if (flag && index != MPI_UNDEFINED) ++done;
      }
      break;
    case 4:
      for (int done = 0; done < 2; done += count) MPI_Waitsome(2, requests, &count, indices, MPI_STATUSES_IGNORE);
      break;
    case 5:
      for (int done = 0; done < 2; done += count) MPI_Testsome(2, requests, &count, indices, MPI_STATUSES_IGNORE);
      break;
    case 6:
      MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
      MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
      break;
    default:
      for (int r = 0; r < 2; ++r) {
        for (flag = 0; !flag;) MPI_Test(&requests[r], &flag, MPI_STATUS_IGNORE);
      }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 1 ? atoi(argv[1]) : 100;
  MPI_Request* requests = at_the_edge(2 * sizeof(MPI_Request));
  MPI_Comm* copy = at_the_edge(sizeof(MPI_Comm));
  int in = 0, out = rank;
  for (int i = 0; i < iterations; ++i) {
    post(requests, &in, &out, (rank + size - 1) % size, (rank + 1) % size);
    complete(i % 8, requests);
    MPI_Comm_dup(MPI_COMM_WORLD, copy);
    MPI_Barrier(*copy);
    MPI_Comm_free(copy);
  }
  if (rank == 0) printf("edges ok %d\n", iterations);
  MPI_Finalize();
  return 0;
}
