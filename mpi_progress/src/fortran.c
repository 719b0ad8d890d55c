/* The Fortran side of libparastack-progress.so. Open MPI's Fortran bindings call PMPI_ directly
 * (mpif.h and `use mpi`: libmpi_mpifh's mpi_send_ is ompi_send_f, which calls PMPI_Send; `use
 * mpi_f08`: libmpi_usempif08 calls ompi_send_f), so the C wrappers never see a Fortran call. Here
 * each wrapped function is defined under every name libmpi_mpifh exports for it (mpi_send,
 * mpi_send_, mpi_send__, MPI_SEND and ompi_send_f), records what the C wrapper would, and calls the
 * real ompi_send_f, found with dlsym(RTLD_NEXT).
 *
 * Fortran handles are integers: they are turned into C handles with PMPI_*_f2c (Open MPI's Fortran
 * MPI_COMM_WORLD is 0), and MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_PROC_NULL and MPI_UNDEFINED have the
 * C values. Every argument is passed by reference; ierr may be NULL (Open MPI checks it). */
#include "recorder.h"

#define EXPORT __attribute__((visibility("default")))
#define CALL(name) PARASTACK_CALL_##name

typedef MPI_Fint fint;
typedef int fortran_logical; /* Open MPI's ompi_fortran_logical_t with gfortran: 4 bytes, nonzero true */

static _Atomic(any_function) slot_PMPI_Comm_f2c, slot_PMPI_Request_f2c;
#define REAL(fn) ((__typeof__(&fn))real_function(&slot_##fn, #fn))

static inline MPI_Comm comm_of(const fint* comm) {
  return *comm == 0 && handles.world ? handles.world : REAL(PMPI_Comm_f2c)(*comm);
}
static inline MPI_Request request_of(fint request) { return REAL(PMPI_Request_f2c)(request); }
static inline int succeeded(const fint* ierr) { return !ierr || *ierr == MPI_SUCCESS; }

