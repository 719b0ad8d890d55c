// The merged stack tree of a job as people and tools read it: text, DOT, SVG (through Graphviz's
// dot, when installed) and JSON. Shared by the hang report and `parastack stacks`.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "parastack/diagnosis/prefix_tree.h"
#include "sampler/stack_sampler.h"

namespace parastack::node {

// NOLINTNEXTLINE(bugprone-exception-escape): the implicit noexcept move; nlohmann::json's move does not throw.
struct StackViews {
  std::string text, dot;
  std::string svg;  // empty when Graphviz is not installed or failed (svg_problem says why)
  std::string svg_problem;
  nlohmann::json tree;  // diagnosis::to_json: {shape, classes: [{representative, ranks, paths}], tree}
};

// title: the first line of the text and the DOT graph's label.
// highlight: ranks the DOT marks (the least-progressed ranks of a hang).
StackViews stack_views(const diagnosis::PrefixTree& tree, const std::string& title, bool with_svg = true,
                       const diagnosis::RankSet& highlight = {});

// Writes one view (format text, dot, svg or json) to `out`. False, with the reason on `err` after
// `who`, when SVG was asked for and Graphviz could not make it.
bool print_stack_view(const StackViews& views, const std::string& format, std::ostream& out, std::ostream& err,
                      const std::string& who);

// DOT to SVG with Graphviz's dot; empty and `problem` set if it is not installed or fails.
std::string render_svg(const std::string& dot, std::string& problem);

// One sample of one rank as a prefix-tree trace, outermost frame first. A rank that could not be
// sampled is a pseudo-frame ("[exited]"), STAT's way, not a hole in the tree.
diagnosis::StackTrace stack_trace_of(const sampler::RankSample& sample);
// The thread of a rank at work outside MPI beside its thread in MPI (RankSample::at_work_outside),
// as a trace of its own; empty when there is none.
diagnosis::StackTrace working_trace_of(const sampler::RankSample& sample);

}  // namespace parastack::node
