/* libparastack-progress.so: a PMPI interposition library, preloaded into every rank (LD_PRELOAD),
 * that keeps in the rank's own memory the facts that decide MPI progress (page.h): the call in
 * progress, its peer translated to a world rank, tag and communicator, the sequence number of
 * each collective on its communicator, the operations a wait waits for, and counters of calls
 * entered, completed and polls that found nothing. The monitor reads the page with
 * process_vm_readv (monitor/src/sampler/progress_reader.h) without stopping the rank.
 *
 * Cost per call: a few plain loads and stores, no lock, system call or malloc; communicator
 * creation (rare) pays for the group translation, and a wait asks MPI whether the sends it lists
 * are done already (send_done). Nothing here changes what a call does or
 * returns: every wrapper calls the real function with its own arguments and returns its result:
 * the next library's MPI_X (another PMPI tool preloaded after this one), else the MPI library's.
 *
 * Open MPI only (its handles are pointers and its Fortran entry points are known, fortran.c): in
 * another MPI's ranks (MPICH and its kin) every wrapper only passes its call on (recorder.h,
 * is_tracking). The MPI library is found with dlsym, never linked, so that the library does no harm
 * in the processes it also ends up in (mpirun, shells, /bin/true): they never call an MPI function;
 * and where the program loaded MPI out of the global scope (Python's mpi4py), in the object that
 * holds it (find_in_loaded_objects).
 *
 * Not tracked (calls on them show PARASTACK_COMM_UNKNOWN and PARASTACK_PEER_UNKNOWN):
 * intercommunicators and communicators made by calls not wrapped here (MPI_Comm_idup,
 * MPI_Comm_create_group, MPI_Intercomm_merge, spawn, graph topologies). Requests made by calls not
 * wrapped here (persistent, generalized, nonblocking collectives other than the four wrapped here) are
 * counted in a wait's wait_total but not listed. MPI_Mrecv's peer is not known (the message was
 * matched by an earlier Mprobe). Threads: see recorder.h. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder.h"

#define EXPORT __attribute__((visibility("default")))

/* The page: in .data (initialised), so the file-backed mapping the monitor finds holds it. */
EXPORT struct parastack_progress_page parastack_progress_page = {.version = PARASTACK_PROGRESS_VERSION,
                                                                 .bytes = sizeof(struct parastack_progress_page)};
extern RECORDER_HIDDEN struct parastack_progress_page page __attribute__((alias("parastack_progress_page")));

atomic_bool tracking;
struct mpi_handles handles;
struct tracked_comm world_comm = {.id = PARASTACK_COMM_WORLD, .page_slot = 0};

/* ---- The MPI library's functions ---------------------------------------------------------- */

/* Functions this library only calls for its own bookkeeping, never wraps: straight to PMPI, so that
 * another tool never sees a call the program did not make. */
static bool bookkeeping_only(const char* name) {
  static const char* const names[] = {"PMPI_Comm_group", "PMPI_Group_translate_ranks",
                                      "PMPI_Group_free", "PMPI_Comm_rank",
                                      "PMPI_Comm_size",  "PMPI_Comm_test_inter"};
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i) {
    if (strcmp(name, names[i]) == 0) return true;
  }
  return false;
}

/* The names of the loaded objects (malloc'ed copies: another thread may unload one meanwhile). */
struct object_names {
  char** names;
  size_t count, capacity;
};

static int collect_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct object_names* objects = data;
  if (!info->dlpi_name || !info->dlpi_name[0]) return 0; /* the program itself: the global scope */
  if (objects->count == objects->capacity) {
    const size_t capacity = objects->capacity ? 2 * objects->capacity : 64;
    char** grown = realloc(objects->names, capacity * sizeof *grown);
    if (!grown) return 1;
    objects->names = grown;
    objects->capacity = capacity;
  }
  char* copy = strdup(info->dlpi_name);
  if (copy) objects->names[objects->count++] = copy;
  return 0;
}

static bool inside_this_library(const void* address) {
  Dl_info self, other;
  return dladdr(&parastack_progress_page, &self) && dladdr(address, &other) && self.dli_fbase == other.dli_fbase;
}

/* A symbol of a library outside the global scope, which neither RTLD_NEXT nor RTLD_DEFAULT see: an
 * MPI that the program loaded with dlopen(RTLD_LOCAL), as Python loads mpi4py's module and with it
 * libmpi. Each loaded object is asked along its own dependencies. Once per function, never again. */
static void* find_in_loaded_objects(const char* name) {
  struct object_names objects = {NULL, 0, 0};
  dl_iterate_phdr(collect_object, &objects);
  void* found = NULL;
  for (size_t i = 0; i < objects.count; ++i) {
    if (!found) {
      void* handle = dlopen(objects.names[i], RTLD_LAZY | RTLD_NOLOAD);
      if (handle) {
        void* address = dlsym(handle, name);
        if (address && !inside_this_library(address)) found = address;
        dlclose(handle);
      }
    }
    free(objects.names[i]);
  }
  free(objects.names);
  return found;
}