/* One function under its five names; REAL_F calls the real one (libmpi_mpifh's). */
#define FORTRAN_ALIAS(target, name) extern EXPORT __typeof__(target) name __attribute__((alias(#target)));
#define FORTRAN_ENTRY(lower, UPPER, params)           \
  static _Atomic(any_function) slot_ompi_##lower##_f; \
  EXPORT void ompi_##lower##_f params;                \
  FORTRAN_ALIAS(ompi_##lower##_f, mpi_##lower)        \
  FORTRAN_ALIAS(ompi_##lower##_f, mpi_##lower##_)     \
  FORTRAN_ALIAS(ompi_##lower##_f, mpi_##lower##__)    \
  FORTRAN_ALIAS(ompi_##lower##_f, UPPER)              \
  void ompi_##lower##_f params
#define REAL_F(lower) ((__typeof__(&ompi_##lower##_f))real_function(&slot_ompi_##lower##_f, "ompi_" #lower "_f"))

/* clang-format 14 reads the first parameter of a macro's parameter list, "(fint* comm", as a
 * multiplication and writes "(fint * comm"; the definitions below are laid out by hand. */
/* clang-format off */

/* Start and end. */
FORTRAN_ENTRY(init, MPI_INIT, (fint* ierr)) {
  REAL_F(init)(ierr);
  if (succeeded(ierr)) start_tracking();
  page.entries++;
  page.completed++;
}

FORTRAN_ENTRY(init_thread, MPI_INIT_THREAD, (fint* required, fint* provided, fint* ierr)) {
  REAL_F(init_thread)(required, provided, ierr);
  if (succeeded(ierr)) start_tracking();
  page.entries++;
  page.completed++;
}

FORTRAN_ENTRY(finalize, MPI_FINALIZE, (fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(finalize)(ierr);
    return;
  }
  enter_blocking(PARASTACK_OTHER, CALL(MPI_Finalize), NULL);
  REAL_F(finalize)(ierr);
  leave_blocking();
}

/* Blocking point-to-point. */
#define FORTRAN_BLOCKING_SEND(lower, UPPER, name)                                                                    \
  FORTRAN_ENTRY(lower, UPPER, (void* buf, fint* count, fint* type, fint* dest, fint* tag, fint* comm, fint* ierr)) { \
    if (!is_tracking()) {                                                                                            \
      REAL_F(lower)(buf, count, type, dest, tag, comm, ierr);                                                        \
      return;                                                                                                        \
    }                                                                                                                \
    const struct parastack_progress_operation op = point_to_point(PARASTACK_SEND, *dest, *tag, comm_of(comm));       \
    enter_blocking(PARASTACK_SEND, CALL(name), &op);                                                                 \
    REAL_F(lower)(buf, count, type, dest, tag, comm, ierr);                                                          \
    leave_blocking();                                                                                                \
  }
FORTRAN_BLOCKING_SEND(send, MPI_SEND, MPI_Send)
FORTRAN_BLOCKING_SEND(ssend, MPI_SSEND, MPI_Ssend)
FORTRAN_BLOCKING_SEND(bsend, MPI_BSEND, MPI_Bsend)
FORTRAN_BLOCKING_SEND(rsend, MPI_RSEND, MPI_Rsend)

FORTRAN_ENTRY(recv, MPI_RECV,
              (void* buf, fint* count, fint* type, fint* source, fint* tag, fint* comm, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(recv)(buf, count, type, source, tag, comm, status, ierr);
    return;
  }
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, *source, *tag, comm_of(comm));
  enter_blocking(PARASTACK_RECV, CALL(MPI_Recv), &op);
  REAL_F(recv)(buf, count, type, source, tag, comm, status, ierr);
  leave_blocking();
}

FORTRAN_ENTRY(probe, MPI_PROBE, (fint* source, fint* tag, fint* comm, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(probe)(source, tag, comm, status, ierr);
    return;
  }
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, *source, *tag, comm_of(comm));
  enter_blocking(PARASTACK_RECV, CALL(MPI_Probe), &op);
  REAL_F(probe)(source, tag, comm, status, ierr);
  leave_blocking();
}

FORTRAN_ENTRY(sendrecv, MPI_SENDRECV,
              (void* sendbuf, fint* sendcount, fint* sendtype, fint* dest, fint* sendtag, void* recvbuf,
               fint* recvcount, fint* recvtype, fint* source, fint* recvtag, fint* comm, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status, ierr);
    return;
  }
  const MPI_Comm c = comm_of(comm);
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, *source, *recvtag, c);
  page.send_peer = world_peer(find_comm(c), *dest);
  enter_blocking(PARASTACK_SENDRECV, CALL(MPI_Sendrecv), &op);
  REAL_F(sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
                   status, ierr);
  leave_blocking();
}

FORTRAN_ENTRY(sendrecv_replace, MPI_SENDRECV_REPLACE,
              (void* buf, fint* count, fint* type, fint* dest, fint* sendtag, fint* source, fint* recvtag, fint* comm,
               fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(sendrecv_replace)(buf, count, type, dest, sendtag, source, recvtag, comm, status, ierr);
    return;
  }
  const MPI_Comm c = comm_of(comm);
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, *source, *recvtag, c);
  page.send_peer = world_peer(find_comm(c), *dest);
  enter_blocking(PARASTACK_SENDRECV, CALL(MPI_Sendrecv_replace), &op);
  REAL_F(sendrecv_replace)(buf, count, type, dest, sendtag, source, recvtag, comm, status, ierr);
  leave_blocking();
}

/* Nonblocking point-to-point. */
#define FORTRAN_NONBLOCKING(lower, UPPER, kind)                                                                       \
  FORTRAN_ENTRY(lower, UPPER,                                                                                         \
                (void* buf, fint* count, fint* type, fint* peer, fint* tag, fint* comm, fint* request, fint* ierr)) { \
    if (!is_tracking()) {                                                                                             \
      REAL_F(lower)(buf, count, type, peer, tag, comm, request, ierr);                                                \
      return;                                                                                                         \
    }                                                                                                                 \
    enter_immediate();                                                                                                \
    REAL_F(lower)(buf, count, type, peer, tag, comm, request, ierr);                                                  \
    if (succeeded(ierr)) {                                                                                            \
      const struct parastack_progress_operation op = point_to_point(kind, *peer, *tag, comm_of(comm));                \
      remember_request(request_of(*request), &op);                                                                    \
    }                                                                                                                 \
  }
