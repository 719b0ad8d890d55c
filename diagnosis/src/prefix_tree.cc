#include "parastack/diagnosis/prefix_tree.h"

#include <algorithm>
#include <unordered_map>

namespace parastack::diagnosis {

std::string node_name(const Frame& frame) {
  std::string name = frame.function.empty() ? "??" : frame.function;
  if (!frame.location.empty()) {
    name += " at ";
    name += frame.location;
  } else if (frame.function.empty() && !frame.module.empty()) {
    name += " in ";
    name += frame.module;
  }
  return name;
}

const char* to_string(TreeShape shape) {
  switch (shape) {
    case TreeShape::Empty:
      return "empty";
    case TreeShape::TraceSpace:
      return "2D trace/space";
    case TreeShape::TraceTime:
      return "2D trace/time";
    case TreeShape::TraceSpaceTime:
      return "3D trace/space/time";
  }
  return "?";
}

PrefixTree::PrefixTree(TreeOptions options) : options_(options) { nodes_.emplace_back(); }

NodeId PrefixTree::append_child(NodeId parent, std::string name, bool mpi) {
  const auto id = static_cast<NodeId>(nodes_.size());
  Node child;
  child.name = std::move(name);
  child.mpi = mpi;
  child.parent = parent;
  nodes_.push_back(std::move(child));
  nodes_[parent].children.push_back(id);
  return id;
}

NodeId PrefixTree::find_or_add_child(NodeId parent, std::string_view name, bool mpi) {
  auto& children = nodes_[parent].children;
  const auto at = std::lower_bound(children.begin(), children.end(), name,
                                   [this](NodeId id, std::string_view n) { return nodes_[id].name < n; });
  if (at != children.end() && nodes_[*at].name == name) {
    nodes_[*at].mpi = nodes_[*at].mpi || mpi;
    return *at;
  }
  const auto position = at - children.begin();
  const auto id = static_cast<NodeId>(nodes_.size());
  Node child;
  child.name = std::string(name);
  child.mpi = mpi;
  child.parent = parent;
  nodes_.push_back(std::move(child));  // invalidates `children`
  auto& siblings = nodes_[parent].children;
  siblings.insert(siblings.begin() + position, id);
  return id;
}

void PrefixTree::add(std::span<const Frame> trace, Rank rank) {
  // First find or create the path, then label it: creating a child under a leaf copies the leaf's
  // ranks into its `ends`, which must not yet hold this sample.
  NodeId path_buffer[64];
  std::vector<NodeId> long_path;
  std::span<NodeId> path;
  if (trace.size() + 1 <= std::size(path_buffer)) {
    path = std::span<NodeId>(path_buffer, trace.size() + 1);
  } else {
    long_path.resize(trace.size() + 1);
    path = long_path;
  }
  std::size_t length = 0;
  NodeId current = kRoot;
  path[length++] = current;
  std::string built_name;
  for (const auto& frame : trace) {
    // Most frames are named by their function alone: look that up without building a string.
    std::string_view name = frame.function;
    if (frame.function.empty() || !frame.location.empty()) {
      built_name = node_name(frame);
      name = built_name;
    }
    // A leaf about to get its first child: until now every sample through it ended there.
    if (nodes_[current].children.empty()) nodes_[current].ends = nodes_[current].ranks;
    current = find_or_add_child(current, name, frame.mpi);
    path[length++] = current;
    if (frame.mpi && !options_.expand_mpi) break;
  }
  for (std::size_t i = 0; i < length; ++i) {
    auto& node = nodes_[path[i]];
    node.ranks.insert(rank);
    ++node.samples;
  }
  auto& last = nodes_[current];
  if (!last.children.empty()) last.ends.insert(rank);
}

void PrefixTree::merge(const PrefixTree& other) {
  if (&other == this) {
    // A copy, not a reference: merging into `this` grows the very nodes it reads.
    const PrefixTree copy = other;  // NOLINT(performance-unnecessary-copy-initialization)
    merge_node(kRoot, copy, kRoot);
    return;
  }
  merge_node(kRoot, other, kRoot);
}

void PrefixTree::merge_node(NodeId into, const PrefixTree& other, NodeId from) {
  const Node& theirs = other.nodes_[from];
  {
    Node& mine = nodes_[into];
    // The terminal ranks of the union are the union of the terminal ranks. Kept explicitly only
    // for interior nodes (a leaf's are its ranks).
    const bool interior = !mine.children.empty() || !theirs.children.empty();
    if (interior) {
      if (mine.children.empty()) mine.ends = mine.ranks;
      mine.ends |= theirs.terminal_ranks();
    }
    mine.ranks |= theirs.ranks;
    mine.samples += theirs.samples;
    mine.mpi = mine.mpi || theirs.mpi;
  }
  for (const NodeId child : theirs.children) {
    const Node& their_child = other.nodes_[child];
    const NodeId target = find_or_add_child(into, their_child.name, their_child.mpi);
    merge_node(target, other, child);
  }
}

PrefixTree PrefixTree::folded_at_mpi() const {
  PrefixTree folded(TreeOptions{.expand_mpi = false});
  folded.nodes_[kRoot] = nodes_[kRoot];
  folded.nodes_[kRoot].children.clear();
  // (source, copy) pairs still to visit; children are copied in order, so they stay sorted.
  std::vector<std::pair<NodeId, NodeId>> stack{{kRoot, kRoot}};
  while (!stack.empty()) {
    const auto [from, to] = stack.back();
    stack.pop_back();
    for (const NodeId child : nodes_[from].children) {
      const Node& source = nodes_[child];
      const NodeId copy = folded.append_child(to, source.name, source.mpi);
      Node& node = folded.nodes_[copy];
      node.ranks = source.ranks;
      node.samples = source.samples;
      if (source.mpi) continue;  // folded: a leaf, so every sample through it ends here
      node.ends = source.ends;
      stack.emplace_back(child, copy);
    }
  }
  // Only MPI frames lose children, so every other node keeps its leaf or interior status and its
  // terminal ranks.
  return folded;
}

std::vector<EquivalenceClass> PrefixTree::equivalence_classes() const {
  std::unordered_map<RankSet, std::vector<NodeId>, RankSetHash> groups;
  for (NodeId id = 0; id < nodes_.size(); ++id) {
    const RankSet& terminal = nodes_[id].terminal_ranks();
    if (!terminal.empty()) groups[terminal].push_back(id);
  }
  std::vector<EquivalenceClass> classes;
  classes.reserve(groups.size());
  for (auto& [ranks, nodes] : groups) {
    classes.push_back(EquivalenceClass{ranks, ranks.lowest(), std::move(nodes)});
  }
  std::sort(classes.begin(), classes.end(), [](const auto& a, const auto& b) { return a.ranks < b.ranks; });
  return classes;
}

TreeShape PrefixTree::shape() const {
  const Node& top = root();
  if (top.ranks.empty()) return TreeShape::Empty;
  if (top.samples == top.ranks.size()) return TreeShape::TraceSpace;
  if (top.ranks.size() == 1) return TreeShape::TraceTime;
  return TreeShape::TraceSpaceTime;
}

std::vector<std::string> PrefixTree::path(NodeId id) const {
  std::vector<std::string> names;
  for (; id != kRoot; id = nodes_[id].parent) names.push_back(nodes_[id].name);
  std::reverse(names.begin(), names.end());
  return names;
}

bool PrefixTree::operator==(const PrefixTree& other) const {
  std::vector<std::pair<NodeId, NodeId>> stack{{kRoot, kRoot}};
  while (!stack.empty()) {
    const auto [a, b] = stack.back();
    stack.pop_back();
    const Node& x = nodes_[a];
    const Node& y = other.nodes_[b];
    if (x.name != y.name || x.mpi != y.mpi || x.samples != y.samples || x.ranks != y.ranks ||
        x.terminal_ranks() != y.terminal_ranks() || x.children.size() != y.children.size()) {
      return false;
    }
    for (std::size_t i = 0; i < x.children.size(); ++i) stack.emplace_back(x.children[i], y.children[i]);
  }
  return true;
}

}  // namespace parastack::diagnosis
