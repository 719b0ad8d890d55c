/* ps_mpi_start: what a parastack monitor does first, and nothing else: MPI_Init_thread (FUNNELED),
 * then an MPI_Allgather of the host names (every process sends to the others at once), a barrier,
 * MPI_Finalize. bench/mpi-start.sh starts it across nodes again and again to count how often Open
 * MPI's own start crashes, with and without the modex's fence. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int provided = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char mine[256] = {0};
  gethostname(mine, sizeof mine - 1);
  char* all = malloc(sizeof mine * (size_t)size);
  if (!all) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Allgather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  free(all);
  MPI_Finalize();
  return 0;
}