FORTRAN_NONBLOCKING(isend, MPI_ISEND, PARASTACK_SEND)
FORTRAN_NONBLOCKING(issend, MPI_ISSEND, PARASTACK_SEND)
FORTRAN_NONBLOCKING(irecv, MPI_IRECV, PARASTACK_RECV)

/* Request arrays: the C handles of the first COMPLETION_COPIES, the rest counted (and, for a call
 * completing all of them, forgotten) one by one. */
static void fortran_enter_wait(uint32_t call, const fint* requests, int count, int any, int completing_all,
                               struct request_copies* copies) {
  copies->count = count < COMPLETION_COPIES ? (count > 0 ? count : 0) : COMPLETION_COPIES;
  for (int i = 0; i < copies->count; ++i) copies->handles[i] = request_of(requests[i]);
  int uncounted = 0;
  for (int i = copies->count; i < count; ++i) {
    const MPI_Request request = request_of(requests[i]);
    if (done_at_once(request)) continue;
    ++uncounted;
    if (completing_all) forget_request(request);
  }
  enter_wait(call, copies->handles, copies->count, uncounted, any, completing_all);
}

static void copy_fortran_requests(struct request_copies* copies, const fint* requests, int count) {
  copies->count = count < COMPLETION_COPIES ? (count > 0 ? count : 0) : COMPLETION_COPIES;
  for (int i = 0; i < copies->count; ++i) copies->handles[i] = request_of(requests[i]);
}

/* Fortran's indices count from 1. */
static inline void forget_fortran_index(const struct request_copies* copies, fint index) {
  if (index != MPI_UNDEFINED) forget_copied(copies, index - 1);
}

FORTRAN_ENTRY(wait, MPI_WAIT, (fint* request, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(wait)(request, status, ierr);
    return;
  }
  struct request_copies copies;
  fortran_enter_wait(CALL(MPI_Wait), request, 1, 0, 1, &copies);
  REAL_F(wait)(request, status, ierr);
  leave_blocking();
}

FORTRAN_ENTRY(waitall, MPI_WAITALL, (fint* count, fint* requests, fint* statuses, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(waitall)(count, requests, statuses, ierr);
    return;
  }
  struct request_copies copies;
  fortran_enter_wait(CALL(MPI_Waitall), requests, *count, 0, 1, &copies);
  REAL_F(waitall)(count, requests, statuses, ierr);
  leave_blocking();
}

FORTRAN_ENTRY(waitany, MPI_WAITANY, (fint* count, fint* requests, fint* index, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(waitany)(count, requests, index, status, ierr);
    return;
  }
  struct request_copies copies;
  fortran_enter_wait(CALL(MPI_Waitany), requests, *count, 1, 0, &copies);
  REAL_F(waitany)(count, requests, index, status, ierr);
  if (succeeded(ierr)) forget_fortran_index(&copies, *index);
  leave_blocking();
}

FORTRAN_ENTRY(waitsome, MPI_WAITSOME,
              (fint* count, fint* requests, fint* outcount, fint* indices, fint* statuses, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(waitsome)(count, requests, outcount, indices, statuses, ierr);
    return;
  }
  struct request_copies copies;
  fortran_enter_wait(CALL(MPI_Waitsome), requests, *count, 1, 0, &copies);
  REAL_F(waitsome)(count, requests, outcount, indices, statuses, ierr);
  if (succeeded(ierr) && *outcount != MPI_UNDEFINED) {
    for (int i = 0; i < *outcount; ++i) forget_fortran_index(&copies, indices[i]);
  }
  leave_blocking();
}

FORTRAN_ENTRY(test, MPI_TEST, (fint* request, fortran_logical* flag, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(test)(request, flag, status, ierr);
    return;
  }
  const MPI_Request handle = request_of(*request);
  enter_immediate();
  REAL_F(test)(request, flag, status, ierr);
  const int found = succeeded(ierr) && *flag;
  if (found) forget_request(handle);
  polled(found);
}

