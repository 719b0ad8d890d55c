/* libps_fault.so: a PMPI shim, preloaded into a real MPI program (LD_PRELOAD), that turns it into a
 * real hang on one rank, for the watchdog's tests. Configured by the environment:
 *
 *   PS_FAULT_RANK=R            the rank to break (nothing happens on the others, or without it)
 *   PS_FAULT_KIND=KIND         spin      compute forever outside MPI (a computation hang)
 *                              loop      the same in a loop that calls two functions on every
 *                                        pass (a solve that never converges): seen in the loop
 *                                        and in either helper, never in one place
 *                              loop-deep the same loop whose helpers spend their time in kernels
 *                                        of their own (a sweep's row kernel; a norm's dot kernel,
 *                                        as cblas_dnrm2 runs OpenBLAS's): found three calls in
 *                              sleep     sleep forever outside MPI (a computation hang, idle)
 *                              deadlock  enter a receive nobody will ever match (communication)
 *                              slow      delay every MPI call for a while, then recover
 *                              stall     sleep once outside MPI for a while, then go on (a rank
 *                                        held up for a while: not a hang)
 *                              kernel    wait once uninterruptibly in the kernel for a while (state
 *                                        D, as a read from a stalled file system does), then go on
 *                              serial    compute once outside MPI for a while, in one function, then
 *                                        go on: a serial phase (a rank 0 building a mesh while the
 *                                        others wait), not a hang
 *   PS_FAULT_AFTER_SECONDS=T   at the first intercepted MPI call T seconds after the rank's first
 *   PS_FAULT_AFTER_CALLS=N     ... or at its N-th intercepted call
 *   PS_FAULT_TRIGGER_FILE=F    ... or at the first intercepted call once file F exists (a test
 *                              creates it when it wants the fault: a condition, not a guess)
 *   PS_FAULT_SLOW_SECONDS=D    slow: how long (default 20)
 *   PS_FAULT_SLOW_MS=M         slow: CPU milliseconds added before each call (default 50)
 *   PS_FAULT_STALL_SECONDS=D   stall, kernel, serial: how long (default 5)
 *   PS_FAULT_RELEASE_FILE=F    stall, kernel, serial: instead, until file F exists (a test's
 *                              condition)
 *   PS_FAULT_TOUCH_MIB=M       serial: MiB of new memory it fills per second meanwhile, as code
 *                              building a data structure does (default 0: none; 4 GiB at most)
 *
 * It defines no MPI_Init: the sampler finds the MPI library as the one that defines MPI_Init, and
 * the injected frames must lie outside it, as a bug in the application's code would. When it
 * fires it writes $PS_READY_DIR/fault.R so a test knows the onset. */
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "ready_file.h"

enum kind { NONE, SPIN, LOOP, LOOP_DEEP, SLEEP, DEADLOCK, SLOW, STALL, KERNEL, SERIAL };

static atomic_int configured; /* 0: not yet, 1: armed on this rank, 2: inactive */
static enum kind kind = NONE;
static double after_seconds = -1, slow_seconds = 20, slow_ms = 50, stall_seconds = 5, touch_mib, first_call;
static long after_calls = -1;
static const char* trigger_file;
static const char* release_file;
static atomic_long calls;
static atomic_int fired;
static atomic_int stalled;
static double fired_at;
static volatile double sink;

static double env_number(const char* name, double fallback) {
  const char* value = getenv(name);
  return value && *value ? atof(value) : fallback;
}

static void configure(void) {
  int expected = 0;
  const char* rank_text = getenv("PS_FAULT_RANK");
  const char* kind_text = getenv("PS_FAULT_KIND");
  int state = 2;
  if (rank_text && kind_text) {
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    kind = strcmp(kind_text, "spin") == 0        ? SPIN
           : strcmp(kind_text, "loop") == 0      ? LOOP
           : strcmp(kind_text, "loop-deep") == 0 ? LOOP_DEEP
           : strcmp(kind_text, "sleep") == 0     ? SLEEP
           : strcmp(kind_text, "deadlock") == 0  ? DEADLOCK
           : strcmp(kind_text, "slow") == 0      ? SLOW
           : strcmp(kind_text, "stall") == 0     ? STALL
           : strcmp(kind_text, "kernel") == 0    ? KERNEL
           : strcmp(kind_text, "serial") == 0    ? SERIAL
                                                 : NONE;
    if (kind == NONE) fprintf(stderr, "libps_fault: unknown PS_FAULT_KIND %s\n", kind_text);
    after_seconds = env_number("PS_FAULT_AFTER_SECONDS", -1);
    after_calls = (long)env_number("PS_FAULT_AFTER_CALLS", -1);
    trigger_file = getenv("PS_FAULT_TRIGGER_FILE");
    if (trigger_file && !*trigger_file) trigger_file = NULL;
    release_file = getenv("PS_FAULT_RELEASE_FILE");
    if (release_file && !*release_file) release_file = NULL;
    slow_seconds = env_number("PS_FAULT_SLOW_SECONDS", 20);
    slow_ms = env_number("PS_FAULT_SLOW_MS", 50);
    stall_seconds = env_number("PS_FAULT_STALL_SECONDS", 5);
    touch_mib = env_number("PS_FAULT_TOUCH_MIB", 0);
    first_call = now();
    if (kind != NONE && rank == atoi(rank_text)) state = 1;
  }
  atomic_compare_exchange_strong(&configured, &expected, state);
}

