#include "parastack/diagnosis/render.h"

#include <nlohmann/json.hpp>
#include <unordered_map>

namespace parastack::diagnosis {
namespace {

// Twelve colours that stay apart on screen and paper (ColorBrewer "Set3", then "Paired" tones).
constexpr const char* kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                    "#b3de69", "#fccde5", "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3"};
constexpr const char* kShared = "#e0e0e0";

// Class number (0-based) by terminal rank set.
std::unordered_map<RankSet, std::size_t, RankSetHash> class_index(const std::vector<EquivalenceClass>& classes) {
  std::unordered_map<RankSet, std::size_t, RankSetHash> index;
  for (std::size_t i = 0; i < classes.size(); ++i) index.emplace(classes[i].ranks, i);
  return index;
}

bool has_time_dimension(const PrefixTree& tree) {
  for (NodeId id = 0; id < tree.node_count(); ++id) {
    if (tree.node(id).samples != tree.node(id).ranks.size()) return true;
  }
  return false;
}

std::string rank_label(const RankSet& ranks, std::size_t max_chars) {
  const auto count = ranks.size();
  return std::to_string(count) + (count == 1 ? " rank: " : " ranks: ") + shorten_ranges(ranks.to_ranges(), max_chars);
}

std::string dot_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string shorten_ranges(const std::string& ranges, std::size_t max_chars) {
  if (max_chars == 0 || ranges.size() <= max_chars) return ranges;
  const auto cut = ranges.rfind(',', max_chars);
  return (cut == std::string::npos || cut == 0 ? ranges.substr(0, max_chars) : ranges.substr(0, cut)) + ",...";
}

std::string to_text(const PrefixTree& tree, const RenderOptions& options) {
  const auto classes = tree.equivalence_classes();
  const auto index = class_index(classes);
  const bool timed = has_time_dimension(tree);
  const auto& root = tree.root();
  std::string out;
  if (!options.title.empty()) out += options.title + "\n";
  out += std::string(to_string(tree.shape())) + ": " + rank_label(root.ranks, options.max_range_chars) + ", " +
         std::to_string(root.samples) + (root.samples == 1 ? " sample" : " samples") + ", " +
         std::to_string(classes.size()) + (classes.size() == 1 ? " equivalence class\n" : " equivalence classes\n");

  // (node, prefix of its children's lines), depth first in child (name) order.
  struct Item {
    NodeId id;
    std::string prefix;
    bool last;
  };
  std::vector<Item> stack;
  const auto& top = root.children;
  for (auto it = top.rbegin(); it != top.rend(); ++it) stack.push_back({*it, "", it == top.rbegin()});
  while (!stack.empty()) {
    const Item item = std::move(stack.back());
    stack.pop_back();
    const auto& node = tree.node(item.id);
    out += item.prefix + (item.last ? "`- " : "|- ") + node.name + "  [" +
           rank_label(node.ranks, options.max_range_chars) + "]";
    if (timed) out += " x" + std::to_string(node.samples);
    const auto terminal = index.find(node.terminal_ranks());
    if (!node.terminal_ranks().empty() && terminal != index.end()) {
      out += "  <class " + std::to_string(terminal->second + 1) + ">";
    }
    out += "\n";
    const std::string child_prefix = item.prefix + (item.last ? "   " : "|  ");
    for (auto it = node.children.rbegin(); it != node.children.rend(); ++it) {
      stack.push_back({*it, child_prefix, it == node.children.rbegin()});
    }
  }
  if (!classes.empty()) out += "equivalence classes (representative = lowest rank):\n";
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const auto& c = classes[i];
    std::string where;
    for (const auto& name : tree.path(c.nodes.front())) where += (where.empty() ? "" : " > ") + name;
    if (where.empty()) where = "(empty trace)";
    if (c.nodes.size() > 1) where += " (+" + std::to_string(c.nodes.size() - 1) + " more paths)";
    out += "  " + std::to_string(i + 1) + ". rank " + std::to_string(c.representative) + " for " +
           rank_label(c.ranks, options.max_range_chars) + "; ends in " + where + "\n";
  }
  return out;
}