FORTRAN_ENTRY(testall, MPI_TESTALL, (fint* count, fint* requests, fortran_logical* flag, fint* statuses, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(testall)(count, requests, flag, statuses, ierr);
    return;
  }
  struct request_copies copies;
  copy_fortran_requests(&copies, requests, *count);
  enter_immediate();
  REAL_F(testall)(count, requests, flag, statuses, ierr);
  const int found = succeeded(ierr) && *flag;
  if (found) {
    for (int i = 0; i < copies.count; ++i) forget_request(copies.handles[i]);
  }
  polled(found);
}

FORTRAN_ENTRY(testany, MPI_TESTANY,
              (fint* count, fint* requests, fint* index, fortran_logical* flag, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(testany)(count, requests, index, flag, status, ierr);
    return;
  }
  struct request_copies copies;
  copy_fortran_requests(&copies, requests, *count);
  enter_immediate();
  REAL_F(testany)(count, requests, index, flag, status, ierr);
  const int found = succeeded(ierr) && *flag && *index != MPI_UNDEFINED;
  if (found) forget_fortran_index(&copies, *index);
  polled(found);
}

FORTRAN_ENTRY(testsome, MPI_TESTSOME,
              (fint* count, fint* requests, fint* outcount, fint* indices, fint* statuses, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(testsome)(count, requests, outcount, indices, statuses, ierr);
    return;
  }
  struct request_copies copies;
  copy_fortran_requests(&copies, requests, *count);
  enter_immediate();
  REAL_F(testsome)(count, requests, outcount, indices, statuses, ierr);
  const int found = succeeded(ierr) && *outcount != MPI_UNDEFINED && *outcount > 0;
  if (found) {
    for (int i = 0; i < *outcount; ++i) forget_fortran_index(&copies, indices[i]);
  }
  polled(found);
}

FORTRAN_ENTRY(iprobe, MPI_IPROBE,
              (fint* source, fint* tag, fint* comm, fortran_logical* flag, fint* status, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(iprobe)(source, tag, comm, flag, status, ierr);
    return;
  }
  enter_immediate();
  REAL_F(iprobe)(source, tag, comm, flag, status, ierr);
  polled(succeeded(ierr) && *flag);
}

FORTRAN_ENTRY(request_free, MPI_REQUEST_FREE, (fint* request, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(request_free)(request, ierr);
    return;
  }
  enter_immediate();
  forget_request(request_of(*request));
  REAL_F(request_free)(request, ierr);
}

/* Blocking collectives: `params` ends with the comm and ierr, `args` passes them on. */
#define FORTRAN_COLLECTIVE(lower, UPPER, name, params, args)                        \
  FORTRAN_ENTRY(lower, UPPER, params) {                                             \
    if (!is_tracking()) {                                                           \
      REAL_F(lower) args;                                                           \
      return;                                                                       \
    }                                                                               \
    const struct parastack_progress_operation op = collective(comm_of(comm), NULL); \
    enter_blocking(PARASTACK_COLLECTIVE, CALL(name), &op);                          \
    REAL_F(lower) args;                                                             \
    leave_blocking();                                                               \
  }
FORTRAN_COLLECTIVE(barrier, MPI_BARRIER, MPI_Barrier, (fint* comm, fint* ierr), (comm, ierr))
FORTRAN_COLLECTIVE(bcast, MPI_BCAST, MPI_Bcast,
                   (void* buf, fint* count, fint* type, fint* root, fint* comm, fint* ierr),
                   (buf, count, type, root, comm, ierr))
FORTRAN_COLLECTIVE(reduce, MPI_REDUCE, MPI_Reduce,
                   (void* sendbuf, void* recvbuf, fint* count, fint* type, fint* op_, fint* root, fint* comm,
                    fint* ierr),
                   (sendbuf, recvbuf, count, type, op_, root, comm, ierr))
FORTRAN_COLLECTIVE(allreduce, MPI_ALLREDUCE, MPI_Allreduce,
                   (void* sendbuf, void* recvbuf, fint* count, fint* type, fint* op_, fint* comm, fint* ierr),
                   (sendbuf, recvbuf, count, type, op_, comm, ierr))