__attribute__((noinline, noreturn)) static void injected_compute_hang(void) {
  for (;;)
    for (int i = 1; i < 100000; ++i) sink += 1.0 / i;
}

/* A few milliseconds each: a sample finds the loop in one or the other, now and then between. */
__attribute__((noinline)) static void injected_relax(void) {
  for (int i = 1; i < 1000000; ++i) sink += 1.0 / i;
}

__attribute__((noinline)) static void injected_residual(void) {
  for (int i = 1; i < 500000; ++i) sink *= 1.0000001;
}

__attribute__((noinline, noreturn)) static void injected_loop_hang(void) {
  for (;;) {
    injected_relax();
    injected_residual();
  }
}

/* Kernels of about half a millisecond, called from helpers the loop calls: each call is followed by
 * work of its caller's, so none is a tail call that would drop its caller's frame. */
__attribute__((noinline)) static void injected_row_kernel(void) {
  for (int i = 1; i < 150000; ++i) sink += 1.0 / i;
}

__attribute__((noinline)) static void injected_sweep(void) {
  for (int row = 0; row < 4; ++row) {
    injected_row_kernel();
    sink *= 0.5;
  }
}

__attribute__((noinline)) static void injected_deep_relax(void) {
  injected_sweep();
  sink += 1.0;
}

__attribute__((noinline)) static void injected_dot_kernel(void) {
  for (int i = 1; i < 150000; ++i) sink *= 1.0000001;
}

__attribute__((noinline)) static void injected_norm(void) {
  for (int block = 0; block < 4; ++block) {
    injected_dot_kernel();
    sink += 1.0;
  }
}

__attribute__((noinline)) static void injected_deep_residual(void) {
  injected_norm();
  sink *= 0.5;
}

__attribute__((noinline, noreturn)) static void injected_deep_loop_hang(void) {
  for (;;) {
    injected_deep_relax();
    injected_deep_residual();
  }
}

__attribute__((noinline, noreturn)) static void injected_sleep_hang(void) {
  for (;;) sleep(3600);
}

__attribute__((noinline, noreturn)) static void injected_deadlock(void) {
  int never;
  for (;;) PMPI_Recv(&never, 1, MPI_INT, MPI_ANY_SOURCE, 0x7ead, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) static void injected_slowdown(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const double end = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + slow_ms / 1000;
  do {
    for (int i = 1; i < 2000; ++i) sink += 1.0 / i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  } while ((double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec < end);
}

/* Resumed after a signal: the stack shows the same sleep throughout. */
__attribute__((noinline)) static void injected_stall(void) {
  if (release_file) {
    while (access(release_file, F_OK) != 0) usleep(10000);
    return;
  }
  struct timespec left = {.tv_sec = (time_t)stall_seconds,
                          .tv_nsec = (long)((stall_seconds - (double)(time_t)stall_seconds) * 1e9)};
  while (nanosleep(&left, &left) != 0) {
  }
}

/* vfork's parent waits for its child in the kernel, uninterruptibly (state D) and beyond the reach
 * of a ptrace stop, as a reader of a stalled NFS or Lustre mount does. */
__attribute__((noinline)) static void injected_kernel_wait(void) {
  const pid_t child = vfork();
  if (child == 0) {
    injected_stall();
    _exit(0);
  }
  if (child > 0) waitpid(child, NULL, 0);
}

/* One function throughout, as a serial phase's inner loop is; with PS_FAULT_TOUCH_MIB it writes
 * to fresh pages at that rate (its resident size grows), as code filling new arrays does, in
 * 64 MiB regions it keeps until the phase ends (at most 64 of them: 4 GiB). */
__attribute__((noinline)) static void injected_serial_phase(void) {
  enum { kRegions = 64 };
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), region = (size_t)64 << 20;
  char* regions[kRegions];
  int mapped = 0;
  size_t used = region, touched = 0;
  const double start = now();
  for (;;) {
    const double elapsed = now() - start;
    if (release_file ? access(release_file, F_OK) == 0 : elapsed >= stall_seconds) break;
    for (int i = 1; i < 20000; ++i) sink += 1.0 / i;
    for (const size_t due = (size_t)(touch_mib * (1 << 20) * elapsed); touched < due; touched += page, used += page) {
      if (used == region) {
        if (mapped == kRegions) break;
        void* fresh = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED) break;
        regions[mapped++] = fresh;
        used = 0;
      }
      regions[mapped - 1][used] = 1;
    }
  }
  while (mapped > 0) munmap(regions[--mapped], region);
}