/* fortran.c's entry points call Open MPI's ompi_X_f. Another MPI's Fortran library (MPICH's
 * libmpichfort) has none, only the names a compiler makes of mpi_x: the same function under each. */
static void* next_fortran_function(const char* name) {
  const size_t length = strlen(name);
  if (strncmp(name, "ompi_", 5) != 0 || length < 8 || length > 64 || strcmp(name + length - 2, "_f") != 0) return NULL;
  char lower[64], upper[64], spelled[80];
  snprintf(lower, sizeof lower, "%.*s", (int)(length - 7), name + 5);
  for (size_t i = 0; i <= strlen(lower); ++i) upper[i] = (char)toupper((unsigned char)lower[i]);
  const char* const forms[] = {"mpi_%s_", "mpi_%s__", "mpi_%s", "MPI_%s"};
  for (size_t f = 0; f < sizeof forms / sizeof *forms; ++f) {
    snprintf(spelled, sizeof spelled, forms[f], f == 3 ? upper : lower);
    void* address = dlsym(RTLD_NEXT, spelled);
    if (!address) address = find_in_loaded_objects(spelled);
    if (address) return address;
  }
  return NULL;
}

any_function resolve_next(_Atomic(any_function)* slot, const char* name) {
  /* A wrapped call goes on to the next library's MPI_X rather than straight to PMPI_X: a PMPI tool
   * preloaded after this one (a profiler, a fault injector) still sees the program's calls. With
   * none, the next MPI_X is the MPI library's own, the same function as its PMPI_X. */
  void* address = NULL;
  if (strncmp(name, "PMPI_", 5) == 0 && !bookkeeping_only(name)) address = dlsym(RTLD_NEXT, name + 1);
  if (!address) address = dlsym(RTLD_NEXT, name);
  if (!address) address = next_fortran_function(name);
  if (!address) address = find_in_loaded_objects(name);
  if (!address) {
    /* Only an MPI program calls a wrapper, and its MPI library defines every function used here;
     * without one there is nothing correct left to do. */
    static const char message[] = "libparastack-progress: an MPI function was called without an MPI library\n";
    ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
    (void)ignored;
    abort();
  }
  any_function f;
  memcpy(&f, &address, sizeof f); /* POSIX's blessing for dlsym's object pointer */
  atomic_store_explicit(slot, f, memory_order_relaxed);
  return f;
}

/* The PMPI functions used, each with its slot. */
/* clang-format off */
#define PMPI_USED(X)                                                                                        \
  X(PMPI_Init) X(PMPI_Init_thread) X(PMPI_Finalize) X(PMPI_Send) X(PMPI_Ssend) X(PMPI_Bsend) X(PMPI_Rsend)  \
  X(PMPI_Recv) X(PMPI_Probe) X(PMPI_Mprobe) X(PMPI_Mrecv) X(PMPI_Sendrecv) X(PMPI_Sendrecv_replace)         \
  X(PMPI_Isend) X(PMPI_Issend) X(PMPI_Irecv) X(PMPI_Wait) X(PMPI_Waitall) X(PMPI_Waitany) X(PMPI_Waitsome) \
  X(PMPI_Test) X(PMPI_Testall) X(PMPI_Testany) X(PMPI_Testsome) X(PMPI_Iprobe) X(PMPI_Request_free)       \
  X(PMPI_Barrier) X(PMPI_Bcast) X(PMPI_Reduce) X(PMPI_Allreduce) X(PMPI_Gather) X(PMPI_Gatherv)            \
  X(PMPI_Scatter) X(PMPI_Scatterv) X(PMPI_Allgather) X(PMPI_Allgatherv) X(PMPI_Alltoall) X(PMPI_Alltoallv) \
  X(PMPI_Alltoallw) X(PMPI_Reduce_scatter) X(PMPI_Reduce_scatter_block) X(PMPI_Scan) X(PMPI_Exscan)        \
  X(PMPI_Ibarrier) X(PMPI_Ibcast) X(PMPI_Ireduce) X(PMPI_Iallreduce) X(PMPI_Comm_split)                    \
  X(PMPI_Comm_split_type) X(PMPI_Comm_dup) X(PMPI_Comm_dup_with_info) X(PMPI_Comm_create)                 \
  X(PMPI_Cart_create) X(PMPI_Comm_free) X(PMPI_Comm_group) X(PMPI_Group_translate_ranks)                   \
  X(PMPI_Group_free) X(PMPI_Comm_rank) X(PMPI_Comm_size) X(PMPI_Comm_test_inter)        \
  X(PMPI_Request_get_status)