FORTRAN_COLLECTIVE(gather, MPI_GATHER, MPI_Gather,
                   (void* sendbuf, fint* sendcount, fint* sendtype, void* recvbuf, fint* recvcount, fint* recvtype,
                    fint* root, fint* comm, fint* ierr),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr))
FORTRAN_COLLECTIVE(gatherv, MPI_GATHERV, MPI_Gatherv,
                   (void* sendbuf, fint* sendcount, fint* sendtype, void* recvbuf, fint* recvcounts, fint* displs,
                    fint* recvtype, fint* root, fint* comm, fint* ierr),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, ierr))
FORTRAN_COLLECTIVE(scatter, MPI_SCATTER, MPI_Scatter,
                   (void* sendbuf, fint* sendcount, fint* sendtype, void* recvbuf, fint* recvcount, fint* recvtype,
                    fint* root, fint* comm, fint* ierr),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr))
FORTRAN_COLLECTIVE(scatterv, MPI_SCATTERV, MPI_Scatterv,
                   (void* sendbuf, fint* sendcounts, fint* displs, fint* sendtype, void* recvbuf, fint* recvcount,
                    fint* recvtype, fint* root, fint* comm, fint* ierr),
                   (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr))
FORTRAN_COLLECTIVE(allgather, MPI_ALLGATHER, MPI_Allgather,
                   (void* sendbuf, fint* sendcount, fint* sendtype, void* recvbuf, fint* recvcount, fint* recvtype,
                    fint* comm, fint* ierr),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr))
FORTRAN_COLLECTIVE(allgatherv, MPI_ALLGATHERV, MPI_Allgatherv,
                   (void* sendbuf, fint* sendcount, fint* sendtype, void* recvbuf, fint* recvcounts, fint* displs,
                    fint* recvtype, fint* comm, fint* ierr),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierr))
FORTRAN_COLLECTIVE(alltoall, MPI_ALLTOALL, MPI_Alltoall,
                   (void* sendbuf, fint* sendcount, fint* sendtype, void* recvbuf, fint* recvcount, fint* recvtype,
                    fint* comm, fint* ierr),
                   (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr))
FORTRAN_COLLECTIVE(alltoallv, MPI_ALLTOALLV, MPI_Alltoallv,
                   (void* sendbuf, fint* sendcounts, fint* sdispls, fint* sendtype, void* recvbuf, fint* recvcounts,
                    fint* rdispls, fint* recvtype, fint* comm, fint* ierr),
                   (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, ierr))
FORTRAN_COLLECTIVE(alltoallw, MPI_ALLTOALLW, MPI_Alltoallw,
                   (void* sendbuf, fint* sendcounts, fint* sdispls, fint* sendtypes, void* recvbuf, fint* recvcounts,
                    fint* rdispls, fint* recvtypes, fint* comm, fint* ierr),
                   (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, ierr))
FORTRAN_COLLECTIVE(reduce_scatter, MPI_REDUCE_SCATTER, MPI_Reduce_scatter,
                   (void* sendbuf, void* recvbuf, fint* recvcounts, fint* type, fint* op_, fint* comm, fint* ierr),
                   (sendbuf, recvbuf, recvcounts, type, op_, comm, ierr))
FORTRAN_COLLECTIVE(reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, MPI_Reduce_scatter_block,
                   (void* sendbuf, void* recvbuf, fint* recvcount, fint* type, fint* op_, fint* comm, fint* ierr),
                   (sendbuf, recvbuf, recvcount, type, op_, comm, ierr))
FORTRAN_COLLECTIVE(scan, MPI_SCAN, MPI_Scan,
                   (void* sendbuf, void* recvbuf, fint* count, fint* type, fint* op_, fint* comm, fint* ierr),
                   (sendbuf, recvbuf, count, type, op_, comm, ierr))
FORTRAN_COLLECTIVE(exscan, MPI_EXSCAN, MPI_Exscan,
                   (void* sendbuf, void* recvbuf, fint* count, fint* type, fint* op_, fint* comm, fint* ierr),
                   (sendbuf, recvbuf, count, type, op_, comm, ierr))

