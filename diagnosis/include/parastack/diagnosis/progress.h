// Which rank started a communication hang: the wait-for graph of Prodometer (Mitra et al., SC14,
// "progress dependence") built from what each rank is waiting for, and its least-progressed (LP)
// ranks. Pure: the facts come from the progress library's page (--mpi-progress, read by the node
// layer) or from hand-made situations in the unit tests.
//
// Who waits for whom:
//   a receive (or probe) from r          waits on r
//   a wildcard receive on communicator c waits on every other member of c
//   a blocking send to r                 waits on r (a rendezvous send needs its receive)
//   a collective on c, its s-th on c     waits on the members of c that have entered fewer than s
//   a wait on requests                   waits on what each pending request waits on
// A rank outside MPI waits on nobody: if others wait on it, it is where the job stopped. A rank in
// a call whose wait is not recorded (Other: a polling loop around MPI_Test or MPI_Iprobe, a call
// the library does not decode) waits on somebody unknown: it adds no edge and is never LP.
//
// LP ranks: the ranks of the graph's terminal strongly connected components (nobody outside the
// component is waited on) that somebody waits on. Within a terminal component of several ranks,
// Prodometer's pruning: a rank that another member waits on in a collective has not reached a
// collective that member has, so it is less progressed; those ranks are the LP ones, and a
// component with no collective edge is a true deadlock cycle whose every member is LP.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "parastack/diagnosis/rank_set.h"

namespace parastack::diagnosis {

// One operation a rank waits for: point-to-point (peer, tag) or a collective (comm, sequence).
struct WaitOperation {
  enum class Kind { Send, Receive, Collective };
  Kind kind = Kind::Receive;
  // World rank; kAnySource for a wildcard receive, kUnknownPeer when the library could not tell
  // (a communicator it did not see created), kNullPeer for MPI_PROC_NULL.
  int peer = kUnknownPeer;
  int tag = kAnyTag;
  std::uint64_t comm = 0;  // the communicator's id, the same on every member; 0: unknown
  std::uint64_t sequence = 0;

  static constexpr int kAnySource = -1, kUnknownPeer = -3, kNullPeer = -4, kAnyTag = -1;
};

// A communicator a rank belongs to, and how many collectives it has entered on it.
struct CommProgress {
  std::uint64_t id = 0;
  int size = 0;
  int rank = 0;  // the rank's rank in it
  std::uint64_t collectives = 0;
};

// One rank's facts at the hang.
struct RankProgress {
  enum class Activity { Outside, Send, Receive, SendReceive, Wait, Collective, Other };
  Rank rank = 0;  // world rank
  Activity activity = Activity::Outside;
  std::string call;                             // the MPI function it is in ("MPI_Allreduce"); empty outside
  WaitOperation operation;                      // Send, Receive, SendReceive (the receive), Collective
  int send_peer = WaitOperation::kUnknownPeer;  // SendReceive: the destination
  std::vector<WaitOperation> waits;             // Wait: the pending operations known
  std::size_t wait_total = 0;                   // Wait: how many requests the call waits for
  bool wait_any = false;                        // Wait: any one completing is progress (Waitany, Waitsome)
  std::vector<CommProgress> comms;
  std::uint64_t completed = 0, polls = 0, entries = 0;
};

// "a waits on b", and why, in words ("MPI_Recv from 3, tag 7").
struct WaitEdge {
  Rank from = 0, to = 0;
  bool collective = false;
  std::string why;
};

struct ProgressAnalysis {
  std::vector<WaitEdge> edges;               // sorted by (from, to)
  std::vector<std::vector<Rank>> deadlocks;  // cycles of point-to-point waits: a true deadlock
  std::vector<std::vector<Rank>> cycles;     // other cycles (through a collective), LP-pruned
  std::vector<Rank> least_progressed;        // sorted
  std::vector<WaitEdge> chain;               // from a typical waiting rank to an LP rank
  std::vector<Rank> without_facts;           // ranks the analysis had no page for
  std::string summary;                       // one paragraph, in words
};

// The ranks' facts, one entry per rank (any order). Ranks missing from the list are reported in
// without_facts (when `world_size` says they exist) and never named LP.
ProgressAnalysis analyse_progress(std::span<const RankProgress> ranks, int world_size);

// "MPI_Recv from 3, tag 7", "MPI_Allreduce #12 on comm 1", "outside MPI".
std::string describe(const RankProgress& rank);
// A communicator id as the report prints it: "world" for 1, else 16 hex digits.
std::string comm_name(std::uint64_t id);

}  // namespace parastack::diagnosis