static void announce(void) {
  char name[64];
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  snprintf(name, sizeof name, "fault.%d", rank);
  write_ready_file(name);
  fprintf(stderr, "libps_fault: rank %d: injecting %s\n", rank, getenv("PS_FAULT_KIND"));
}

static void maybe_inject(void) {
  if (atomic_load(&configured) == 0) configure();
  if (atomic_load(&configured) != 1) return;
  const long call = atomic_fetch_add(&calls, 1) + 1;
  if (!atomic_load(&fired)) {
    const int due = (after_calls >= 0 && call >= after_calls) ||
                    (after_seconds >= 0 && now() - first_call >= after_seconds) ||
                    (trigger_file && access(trigger_file, F_OK) == 0);
    if (!due) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&fired, &expected, 1)) return;
    fired_at = now();
    announce();
  }
  switch (kind) {
    case SPIN:
      injected_compute_hang();
    case LOOP:
      injected_loop_hang();
    case LOOP_DEEP:
      injected_deep_loop_hang();
    case SLEEP:
      injected_sleep_hang();
    case DEADLOCK:
      injected_deadlock();
    case SLOW:
      if (now() - fired_at < slow_seconds) injected_slowdown();
      return;
    case STALL:
      if (atomic_exchange(&stalled, 1) == 0) injected_stall();
      return;
    case KERNEL:
      if (atomic_exchange(&stalled, 1) == 0) injected_kernel_wait();
      return;
    case SERIAL:
      if (atomic_exchange(&stalled, 1) == 0) injected_serial_phase();
      return;
    case NONE:
      return;
  }
}

/* The intercepted calls: the point-to-point, completion and collective calls codes spend their time
 * in. Each checks for its fault, then does the real call. */
#define WRAP(name, params, args) \
  int name params {              \
    maybe_inject();              \
    return P##name args;         \
  }

WRAP(MPI_Send, (const void* b, int c, MPI_Datatype t, int d, int g, MPI_Comm m), (b, c, t, d, g, m))
WRAP(MPI_Recv, (void* b, int c, MPI_Datatype t, int s, int g, MPI_Comm m, MPI_Status* st), (b, c, t, s, g, m, st))
WRAP(MPI_Isend, (const void* b, int c, MPI_Datatype t, int d, int g, MPI_Comm m, MPI_Request* r), (b, c, t, d, g, m, r))
WRAP(MPI_Irecv, (void* b, int c, MPI_Datatype t, int s, int g, MPI_Comm m, MPI_Request* r), (b, c, t, s, g, m, r))
WRAP(MPI_Sendrecv,
     (const void* sb, int sc, MPI_Datatype st, int d, int sg, void* rb, int rc, MPI_Datatype rt, int s, int rg,
      MPI_Comm m, MPI_Status* x),
     (sb, sc, st, d, sg, rb, rc, rt, s, rg, m, x))
WRAP(MPI_Wait, (MPI_Request * r, MPI_Status* s), (r, s))
WRAP(MPI_Waitall, (int n, MPI_Request* r, MPI_Status* s), (n, r, s))
WRAP(MPI_Waitany, (int n, MPI_Request* r, int* i, MPI_Status* s), (n, r, i, s))
WRAP(MPI_Test, (MPI_Request * r, int* f, MPI_Status* s), (r, f, s))
WRAP(MPI_Testall, (int n, MPI_Request* r, int* f, MPI_Status* s), (n, r, f, s))
WRAP(MPI_Iprobe, (int s, int g, MPI_Comm m, int* f, MPI_Status* st), (s, g, m, f, st))
WRAP(MPI_Probe, (int s, int g, MPI_Comm m, MPI_Status* st), (s, g, m, st))
WRAP(MPI_Barrier, (MPI_Comm m), (m))
WRAP(MPI_Bcast, (void* b, int c, MPI_Datatype t, int root, MPI_Comm m), (b, c, t, root, m))
WRAP(MPI_Reduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm m),
     (s, r, c, t, o, root, m))
WRAP(MPI_Allreduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m), (s, r, c, t, o, m))
WRAP(MPI_Iallreduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m, MPI_Request* q),
     (s, r, c, t, o, m, q))
WRAP(MPI_Allgather, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm m),
     (s, sc, st, r, rc, rt, m))
WRAP(MPI_Alltoall, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, MPI_Comm m),
     (s, sc, st, r, rc, rt, m))
WRAP(MPI_Gather, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm m),
     (s, sc, st, r, rc, rt, root, m))
WRAP(MPI_Scatter, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm m),
     (s, sc, st, r, rc, rt, root, m))
