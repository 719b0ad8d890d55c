// What people read: a text tree for terminals, Graphviz DOT coloured by equivalence class (STAT
// §3.1: "the front-end color-codes the process equivalence classes and exports ... dot"), and JSON
// for the hang report. Rendering DOT to SVG needs the `dot` program, so it lives in the OS layer.
#pragma once

#include <cstddef>
#include <string>

#include "parastack/diagnosis/prefix_tree.h"

namespace parastack::diagnosis {

struct RenderOptions {
  // Rank lists longer than this are cut at a comma and end in ",...": a 3D tree of a million
  // ranks must not print megabytes. 0: never cut.
  std::size_t max_range_chars = 60;
  std::string title;  // first line of the text, graph label of the DOT
  // DOT: the call paths where these ranks end get a red border and "<highlight_label>: ranks"
  // (the least-progressed ranks of a hang).
  RankSet highlight;
  std::string highlight_label = "least progressed";
};

// STAT-style text: one line per call path, "name  [N ranks: 0-3,5]", sample counts when the tree
// has a time dimension, class numbers at the nodes where classes end, then the class list.
std::string to_text(const PrefixTree& tree, const RenderOptions& options = {});

// Graphviz DOT. Nodes and edges take the colour of the equivalence class whose ranks they carry
// exactly; paths shared by several classes stay grey. Edge labels: "N:[ranges]" and samples.
std::string to_dot(const PrefixTree& tree, const RenderOptions& options = {});

// The tree and its classes as one JSON document (for the hang report); rank sets as range strings.
std::string to_json(const PrefixTree& tree);

// "0-3,5,..." when text is longer than max_chars (0: never cut).
std::string shorten_ranges(const std::string& ranges, std::size_t max_chars);

}  // namespace parastack::diagnosis
