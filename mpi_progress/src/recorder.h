/* What the C (progress.c) and Fortran (fortran.c) wrappers share: the page, the tables behind it
 * and the few stores and loads each wrapped call makes. Private to libparastack-progress.so (hidden
 * visibility); the page's layout is parastack/mpi_progress/page.h.
 *
 * Threads (MPI_THREAD_MULTIPLE): the page holds one call in progress, so it shows whichever thread
 * wrote last, and a thread leaving its call marks the rank OUTSIDE while another may still wait;
 * the counters are plain increments that two threads can lose one of. The tables are claimed slot
 * by slot with atomics, so concurrent calls cannot crash or read a half-written entry; a
 * communicator freed while another thread still uses it is the program's error, as in MPI. */
#ifndef PARASTACK_MPI_PROGRESS_RECORDER_H
#define PARASTACK_MPI_PROGRESS_RECORDER_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parastack/mpi_progress/page.h"

#define RECORDER_HIDDEN __attribute__((visibility("hidden")))

/* The page, through a hidden alias of the exported symbol: the library's own stores go straight to
 * it instead of through the GOT. */
extern RECORDER_HIDDEN struct parastack_progress_page page;

/* The MPI library's functions are found with dlsym when first needed instead of being linked:
 * the library has no DT_NEEDED on libmpi and no undefined MPI symbols, so a process without MPI
 * (mpirun, a shell) loads it and never calls into MPI. */
typedef void (*any_function)(void);
RECORDER_HIDDEN any_function resolve_next(_Atomic(any_function)* slot, const char* name);
static inline any_function real_function(_Atomic(any_function)* slot, const char* name) {
  any_function f = atomic_load_explicit(slot, memory_order_relaxed);
  return __builtin_expect(f != NULL, 1) ? f : resolve_next(slot, name);
}

/* Whether the wrappers record: set at MPI_Init once the MPI library is known to be Open MPI, whose
 * handles the library was compiled for. Until then, and for good under another MPI (MPICH and its
 * kin: Intel MPI, MVAPICH, Cray MPICH, whose handles are ints), every wrapper passes its call on
 * without reading its arguments: read as Open MPI's 8-byte handles, an array of 4-byte ones would
 * be read past its end. */
extern RECORDER_HIDDEN atomic_bool tracking;
static inline bool is_tracking(void) { return atomic_load_explicit(&tracking, memory_order_relaxed); }

/* Open MPI's predefined handles (addresses of its data), found at MPI_Init: NULL before. Taken
 * from the global scope, where a copy relocation in the program puts them, or else from the
 * library that defines them (an MPI loaded with dlopen(RTLD_LOCAL), as by Python's mpi4py). */
struct mpi_handles {
  MPI_Comm world, null;
  MPI_Request request_null;
  /* Open MPI's shared request for an operation done as it was posted (an eager send completed
   * inline, MPI_PROC_NULL): never pending, and one handle for many operations. NULL if unknown. */
  MPI_Request request_empty;
};
extern RECORDER_HIDDEN struct mpi_handles handles;

/* MPI_REQUEST_NULL, or a request that was done when it was posted: nothing a wait waits for. */
static inline int done_at_once(MPI_Request request) {
  return request == handles.request_null || (handles.request_empty && request == handles.request_empty);
}

/* A communicator the library saw created, by its handle. */
struct tracked_comm {
  _Atomic uintptr_t handle; /* key; the table's EMPTY/BUSY/DELETED below */
  uint64_t id;              /* its id, PARASTACK_COMM_UNKNOWN if its parent's was not known */
  int32_t page_slot;        /* its entry in page.comms, -1 if none (a full page: comm_overflow) */
  int32_t size;
  int32_t* world_of;         /* its rank -> world rank (heap); NULL: the identity (MPI_COMM_WORLD) */
  _Atomic uint64_t children; /* communicators made from it so far */
};
extern RECORDER_HIDDEN struct tracked_comm world_comm;
RECORDER_HIDDEN struct tracked_comm* find_tracked_comm(MPI_Comm comm);

/* MPI_COMM_WORLD without a table look-up: most calls are on it. NULL: not tracked. */
static inline struct tracked_comm* find_comm(MPI_Comm comm) {
  return comm == handles.world ? &world_comm : find_tracked_comm(comm);
}

static inline uint64_t comm_id(const struct tracked_comm* c) {
  return c && c->page_slot >= 0 ? c->id : PARASTACK_COMM_UNKNOWN;
}