std::string to_dot(const PrefixTree& tree, const RenderOptions& options) {
  const auto classes = tree.equivalence_classes();
  const auto index = class_index(classes);
  const bool timed = has_time_dimension(tree);
  auto colour_of = [&](const RankSet& ranks) -> const char* {
    const auto found = index.find(ranks);
    return found == index.end() ? kShared : kPalette[found->second % std::size(kPalette)];
  };
  std::string out = "digraph prefix_tree {\n";
  out += "  graph [rankdir=TB";
  if (!options.title.empty()) out += ", labelloc=t, label=\"" + dot_escape(options.title) + "\"";
  out += "];\n";
  out += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  out += "  n0 [label=\"/\", fillcolor=\"" + std::string(colour_of(tree.root().ranks)) + "\"];\n";
  for (NodeId id = 1; id < tree.node_count(); ++id) {
    const auto& node = tree.node(id);
    const char* colour = colour_of(node.ranks);
    RankSet marked;
    node.terminal_ranks().for_each([&](Rank r) {
      if (options.highlight.contains(r)) marked.insert(r);
    });
    std::string name = dot_escape(node.name);
    if (!marked.empty()) {
      name += "\\n" +
              dot_escape(options.highlight_label + ": " + shorten_ranges(marked.to_ranges(), options.max_range_chars));
    }
    out += "  n" + std::to_string(id) + " [label=\"" + name + "\", fillcolor=\"" + colour + "\"" +
           (node.mpi ? ", peripheries=2" : "") + (marked.empty() ? "" : ", color=\"#d00000\", penwidth=3") + "];\n";
    std::string label = std::to_string(node.ranks.size()) + ":[" +
                        shorten_ranges(node.ranks.to_ranges(), options.max_range_chars) + "]";
    if (timed) label += "\\n" + std::to_string(node.samples) + " samples";
    out += "  n" + std::to_string(node.parent) + " -> n" + std::to_string(id) + " [label=\"" + dot_escape(label) +
           "\", color=\"" + (colour == kShared ? "#606060" : colour) + "\", penwidth=2];\n";
  }
  // The classes as a legend, so the colours mean something on paper.
  if (!classes.empty()) {
    out += "  legend [shape=plaintext, style=\"\", label=<<table border=\"0\" cellspacing=\"2\">";
    for (std::size_t i = 0; i < classes.size(); ++i) {
      std::string ranks = shorten_ranges(classes[i].ranks.to_ranges(), options.max_range_chars);
      out += "<tr><td bgcolor=\"" + std::string(kPalette[i % std::size(kPalette)]) + "\">class " +
             std::to_string(i + 1) + "</td><td align=\"left\">rank " + std::to_string(classes[i].representative) +
             " of " + std::to_string(classes[i].ranks.size()) + ": " + ranks + "</td></tr>";
    }
    out += "</table>>];\n";
  }
  out += "}\n";
  return out;
}

std::string to_json(const PrefixTree& tree) {
  using nlohmann::json;
  auto node_json = [&tree](NodeId id, auto&& self) -> json {
    const auto& node = tree.node(id);
    json j = {{"name", node.name},
              {"ranks", node.ranks.to_ranges()},
              {"rank_count", node.ranks.size()},
              {"samples", node.samples}};
    if (node.mpi) j["mpi"] = true;
    if (!node.children.empty()) {
      if (!node.ends.empty()) j["ends"] = node.ends.to_ranges();
      json children = json::array();
      for (const NodeId child : node.children) children.push_back(self(child, self));
      j["children"] = std::move(children);
    }
    return j;
  };
  json classes = json::array();
  for (const auto& c : tree.equivalence_classes()) {
    json paths = json::array();
    for (const NodeId id : c.nodes) paths.push_back(tree.path(id));
    classes.push_back({{"representative", c.representative},
                       {"ranks", c.ranks.to_ranges()},
                       {"rank_count", c.ranks.size()},
                       {"paths", std::move(paths)}});
  }
  const json document = {{"shape", to_string(tree.shape())},
                         {"classes", std::move(classes)},
                         {"tree", node_json(PrefixTree::kRoot, node_json)}};
  return document.dump();
}

}  // namespace parastack::diagnosis