/* clang-format on */
#define DECLARE_SLOT(fn) static _Atomic(any_function) slot_##fn;
PMPI_USED(DECLARE_SLOT)
#undef DECLARE_SLOT
#define REAL(fn) ((__typeof__(&fn))real_function(&slot_##fn, #fn))

/* ---- Communicators -------------------------------------------------------------------------- */

/* The table's keys besides handles (Open MPI's handles are pointers, never this small). */
enum { EMPTY = 0, BUSY = 1, DELETED = 2 };

/* Open addressing by handle; a key is never stored past an EMPTY slot of its probe sequence
 * (inserts take the first free slot and slots only go back to DELETED), so a look-up stops there. */
#define COMM_BITS 8
#define COMM_SLOTS (1u << COMM_BITS)
static struct tracked_comm comms[COMM_SLOTS];
/* Which entries of page.comms are taken (entry 0: MPI_COMM_WORLD). */
static atomic_bool page_slot_taken[PARASTACK_PROGRESS_MAX_COMMS];

static inline size_t handle_hash(uintptr_t handle, unsigned bits) {
  return (size_t)(((uint64_t)handle * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

struct tracked_comm* find_tracked_comm(MPI_Comm comm) {
  const uintptr_t key = (uintptr_t)comm;
  const size_t home = handle_hash(key, COMM_BITS);
  for (size_t i = 0; i < COMM_SLOTS; ++i) {
    struct tracked_comm* c = &comms[(home + i) % COMM_SLOTS];
    const uintptr_t k = atomic_load_explicit(&c->handle, memory_order_acquire);
    if (k == key) return c;
    if (k == EMPTY) return NULL;
  }
  return NULL;
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The same on every member: from the parent's id, how many the parent had made before, and the
 * members' world ranks in the new communicator's order. Never 0 (unknown) or 1 (world). */
static uint64_t derived_id(uint64_t parent, uint64_t child_index, const int32_t* world_of, int size) {
  uint64_t h = splitmix64(parent);
  h = splitmix64(h ^ child_index);
  h = splitmix64(h ^ (uint64_t)size);
  for (int i = 0; i < size; ++i) h = splitmix64(h ^ (uint32_t)world_of[i]);
  return h <= PARASTACK_COMM_WORLD ? h + 2 : h;
}

static int claim_page_slot(void) {
  for (int s = 1; s < PARASTACK_PROGRESS_MAX_COMMS; ++s) {
    bool expected = false;
    if (atomic_compare_exchange_strong(&page_slot_taken[s], &expected, true)) return s;
  }
  return -1;
}

static void release_page_slot(int s) {
  page.comms[s].id = PARASTACK_COMM_UNKNOWN; /* first: the monitor sees a free slot, not a stale id */
  atomic_signal_fence(memory_order_release);
  page.comms[s].size = 0;
  page.comms[s].rank = 0;
  page.comms[s].collectives = 0;
  __atomic_fetch_sub(&page.comm_count, 1u, __ATOMIC_RELAXED);
  atomic_store(&page_slot_taken[s], false);
}

static void remove_comm(struct tracked_comm* c, uintptr_t key) {
  uintptr_t expected = key;
  if (!atomic_compare_exchange_strong(&c->handle, &expected, BUSY)) return;
  if (c->page_slot >= 0) release_page_slot(c->page_slot);
  free(c->world_of);
  c->world_of = NULL;
  atomic_store_explicit(&c->handle, DELETED, memory_order_release);
}

void forget_comm(MPI_Comm comm) {
  if (comm == handles.world || comm == handles.null) return;
  struct tracked_comm* c = find_tracked_comm(comm);
  if (c) remove_comm(c, (uintptr_t)comm);
}

/* The new communicator's world ranks, in its rank order (malloc'ed); NULL if not translatable. */
static int32_t* world_ranks_of(MPI_Comm comm, int size) {
  int32_t* world_of = malloc(sizeof(int32_t) * (size_t)size);
  int* ranks = malloc(sizeof(int) * (size_t)size);
  int* translated = malloc(sizeof(int) * (size_t)size);
  MPI_Group group, world_group;
  int ok = world_of && ranks && translated;
  if (ok) ok = REAL(PMPI_Comm_group)(comm, &group) == MPI_SUCCESS;
  if (ok) {
    if (REAL(PMPI_Comm_group)(handles.world, &world_group) == MPI_SUCCESS) {
      for (int i = 0; i < size; ++i) ranks[i] = i;
      ok = REAL(PMPI_Group_translate_ranks)(group, size, ranks, world_group, translated) == MPI_SUCCESS;
      REAL(PMPI_Group_free)(&world_group);
    } else {
      ok = 0;
    }
    REAL(PMPI_Group_free)(&group);
  }
  if (ok) {
    for (int i = 0; i < size; ++i)
      world_of[i] = translated[i] == MPI_UNDEFINED ? PARASTACK_PEER_UNKNOWN : translated[i];
  }
  free(ranks);
  free(translated);
  if (!ok) {
    free(world_of);
    return NULL;
  }
  return world_of;
}

struct creation enter_creation(uint32_t call, MPI_Comm parent) {
  struct creation creation = {NULL, 0};
  /* Collective on the parent: counted there like any collective, so sequences stay aligned. */
  const struct parastack_progress_operation op = collective(parent, &creation.parent);
  if (creation.parent) creation.child_index = atomic_fetch_add(&creation.parent->children, 1);
  enter_blocking(PARASTACK_COLLECTIVE, call, &op);
  return creation;
}

void track_created(const struct creation* creation, MPI_Comm created) {
  if (created == handles.null || !handles.world) return;
  int inter = 0, size = 0, rank = 0;
  if (REAL(PMPI_Comm_test_inter)(created, &inter) != MPI_SUCCESS || inter) return;
  if (REAL(PMPI_Comm_size)(created, &size) != MPI_SUCCESS || size <= 0) return;
  if (REAL(PMPI_Comm_rank)(created, &rank) != MPI_SUCCESS) return;
  int32_t* world_of = world_ranks_of(created, size);
  if (!world_of) return;
  const uint64_t parent_id = creation->parent ? creation->parent->id : PARASTACK_COMM_UNKNOWN;
  const uint64_t id = parent_id == PARASTACK_COMM_UNKNOWN
                          ? PARASTACK_COMM_UNKNOWN
                          : derived_id(parent_id, creation->child_index, world_of, size);

  /* A stale entry with this handle (freed in a way not seen here) goes first. */
  const uintptr_t key = (uintptr_t)created;
  struct tracked_comm* stale = find_tracked_comm(created);
  if (stale) remove_comm(stale, key);
  const size_t home = handle_hash(key, COMM_BITS);
  struct tracked_comm* c = NULL;
  for (size_t i = 0; i < COMM_SLOTS && !c; ++i) {
    struct tracked_comm* candidate = &comms[(home + i) % COMM_SLOTS];
    uintptr_t k = atomic_load_explicit(&candidate->handle, memory_order_relaxed);
    if ((k == EMPTY || k == DELETED) && atomic_compare_exchange_strong(&candidate->handle, &k, BUSY)) c = candidate;
  }
  if (!c) {
    free(world_of);
    __atomic_fetch_add(&page.comm_overflow, 1u, __ATOMIC_RELAXED);
    return;
  }
  c->id = id;
  c->size = size;
  c->world_of = world_of;
  atomic_store_explicit(&c->children, 0, memory_order_relaxed);
  c->page_slot = -1;
  if (id != PARASTACK_COMM_UNKNOWN) {
    c->page_slot = claim_page_slot();
    if (c->page_slot < 0) {
      __atomic_fetch_add(&page.comm_overflow, 1u, __ATOMIC_RELAXED);
    } else {
      struct parastack_progress_comm* slot = &page.comms[c->page_slot];
      slot->size = size;
      slot->rank = rank;
      slot->collectives = 0;
      atomic_signal_fence(memory_order_release);
      slot->id = id; /* last: a slot with an id is complete */
      __atomic_fetch_add(&page.comm_count, 1u, __ATOMIC_RELAXED);
    }
  }
  atomic_store_explicit(&c->handle, key, memory_order_release);
}

/* ---- Requests ------------------------------------------------------------------------------- */

/* Open addressing by request handle, fixed size, no malloc: a request that finds no slot within
 * REQUEST_PROBES of its home is simply not listed in a wait. Keys apart from the operations, so a
 * probe reads a few cache lines. */
#define REQUEST_BITS 12
#define REQUEST_SLOTS (1u << REQUEST_BITS)
#define REQUEST_PROBES 32
static _Atomic uintptr_t request_keys[REQUEST_SLOTS];
static struct parastack_progress_operation request_ops[REQUEST_SLOTS];

static long find_request(uintptr_t key) {
  const size_t home = handle_hash(key, REQUEST_BITS);
  for (size_t i = 0; i < REQUEST_PROBES; ++i) {
    const size_t at = (home + i) & (REQUEST_SLOTS - 1);
    const uintptr_t k = atomic_load_explicit(&request_keys[at], memory_order_acquire);
    if (k == key) return (long)at;
    if (k == EMPTY) return -1;
  }
  return -1;
}

void remember_request(MPI_Request request, const struct parastack_progress_operation* op) {
  const uintptr_t key = (uintptr_t)request;
  if (key <= DELETED || done_at_once(request)) return;
  const size_t home = handle_hash(key, REQUEST_BITS);
  long chosen = -1;
  uintptr_t chosen_key = EMPTY;
  /* The handle's own slot if it is still there (a request completed in a way not seen here, its
   * handle now reused), else the first free one. */
  for (size_t i = 0; i < REQUEST_PROBES; ++i) {
    const size_t at = (home + i) & (REQUEST_SLOTS - 1);
    const uintptr_t k = atomic_load_explicit(&request_keys[at], memory_order_relaxed);
    if (k == key) {
      chosen = (long)at;
      chosen_key = k;
      break;
    }
    if ((k == EMPTY || k == DELETED) && chosen < 0) {
      chosen = (long)at;
      chosen_key = k;
    }
    if (k == EMPTY) break;
  }
  if (chosen < 0 || !atomic_compare_exchange_strong(&request_keys[chosen], &chosen_key, BUSY)) return;
  request_ops[chosen] = *op;
  atomic_store_explicit(&request_keys[chosen], key, memory_order_release);
}

void forget_request(MPI_Request request) {
  const uintptr_t key = (uintptr_t)request;
  if (key <= DELETED || done_at_once(request)) return;
  const long at = find_request(key);
  uintptr_t expected = key;
  if (at >= 0) atomic_compare_exchange_strong(&request_keys[at], &expected, DELETED);
}

/* A send already complete when the wait begins (an eager message, copied out during MPI_Isend) is
 * nothing the rank waits for: listed, it would draw a false "waits for" edge to a peer that may be
 * far ahead. Only the sends that would be listed are asked: a complete one answers from its flag;
 * an incomplete one (a rendezvous, a large message) costs one progress poll, which the wait itself
 * begins with anyway. Receives are not: most are still pending here, and each would cost a poll. */
static int send_done(MPI_Request request) {
  int flag = 0;
  return REAL(PMPI_Request_get_status)(request, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag;
}

void enter_wait(uint32_t call, const MPI_Request* requests, int count, int uncounted, int any, int completing_all) {
  uint32_t listed = 0, total = (uint32_t)(uncounted > 0 ? uncounted : 0);
  for (int i = 0; requests && i < count; ++i) {
    const MPI_Request request = requests[i];
    if (done_at_once(request)) continue;
    ++total;
    if (listed < PARASTACK_PROGRESS_MAX_WAITS) {
      const long at = find_request((uintptr_t)request);
      if (at >= 0 && request_ops[at].kind == PARASTACK_SEND && send_done(request)) {
        --total;
      } else if (at >= 0) {
        page.waits[listed++] = request_ops[at];
      }
    }
    if (completing_all) forget_request(request);
  }
  page.entries++;
  page.call = call;
  page.wait_any = (uint32_t)any;
  page.wait_count = listed;
  page.wait_total = total;
  atomic_signal_fence(memory_order_release);
  page.kind = PARASTACK_WAIT;
}

/* ---- Start ---------------------------------------------------------------------------------- */

static void* global_symbol(const char* name) {
  void* address = dlsym(RTLD_DEFAULT, name);
  return address ? address : find_in_loaded_objects(name);
}

void start_tracking(void) {
  static atomic_int started;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&started, &expected, 1)) return;
  handles.world = (MPI_Comm)global_symbol("ompi_mpi_comm_world");
  handles.null = (MPI_Comm)global_symbol("ompi_mpi_comm_null");
  handles.request_null = (MPI_Request)global_symbol("ompi_request_null");
  handles.request_empty = (MPI_Request)global_symbol("ompi_request_empty");
  /* Not Open MPI: the wrappers only pass calls on. */
  if (!handles.world || !handles.null || !handles.request_null) return;
  int rank = -1, size = 0;
  if (REAL(PMPI_Comm_rank)(handles.world, &rank) != MPI_SUCCESS ||
      REAL(PMPI_Comm_size)(handles.world, &size) != MPI_SUCCESS) {
    return;
  }
  world_comm.size = size;
  atomic_store(&page_slot_taken[0], true);
  page.world_rank = rank;
  page.world_size = size;
  page.kind = PARASTACK_OUTSIDE;
  page.comms[0].size = size;
  page.comms[0].rank = rank;
  page.comms[0].collectives = 0;
  page.comms[0].id = PARASTACK_COMM_WORLD;
  page.comm_count = 1;
  atomic_store(&tracking, true);
  __atomic_store_n(&page.magic, PARASTACK_PROGRESS_MAGIC, __ATOMIC_RELEASE); /* last */
}

/* ---- The wrappers --------------------------------------------------------------------------- */

#define CALL(name) PARASTACK_CALL_##name

int MPI_Init(int* argc, char*** argv) {
  const int result = REAL(PMPI_Init)(argc, argv);
  if (result == MPI_SUCCESS) start_tracking();
  page.entries++;
  page.completed++;
  return result;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int result = REAL(PMPI_Init_thread)(argc, argv, required, provided);
  if (result == MPI_SUCCESS) start_tracking();
  page.entries++;
  page.completed++;
  return result;
}

int MPI_Finalize(void) {
  if (!is_tracking()) return REAL(PMPI_Finalize)();
  enter_blocking(PARASTACK_OTHER, CALL(MPI_Finalize), NULL);
  const int result = REAL(PMPI_Finalize)();
  leave_blocking();
  return result;
}

/* Blocking point-to-point. */
#define BLOCKING_SEND(name)                                                                         \
  int MPI_##name(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) { \
    if (!is_tracking()) return REAL(PMPI_##name)(buf, count, type, dest, tag, comm);                \
    const struct parastack_progress_operation op = point_to_point(PARASTACK_SEND, dest, tag, comm); \
    enter_blocking(PARASTACK_SEND, CALL(MPI_##name), &op);                                          \
    const int result = REAL(PMPI_##name)(buf, count, type, dest, tag, comm);                        \
    leave_blocking();                                                                               \
    return result;                                                                                  \
  }
BLOCKING_SEND(Send)
BLOCKING_SEND(Ssend)
BLOCKING_SEND(Bsend)
BLOCKING_SEND(Rsend)

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Recv)(buf, count, type, source, tag, comm, status);
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, source, tag, comm);
  enter_blocking(PARASTACK_RECV, CALL(MPI_Recv), &op);
  const int result = REAL(PMPI_Recv)(buf, count, type, source, tag, comm, status);
  leave_blocking();
  return result;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Probe)(source, tag, comm, status);
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, source, tag, comm);
  enter_blocking(PARASTACK_RECV, CALL(MPI_Probe), &op);
  const int result = REAL(PMPI_Probe)(source, tag, comm, status);
  leave_blocking();
  return result;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Mprobe)(source, tag, comm, message, status);
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, source, tag, comm);
  enter_blocking(PARASTACK_RECV, CALL(MPI_Mprobe), &op);
  const int result = REAL(PMPI_Mprobe)(source, tag, comm, message, status);
  leave_blocking();
  return result;
}