static inline int32_t world_peer(const struct tracked_comm* c, int peer) {
  if (peer == MPI_ANY_SOURCE) return PARASTACK_PEER_ANY;
  if (peer == MPI_PROC_NULL) return PARASTACK_PEER_NULL;
  if (!c || peer < 0 || peer >= c->size) return PARASTACK_PEER_UNKNOWN;
  return c->world_of ? c->world_of[peer] : peer;
}

static inline int32_t page_tag(int tag) { return tag == MPI_ANY_TAG ? PARASTACK_TAG_ANY : tag; }

/* A point-to-point operation on comm. */
static inline struct parastack_progress_operation point_to_point(uint32_t kind, int peer, int tag, MPI_Comm comm) {
  const struct tracked_comm* c = find_comm(comm);
  struct parastack_progress_operation op = {kind, world_peer(c, peer), page_tag(tag), 0, comm_id(c), 0};
  return op;
}

/* A collective entered on comm: counts it there, and it is that count's collective. */
static inline struct parastack_progress_operation collective(MPI_Comm comm, struct tracked_comm** tracked) {
  struct tracked_comm* c = find_comm(comm);
  struct parastack_progress_operation op = {PARASTACK_COLLECTIVE, PARASTACK_PEER_NONE, 0, 0, PARASTACK_COMM_UNKNOWN, 0};
  if (c && c->page_slot >= 0) {
    op.comm = c->id;
    op.sequence = ++page.comms[c->page_slot].collectives;
  }
  if (tracked) *tracked = c;
  return op;
}

/* The call in progress. `kind` is stored last (after a compiler barrier, no instruction) so the
 * page never shows a kind with the previous call's operation for longer than the call's entry. */
static inline void enter_blocking(uint32_t kind, uint32_t call, const struct parastack_progress_operation* op) {
  page.entries++;
  page.call = call;
  if (op) page.operation = *op;
  atomic_signal_fence(memory_order_release);
  page.kind = kind;
}

static inline void leave_blocking(void) {
  page.kind = PARASTACK_OUTSIDE;
  page.completed++;
}

/* Calls that return at once (isend, irecv, nonblocking collectives): they leave `kind` alone, so
 * another thread's blocking call stays on the page. */
static inline void enter_immediate(void) { page.entries++; }

/* A test or iprobe: whether it found its operation done. */
static inline void polled(int found) {
  if (found) {
    page.completed++;
  } else {
    page.polls++;
  }
}

/* The operations of pending nonblocking requests, by request handle. */
RECORDER_HIDDEN void remember_request(MPI_Request request, const struct parastack_progress_operation* op);
RECORDER_HIDDEN void forget_request(MPI_Request request);
/* Puts the operations of `count` requests on the page (and counts `uncounted` more the call waits
 * for, not in `requests`) and enters the wait. With `completing_all` (Wait, Waitall) the requests
 * are forgotten here, before the real call nulls the handles. Every non-null request is listed:
 * whether one is already complete (an eager send) is Open MPI's to know, not a handle's. */
RECORDER_HIDDEN void enter_wait(uint32_t call, const MPI_Request* requests, int count, int uncounted, int any,
                                int completing_all);

/* Handles copied before a call that may complete some of them and null them (Test*, Waitany,
 * Waitsome): enough for the common case, without malloc; requests past the first
 * COMPLETION_COPIES of an array are not forgotten and stay until their handle is reused. */
#define COMPLETION_COPIES 64
struct request_copies {
  int count;
  MPI_Request handles[COMPLETION_COPIES];
};
static inline void copy_requests(struct request_copies* copies, const MPI_Request* requests, int count) {
  copies->count = !requests || count <= 0 ? 0 : count < COMPLETION_COPIES ? count : COMPLETION_COPIES;
  for (int i = 0; i < copies->count; ++i) copies->handles[i] = requests[i];
}
static inline void forget_copied(const struct request_copies* copies, int index) {
  if (index >= 0 && index < copies->count) forget_request(copies->handles[index]);
}

/* Communicator creation (collective on the parent; Comm_split, _dup, _create...): enter it, then
 * after the real call track what it made. */
struct creation {
  struct tracked_comm* parent;
  uint64_t child_index;
};
RECORDER_HIDDEN struct creation enter_creation(uint32_t call, MPI_Comm parent);
RECORDER_HIDDEN void track_created(const struct creation* creation, MPI_Comm created);
RECORDER_HIDDEN void forget_comm(MPI_Comm comm);

/* After the real MPI_Init or MPI_Init_thread succeeded: fills the page, magic last. */
RECORDER_HIDDEN void start_tracking(void);

#endif
