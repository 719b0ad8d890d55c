/* The progress page: what libparastack-progress.so (preloaded into every rank with --mpi-progress)
 * keeps about the rank's MPI calls, in its own memory, for the monitor to read with
 * process_vm_readv without stopping anybody. The monitor finds it by the library's dynamic symbol
 * PARASTACK_PROGRESS_SYMBOL. Plain C, fixed size and layout: this header is the contract between a
 * library built for the ranks and a monitor that may be of another build, so any change of layout
 * changes PARASTACK_PROGRESS_VERSION and the monitor reads only the version it knows.
 *
 * The facts decide who waits for whom (Prodometer's progress dependence): a receive from r waits
 * on r; a collective on communicator c at sequence s waits on the members of c that have not
 * entered s; a wildcard receive waits on every other member of its communicator.
 *
 * Writers: the rank's threads, with plain stores (no locks, no system calls). The page can be torn
 * while a call enters or leaves; at a hang nothing changes but a poller's `entries` and `polls`,
 * and the monitor reads it twice and keeps it only when both reads agree on everything else. */
#ifndef PARASTACK_MPI_PROGRESS_PAGE_H
#define PARASTACK_MPI_PROGRESS_PAGE_H

#include <stdint.h>

#define PARASTACK_PROGRESS_SYMBOL "parastack_progress_page"
#define PARASTACK_PROGRESS_MAGIC 0x3153475250545350ull /* "PSTPRGS1" little-endian */
#define PARASTACK_PROGRESS_VERSION 1u
#define PARASTACK_PROGRESS_MAX_COMMS 64
#define PARASTACK_PROGRESS_MAX_WAITS 16

/* Peers are world ranks (MPI_COMM_WORLD), translated when the call is made. */
#define PARASTACK_PEER_NONE (-2)    /* the call has no peer */
#define PARASTACK_PEER_ANY (-1)     /* MPI_ANY_SOURCE */
#define PARASTACK_PEER_UNKNOWN (-3) /* a communicator the library did not see created */
#define PARASTACK_PEER_NULL (-4)    /* MPI_PROC_NULL */
#define PARASTACK_TAG_ANY (-1)      /* MPI_ANY_TAG */
#define PARASTACK_COMM_UNKNOWN 0ull /* a communicator the library did not see created */
#define PARASTACK_COMM_WORLD 1ull   /* MPI_COMM_WORLD's id */

/* What the rank is doing now. */
enum parastack_progress_kind {
  PARASTACK_OUTSIDE = 0,    /* in no MPI call (or one that returns at once: test, iprobe, isend) */
  PARASTACK_SEND = 1,       /* a blocking send to `peer` (MPI_Send, Ssend, Bsend, Rsend) */
  PARASTACK_RECV = 2,       /* a blocking receive or probe from `peer` (MPI_Recv, MPI_Probe, Mprobe) */
  PARASTACK_SENDRECV = 3,   /* MPI_Sendrecv(_replace): receives from `peer`, sends to `send_peer` */
  PARASTACK_WAIT = 4,       /* MPI_Wait/Waitall/Waitany/Waitsome on the requests in `waits` */
  PARASTACK_COLLECTIVE = 5, /* a blocking collective on `comm`, the `sequence`-th on it */
  PARASTACK_OTHER = 6       /* another MPI call (Init, Finalize, communicator creation, ...) */
};

/* One call's operation: a point-to-point one (peer, tag) or a collective (comm, sequence). */
struct parastack_progress_operation {
  uint32_t kind; /* PARASTACK_SEND, _RECV or _COLLECTIVE (a pending request's kind) */
  int32_t peer;  /* world rank, or a PARASTACK_PEER_ value */
  int32_t tag;   /* or PARASTACK_TAG_ANY */
  uint32_t reserved;
  uint64_t comm;     /* the communicator's id (below) */
  uint64_t sequence; /* collectives: the sequence number on comm (1 = the first collective) */
};

/* A communicator the rank belongs to. Its id is the same on every member and differs between
 * communicators: MPI_COMM_WORLD is 1; a communicator made from another (split, dup, create, ...)
 * has a hash of the parent's id, how many the parent had made before, and its members' world
 * ranks. 0: a free slot. */