int MPI_Mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Mrecv)(buf, count, type, message, status);
  /* The message is already matched: its peer is not known here (and the receive does not wait). */
  const struct parastack_progress_operation op = {
      PARASTACK_RECV, PARASTACK_PEER_UNKNOWN, PARASTACK_TAG_ANY, 0, PARASTACK_COMM_UNKNOWN, 0};
  enter_blocking(PARASTACK_RECV, CALL(MPI_Mrecv), &op);
  const int result = REAL(PMPI_Mrecv)(buf, count, type, message, status);
  leave_blocking();
  return result;
}

int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  if (!is_tracking())
    return REAL(PMPI_Sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                               recvtag, comm, status);
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, source, recvtag, comm);
  page.send_peer = world_peer(find_comm(comm), dest);
  enter_blocking(PARASTACK_SENDRECV, CALL(MPI_Sendrecv), &op);
  const int result = REAL(PMPI_Sendrecv)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                                         source, recvtag, comm, status);
  leave_blocking();
  return result;
}

int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source, int recvtag,
                         MPI_Comm comm, MPI_Status* status) {
  if (!is_tracking())
    return REAL(PMPI_Sendrecv_replace)(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, source, recvtag, comm);
  page.send_peer = world_peer(find_comm(comm), dest);
  enter_blocking(PARASTACK_SENDRECV, CALL(MPI_Sendrecv_replace), &op);
  const int result = REAL(PMPI_Sendrecv_replace)(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  leave_blocking();
  return result;
}

/* Nonblocking point-to-point: the operation is remembered for the wait that completes it. */
#define NONBLOCKING_SEND(name)                                                                        \
  int MPI_##name(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,     \
                 MPI_Request* request) {                                                              \
    if (!is_tracking()) return REAL(PMPI_##name)(buf, count, type, dest, tag, comm, request);         \
    enter_immediate();                                                                                \
    const int result = REAL(PMPI_##name)(buf, count, type, dest, tag, comm, request);                 \
    if (result == MPI_SUCCESS) {                                                                      \
      const struct parastack_progress_operation op = point_to_point(PARASTACK_SEND, dest, tag, comm); \
      remember_request(*request, &op);                                                                \
    }                                                                                                 \
    return result;                                                                                    \
  }
NONBLOCKING_SEND(Isend)
NONBLOCKING_SEND(Issend)

int MPI_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!is_tracking()) return REAL(PMPI_Irecv)(buf, count, type, source, tag, comm, request);
  enter_immediate();
  const int result = REAL(PMPI_Irecv)(buf, count, type, source, tag, comm, request);
  if (result == MPI_SUCCESS) {
    const struct parastack_progress_operation op = point_to_point(PARASTACK_RECV, source, tag, comm);
    remember_request(*request, &op);
  }
  return result;
}

