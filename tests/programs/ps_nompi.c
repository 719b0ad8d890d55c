/* ps_nompi: a process without MPI, written $PS_READY_DIR/nompi once it runs.
 *
 *   ps_nompi spin       computes forever
 *   ps_nompi threads    computes forever in its main thread and in a second one
 *   ps_nompi lost-stack spins with its stack pointer at an unmapped address (a rank that
 *                       corrupted its stack pointer): nothing can be read at it
 *   ps_nompi kernel F   waits uninterruptibly in the kernel (state D, as a reader of a stalled
 *                       NFS mount does: vfork's parent waits for its child) until file F exists,
 *                       then spins
 *   ps_nompi wait CALL  waits for ever in CALL, one that a stop breaks with EINTR: epoll
 *                       (epoll_wait), io_uring (io_uring_enter), aio (io_getevents), sigwait
 *                       (sigwaitinfo), recv-timeout (recv under SO_RCVTIMEO); exits 3 if the call
 *                       ever fails, as code that expects no signal does, and 2 if it cannot be
 *                       set up here (io_uring disabled, say)
 *   ps_nompi plugins A B F  loads the plugin A (ps_plugin.c), waits in it until file F exists,
 *                       closes it, loads the plugin B and waits in it for ever: B is mapped
 *                       where A was */
#include <dlfcn.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ready_file.h"

static volatile double sink;

/* ps_nompi_rebuilt is this program built again with its loop renamed: a program rebuilt between
 * two steps of a batch job, whose functions sit where the old one's did. */
#ifndef SPIN_STEP
#define SPIN_STEP spin_step
#endif
__attribute__((noinline)) static void SPIN_STEP(void) {
  for (int i = 1; i < 100000; ++i) sink += 1.0 / i;
}

static void* spin_forever(void* unused) {
  (void)unused;
  for (;;) SPIN_STEP();
  return NULL;
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

static void fail(const char* call, int status) {
  fprintf(stderr, "ps_nompi: %s: %s\n", call, strerror(errno));
  exit(status);
}

__attribute__((noinline, noreturn)) static void wait_in(const char* call) {
  int pipe_ends[2], sockets[2], poller = -1, ring = -1;
  aio_context_t aio = 0;
  sigset_t signals;
  if (pipe(pipe_ends) != 0) fail("pipe", 2);
  if (strcmp(call, "epoll") == 0) {
    struct epoll_event event = {.events = EPOLLIN};
    poller = epoll_create1(0);
    if (poller < 0 || epoll_ctl(poller, EPOLL_CTL_ADD, pipe_ends[0], &event) != 0) fail(call, 2);
  } else if (strcmp(call, "io_uring") == 0) {
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    ring = (int)syscall(SYS_io_uring_setup, 4, &params);
    if (ring < 0) fail(call, errno == ENOSYS || errno == EPERM ? 4 : 2); /* 4: disabled here */
  } else if (strcmp(call, "aio") == 0) {
    if (syscall(SYS_io_setup, 4, &aio) != 0) fail(call, errno == ENOSYS || errno == EPERM ? 4 : 2);
  } else if (strcmp(call, "sigwait") == 0) {
    sigemptyset(&signals);
    sigaddset(&signals, SIGUSR1);
    if (sigprocmask(SIG_BLOCK, &signals, NULL) != 0) fail(call, 2);
  } else if (strcmp(call, "recv-timeout") == 0) {
    const struct timeval long_timeout = {100000, 0};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0 ||
        setsockopt(sockets[0], SOL_SOCKET, SO_RCVTIMEO, &long_timeout, sizeof long_timeout) != 0) {
      fail(call, 2);
    }
  } else {
    fprintf(stderr, "ps_nompi: unknown call %s\n", call);
    exit(2);
  }
  write_ready_file("nompi");
  for (;;) {
    long result = 0;
    if (poller >= 0) {
      struct epoll_event event;
      result = epoll_wait(poller, &event, 1, -1);
    } else if (ring >= 0) {
      result = syscall(SYS_io_uring_enter, ring, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0);
    } else if (aio != 0) {
      struct io_event event;
      result = syscall(SYS_io_getevents, aio, 1, 1, &event, NULL);
    } else if (strcmp(call, "sigwait") == 0) {
      result = sigwaitinfo(&signals, NULL);
    } else {
      char byte;
      result = recv(sockets[0], &byte, 1, 0);
    }
    if (result < 0) fail(call, 3);
  }
}

static void wait_in_plugin(const char* library, const char* ready, const char* until) {
  void* plugin = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!plugin) {
    fprintf(stderr, "ps_nompi: %s\n", dlerror());
    exit(2);
  }
  void (*plugin_wait)(const char*, const char*) = (void (*)(const char*, const char*))dlsym(plugin, "plugin_wait");
  if (!plugin_wait) {
    fprintf(stderr, "ps_nompi: %s\n", dlerror());
    exit(2);
  }
  plugin_wait(ready, until);
  dlclose(plugin);
}

int main(int argc, char** argv) {
  if (argc >= 5 && strcmp(argv[1], "plugins") == 0) {
    wait_in_plugin(argv[2], "plugin.a", argv[4]);
    wait_in_plugin(argv[3], "plugin.b", NULL);
  }
  const int lost_stack = argc >= 2 && strcmp(argv[1], "lost-stack") == 0;
  const int in_kernel = argc >= 3 && strcmp(argv[1], "kernel") == 0;
  const int threads = argc >= 2 && strcmp(argv[1], "threads") == 0;
  if (argc >= 3 && strcmp(argv[1], "wait") == 0) wait_in(argv[2]);
  if (argc < 2 || (!lost_stack && !in_kernel && !threads && strcmp(argv[1], "spin") != 0)) {
    fprintf(stderr, "usage: ps_nompi spin|threads|lost-stack|kernel FILE|wait CALL|plugins A B F\n");
    return 2;
  }
  pthread_t second;
  if (threads && pthread_create(&second, NULL, spin_forever, NULL) != 0) return 2;
  write_ready_file("nompi");
  if (lost_stack) spin_without_a_stack();
  if (in_kernel) wait_in_the_kernel_until(argv[2]);
  for (;;) SPIN_STEP();
}
