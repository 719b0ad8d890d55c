// The call-graph prefix tree of STAT (Arnold et al., SC07 §2): stack traces merged by call path,
// each node labelled with the set of ranks whose traces pass through it.
//
// Nodes are call paths, not functions: the same function reached by two paths is two nodes, so the
// merge of traces is a tree (not a general graph) and the ranks that end in one leaf form an
// equivalence class. One tree type serves STAT's three views:
//   2D trace/space        one trace per rank (add each rank once);
//   2D trace/time         many samples of one rank (per-node sample counts show where time goes);
//   3D trace/space/time   many samples of many ranks (rank sets and sample counts).
// Everything here is plain data in, plain data out: no OS, unwinder or MPI dependency, so the same
// code runs in the monitor, in the reduction tree and in the emulator (STATBench).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parastack/diagnosis/rank_set.h"

namespace parastack::diagnosis {

// One stack frame as the sampler names it.
struct Frame {
  std::string function;  // demangled; empty if unknown
  std::string module;    // file name of the mapping; names the node only when function is unknown
  std::string location;  // "file.c:42" for line-level nodes; empty for function-level ones
  // The frame lies in the MPI library. The sampler knows this from the mapping, which is more
  // reliable than guessing from names (PMPI_, ompi_, opal_, ucp_ ...).
  bool mpi = false;
};

// Outermost frame first (__libc_start_main, main, ...), as STAT draws it.
using StackTrace = std::vector<Frame>;

// The node name a frame gets: "function", "function at file.c:42", or "?? in libfoo.so".
std::string node_name(const Frame& frame);

struct TreeOptions {
  // By default a trace is cut after its first MPI frame: the MPI library's internals (progress
  // engine, transport) say how the library waits, not where the application is, and they differ
  // between ranks in the same call, splitting one class into many. Set to keep them.
  bool expand_mpi = false;
};

// Which of STAT's views a tree holds, from its counts.
enum class TreeShape { Empty, TraceSpace, TraceTime, TraceSpaceTime };
const char* to_string(TreeShape shape);

using NodeId = std::uint32_t;

// Ranks whose samples end at the same set of call paths: a distinct leaf rank set.
struct EquivalenceClass {
  RankSet ranks;
  Rank representative = 0;    // the lowest rank: the one to attach a debugger to
  std::vector<NodeId> nodes;  // where these ranks' traces end (several in 3D trees only if equal)
};

class PrefixTree {
 public:
  struct Node {
    std::string name;  // empty for the root, the virtual node above the outermost frame
    bool mpi = false;
    NodeId parent = 0;
    RankSet ranks;                 // ranks with a sample through this call path (the edge label)
    RankSet ends;                  // interior nodes: ranks with a sample that ended exactly here
    std::uint64_t samples = 0;     // samples through this call path
    std::vector<NodeId> children;  // sorted by name, so every output is deterministic

    // The ranks whose samples end here: all of them at a leaf.
    const RankSet& terminal_ranks() const { return children.empty() ? ranks : ends; }
  };

  static constexpr NodeId kRoot = 0;

  explicit PrefixTree(TreeOptions options = {});

  // One sample of one rank. Adding one trace per rank builds a 2D trace/space tree; many traces of
  // one rank a 2D trace/time tree; many of many a 3D trace/space/time tree.
  void add(std::span<const Frame> trace, Rank rank);

  // Merges other into this tree: rank sets by OR, sample counts by sum. Associative and
  // commutative up to node numbering (compare with == or serialize()).
  void merge(const PrefixTree& other);

  // A copy with everything below each node's first MPI frame folded into that frame, for trees
  // built with expand_mpi.
  PrefixTree folded_at_mpi() const;

  // The distinct terminal rank sets, ordered by representative rank (then by rank list).
  std::vector<EquivalenceClass> equivalence_classes() const;

  TreeShape shape() const;
  const Node& root() const { return nodes_[kRoot]; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  std::size_t node_count() const { return nodes_.size(); }
  const TreeOptions& options() const { return options_; }
  // Names from the outermost frame down to id.
  std::vector<std::string> path(NodeId id) const;

  // Same call paths with the same labels and counts, whatever the node numbering.
  bool operator==(const PrefixTree& other) const;

  // For the decoder, which builds trees node by node in pre-order. Returns the new node.
  NodeId append_child(NodeId parent, std::string name, bool mpi);
  Node& mutable_node(NodeId id) { return nodes_[id]; }

 private:
  NodeId find_or_add_child(NodeId parent, std::string_view name, bool mpi);
  void merge_node(NodeId into, const PrefixTree& other, NodeId from);

  TreeOptions options_;
  std::vector<Node> nodes_;
};

}  // namespace parastack::diagnosis