/* Waits. */
int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Wait)(request, status);
  enter_wait(CALL(MPI_Wait), request, 1, 0, 0, 1);
  const int result = REAL(PMPI_Wait)(request, status);
  leave_blocking();
  return result;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status* statuses) {
  if (!is_tracking()) return REAL(PMPI_Waitall)(count, requests, statuses);
  enter_wait(CALL(MPI_Waitall), requests, count, 0, 0, 1);
  const int result = REAL(PMPI_Waitall)(count, requests, statuses);
  leave_blocking();
  return result;
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Waitany)(count, requests, index, status);
  struct request_copies copies;
  copy_requests(&copies, requests, count);
  enter_wait(CALL(MPI_Waitany), requests, count, 0, 1, 0);
  const int result = REAL(PMPI_Waitany)(count, requests, index, status);
  if (result == MPI_SUCCESS && *index != MPI_UNDEFINED) forget_copied(&copies, *index);
  leave_blocking();
  return result;
}

int MPI_Waitsome(int count, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!is_tracking()) return REAL(PMPI_Waitsome)(count, requests, outcount, indices, statuses);
  struct request_copies copies;
  copy_requests(&copies, requests, count);
  enter_wait(CALL(MPI_Waitsome), requests, count, 0, 1, 0);
  const int result = REAL(PMPI_Waitsome)(count, requests, outcount, indices, statuses);
  if (result == MPI_SUCCESS && *outcount != MPI_UNDEFINED) {
    for (int i = 0; i < *outcount; ++i) forget_copied(&copies, indices[i]);
  }
  leave_blocking();
  return result;
}