struct parastack_progress_comm {
  uint64_t id;
  int32_t size;         /* its size */
  int32_t rank;         /* this rank's rank in it */
  uint64_t collectives; /* collective calls entered on it, the one in progress included */
};

struct parastack_progress_page {
  uint64_t magic;   /* PARASTACK_PROGRESS_MAGIC once initialised (after MPI_Init) */
  uint32_t version; /* PARASTACK_PROGRESS_VERSION */
  uint32_t bytes;   /* sizeof(struct parastack_progress_page) */
  int32_t world_rank, world_size;
  uint64_t entries;   /* MPI calls entered (every wrapped call, polls included) */
  uint64_t completed; /* calls that completed communication: a blocking call returned, or a test,
                         iprobe or wait found its operation done */
  uint64_t polls;     /* tests and iprobes that found nothing: a polling rank waits here */
  /* The call in progress (kind PARASTACK_OUTSIDE: none). */
  uint32_t kind;
  uint32_t call;                                 /* the MPI function: its index in PARASTACK_PROGRESS_CALLS below */
  struct parastack_progress_operation operation; /* SEND, RECV, SENDRECV (the receive), COLLECTIVE */
  int32_t send_peer;                             /* SENDRECV: the destination */
  uint32_t wait_any;                             /* WAIT: 1 for Waitany/Waitsome (any one completing is progress) */
  uint32_t wait_count;                           /* WAIT: the pending operations in waits (at most MAX_WAITS kept) */
  uint32_t wait_total;                           /* WAIT: how many the call waits for (may exceed wait_count) */
  struct parastack_progress_operation waits[PARASTACK_PROGRESS_MAX_WAITS];
  uint32_t comm_count;    /* slots in use in comms (free slots have id 0) */
  uint32_t comm_overflow; /* communicators not tracked: the table was full */
  struct parastack_progress_comm comms[PARASTACK_PROGRESS_MAX_COMMS];
};

/* The MPI functions `call` names, in this order (index 0: none). */
/* clang-format off */
#define PARASTACK_PROGRESS_CALLS(X)                                                                  \
  X(None) X(MPI_Init) X(MPI_Init_thread) X(MPI_Finalize)                                            \
  X(MPI_Send) X(MPI_Ssend) X(MPI_Bsend) X(MPI_Rsend) X(MPI_Recv) X(MPI_Probe) X(MPI_Mprobe)          \
  X(MPI_Mrecv) X(MPI_Sendrecv) X(MPI_Sendrecv_replace)                                              \
  X(MPI_Wait) X(MPI_Waitall) X(MPI_Waitany) X(MPI_Waitsome)                                         \
  X(MPI_Barrier) X(MPI_Bcast) X(MPI_Reduce) X(MPI_Allreduce) X(MPI_Gather) X(MPI_Gatherv)           \
  X(MPI_Scatter) X(MPI_Scatterv) X(MPI_Allgather) X(MPI_Allgatherv) X(MPI_Alltoall)                 \
  X(MPI_Alltoallv) X(MPI_Alltoallw) X(MPI_Reduce_scatter) X(MPI_Reduce_scatter_block)               \
  X(MPI_Scan) X(MPI_Exscan)                                                                         \
  X(MPI_Comm_split) X(MPI_Comm_split_type) X(MPI_Comm_dup) X(MPI_Comm_create) X(MPI_Comm_free)      \
  X(MPI_Isend) X(MPI_Issend) X(MPI_Irecv) X(MPI_Test) X(MPI_Testall) X(MPI_Testany)                 \
  X(MPI_Testsome) X(MPI_Iprobe) X(MPI_Ibarrier) X(MPI_Ibcast) X(MPI_Ireduce) X(MPI_Iallreduce)      \
  X(MPI_Other)
/* clang-format on */

#define PARASTACK_PROGRESS_CALL_ENUM(name) PARASTACK_CALL_##name,
enum parastack_progress_call { PARASTACK_PROGRESS_CALLS(PARASTACK_PROGRESS_CALL_ENUM) PARASTACK_CALL_COUNT };
#undef PARASTACK_PROGRESS_CALL_ENUM

#endif
