/* ps_nompi: a process without MPI, written $PS_READY_DIR/nompi once it runs.
 *
 *   ps_nompi spin       computes forever
 *   ps_nompi lost-stack spins with its stack pointer at an unmapped address (a rank that
 *                       corrupted its stack pointer): nothing can be read at it
 *   ps_nompi kernel F   waits uninterruptibly in the kernel (state D, as a reader of a stalled
 *                       NFS mount does: vfork's parent waits for its child) until file F exists,
 *                       then spins */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ready_file.h"

static volatile double sink;

__attribute__((noinline)) static void spin_step(void) {
  for (int i = 1; i < 100000; ++i) sink += 1.0 / i;
}

/* Never returns and never touches memory: a ptrace stop needs no stack, a signal would kill it.
 * Address 16 is in the first page, which Linux never maps (vm.mmap_min_addr). */
__attribute__((noreturn)) static void spin_without_a_stack(void) {
  __asm__ volatile("mov $16, %%rsp\n1: jmp 1b" ::: "memory");
  __builtin_unreachable();
}

/* The child only makes system calls until it exits: all a vfork child may do. */
static void wait_in_the_kernel_until(const char* file) {
  const pid_t child = vfork();
  if (child == 0) {
    while (access(file, F_OK) != 0) usleep(10000);
    _exit(0);
  }
  if (child > 0) waitpid(child, NULL, 0);
}

int main(int argc, char** argv) {
  const int lost_stack = argc >= 2 && strcmp(argv[1], "lost-stack") == 0;
  const int in_kernel = argc >= 3 && strcmp(argv[1], "kernel") == 0;
  if (argc < 2 || (!lost_stack && !in_kernel && strcmp(argv[1], "spin") != 0)) {
    fprintf(stderr, "usage: ps_nompi spin|lost-stack|kernel FILE\n");
    return 2;
  }
  write_ready_file("nompi");
  if (lost_stack) spin_without_a_stack();
  if (in_kernel) wait_in_the_kernel_until(argv[2]);
  for (;;) spin_step();
}