/* Tests and iprobe return at once: they count a completion or a poll and leave `kind` alone. */
int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Test)(request, flag, status);
  const MPI_Request handle = request ? *request : handles.request_null;
  enter_immediate();
  const int result = REAL(PMPI_Test)(request, flag, status);
  const int found = result == MPI_SUCCESS && *flag;
  if (found) forget_request(handle);
  polled(found);
  return result;
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!is_tracking()) return REAL(PMPI_Testall)(count, requests, flag, statuses);
  struct request_copies copies;
  copy_requests(&copies, requests, count);
  enter_immediate();
  const int result = REAL(PMPI_Testall)(count, requests, flag, statuses);
  const int found = result == MPI_SUCCESS && *flag;
  if (found) {
    for (int i = 0; i < copies.count; ++i) forget_request(copies.handles[i]);
  }
  polled(found);
  return result;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Testany)(count, requests, index, flag, status);
  struct request_copies copies;
  copy_requests(&copies, requests, count);
  enter_immediate();
  const int result = REAL(PMPI_Testany)(count, requests, index, flag, status);
  const int found = result == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED;
  if (found) forget_copied(&copies, *index);
  polled(found);
  return result;
}

int MPI_Testsome(int count, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!is_tracking()) return REAL(PMPI_Testsome)(count, requests, outcount, indices, statuses);
  struct request_copies copies;
  copy_requests(&copies, requests, count);
  enter_immediate();
  const int result = REAL(PMPI_Testsome)(count, requests, outcount, indices, statuses);
  const int found = result == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0;
  if (found) {
    for (int i = 0; i < *outcount; ++i) forget_copied(&copies, indices[i]);
  }
  polled(found);
  return result;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  if (!is_tracking()) return REAL(PMPI_Iprobe)(source, tag, comm, flag, status);
  enter_immediate();
  const int result = REAL(PMPI_Iprobe)(source, tag, comm, flag, status);
  polled(result == MPI_SUCCESS && *flag);
  return result;
}

