/* ps_nompi: a process without MPI. "spin" computes forever after writing $PS_READY_DIR/nompi. */
#include <string.h>

#include "ready_file.h"

static volatile double sink;

__attribute__((noinline)) static void spin_step(void) {
  for (int i = 1; i < 100000; ++i) sink += 1.0 / i;
}

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "spin") != 0) {
    fprintf(stderr, "usage: ps_nompi spin\n");
    return 2;
  }
  write_ready_file("nompi");
  for (;;) spin_step();
}