/* Nonblocking collectives: `params` ends with the comm, the request and ierr. */
#define FORTRAN_NONBLOCKING_COLLECTIVE(lower, UPPER, params, args)                  \
  FORTRAN_ENTRY(lower, UPPER, params) {                                             \
    if (!is_tracking()) {                                                           \
      REAL_F(lower) args;                                                           \
      return;                                                                       \
    }                                                                               \
    enter_immediate();                                                              \
    const struct parastack_progress_operation op = collective(comm_of(comm), NULL); \
    REAL_F(lower) args;                                                             \
    if (succeeded(ierr)) remember_request(request_of(*request), &op);               \
  }
FORTRAN_NONBLOCKING_COLLECTIVE(ibarrier, MPI_IBARRIER, (fint* comm, fint* request, fint* ierr), (comm, request, ierr))
FORTRAN_NONBLOCKING_COLLECTIVE(ibcast, MPI_IBCAST,
                               (void* buf, fint* count, fint* type, fint* root, fint* comm, fint* request, fint* ierr),
                               (buf, count, type, root, comm, request, ierr))
FORTRAN_NONBLOCKING_COLLECTIVE(ireduce, MPI_IREDUCE,
                               (void* sendbuf, void* recvbuf, fint* count, fint* type, fint* op_, fint* root,
                                fint* comm, fint* request, fint* ierr),
                               (sendbuf, recvbuf, count, type, op_, root, comm, request, ierr))
FORTRAN_NONBLOCKING_COLLECTIVE(iallreduce, MPI_IALLREDUCE,
                               (void* sendbuf, void* recvbuf, fint* count, fint* type, fint* op_, fint* comm,
                                fint* request, fint* ierr),
                               (sendbuf, recvbuf, count, type, op_, comm, request, ierr))

/* Communicator creation and release. */
#define FORTRAN_CREATION(lower, UPPER, call, params, args)                \
  FORTRAN_ENTRY(lower, UPPER, params) {                                   \
    if (!is_tracking()) {                                                 \
      REAL_F(lower) args;                                                 \
      return;                                                             \
    }                                                                     \
    const struct creation creation = enter_creation(call, comm_of(comm)); \
    REAL_F(lower) args;                                                   \
    if (succeeded(ierr)) track_created(&creation, comm_of(newcomm));      \
    leave_blocking();                                                     \
  }
FORTRAN_CREATION(comm_split, MPI_COMM_SPLIT, CALL(MPI_Comm_split),
                 (fint* comm, fint* color, fint* key, fint* newcomm, fint* ierr), (comm, color, key, newcomm, ierr))
FORTRAN_CREATION(comm_split_type, MPI_COMM_SPLIT_TYPE, CALL(MPI_Comm_split_type),
                 (fint* comm, fint* split_type, fint* key, fint* info, fint* newcomm, fint* ierr),
                 (comm, split_type, key, info, newcomm, ierr))
FORTRAN_CREATION(comm_dup, MPI_COMM_DUP, CALL(MPI_Comm_dup), (fint* comm, fint* newcomm, fint* ierr),
                 (comm, newcomm, ierr))
FORTRAN_CREATION(comm_create, MPI_COMM_CREATE, CALL(MPI_Comm_create),
                 (fint* comm, fint* group, fint* newcomm, fint* ierr), (comm, group, newcomm, ierr))
FORTRAN_CREATION(cart_create, MPI_CART_CREATE, CALL(MPI_Other),
                 (fint* comm, fint* ndims, fint* dims, fortran_logical* periods, fortran_logical* reorder,
                  fint* newcomm, fint* ierr),
                 (comm, ndims, dims, periods, reorder, newcomm, ierr))

FORTRAN_ENTRY(comm_free, MPI_COMM_FREE, (fint* comm, fint* ierr)) {
  if (!is_tracking()) {
    REAL_F(comm_free)(comm, ierr);
    return;
  }
  enter_blocking(PARASTACK_OTHER, CALL(MPI_Comm_free), NULL);
  forget_comm(comm_of(comm));
  REAL_F(comm_free)(comm, ierr);
  leave_blocking();
}
/* clang-format on */