int MPI_Request_free(MPI_Request* request) {
  if (!is_tracking()) return REAL(PMPI_Request_free)(request);
  enter_immediate();
  if (request) forget_request(*request);
  return REAL(PMPI_Request_free)(request);
}

/* Blocking collectives: `args` is the call's argument list, whose last element is the comm. */
#define BLOCKING_COLLECTIVE(name, params, args, comm)                      \
  int MPI_##name params {                                                  \
    if (!is_tracking()) return REAL(PMPI_##name) args;                     \
    const struct parastack_progress_operation op = collective(comm, NULL); \
    enter_blocking(PARASTACK_COLLECTIVE, CALL(MPI_##name), &op);           \
    const int result = REAL(PMPI_##name) args;                             \
    leave_blocking();                                                      \
    return result;                                                         \
  }
BLOCKING_COLLECTIVE(Barrier, (MPI_Comm comm), (comm), comm)
BLOCKING_COLLECTIVE(Bcast, (void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm),
                    (buf, count, type, root, comm), comm)
BLOCKING_COLLECTIVE(Reduce,
                    (const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op_, int root,
                     MPI_Comm comm),
                    (sendbuf, recvbuf, count, type, op_, root, comm), comm)
BLOCKING_COLLECTIVE(Allreduce,
                    (const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op_, MPI_Comm comm),
                    (sendbuf, recvbuf, count, type, op_, comm), comm)
BLOCKING_COLLECTIVE(Gather,
                    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm), comm)
BLOCKING_COLLECTIVE(Gatherv,
                    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                     const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm), comm)
BLOCKING_COLLECTIVE(Scatter,
                    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm), comm)
BLOCKING_COLLECTIVE(Scatterv,
                    (const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                     void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
                    (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm), comm)
BLOCKING_COLLECTIVE(Allgather,
                    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm), comm)
BLOCKING_COLLECTIVE(Allgatherv,
                    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                     const int displs[], MPI_Datatype recvtype, MPI_Comm comm),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm), comm)
BLOCKING_COLLECTIVE(Alltoall,
                    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm),
                    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm), comm)
BLOCKING_COLLECTIVE(Alltoallv,
                    (const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                     void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm),
                    (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm), comm)
BLOCKING_COLLECTIVE(Alltoallw,
                    (const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                     void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                     MPI_Comm comm),
                    (sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm), comm)
BLOCKING_COLLECTIVE(Reduce_scatter,
                    (const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype type, MPI_Op op_,
                     MPI_Comm comm),
                    (sendbuf, recvbuf, recvcounts, type, op_, comm), comm)
BLOCKING_COLLECTIVE(Reduce_scatter_block,
                    (const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op_, MPI_Comm comm),
                    (sendbuf, recvbuf, recvcount, type, op_, comm), comm)
BLOCKING_COLLECTIVE(Scan, (const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op_, MPI_Comm comm),
                    (sendbuf, recvbuf, count, type, op_, comm), comm)
BLOCKING_COLLECTIVE(Exscan,
                    (const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op_, MPI_Comm comm),
                    (sendbuf, recvbuf, count, type, op_, comm), comm)

/* Nonblocking collectives: counted on their communicator when started (the order MPI requires of
 * every member), remembered for the wait. */
#define NONBLOCKING_COLLECTIVE(name, params, args, comm, request)          \
  int MPI_##name params {                                                  \
    if (!is_tracking()) return REAL(PMPI_##name) args;                     \
    enter_immediate();                                                     \
    const struct parastack_progress_operation op = collective(comm, NULL); \
    const int result = REAL(PMPI_##name) args;                             \
    if (result == MPI_SUCCESS) remember_request(*request, &op);            \
    return result;                                                         \
  }
NONBLOCKING_COLLECTIVE(Ibarrier, (MPI_Comm comm, MPI_Request* request), (comm, request), comm, request)
NONBLOCKING_COLLECTIVE(Ibcast, (void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request),
                       (buf, count, type, root, comm, request), comm, request)
NONBLOCKING_COLLECTIVE(Ireduce,
                       (const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op_, int root,
                        MPI_Comm comm, MPI_Request* request),
                       (sendbuf, recvbuf, count, type, op_, root, comm, request), comm, request)
NONBLOCKING_COLLECTIVE(Iallreduce,
                       (const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op_, MPI_Comm comm,
                        MPI_Request* request),
                       (sendbuf, recvbuf, count, type, op_, comm, request), comm, request)

/* Communicator creation and release. */
#define CREATION(name, call, params, args, parent, created)          \
  int MPI_##name params {                                            \
    if (!is_tracking()) return REAL(PMPI_##name) args;               \
    const struct creation creation = enter_creation(call, parent);   \
    const int result = REAL(PMPI_##name) args;                       \
    if (result == MPI_SUCCESS) track_created(&creation, *(created)); \
    leave_blocking();                                                \
    return result;                                                   \
  }
CREATION(Comm_split, CALL(MPI_Comm_split), (MPI_Comm comm, int color, int key, MPI_Comm* newcomm),
         (comm, color, key, newcomm), comm, newcomm)
CREATION(Comm_split_type, CALL(MPI_Comm_split_type),
         (MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm),
         (comm, split_type, key, info, newcomm), comm, newcomm)
CREATION(Comm_dup, CALL(MPI_Comm_dup), (MPI_Comm comm, MPI_Comm* newcomm), (comm, newcomm), comm, newcomm)
CREATION(Comm_dup_with_info, CALL(MPI_Other), (MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm), (comm, info, newcomm),
         comm, newcomm)
CREATION(Comm_create, CALL(MPI_Comm_create), (MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm),
         (comm, group, newcomm), comm, newcomm)
CREATION(Cart_create, CALL(MPI_Other),
         (MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm* newcomm),
         (comm, ndims, dims, periods, reorder, newcomm), comm, newcomm)

int MPI_Comm_free(MPI_Comm* comm) {
  if (!is_tracking()) return REAL(PMPI_Comm_free)(comm);
  enter_blocking(PARASTACK_OTHER, CALL(MPI_Comm_free), NULL);
  /* Before the call: once freed, the handle may come back for a communicator made meanwhile. */
  if (comm) forget_comm(*comm);
  const int result = REAL(PMPI_Comm_free)(comm);
  leave_blocking();
  return result;
}
